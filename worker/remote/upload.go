package remote

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// An artifact goes up in parts, which the server stages in a file until the last one
// arrives and the whole file goes to the queue. What a worker token can make the server
// keep on its disk that way is bounded three ways:
//
//   - a part is staged only for the worker that holds the lease of its attempt (the holder
//     is a worker of the request's token), checked before each part;
//   - the parts staged for one job, and for all the workers of one token, are capped
//     (StagingPerJob, StagingPerWorker): a part that would pass a cap is refused by its
//     Content-Length before any of it is read;
//   - what an attempt staged goes when its lease ends: at once when the handler sees the
//     end (a refused write, a completion), else at the next sweep (SweepEvery).
//
// The layout, <Staging>/<token>/<job>-<attempt>/<sha256 of the path>, says whose each file
// is, so that a cap is the size of a folder and a sweep needs no other record. <token> is
// the token's name in unpadded base64url.

// Default caps of staged upload bytes.
const (
	DefaultStagingPerJob    = 4 << 30
	DefaultStagingPerWorker = 16 << 30
)

// Leases says who holds the lease of an attempt: backend.Queue.Holder.
type Leases interface {
	// Holder returns the id of the worker that holds the lease of f, or job.ErrLeaseLost
	// when the job does not run under f.
	Holder(ctx context.Context, f worker.Fence) (string, error)
}

// staging is the folder of staged uploads and the locks on them.
type staging struct {
	dir              string
	perJob, perToken int64

	mu       sync.Mutex
	reserved map[string]int64       // bytes being written now, by token folder and by job id
	locks    map[string]*sync.Mutex // one per upload file being written

	// folders orders the removal of emptied folders after the opening of files, held for
	// writing by a removal: else a sweep could remove a token's folder, empty for an
	// instant, between an upload's making of it and of its attempt's folder in it.
	folders sync.RWMutex
}

// upload is one staged upload: its file and the folders it is in.
type upload struct {
	token   string // the token's folder
	attempt string // the attempt's folder
	file    string
	fence   worker.Fence
	path    string
}

func newStaging(dir string, perJob, perToken int64) (*staging, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("remote: staging folder: %w", err)
	}
	if perJob <= 0 {
		perJob = DefaultStagingPerJob
	}
	if perToken <= 0 {
		perToken = DefaultStagingPerWorker
	}
	return &staging{dir: dir, perJob: perJob, perToken: perToken, reserved: map[string]int64{}, locks: map[string]*sync.Mutex{}}, nil
}

func (s *staging) upload(token string, f worker.Fence, path string) upload {
	tok := filepath.Join(s.dir, base64.RawURLEncoding.EncodeToString([]byte(token)))
	att := filepath.Join(tok, f.JobID+"-"+strconv.Itoa(f.Attempt))
	sum := sha256.Sum256([]byte(path))
	return upload{token: tok, attempt: att, file: filepath.Join(att, hex.EncodeToString(sum[:])), fence: f, path: path}
}

