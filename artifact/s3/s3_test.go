package s3_test

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/artifact/artifacttest"
	"github.com/chaperone-bio/chaperone/artifact/s3"
	"github.com/chaperone-bio/chaperone/artifact/s3/s3test"
	"github.com/chaperone-bio/chaperone/job"
)

func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }

func TestConformance(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) artifact.Store {
		s, err := s3.Open(context.Background(), s3test.Bucket(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestALogOfEarlierServersIsReadFirst: the one run.log that servers before per-attempt
// logs wrote is read before the attempts' logs.
func TestALogOfEarlierServersIsReadFirst(t *testing.T) {
	cfg := s3test.Bucket(t)
	s, err := s3.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(cfg.Endpoint)
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Region: cfg.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	id := job.NewID()
	old := "attempt 1, before\n"
	if _, err := c.PutObject(t.Context(), cfg.Bucket, cfg.Prefix+"jobs/"+id+"/run.log", strings.NewReader(old), int64(len(old)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	artifacttest.MustAppendLog(t, s, id, 2, "attempt 2\n")
	if got, want := artifacttest.MustReadLog(t, s, id), old+"attempt 2\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}
