// Package s3 is the artifact store on S3-compatible object storage, shared by every server
// replica of a deployment: result files are objects, uploaded in parts as they stream and
// read back with ranged GETs, so that neither a large upload nor a resumed download holds a
// whole file in memory.
//
// Layout under the bucket and prefix:
//
//	<prefix>jobs/<jobID>/attempt-<n>/<path>   result files of attempt n
//	<prefix>jobs/<jobID>/run-<n>.log          the run log: the output of attempt n
//	<prefix>jobs/<jobID>/run.log              the run log of every attempt, as servers
//	                                          before per-attempt logs wrote it; read only
//	<prefix>shared/<name>                     Shared files (shared.go), no job's
//
// An object is written whole or not at all (an upload that fails or is canceled is
// aborted), so a reader sees the old file or the new one; a file opened for reading is
// pinned to the version it opened (each later ranged read is conditional on its ETag).
//
// A log object is rewritten by each append under a per-job lock. Objects cannot be
// appended to, and the worker of a job appends to its log one call at a time, so appends
// to one log through different replicas do not overlap, but for an append sent again
// while the first is still on its way (a replica too slow to answer): both write the same
// bytes at the same offset, and only a third append, sent after the second was answered
// and overtaken by the first, can be lost. Logs are small beside results.
//
// It imports only job and artifact of chaperone's packages.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// partSize is the size of one part of a streamed upload: the memory an upload holds, and
// with S3's 10,000 parts a file size limit of 160 GiB.
const partSize = 16 << 20

// Config says where the artifacts live and how to reach them.
type Config struct {
	Bucket string
	Prefix string // ends with "/" unless empty
	// Endpoint is the server's URL (https://s3.example.org); empty is AWS S3.
	Endpoint                           string
	Region                             string
	AccessKey, SecretKey, SessionToken string
	// PathStyle addresses buckets in the path (endpoint/bucket/key), as self-hosted servers
	// need; otherwise as a host name (bucket.endpoint).
	PathStyle bool
}

// IsURL reports whether s names an S3 location.
func IsURL(s string) bool { return strings.HasPrefix(s, "s3://") }

// ConfigFromEnv reads the location from an s3://bucket/prefix URL and the rest from the
// standard AWS environment: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION (or
// AWS_DEFAULT_REGION), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN.
// A custom endpoint is addressed path-style, as self-hosted servers expect, unless
// AWS_S3_FORCE_PATH_STYLE is "false".
func ConfigFromEnv(location string) (Config, error) {
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return Config{}, fmt.Errorf("s3: want s3://bucket/prefix, got %q", location)
	}
	c := Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"),
		Endpoint:  firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
		Region:    firstEnv("AWS_REGION", "AWS_DEFAULT_REGION"),
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken: os.Getenv("AWS_SESSION_TOKEN")}
	if c.Prefix != "" {
		c.Prefix += "/"
	}
	c.PathStyle = c.Endpoint != "" && os.Getenv("AWS_S3_FORCE_PATH_STYLE") != "false"
	return c, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Store is an artifact.Store in a bucket.
type Store struct {
	c      *minio.Client
	bucket string
	prefix string

	mu   sync.Mutex
	logs map[string]*sync.Mutex // per-job append locks
}

var _ artifact.Store = (*Store)(nil)

// Open connects to the bucket of cfg and checks that it is there.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	endpoint, secure := "s3.amazonaws.com", true
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("s3: endpoint %q is not an http(s) URL", cfg.Endpoint)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	creds := credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	if cfg.AccessKey == "" {
		creds = credentials.NewIAM("") // instance or container role
	}
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3: bucket %s: %w", cfg.Bucket, err)
	}
	if !ok {
		return nil, fmt.Errorf("s3: bucket %s does not exist", cfg.Bucket)
	}
	return &Store{c: c, bucket: cfg.Bucket, prefix: cfg.Prefix, logs: map[string]*sync.Mutex{}}, nil
}

func (s *Store) jobKey(jobID string) string { return s.prefix + "jobs/" + jobID + "/" }

func (s *Store) attemptKey(jobID string, attempt int) (string, error) {
	if !job.ValidID(jobID) {
		return "", fmt.Errorf("%w: job id %q", artifact.ErrInvalidPath, jobID)
	}
	if attempt < 1 {
		return "", fmt.Errorf("%w: attempt %d: attempts count from 1", artifact.ErrInvalidPath, attempt)
	}
	return s.jobKey(jobID) + "attempt-" + strconv.Itoa(attempt) + "/", nil
}

func (s *Store) fileKey(jobID string, attempt int, p string) (string, error) {
	dir, err := s.attemptKey(jobID, attempt)
	if err != nil {
		return "", err
	}
	if err := artifact.CheckPath(p); err != nil {
		return "", err
	}
	return dir + p, nil
}

// Put writes r to the object (put); a failed or canceled upload leaves no object and
// the previous version, if any, in place.
func (s *Store) Put(ctx context.Context, jobID string, attempt int, p string, r io.Reader) error {
	key, err := s.fileKey(jobID, attempt, p)
	if err != nil {
		return err
	}
	return s.put(ctx, key, p, r)
}

// put streams r into the object at key. A reader that knows its length (a bytes.Buffer,
// bytes.Reader or strings.Reader) goes up in one request when it fits a part; any other
// in parts, for each of which minio holds a buffer of partSize.
func (s *Store) put(ctx context.Context, key, name string, r io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	size := int64(-1)
	if l, ok := r.(interface{ Len() int }); ok {
		size = int64(l.Len())
	}
	_, err := s.c.PutObject(ctx, s.bucket, key, artifact.ContextReader(ctx, r), size,
		minio.PutObjectOptions{PartSize: partSize, ContentType: "application/octet-stream"})
	if err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	return nil
}

