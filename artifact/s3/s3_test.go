package s3_test

import (
	"context"
	"net/url"
	"os"
	"slices"
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
	id := job.NewID()
	old := "attempt 1, before\n"
	putRaw(t, cfg, "jobs/"+id+"/run.log", old)
	artifacttest.MustAppendLog(t, s, id, 2, "attempt 2\n")
	if got, want := artifacttest.MustReadLog(t, s, id), old+"attempt 2\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

// TestSharedListSkipsServerTemps: the name VersityGW shows an object by while replacing it
// is not listed; names merely like it are.
func TestSharedListSkipsServerTemps(t *testing.T) {
	cfg := s3test.Bucket(t)
	s, err := s3.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"msa/.abc.a3m.sgwtmp.1795852602227213300", "msa/.abc.sgwtmp.x", "msa/abc.sgwtmp.1", "msa/.sgwtmp.1"} {
		putRaw(t, cfg, "shared/"+name, "x")
	}
	files, err := s.ListShared(t.Context(), "msa/")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	if want := []string{"msa/.abc.sgwtmp.x", "msa/.sgwtmp.1", "msa/abc.sgwtmp.1"}; !slices.Equal(names, want) {
		t.Errorf("ListShared = %q, want %q", names, want)
	}
}

// putRaw writes an object under the store's prefix as another client would.
func putRaw(t *testing.T, cfg s3.Config, key, content string) {
	t.Helper()
	u, _ := url.Parse(cfg.Endpoint)
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Region: cfg.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(t.Context(), cfg.Bucket, cfg.Prefix+key, strings.NewReader(content), int64(len(content)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}
