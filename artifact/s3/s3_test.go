package s3_test

import (
	"context"
	"os"
	"testing"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/artifact/artifacttest"
	"github.com/chaperone-bio/chaperone/artifact/s3"
	"github.com/chaperone-bio/chaperone/artifact/s3/s3test"
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