// Open returns the file, pinned to the version it found; an error wrapping
// artifact.ErrNotFound when there is none or p is not a name Put could have written.
func (s *Store) Open(ctx context.Context, jobID string, attempt int, p string) (artifact.File, error) {
	key, err := s.fileKey(jobID, attempt, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", artifact.ErrNotFound, err)
	}
	return s.open(ctx, key, p)
}

func (s *Store) open(ctx context.Context, key, name string) (artifact.File, error) {
	// One GET for the whole object: reading on streams that response, so a read from the
	// start sees one version even while the object is replaced.
	body, info, _, err := s.core().GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("%w: %s", artifact.ErrNotFound, name)
		}
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	return &object{s: s, key: key, ctx: context.WithoutCancel(ctx), body: body, etag: info.ETag,
		info: fileInfo{name: path.Base(name), size: info.Size, mod: info.LastModified}}, nil
}

func (s *Store) core() minio.Core { return minio.Core{Client: s.c} }

func isNotFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound"
}

// object is an open object. It reads the body of one GET; after a Seek elsewhere, the next
// Read makes a ranged GET from there, conditional on the ETag of the version opened, so
// that a file replaced meanwhile fails the read instead of mixing two versions.
type object struct {
	s    *Store
	key  string
	ctx  context.Context // of the Open, without its deadline: reads come later
	body io.ReadCloser   // nil after a Seek until the next Read
	pos  int64
	etag string
	info fileInfo
}

func (o *object) Read(p []byte) (int, error) {
	if o.pos >= o.info.size {
		return 0, io.EOF
	}
	if o.body == nil {
		opts := minio.GetObjectOptions{}
		if err := opts.SetMatchETag(o.etag); err != nil {
			return 0, err
		}
		if o.pos > 0 { // SetRange(0, 0) would ask for the first byte only
			if err := opts.SetRange(o.pos, 0); err != nil {
				return 0, err
			}
		}
		body, _, _, err := o.s.core().GetObject(o.ctx, o.s.bucket, o.key, opts)
		if err != nil {
			return 0, fmt.Errorf("reading %s from %d: %w", o.info.name, o.pos, err)
		}
		o.body = body
	}
	n, err := o.body.Read(p)
	o.pos += int64(n)
	return n, err
}

func (o *object) Seek(offset int64, whence int) (int64, error) {
	var pos int64
	switch whence {
	case io.SeekStart:
		pos = offset
	case io.SeekCurrent:
		pos = o.pos + offset
	case io.SeekEnd:
		pos = o.info.size + offset
	default:
		return 0, fmt.Errorf("seek: whence %d", whence)
	}
	if pos < 0 {
		return 0, fmt.Errorf("seek: negative position %d", pos)
	}
	if pos != o.pos && o.body != nil {
		o.body.Close()
		o.body = nil
	}
	o.pos = pos
	return pos, nil
}

func (o *object) Close() error {
	if o.body == nil {
		return nil
	}
	err := o.body.Close()
	o.body = nil
	return err
}

func (o *object) Stat() (iofs.FileInfo, error) { return o.info, nil }

type fileInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i fileInfo) Name() string        { return i.name }
func (i fileInfo) Size() int64         { return i.size }
func (i fileInfo) Mode() iofs.FileMode { return 0o644 }
func (i fileInfo) ModTime() time.Time  { return i.mod }
func (i fileInfo) IsDir() bool         { return false }
func (i fileInfo) Sys() any            { return nil }

// DeleteAttempt removes one attempt's files; an attempt with no files is not an error.
func (s *Store) DeleteAttempt(ctx context.Context, jobID string, attempt int) error {
	dir, err := s.attemptKey(jobID, attempt)
	if err != nil {
		return err
	}
	return s.removeAll(ctx, dir)
}

// DeleteJob removes every object of the job.
func (s *Store) DeleteJob(ctx context.Context, jobID string) error {
	if !job.ValidID(jobID) {
		return fmt.Errorf("%w: job id %q", artifact.ErrInvalidPath, jobID)
	}
	return s.removeAll(ctx, s.jobKey(jobID))
}

// removeAll removes every object under prefix, in batches as it lists them.
func (s *Store) removeAll(ctx context.Context, prefix string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	listCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	objects := s.c.ListObjects(listCtx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true})
	var listErr error
	keys := make(chan minio.ObjectInfo)
	go func() {
		defer close(keys)
		for o := range objects {
			if o.Err != nil {
				listErr = o.Err
				return
			}
			select {
			case keys <- o:
			case <-listCtx.Done():
				return
			}
		}
	}()
	var errs []error
	for e := range s.c.RemoveObjects(ctx, s.bucket, keys, minio.RemoveObjectsOptions{}) {
		if !isNotFound(e.Err) {
			errs = append(errs, fmt.Errorf("removing %s: %w", e.ObjectName, e.Err))
		}
	}
	return errors.Join(append(errs, listErr)...)
}

// Jobs lists the ids of the jobs that have objects.
func (s *Store) Jobs(ctx context.Context) ([]string, error) {
	var ids []string
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + "jobs/"}) {
		if o.Err != nil {
			return nil, o.Err
		}
		id := strings.TrimSuffix(strings.TrimPrefix(o.Key, s.prefix+"jobs/"), "/")
		if job.ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
