package artifact_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// entry is a ZipEntry over fixed content that records how it was opened and closed.
type entry struct {
	name    string
	content string
	mod     time.Time
}

func entries(es []entry, tr *tracker) []artifact.ZipEntry {
	var out []artifact.ZipEntry
	for _, e := range es {
		out = append(out, artifact.ZipEntry{
			Name:     e.name,
			Modified: e.mod,
			Open:     func() (io.ReadCloser, error) { return tr.open(strings.NewReader(e.content)), nil },
		})
	}
	return out
}

// tracker checks that WriteZip holds at most one entry open and closes every one.
type tracker struct {
	cur, peak, total int
}

func (tr *tracker) open(r io.Reader) io.ReadCloser {
	tr.cur++
	tr.total++
	tr.peak = max(tr.peak, tr.cur)
	return closer{r, func() { tr.cur-- }}
}

type closer struct {
	io.Reader
	close func()
}

func (c closer) Close() error { c.close(); return nil }

func sample() []entry {
	mod := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	return []entry{
		{"results.json", `{"rows": []}`, mod},
		{"run.log", strings.Repeat("step 1 of 10\n", 1000), mod},
		{"t1.cif", "data_t1\n" + strings.Repeat("ATOM 1 C CA . ALA A 1 1 ? 0.0 0.0 0.0\n", 500), mod},
		{"t1/confidence_t1_model_0.json", `{"confidence_score": 0.87}`, mod},
		{"t1/pae_t1_model_0.npz", "PK\x03\x04 already compressed \xff\x00", mod},
		{"embeddings.parquet", "PAR1\x00\x01PAR1", time.Time{}},
		{"empty.txt", "", time.Time{}},
	}
}

func TestWriteZipRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tr := &tracker{}
	es := sample()
	before := time.Now().Truncate(time.Second)
	if err := artifact.WriteZip(t.Context(), &buf, entries(es, tr)); err != nil {
		t.Fatal(err)
	}
	if tr.total != len(es) || tr.cur != 0 || tr.peak != 1 {
		t.Errorf("opened %d entries, %d left open, %d open at once; want %d, 0, 1", tr.total, tr.cur, tr.peak, len(es))
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != len(es) {
		t.Fatalf("archive holds %d files, want %d", len(zr.File), len(es))
	}
	for i, f := range zr.File {
		e := es[i]
		if f.Name != e.name {
			t.Errorf("file %d is %q, want %q", i, f.Name, e.name)
			continue
		}
		if got := readZipFile(t, f); got != e.content {
			t.Errorf("%s: content differs (%d bytes, want %d)", f.Name, len(got), len(e.content))
		}
		if want := artifact.ZipMethod(e.name); f.Method != want {
			t.Errorf("%s: method %d, want %d", f.Name, f.Method, want)
		}
		if e.mod.IsZero() {
			if f.Modified.Before(before) || f.Modified.After(time.Now()) {
				t.Errorf("%s: modified %v, want the time of writing", f.Name, f.Modified)
			}
		} else if !f.Modified.Equal(e.mod) {
			t.Errorf("%s: modified %v, want %v", f.Name, f.Modified, e.mod)
		}
	}
}

