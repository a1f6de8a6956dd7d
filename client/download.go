package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Suffixes of the files a download keeps next to its destination until it completes: the
// bytes received so far, and the ETag of the version they belong to.
const (
	PartialSuffix = ".part"
	ETagSuffix    = ".part.etag"
)

// DownloadArtifact saves one artifact (path exactly as the results manifest lists it) to
// the file dest, creating dest's folder. See DownloadArchive for how it survives a broken
// connection.
func (c *Client) DownloadArtifact(ctx context.Context, id, path, dest string) error {
	return c.download(ctx, jobPath(id, "artifacts", path), dest)
}

// DownloadArchive saves the zip of all the job's results to the file dest, creating
// dest's folder.
//
// The bytes go to dest+PartialSuffix as they arrive, and the version's ETag to
// dest+ETagSuffix; dest appears, whole, only when the transfer is complete. When the
// connection breaks, the download resumes where it stopped, with a Range request guarded
// by If-Range, so the server sends the rest only if the file is still the version
// already half received (and the whole new version otherwise). A connection that breaks
// again is resumed again for as long as each attempt brings bytes; after the retry
// policy's Attempts in a row without any, the call fails with a *ConnectionError and
// leaves the partial file, which a later call for the same dest resumes.
func (c *Client) DownloadArchive(ctx context.Context, id, dest string) error {
	return c.download(ctx, jobPath(id, "archive"), dest)
}

func (c *Client) download(ctx context.Context, path, dest string) (err error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	part, tagFile := dest+PartialSuffix, dest+ETagSuffix
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil && have == 0 {
			// Nothing worth resuming (a 404, say): leave no litter.
			os.Remove(part)
			os.Remove(tagFile)
		}
	}()
	etag := ""
	if b, err := os.ReadFile(tagFile); err == nil {
		etag = strings.TrimSpace(string(b))
	}
	fruitless := 0 // attempts in a row that brought no bytes
	for {
		n, again, err := c.fetchFrom(ctx, path, f, &have, &etag, tagFile)
		if err == nil {
			break
		}
		if !again || ctx.Err() != nil {
			return err
		}
		if n > 0 {
			fruitless = 0
		}
		fruitless++
		if fruitless >= c.retry.Attempts {
			return err
		}
		if err := c.sleep(ctx, c.retry.backoff(fruitless)); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(part, dest); err != nil {
		return err
	}
	if err := os.Remove(tagFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// fetchFrom makes one request for the bytes from *have on and appends them to f,
// returning how many it added, and nil once the file is complete. again says whether
// another request may get further: the transfer broke off, or the server's answer did
// not fit what is held, which has then been discarded. Failures of the request itself
// were already retried by send.
func (c *Client) fetchFrom(ctx context.Context, path string, f *os.File, have *int64, etag *string, tagFile string) (n int64, again bool, err error) {
	cl := call{method: http.MethodGet, path: path}
	// Without an ETag nothing proves the rest would be of the same version: ask for the
	// whole file, whose 200 empties the partial one.
	if *have > 0 && *etag != "" {
		cl.header = http.Header{
			"Range":    {"bytes=" + strconv.FormatInt(*have, 10) + "-"},
			"If-Range": {*etag},
		}
	}
	mismatch := func(what string) (int64, bool, error) {
		if err := c.restart(f, have, etag, tagFile, ""); err != nil {
			return 0, false, err
		}
		return 0, true, fmt.Errorf("chaperone: GET %s: %s; starting over", path, what)
	}
	res, err := c.send(ctx, cl)
	var apiErr *Error
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusRequestedRangeNotSatisfiable {
		// Nothing lies past what is held, and If-Range held, so this is the same
		// version: complete if the lengths agree.
		if total, ok := unsatisfiedLength(apiErr.header); ok && total == *have {
			return 0, false, nil
		}
		return mismatch("the partial file is longer than the file")
	}
	if err != nil {
		return 0, false, err
	}
	defer res.Body.Close()

	var expect int64 = -1 // bytes this answer should bring; -1 when it does not say
	switch res.StatusCode {
	case http.StatusPartialContent:
		first, total, ok := contentRange(res.Header.Get("Content-Range"))
		if !ok || first != *have {
			return mismatch("the server sent another range than the one asked for")
		}
		expect = total - first
	case http.StatusOK:
		// The whole file: the first request, or the version changed, or the server does
		// not do ranges.
		if err := c.restart(f, have, etag, tagFile, res.Header.Get("ETag")); err != nil {
			return 0, false, err
		}
		expect = res.ContentLength
	default:
		return 0, false, fmt.Errorf("chaperone: GET %s: unexpected status %s", path, res.Status)
	}
	n, err = io.Copy(f, res.Body)
	*have += n
	if err == nil && expect >= 0 && n != expect {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		if ctx.Err() != nil {
			return n, false, ctx.Err()
		}
		return n, true, &ConnectionError{Method: cl.method, URL: c.base + path, Attempts: 1,
			Err: fmt.Errorf("transfer cut short after %d bytes: %w", *have, err)}
	}
	return n, false, nil
}

// restart empties the partial file and records the version about to be received (none:
// the next request asks for the whole file).
func (c *Client) restart(f *os.File, have *int64, etag *string, tagFile, newTag string) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	*have, *etag = 0, newTag
	if newTag == "" || strings.HasPrefix(newTag, "W/") {
		// Nothing can prove a later range belongs to the same version.
		*etag = ""
		if err := os.Remove(tagFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(tagFile, []byte(newTag+"\n"), 0o644)
}

// contentRange parses "bytes first-last/total".
func contentRange(v string) (first, total int64, ok bool) {
	spec, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, false
	}
	rng, size, ok := strings.Cut(spec, "/")
	a, b, ok2 := strings.Cut(rng, "-")
	if !ok || !ok2 {
		return 0, 0, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	total, err3 := strconv.ParseInt(size, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || last != total-1 {
		return 0, 0, false
	}
	return first, total, true
}

// unsatisfiedLength parses the "bytes */total" of a 416.
func unsatisfiedLength(h http.Header) (int64, bool) {
	v, ok := strings.CutPrefix(h.Get("Content-Range"), "bytes */")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}
