package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pydriver"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// withPyDriver runs the embedding models on the real esm and transformers engines, with
// the stand-in packages in the interpreter, on one slot (so that every job meets the
// models its slot's driver loaded before).
func withPyDriver(t *testing.T) option {
	python := pydrivertest.Interpreter(t, t.TempDir())
	return func(c *app.Config) {
		c.Engines = []engine.Engine{pydriver.ESM(), pydriver.Transformers()}
		c.Tools = engine.Tools{"esm": python, "transformers": python}
		c.Slots = 1
	}
}

// download writes an artifact of a job to a temporary file and returns its path.
func (s *server) download(url, name string) string {
	s.t.Helper()
	path := filepath.Join(s.t.TempDir(), name)
	if err := os.WriteFile(path, s.get(url).expect(http.StatusOK).Body, 0o644); err != nil {
		s.t.Fatal(err)
	}
	return path
}

func TestEmbeddingsOfEveryModelAsNPZ(t *testing.T) {
	t.Parallel()
	seqs := []string{"MKTAYIAKQRQISFVKSHFSRQ", "ACDEFGHIKLMNPQRSTVWY", "MKV"}
	s := startServer(t, withPyDriver(t))
	python := testpython.Require(t, "numpy")
	for _, tc := range []struct {
		model  string
		pool   string
		dModel int
	}{
		{"esmc-300m", "mean", 960}, {"esmc-600m", "max", 1152}, {"esmc-6b", "cls", 2560},
		{"saprot-650m", "mean", 1280}, {"saprot-1.3b", "cls", 1280},
	} {
		id := s.create("/v1/embeddings", map[string]any{"model": tc.model, "params": map[string]any{"pool": tc.pool},
			"sequences": []any{seqs[0], map[string]any{"id": "P1", "sequence": strings.ToLower(seqs[1])}, seqs[2]}})
		s.waitStatus(id, "succeeded")
		res := s.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()
		mustf(t, res["model"] == tc.model && res["pool"] == tc.pool && res["format"] == "npz" && res["d_model"] == float64(tc.dModel),
			"%s results %v", tc.model, res)
		urls := map[string]string{}
		for _, a := range res["artifacts"].([]any) {
			a := a.(map[string]any)
			mustf(t, a["type"] == "embedding" || a["path"] == "manifest.json", "%s artifact %v", tc.model, a)
			urls[a["path"].(string)] = a["url"].(string)
		}
		for i, want := range []string{"seq1", "P1", "seq3"} {
			e := res["sequences"].([]any)[i].(map[string]any)
			mustf(t, e["id"] == want && e["length"] == float64(len(seqs[i])) && e["file"] == want+".npz", "%s sequence %d: %v", tc.model, i, e)
			path := s.download(urls[want+".npz"], want+".npz")
			pydrivertest.CheckNPZ(t, path, strings.HasPrefix(tc.model, "saprot"), seqs[i], tc.pool, tc.dModel)
			// numpy, which shares nothing with the writer, loads the file as users do.
			out, err := exec.Command(python, "-c", `import numpy, sys
a = numpy.load(sys.argv[1])
print(a["per_residue"].dtype, a["per_residue"].shape, a["pooled"].dtype, a["pooled"].shape, a["sequence"].shape, a["sequence"])`,
				path).CombinedOutput()
			wantOut := fmt.Sprintf("float32 (%d, %d) float32 (%d,) () %s", len(seqs[i]), tc.dModel, tc.dModel, seqs[i])
			mustf(t, err == nil && strings.TrimSpace(string(out)) == wantOut, "%s: numpy read %s: %s (%v); want %s", tc.model, want, out, err, wantOut)
		}
	}
}

