package protenix

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// updateMSA is Protenix's own alignment step of `protenix pred`
// (runner/batch_inference.py, preprocess_input): it searches the input's protein chains in
// colabfold mode and writes the input updated with the alignment files it found.
const updateMSA = `
import sys
from runner.msa_search import update_infer_json
print(update_infer_json(sys.argv[1], sys.argv[2], use_msa=True, mode="colabfold")[0])
`

// TestUpstreamColabfoldPairing runs Protenix's colabfold-mode search of a heteromer on a
// ColabFold server stand-in, over the input and folders the engine prepared: every chain
// must come out with the paired alignment the server sent for it. Protenix 2.0.0 writes
// that file where it never looks (linkColabfoldPairing), so without the engine's link the
// chains lose their pairing.
func TestUpstreamColabfoldPairing(t *testing.T) {
	env := realtools.Require(t, "protenix")
	isolate(t)
	srv := colabfoldServer(t)
	e := New(Config{MSAServerURL: srv.URL})
	work := t.TempDir()
	j := enginerun.PredictJob(t, `{"model": "protenix-v2", "params": {"use_msa_server": true}, "input":
		"sequences:\n  - protein: {id: A, sequence: MKTAYIAKQRQISFVKSHFSRQ}\n  - protein: {id: B, sequence: GSHMLEDPVDAFQ}\n"}`)
	steps, err := e.plan(&engine.Run{Job: j, WorkDir: work, CacheDir: t.TempDir()}, work)
	if err != nil {
		t.Fatal(err)
	}
	p := steps.(*prediction)
	if err := p.WriteInputs(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.Python(), "-c", updateMSA, p.inputPath(), p.out)
	cmd.Env = append(os.Environ(), "MMSEQS_SERVICE_HOST_URL="+srv.URL, "LAYERNORM_TYPE=torch")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("protenix's alignment step: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var updated []inputJob
	b, err := os.ReadFile(lines[len(lines)-1])
	if err == nil {
		err = json.Unmarshal(b, &updated)
	}
	if err != nil || len(updated) != 1 {
		t.Fatalf("the updated input: %v (%d targets)\n%s", err, len(updated), out)
	}
	chains := 0
	for _, sq := range updated[0].Sequences {
		c := sq.ProteinChain
		if c == nil {
			continue
		}
		chains++
		if c.PairedMSAPath == "" {
			t.Errorf("chain %v: no paired alignment in Protenix's updated input", c.ID)
			continue
		}
		paired, err := os.ReadFile(c.PairedMSAPath)
		if err != nil || !strings.Contains(string(paired), "\n"+c.Sequence+"\n>UniRef100_PAIRED") {
			t.Errorf("chain %v: paired alignment %s is not the server's for its sequence (%v):\n%s", c.ID, c.PairedMSAPath, err, paired)
		}
		if unpaired, err := os.ReadFile(c.UnpairedMSAPath); err != nil || !strings.Contains(string(unpaired), "UniRef100_UNPAIRED") {
			t.Errorf("chain %v: unpaired alignment %s (%v):\n%s", c.ID, c.UnpairedMSAPath, err, unpaired)
		}
	}
	if chains != 2 {
		t.Fatalf("%d protein chains in the updated input, want 2", chains)
	}
}

// colabfoldServer is a stand-in of a ColabFold MMseqs2 server as Protenix's colabfold mode
// talks to it (protenix/web_service/colab_request_utils.py): every ticket is complete at
// once; an unpaired search returns one UniRef and one environmental hit per query, a paired
// one a chunk per query with one hit of a shared species. Hits are the query itself, under
// the query's own name as the server keeps it.
func colabfoldServer(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	tickets := map[string][2]string{} // id: endpoint, query FASTA
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && (r.URL.Path == "/ticket/msa" || r.URL.Path == "/ticket/pair"):
			mu.Lock()
			id := fmt.Sprint(len(tickets) + 1)
			tickets[id] = [2]string{r.URL.Path, r.FormValue("q")}
			mu.Unlock()
			fmt.Fprintf(w, `{"id": %q, "status": "COMPLETE"}`, id)
		case strings.HasPrefix(r.URL.Path, "/result/download/"):
			mu.Lock()
			tk, ok := tickets[strings.TrimPrefix(r.URL.Path, "/result/download/")]
			mu.Unlock()
			if !ok {
				http.NotFound(w, r)
				return
			}
			files := map[string]string{}
			for _, entry := range strings.Split(strings.TrimSpace(tk[1]), ">")[1:] {
				name, seq, _ := strings.Cut(strings.TrimSpace(entry), "\n")
				seq = strings.TrimSpace(seq)
				if tk[0] == "/ticket/pair" {
					files["pair.a3m"] += fmt.Sprintf(">%s\n%s\n>UniRef100_PAIRED\t9606\n%s\n\x00", name, seq, seq)
					continue
				}
				files["uniref.a3m"] += fmt.Sprintf(">%s\n%s\n>UniRef100_UNPAIRED\n%s\n\x00", name, seq, seq)
				files["bfd.mgnify30.metaeuk30.smag30.a3m"] += fmt.Sprintf(">%s\n%s\n>MGYP_ENV\n%s\n\x00", name, seq, seq)
			}
			gz := gzip.NewWriter(w)
			tw := tar.NewWriter(gz)
			for name, text := range files {
				tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(text))})
				tw.Write([]byte(text))
			}
			tw.Close()
			gz.Close()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