// lock takes the lock of one upload file, so that its parts, its completion and a sweep
// take turns; the returned function gives it back.
func (s *staging) lock(file string) func() {
	s.mu.Lock()
	l, ok := s.locks[file]
	if !ok {
		l = new(sync.Mutex)
		s.locks[file] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// forget drops the lock of a file that is gone; its holder still holds it.
func (s *staging) forget(file string) {
	s.mu.Lock()
	delete(s.locks, file)
	s.mu.Unlock()
}

// reserve grants n bytes more for u under both caps; release gives them back. Usage is
// what the folders hold plus what other parts are writing now, so that parts written at
// once cannot pass a cap together.
func (s *staging) reserve(u upload, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	jobHeld := s.reserved[u.fence.JobID]
	if dirs, err := filepath.Glob(filepath.Join(s.dir, "*", u.fence.JobID+"-*")); err == nil {
		for _, d := range dirs {
			jobHeld += sizeOfDir(d)
		}
	}
	tokenHeld := s.reserved[u.token]
	if dirs, err := os.ReadDir(u.token); err == nil {
		for _, d := range dirs {
			tokenHeld += sizeOfDir(filepath.Join(u.token, d.Name()))
		}
	}
	switch {
	case jobHeld+n > s.perJob:
		return tooLarge{fmt.Sprintf("The uploads of job %s would hold more than the %d bytes that one job may stage on this server (the operator's --upload-staging-per-job); it holds %d.",
			u.fence.JobID, s.perJob, jobHeld)}
	case tokenHeld+n > s.perToken:
		return tooLarge{fmt.Sprintf("The uploads of this worker token would hold more than the %d bytes that its workers may stage on this server (the operator's --upload-staging-per-worker); they hold %d.",
			s.perToken, tokenHeld)}
	}
	s.reserved[u.fence.JobID] += n
	s.reserved[u.token] += n
	return nil
}

func (s *staging) release(u upload, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range []string{u.fence.JobID, u.token} {
		if s.reserved[k] -= n; s.reserved[k] == 0 {
			delete(s.reserved, k)
		}
	}
}

// open opens the upload's file to append to, making it and its folders if need be.
func (s *staging) open(u upload) (*os.File, error) {
	s.folders.RLock()
	defer s.folders.RUnlock()
	if err := os.MkdirAll(u.attempt, 0o750); err != nil {
		return nil, err
	}
	return os.OpenFile(u.file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

// dropAttempt removes what an attempt staged, under the locks of its files.
func (s *staging) dropAttempt(u upload) {
	files, _ := os.ReadDir(u.attempt)
	for _, f := range files {
		name := filepath.Join(u.attempt, f.Name())
		unlock := s.lock(name)
		os.Remove(name)
		s.forget(name)
		unlock()
	}
	s.removeEmpty(u.attempt, u.token)
}

// removeEmpty removes those of the folders that are empty, in order, while no file is
// being opened.
func (s *staging) removeEmpty(folders ...string) {
	s.folders.Lock()
	defer s.folders.Unlock()
	for _, dir := range folders {
		os.Remove(dir) // fails, as it should, on a folder that holds anything
	}
}

// sweep removes what no held lease stages: the folders of attempts whose lease ended or
// is held by a worker of another token, and anything that is not in the layout.
// Attempts whose holder cannot be learnt now (the store unreachable) stay for the next.
func (s *staging) sweep(ctx context.Context, leases Leases) {
	tokens, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, t := range tokens {
		name, err := base64.RawURLEncoding.DecodeString(t.Name())
		if !t.IsDir() || err != nil {
			os.RemoveAll(filepath.Join(s.dir, t.Name()))
			continue
		}
		attempts, _ := os.ReadDir(filepath.Join(s.dir, t.Name()))
		for _, a := range attempts {
			id, n, _ := strings.Cut(a.Name(), "-")
			attempt, err := strconv.Atoi(n)
			u := s.upload(string(name), worker.Fence{JobID: id, Attempt: attempt}, "")
			if !a.IsDir() || err != nil || !job.ValidID(id) {
				os.RemoveAll(u.attempt)
				continue
			}
			holder, err := leases.Holder(ctx, u.fence)
			if errors.Is(err, job.ErrLeaseLost) || err == nil && !strings.HasPrefix(holder, string(name)+"/") {
				s.dropAttempt(u)
			}
		}
		s.removeEmpty(filepath.Join(s.dir, t.Name()))
	}
}

// sizeOfDir is the bytes the files of one attempt's folder hold.
func sizeOfDir(dir string) int64 {
	entries, _ := os.ReadDir(dir)
	var n int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

func sizeOf(name string) int64 {
	if st, err := os.Stat(name); err == nil {
		return st.Size()
	}
	return 0
}

// staged checks that the request's token holds the lease of the attempt it names and
// returns its upload; an attempt whose lease ended gets what it staged removed.
func (h *Handler) staged(r *http.Request) (upload, error) {
	f, err := parseFence(r.PathValue("id"), r.PathValue("attempt"))
	if err != nil {
		return upload{}, err
	}
	token := r.Context().Value(tokenName{}).(string)
	u := h.staging.upload(token, f, r.PathValue("path"))
	if err := h.holds(r.Context(), token, f); err != nil {
		if errors.Is(err, job.ErrLeaseLost) {
			h.staging.dropAttempt(u)
		}
		return upload{}, err
	}
	return u, nil
}

// holds returns nil when a worker of token holds the lease of f, and job.ErrLeaseLost when
// none does: for the token, another token's lease is as good as none.
func (h *Handler) holds(ctx context.Context, token string, f worker.Fence) error {
	holder, err := h.cfg.Leases.Holder(ctx, f)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(holder, token+"/") {
		return job.ErrLeaseLost
	}
	return nil
}

// uploadOffset answers how many bytes of an upload the server holds.
func (h *Handler) uploadOffset(w http.ResponseWriter, r *http.Request) {
	u, err := h.staged(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer h.staging.lock(u.file)()
	w.Header().Set(headerOffset, strconv.FormatInt(sizeOf(u.file), 10))
	w.WriteHeader(http.StatusNoContent)
}

// putArtifact appends one part to a staged upload at the offset it names, and hands the
// whole file to the queue with its last part. A part at another offset than the server
// holds is refused with the offset the server holds, from which the client resumes.
func (h *Handler) putArtifact(w http.ResponseWriter, r *http.Request) {
	u, err := h.staged(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset, err := strconv.ParseInt(r.Header.Get(headerOffset), 10, 64)
	if err != nil || offset < 0 {
		h.fail(w, r, badRequest{"Send the offset this part starts at, a whole number of bytes, in an " + headerOffset + " header."})
		return
	}
	unlock := h.staging.lock(u.file)
	defer unlock()
	held := sizeOf(u.file)
	w.Header().Set(headerOffset, strconv.FormatInt(held, 10))
	if offset != held {
		h.fail(w, r, offsetMismatch{held: held, sent: offset})
		return
	}
	if err := h.stage(r, u); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set(headerOffset, strconv.FormatInt(sizeOf(u.file), 10))
	if r.Header.Get(headerComplete) != "1" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	defer func() {
		os.Remove(u.file)
		h.staging.forget(u.file)
	}()
	whole, err := os.Open(u.file)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer whole.Close()
	if err := h.cfg.Queue.PutArtifact(r.Context(), u.fence, u.path, whole); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// stage appends the request's body to the upload's file within the caps. What arrived
// before a dropped connection stays, for the next part to resume after.
func (h *Handler) stage(r *http.Request, u upload) error {
	if r.ContentLength < 0 {
		return badRequest{"Send each part with a Content-Length: the server checks it against its staging caps before it takes any of it."}
	}
	if err := h.staging.reserve(u, r.ContentLength); err != nil {
		return err
	}
	defer h.staging.release(u, r.ContentLength)
	file, err := h.staging.open(u)
	if err != nil {
		return err
	}
	body := &bodyReader{r: r.Body}
	_, copyErr := io.Copy(file, body)
	if err := errors.Join(copyErr, file.Close()); err != nil {
		if body.err != nil {
			return badRequest{brokenBody + " The server holds what arrived: resume from its " + headerOffset + "."}
		}
		return err
	}
	return nil
}

// bodyReader remembers an error of reading a request body, to tell it from one of writing
// what was read.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}
