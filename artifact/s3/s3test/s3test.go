// Package s3test runs a real S3-compatible server for tests: VersityGW (versitygw, an
// S3 gateway over a POSIX folder, installed with go install from the Go module proxy) on a
// free local port with a temporary folder, one per test binary, and a fresh bucket per
// test. Tests skip, saying why, only when versitygw is not installed and
// CHAPERONE_TEST_S3 is not "required" (CI sets it).
//
//	func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }
//
// It imports artifact/s3 of chaperone's packages.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chaperone-bio/chaperone/artifact/s3"
)

// RequiredEnv set to "required" turns the skip for a missing versitygw into a failure.
const RequiredEnv = "CHAPERONE_TEST_S3"

// Credentials of the test server's root account.
const (
	accessKey = "chaperone-test"
	secretKey = "chaperone-test-secret"
)

var (
	once    sync.Once
	server  *Server
	start   error
	buckets atomic.Int64
)

// Main runs the tests of m and stops the server, if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	Cleanup()
	return code
}

// Cleanup stops the server, if one was started: for a TestMain that runs m itself.
func Cleanup() {
	if server != nil {
		server.Stop()
	}
}

// ErrNotInstalled says that versitygw was not found.
var ErrNotInstalled = errors.New("versitygw not found on PATH or in $(go env GOPATH)/bin")

// Server is a running versitygw.
type Server struct {
	Endpoint string
	cmd      *exec.Cmd
	dir      string
}

// Bucket creates an empty bucket on the test binary's server, starting it on first use,
// and returns the store configuration of a prefix in it.
func Bucket(tb testing.TB) s3.Config {
	tb.Helper()
	once.Do(func() { server, start = Start() })
	switch {
	case errors.Is(start, ErrNotInstalled) && os.Getenv(RequiredEnv) == "required":
		tb.Fatalf("s3test: %v, and %s=required", start, RequiredEnv)
	case errors.Is(start, ErrNotInstalled):
		tb.Skipf("s3test: %v; install it with go install github.com/versity/versitygw/cmd/versitygw@v1.8.0", start)
	case start != nil:
		tb.Fatalf("s3test: %v", start)
	}
	cfg := server.Config(fmt.Sprintf("t%d-%d", os.Getpid(), buckets.Add(1)))
	c, err := minio.New(server.Endpoint[len("http://"):], &minio.Options{
		Creds: credentials.NewStaticV4(accessKey, secretKey, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.MakeBucket(context.Background(), cfg.Bucket, minio.MakeBucketOptions{}); err != nil {
		tb.Fatalf("s3test: creating a bucket: %v", err)
	}
	return cfg
}

// Location is where cfg points, as --artifacts names it, with the environment that
// artifact/s3.ConfigFromEnv reads the rest from.
func Location(cfg s3.Config) (string, map[string]string) {
	return "s3://" + cfg.Bucket + "/" + cfg.Prefix, map[string]string{
		"AWS_ENDPOINT_URL": cfg.Endpoint, "AWS_REGION": cfg.Region,
		"AWS_ACCESS_KEY_ID": cfg.AccessKey, "AWS_SECRET_ACCESS_KEY": cfg.SecretKey,
	}
}

// Config is the store configuration of bucket on s, under the prefix "artifacts/".
func (s *Server) Config(bucket string) s3.Config {
	return s3.Config{Bucket: bucket, Prefix: "artifacts/", Endpoint: s.Endpoint, Region: "us-east-1",
		AccessKey: accessKey, SecretKey: secretKey, PathStyle: true}
}

// Start starts versitygw on a free local port over a new temporary folder.
func Start() (*Server, error) {
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		gopath, _ := exec.Command("go", "env", "GOPATH").Output()
		bin = filepath.Join(string(trimNL(gopath)), "bin", "versitygw")
		if _, err := os.Stat(bin); err != nil {
			return nil, ErrNotInstalled
		}
	}
	dir, err := os.MkdirTemp("", "chaperone-s3-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--port", addr, "--access", accessKey, "--secret", secretKey, "posix", dir)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Endpoint: "http://" + addr, cmd: cmd, dir: dir}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("versitygw did not listen on %s within 30 s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the server and removes its folder.
func (s *Server) Stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	os.RemoveAll(s.dir)
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
