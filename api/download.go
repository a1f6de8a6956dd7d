package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
)

// download is one downloadable representation (an artifact, the archive, the log) as the
// conditional and range machinery of serveDownload sees it.
type download struct {
	// etag is a strong validator, quoted; empty when the representation has none (the log,
	// which grows while the job runs).
	etag string
	// modified is sent as Last-Modified; zero when there is none.
	modified time.Time

	// A file has a size known up front and is read from any offset: section copies n
	// bytes starting at offset off to w, n < 0 meaning to the end.
	size    int64
	section func(w io.Writer, off, n int64) error

	// A built representation (the archive) learns its size only by being produced, which
	// is costly: stream, when set, produces it whole into w, and a range of it is cut from
	// a single production spooled to a temporary file.
	stream func(w io.Writer) error
}

// serveDownload answers a GET or HEAD of d: the preconditions of RFC 9110 §13.2.2
// (If-Match, If-Unmodified-Since → 412; If-None-Match, If-Modified-Since → 304), then one
// byte range (Range, guarded by If-Range → 206, or 416 when it lies past the end), else the
// whole representation. A request for several ranges gets the whole representation, as
// §14.2 allows, so that every 206 is a single part a client can append to what it has.
//
// The caller sets Content-Type and Content-Disposition first. Once the status is sent a
// failure can only cut the body short; the response is then aborted, so that the client
// sees a failed transfer instead of a short file that looks complete.
func (s *Server) serveDownload(w http.ResponseWriter, r *http.Request, jobID string, d download) {
	h := w.Header()
	h.Set("Accept-Ranges", "bytes")
	if d.etag != "" {
		h.Set("ETag", d.etag)
	}
	if !d.modified.IsZero() {
		h.Set("Last-Modified", d.modified.UTC().Format(http.TimeFormat))
	}
	status := 0
	if d.etag != "" || !d.modified.IsZero() {
		// A representation without validators (the log) ignores conditional headers.
		status = preconditions(r, d.etag, d.modified)
	}
	switch status {
	case http.StatusPreconditionFailed:
		s.writeProblem(w, r, problem.PreconditionFailed, "The file does not match If-Match or If-Unmodified-Since: it is not the version the request names. Fetch it again without the condition.")
		return
	case http.StatusNotModified:
		h.Del("Content-Type")
		h.Del("Content-Disposition")
		w.WriteHeader(http.StatusNotModified)
		return
	}

	ctx := r.Context()
	spec, ranged := singleRange(r.Header.Get("Range"))
	if ranged && !ifRangeHolds(r.Header.Get("If-Range"), d.etag, d.modified) {
		ranged = false
	}
	if !ranged {
		if d.stream == nil {
			h.Set("Content-Length", strconv.FormatInt(d.size, 10))
		}
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		if d.stream != nil {
			s.finishDownload(ctx, jobID, d.stream(w))
		} else {
			s.finishDownload(ctx, jobID, d.section(w, 0, -1))
		}
		return
	}
	size, section := d.size, d.section
	if d.stream != nil {
		spooled, err := spool(d.stream, spec.keepFrom(), r.Method != http.MethodHead)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer spooled.close()
		size, section = spooled.size, spooled.section
	}
	start, end, ok := spec.resolve(size)
	if !ok {
		h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		s.writeProblem(w, r, problem.RangeNotSatisfiable, "The range "+r.Header.Get("Range")+" lies outside the file, which is "+strconv.FormatInt(size, 10)+" bytes long.")
		return
	}
	h.Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(end, 10)+"/"+strconv.FormatInt(size, 10))
	h.Set("Content-Length", strconv.FormatInt(end-start+1, 10))
	w.WriteHeader(http.StatusPartialContent)
	if r.Method != http.MethodHead {
		s.finishDownload(ctx, jobID, section(w, start, end-start+1))
	}
}

// spooled is one production of a built representation, of which the bytes from offset
// from onwards were kept in a temporary file.
type spooled struct {
	size int64
	from int64
	file *os.File // nil when nothing was kept
}

// spool produces a built representation once, to learn its size, keeping its bytes from
// offset from onwards (if keep) so that a range starting there is served from them
// instead of from a second production.
func spool(stream func(io.Writer) error, from int64, keep bool) (*spooled, error) {
	sp := &spooled{from: from}
	tail := &tailWriter{w: io.Discard, from: from}
	if keep {
		f, err := os.CreateTemp("", "chaperone-range-*")
		if err != nil {
			return nil, err
		}
		sp.file = f
		tail.w = f
	}
	if err := stream(tail); err != nil {
		sp.close()
		return nil, err
	}
	sp.size = tail.n
	return sp, nil
}

// section copies n bytes from offset off of the representation, which must lie within
// what was kept.
func (sp *spooled) section(w io.Writer, off, n int64) error {
	if sp.file == nil || off < sp.from {
		return fmt.Errorf("spooled range: offset %d is before the kept bytes (from %d)", off, sp.from)
	}
	_, err := io.Copy(w, io.NewSectionReader(sp.file, off-sp.from, n))
	return err
}