func TestEmbeddingsAsParquet(t *testing.T) {
	t.Parallel()
	seqs := []string{"MKV", "MKTAYIAKQRQISFVKSHFSRQ", "ACDEFGHIKLMNPQRSTVWY"}
	s := startServer(t, withPyDriver(t))
	id := s.create("/v1/embeddings", map[string]any{"model": "esmc-300m", "params": map[string]any{"format": "parquet", "pool": "max"},
		"input": ">a first\n" + seqs[0] + "\n>b\n" + seqs[1] + "\n>c\n" + seqs[2] + "\n"})
	s.waitStatus(id, "succeeded")
	res := s.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()
	arts := res["artifacts"].([]any)
	mustf(t, len(arts) == 2 && arts[0].(map[string]any)["path"] == "embeddings.parquet" && arts[0].(map[string]any)["type"] == "table" &&
		arts[1].(map[string]any)["path"] == "manifest.json", "artifacts %v", arts)
	for i, e := range res["sequences"].([]any) {
		e := e.(map[string]any)
		mustf(t, e["id"] == []string{"a", "b", "c"}[i] && e["file"] == "embeddings.parquet", "sequence %d: %v", i, e)
	}

	// Apache Arrow's own parquet reader, which shares nothing with the writer, reads the
	// file as pyarrow and pandas would.
	path := s.download(arts[0].(map[string]any)["url"].(string), "embeddings.parquet")
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	table, err := fr.ReadTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer table.Release()
	schema := table.Schema()
	mustf(t, schema.NumFields() == 3 && schema.Field(0).Name == "id" && schema.Field(0).Type.ID() == arrow.STRING &&
		schema.Field(1).Name == "length" && schema.Field(1).Type.ID() == arrow.INT32 &&
		schema.Field(2).Name == "pooled" && arrow.TypeEqual(schema.Field(2).Type.(*arrow.ListType).Elem(), arrow.PrimitiveTypes.Float32),
		"schema %v", schema)
	mustf(t, table.NumRows() == 3, "%d rows", table.NumRows())
	ids := table.Column(0).Data().Chunk(0).(*array.String)
	lengths := table.Column(1).Data().Chunk(0).(*array.Int32)
	pooled := table.Column(2).Data().Chunk(0).(*array.List)
	values := pooled.ListValues().(*array.Float32).Float32Values()
	for i, seq := range seqs {
		mustf(t, ids.Value(i) == []string{"a", "b", "c"}[i] && lengths.Value(i) == int32(len(seq)), "row %d: %s %d", i, ids.Value(i), lengths.Value(i))
		start, end := pooled.ValueOffsets(i)
		_, want := pydrivertest.Embedding(false, seq, "max", 960)
		pydrivertest.CheckPooled(t, fmt.Sprintf("row %d", i), values[start:end], want)
	}
}

func TestEmbeddingJobsAfterTheFirstSkipLoading(t *testing.T) {
	t.Parallel()
	s := startServer(t, withPyDriver(t))
	for i := range 3 {
		id := s.create("/v1/embeddings", map[string]any{"model": "saprot-650m", "sequence": "MKTAYIAKQR"})
		s.waitStatus(id, "succeeded")
		logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
		loads := strings.Count(logs, "standin: loading")
		if i == 0 {
			mustf(t, loads == 1, "the first job loaded the model %d times:\n%s", loads, logs)
		} else {
			mustf(t, loads == 0 && strings.Contains(logs, "models loaded: [saprot-650m]"), "job %d loaded again:\n%s", i+1, logs)
		}
	}
}

func TestAFailedSequenceFailsTheEmbeddingJobByName(t *testing.T) {
	t.Parallel()
	s := startServer(t, withPyDriver(t))
	id := s.create("/v1/embeddings", map[string]any{"model": "esmc-300m",
		"sequences": []any{"MKV", map[string]any{"id": "bad", "sequence": pydrivertest.OOM + "KV"}}})
	j := s.waitStatus(id, "failed")
	mustf(t, strings.Contains(j["error"].(string), "sequence bad") && strings.Contains(j["error"].(string), "out of memory"), "error %v", j["error"])
	logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
	mustf(t, strings.Contains(logs, "Traceback (most recent call last)"), "no traceback in the log:\n%s", logs)
	again := s.create("/v1/embeddings", map[string]any{"model": "esmc-300m", "sequence": "MKV"})
	s.waitStatus(again, "succeeded")
}

func TestEmbeddingRequestsTheModelsCannotTakeAre400(t *testing.T) {
	t.Parallel()
	s := startServer(t, withPyDriver(t))
	many := make([]any, 51)
	for i := range many {
		many[i] = "MKV"
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"a letter SaProt's tokenizer lacks", map[string]any{"model": "saprot-650m", "sequences": []any{"MKV", "MKXV"}},
			`sequences[1].sequence: position 3: 'X' is a letter saprot-650m's tokenizer does not know`},
		{"too many sequences", map[string]any{"model": "esmc-300m", "sequences": many}, "holds 51 sequences, over the cap of 50"},
		{"too long a sequence", map[string]any{"model": "esmc-6b", "sequence": strings.Repeat("A", 2001)}, "has 2001 residues; esmc-6b takes at most 2000"},
		{"an unknown param", map[string]any{"model": "saprot-1.3b", "sequence": "MKV", "params": map[string]any{"layer": 3}},
			"unknown param for saprot-1.3b; valid params are pool, format, fast"},
	} {
		detail := s.post("/v1/embeddings", tc.body).problem(http.StatusBadRequest, "invalid-input")
		mustf(t, strings.Contains(detail, tc.want), "%s: detail %q; want %q", tc.name, detail, tc.want)
	}
}
