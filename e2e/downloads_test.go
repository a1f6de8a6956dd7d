package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"testing"
)

// TestDownloadsResumeWithRangesAndValidators: the archive and every artifact carry a strong
// ETag and answer byte ranges, so an interrupted download can be resumed without splicing
// two versions; the archive, though built anew for every request, is the same bytes each
// time.
func TestDownloadsResumeWithRangesAndValidators(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := s.predict("many:40")
	s.waitStatus(id, "succeeded")

	for _, path := range []string{"/v1/jobs/" + id + "/archive", "/v1/jobs/" + id + "/artifacts/t1/confidence.json"} {
		t.Run(path, func(t *testing.T) {
			whole := s.get(path).expect(http.StatusOK)
			body, etag := whole.Body, whole.Header.Get("ETag")
			size := int64(len(body))
			mustf(t, etag != "" && whole.Header.Get("Accept-Ranges") == "bytes" && whole.Header.Get("Last-Modified") != "",
				"validators missing: %v", whole.Header)
			again := s.get(path).expect(http.StatusOK)
			mustf(t, bytes.Equal(again.Body, body) && again.Header.Get("ETag") == etag,
				"a second download differs: %d bytes, ETag %s; first %d bytes, ETag %s", len(again.Body), again.Header.Get("ETag"), size, etag)

			ranges := []struct {
				header      string
				first, last int64
			}{
				{"bytes=0-", 0, size - 1},
				{"bytes=1-", 1, size - 1},
				{fmt.Sprintf("bytes=%d-", size/2), size / 2, size - 1},
				{fmt.Sprintf("bytes=%d-", size-1), size - 1, size - 1},
				{"bytes=2-5", 2, 5},
				{fmt.Sprintf("bytes=3-%d", size+100), 3, size - 1},
				{"bytes=-7", size - 7, size - 1},
			}
			for _, rg := range ranges {
				r := s.get(path, "Range: "+rg.header, "If-Range: "+etag).expect(http.StatusPartialContent)
				want := fmt.Sprintf("bytes %d-%d/%d", rg.first, rg.last, size)
				mustf(t, r.Header.Get("Content-Range") == want, "%s: Content-Range %q, want %q", rg.header, r.Header.Get("Content-Range"), want)
				mustf(t, bytes.Equal(r.Body, body[rg.first:rg.last+1]), "%s: the range's bytes are not those of the whole download", rg.header)
				mustf(t, r.Header.Get("Content-Length") == strconv.FormatInt(rg.last-rg.first+1, 10), "%s: Content-Length %q", rg.header, r.Header.Get("Content-Length"))
			}

			// Ranges the server answers with the whole download.
			for _, h := range [][]string{
				{"Range: bytes=0-1,4-5"},                 // several ranges
				{"Range: lines=1-2"},                     // another unit
				{"Range: bytes=5-2"},                     // malformed
				{"Range: bytes=1-", `If-Range: "other"`}, // another version
				{"Range: bytes=1-", `If-Range: W/` + etag},
				{"Range: bytes=1-", "If-Range: Mon, 02 Jan 2006 15:04:05 GMT"},
			} {
				r := s.get(path, h...).expect(http.StatusOK)
				mustf(t, bytes.Equal(r.Body, body), "%v: not the whole download", h)
			}

			r := s.get(path, fmt.Sprintf("Range: bytes=%d-", size))
			r.problem(http.StatusRequestedRangeNotSatisfiable, "range-not-satisfiable")
			mustf(t, r.Header.Get("Content-Range") == fmt.Sprintf("bytes */%d", size), "416 Content-Range %q", r.Header.Get("Content-Range"))

			s.get(path, "If-None-Match: "+etag).expect(http.StatusNotModified)
			s.get(path, `If-None-Match: "other", W/`+etag).expect(http.StatusNotModified)
			s.get(path, "If-Modified-Since: "+whole.Header.Get("Last-Modified")).expect(http.StatusNotModified)
			s.get(path, `If-None-Match: "other"`).expect(http.StatusOK)
			s.get(path, "If-Match: "+etag).expect(http.StatusOK)
			s.get(path, `If-Match: "other"`).problem(http.StatusPreconditionFailed, "precondition-failed")
			s.get(path, "If-Unmodified-Since: Mon, 02 Jan 2006 15:04:05 GMT").problem(http.StatusPreconditionFailed, "precondition-failed")
		})
	}
}

func TestLogsReadFromAnOffset(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := s.predict("ok")
	s.waitStatus(id, "succeeded")
	path := "/v1/jobs/" + id + "/logs"
	log := s.get(path).expect(http.StatusOK).Body
	mustf(t, len(log) > 10, "log %q", log)
	r := s.get(path, "Range: bytes=10-").expect(http.StatusPartialContent)
	mustf(t, bytes.Equal(r.Body, log[10:]), "log from offset 10 = %q, want %q", r.Body, log[10:])
	r = s.get(path, fmt.Sprintf("Range: bytes=%d-", len(log)))
	r.problem(http.StatusRequestedRangeNotSatisfiable, "range-not-satisfiable")
	mustf(t, r.Header.Get("Content-Range") == fmt.Sprintf("bytes */%d", len(log)), "416 Content-Range %q", r.Header.Get("Content-Range"))
	// The log has no validators: conditions are ignored rather than answered with 304.
	s.get(path, "If-None-Match: *").expect(http.StatusOK)
}

func TestArtifactOfAJobNotReadyIsAConflict(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := s.predict("hang")
	s.waitStatus(id, "running")
	s.get("/v1/jobs/"+id+"/artifacts/t1.cif").problem(http.StatusConflict, "conflict")
	s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)
}