func (sp *spooled) close() {
	if sp.file != nil {
		sp.file.Close()
		os.Remove(sp.file.Name())
	}
}

func (s *Server) finishDownload(ctx context.Context, jobID string, err error) {
	if err == nil || ctx.Err() != nil {
		return // done, or the client hung up
	}
	s.log.ErrorContext(ctx, "download cut short", "job", jobID, "request_id", requestID(ctx), "error", err.Error())
	panic(http.ErrAbortHandler)
}

// preconditions evaluates the conditional headers of a GET in the order of RFC 9110
// §13.2.2 and returns 412, 304, or 0 to go on. Dates are compared at the one-second
// resolution of HTTP dates; a date that does not parse is ignored, as the RFC says.
func preconditions(r *http.Request, etag string, modified time.Time) int {
	modified = modified.Truncate(time.Second)
	if im := r.Header.Get("If-Match"); im != "" {
		if !etagListMatches(im, etag, false) {
			return http.StatusPreconditionFailed
		}
	} else if ius, err := http.ParseTime(r.Header.Get("If-Unmodified-Since")); err == nil && !modified.IsZero() {
		if modified.After(ius) {
			return http.StatusPreconditionFailed
		}
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if etagListMatches(inm, etag, true) {
			return http.StatusNotModified
		}
	} else if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !modified.IsZero() {
		if !modified.After(ims) {
			return http.StatusNotModified
		}
	}
	return 0
}

// etagListMatches reports whether a header's list of entity tags ("*" or "a", W/"b", ...)
// names etag: by weak comparison for If-None-Match, strong for If-Match (RFC 9110 §8.8.3.2).
func etagListMatches(list, etag string, weak bool) bool {
	if strings.TrimSpace(list) == "*" {
		return true // the representation exists
	}
	if etag == "" {
		return false
	}
	for tag := range strings.SplitSeq(list, ",") {
		tag = strings.TrimSpace(tag)
		if w, ok := strings.CutPrefix(tag, "W/"); ok {
			if !weak {
				continue // a weak tag never matches strongly
			}
			tag = w
		}
		if tag == etag {
			return true
		}
	}
	return false
}

// ifRangeHolds reports whether a range may be served under If-Range (RFC 9110 §13.1.5):
// absent, or naming this representation by its strong ETag or its exact Last-Modified.
// Anything else means the client holds another version, which gets the whole new one.
func ifRangeHolds(v, etag string, modified time.Time) bool {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return true
	case strings.HasPrefix(v, `"`):
		return etag != "" && v == etag
	case strings.HasPrefix(v, "W/"):
		return false
	}
	t, err := http.ParseTime(v)
	return err == nil && !modified.IsZero() && modified.Truncate(time.Second).Equal(t)
}

// byteRange is one range of a Range header: first-last, first- (last < 0), or the final
// suffix bytes (first < 0).
type byteRange struct{ first, last, suffix int64 }

// singleRange parses a Range header holding exactly one bytes range. A header that is
// absent, malformed, in another unit or asks for several ranges reports false: the whole
// representation is served (RFC 9110 §14.2 lets a server ignore Range).
func singleRange(v string) (byteRange, bool) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return byteRange{}, false
	}
	a, b, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return byteRange{}, false
	}
	num := func(s string) (int64, bool) {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil && n >= 0 && s[0] != '+'
	}
	if a == "" {
		n, ok := num(b)
		return byteRange{first: -1, last: -1, suffix: n}, ok
	}
	first, ok := num(a)
	if !ok {
		return byteRange{}, false
	}
	if b == "" {
		return byteRange{first: first, last: -1}, true
	}
	last, ok := num(b)
	if !ok || last < first {
		return byteRange{}, false
	}
	return byteRange{first: first, last: last}, true
}

// keepFrom is the first offset the range can ask for before the size is known: its start,
// or 0 for a suffix, which may be the whole representation.
func (br byteRange) keepFrom() int64 { return max(br.first, 0) }

// resolve turns the range into inclusive offsets within size bytes; false when it is not
// satisfiable (it starts at or past the end, or asks for an empty suffix).
func (br byteRange) resolve(size int64) (start, end int64, ok bool) {
	if br.first < 0 {
		if br.suffix == 0 || size == 0 {
			return 0, 0, false
		}
		return max(0, size-br.suffix), size - 1, true
	}
	if br.first >= size {
		return 0, 0, false
	}
	end = size - 1
	if br.last >= 0 {
		end = min(br.last, size-1)
	}
	return br.first, end, true
}

// tailWriter counts what is written to it and passes on the bytes from offset from onwards.
type tailWriter struct {
	w    io.Writer
	from int64
	n    int64 // bytes written so far
}

func (t *tailWriter) Write(p []byte) (int, error) {
	if skip := t.from - t.n; skip < int64(len(p)) {
		if _, err := t.w.Write(p[max(skip, 0):]); err != nil {
			return 0, err
		}
	}
	t.n += int64(len(p))
	return len(p), nil
}
