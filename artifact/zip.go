package artifact

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// ZipEntry is one file of an archive. Open is called only when the entry is written, so
// at most one entry is open at a time however many the archive holds.
type ZipEntry struct {
	Name string // slash path inside the archive; must pass CheckPath
	Open func() (io.ReadCloser, error)
	// Modified is the time recorded for the entry; zero means the time WriteZip was called.
	Modified time.Time
}

// storedExt lists extensions whose content is already compressed: deflating them again
// costs CPU and gains nothing. Anything else is deflated, because what the tools write is
// overwhelmingly text (mmCIF, PDB, JSON, CSV, logs, alignments) that shrinks several-fold.
var storedExt = map[string]bool{
	".npz": true, ".parquet": true, ".zip": true, ".gz": true, ".tgz": true, ".bz2": true,
	".xz": true, ".zst": true, ".png": true, ".jpg": true, ".jpeg": true, ".webp": true,
}

// ZipMethod is the compression WriteZip uses for an entry name.
func ZipMethod(name string) uint16 {
	if storedExt[strings.ToLower(path.Ext(name))] {
		return zip.Store
	}
	return zip.Deflate
}

// WriteZip writes a zip archive of files to w as it is built: each entry is read from its
// Open and copied through in small buffers, so neither the archive nor any file is held in
// memory, and the first bytes reach w before the last file is opened.
//
// On error the archive is left unfinished (no central directory), which every zip reader
// rejects; a caller streaming it over HTTP should abort the response rather than end it
// normally, so the client sees a failed download and not a short archive.
func WriteZip(ctx context.Context, w io.Writer, files []ZipEntry) error {
	now := time.Now()
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if err := CheckPath(f.Name); err != nil {
			return fmt.Errorf("zip: %w", err)
		}
		// A zip may hold a name twice, but extractors then silently keep one of them.
		if seen[f.Name] {
			return fmt.Errorf("zip: %q listed twice", f.Name)
		}
		seen[f.Name] = true
	}
	zw := zip.NewWriter(w)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		mod := f.Modified
		if mod.IsZero() {
			mod = now
		}
		if err := writeEntry(ctx, zw, f, mod); err != nil {
			return fmt.Errorf("zip: %s: %w", f.Name, err)
		}
	}
	return zw.Close()
}

func writeEntry(ctx context.Context, zw *zip.Writer, f ZipEntry, mod time.Time) (err error) {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := rc.Close(); err == nil {
			err = cerr
		}
	}()
	// Sizes are unknown up front, so archive/zip writes a data descriptor after the content
	// and switches to zip64 on its own when a file passes 4 GiB.
	dst, err := zw.CreateHeader(&zip.FileHeader{
		Name:     f.Name,
		Method:   ZipMethod(f.Name),
		Modified: mod.UTC(),
	})
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, ContextReader(ctx, rc))
	return err
}

// ContextReader returns a reader that fails once ctx ends, so a long copy stops when the
// client hangs up or the job is canceled instead of reading on to the end.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