func TestZipMethod(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		want uint16
	}{
		{"t1.cif", zip.Deflate},
		{"t1.pdb", zip.Deflate},
		{"results.json", zip.Deflate},
		{"run.log", zip.Deflate},
		{"scores.csv", zip.Deflate},
		{"notes.txt", zip.Deflate},
		{"msa.a3m", zip.Deflate},
		{"no_extension", zip.Deflate},
		{"t1/pae.npz", zip.Store},
		{"embeddings.parquet", zip.Store},
		{"bundle.zip", zip.Store},
		{"x.cif.gz", zip.Store},
		{"PAE.NPZ", zip.Store},
	} {
		if got := artifact.ZipMethod(tt.name); got != tt.want {
			t.Errorf("ZipMethod(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestWriteZipStreams checks that the archive reaches the writer as it is built: by the
// time the second file is opened, the first (stored, so its size is known) has gone out.
func TestWriteZipStreams(t *testing.T) {
	t.Parallel()
	const first = 4 << 20
	var w countWriter
	var seen int64 = -1
	files := []artifact.ZipEntry{
		{Name: "big.npz", Open: func() (io.ReadCloser, error) { return io.NopCloser(pattern(first)), nil }},
		{Name: "next.json", Open: func() (io.ReadCloser, error) {
			seen = w.n
			return io.NopCloser(strings.NewReader("{}")), nil
		}},
	}
	if err := artifact.WriteZip(t.Context(), &w, files); err != nil {
		t.Fatal(err)
	}
	// Allow for the writer's own small buffer.
	if seen < first-64<<10 {
		t.Errorf("when the second file was opened only %d bytes had been written, want about %d", seen, first)
	}
}

func TestWriteZipErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	ok := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil }
	for _, tt := range []struct {
		name  string
		files []artifact.ZipEntry
		// early is true when WriteZip must refuse before writing anything.
		early bool
		is    error
	}{
		{"unsafe name", []artifact.ZipEntry{{Name: "a.cif", Open: ok}, {Name: "../x", Open: ok}}, true, artifact.ErrInvalidPath},
		{"absolute name", []artifact.ZipEntry{{Name: "/etc/passwd", Open: ok}}, true, artifact.ErrInvalidPath},
		{"duplicate", []artifact.ZipEntry{{Name: "a.cif", Open: ok}, {Name: "a.cif", Open: ok}}, true, nil},
		{"open fails", []artifact.ZipEntry{{Name: "a.cif", Open: ok}, {Name: "b.cif", Open: func() (io.ReadCloser, error) { return nil, boom }}}, false, boom},
		{"read fails", []artifact.ZipEntry{{Name: "a.cif", Open: func() (io.ReadCloser, error) {
			return io.NopCloser(io.MultiReader(strings.NewReader("part"), errReader{boom})), nil
		}}}, false, boom},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w countWriter
			err := artifact.WriteZip(t.Context(), &w, tt.files)
			if err == nil {
				t.Fatal("WriteZip succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want %v", err, tt.is)
			}
			if tt.early && w.n != 0 {
				t.Errorf("wrote %d bytes before refusing", w.n)
			}
		})
	}
}

func TestWriteZipCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	files := []artifact.ZipEntry{{Name: "big.npz", Open: func() (io.ReadCloser, error) {
		// The client hangs up part way through a large file.
		return io.NopCloser(io.MultiReader(pattern(1<<20), cancelReader{cancel}, pattern(64<<20))), nil
	}}}
	var w countWriter
	if err := artifact.WriteZip(ctx, &w, files); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if w.n > 8<<20 {
		t.Errorf("wrote %d bytes after cancel", w.n)
	}
}

// TestWriteZipPython reads an archive back with Python's zipfile, a reader that shares no
// code with archive/zip, and has it check every CRC.
func TestWriteZipPython(t *testing.T) {
	t.Parallel()
	python := testpython.Require(t, "zipfile")
	es := sample()
	es = append(es, entry{name: "big/large.cif", content: strings.Repeat("0123456789abcdef\n", 300_000)})
	f, err := os.Create(filepath.Join(t.TempDir(), "job.zip"))
	if err != nil {
		t.Fatal(err)
	}
	files := entries(es, &tracker{})
	files = append(files, artifact.ZipEntry{Name: "t1/big.npz", Open: func() (io.ReadCloser, error) {
		return io.NopCloser(pattern(5 << 20)), nil
	}})
	if err := artifact.WriteZip(t.Context(), f, files); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), python, "-c",
		"import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print(len(z.namelist()))",
		f.Name()).CombinedOutput()
	if err != nil {
		t.Fatalf("python zipfile rejected the archive: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), fmt.Sprint(len(files)); got != want {
		t.Errorf("python counted %s files, want %s", got, want)
	}
}

func readZipFile(t *testing.T, f *zip.File) string {
	t.Helper()
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	return string(b)
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// pattern returns n incompressible-looking bytes without holding them.
func pattern(n int64) io.Reader {
	x := uint64(0x9E3779B97F4A7C15)
	return io.LimitReader(readerFunc(func(p []byte) (int, error) {
		for i := range p {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			p[i] = byte(x)
		}
		return len(p), nil
	}), n)
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

type cancelReader struct{ cancel context.CancelFunc }

func (r cancelReader) Read([]byte) (int, error) {
	r.cancel()
	return 0, io.EOF
}
