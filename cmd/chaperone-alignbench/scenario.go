package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/align/aligntest"
	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/store/postgres"
	"github.com/chaperone-bio/chaperone/store/postgres/pgtest"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// figures are what one scenario measured.
type figures struct {
	idle             []time.Duration // sorted
	toolWait         time.Duration
	searches         int // unpaired searches the server made
	searchesPerChain float64
	wall, leastWall  time.Duration
}

const slots = 2 // two workers of one slot

// scenario runs proteins×copies jobs on a fresh deployment (database name) and measures
// them. inTool makes the tools search, inside their jobs; otherwise the stage searches.
// screen gives every job the same protein and a ligand of its own.
func scenario(ctx context.Context, cluster *pgtest.Cluster, name string, o options, delay time.Duration, inTool bool, proteins, copies int, screen bool) (figures, error) {
	var f figures
	dbURL, err := cluster.CreateDatabase(ctx, "align_"+name)
	if err != nil {
		return f, err
	}
	dir, err := os.MkdirTemp("", "chaperone-alignbench-*")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	server := aligntest.NewColabFold(delay)
	defer server.Close()
	newSearcher := func() (align.Searcher, error) {
		return align.NewRemote(align.RemoteConfig{URL: server.URL, Poll: o.poll})
	}
	key, token, err := createKeys(ctx, dbURL)
	if err != nil {
		return f, err
	}
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	limits := catalog.DefaultLimits()
	limits.ActiveJobsPerOwner, limits.CreatesPerMinute, limits.QueuedJobs, limits.RetainedJobs = 1_000_000, 1_000_000, 1_000_000, 1_000_000

	var urls []string
	runs := &runLog{}
	for i := range slots {
		st, err := postgres.Open(ctx, dbURL)
		if err != nil {
			return f, err
		}
		defer st.Close()
		arts, err := artifactfs.Open(filepath.Join(dir, "artifacts"))
		if err != nil {
			return f, err
		}
		searcher, err := newSearcher()
		if err != nil {
			return f, err
		}
		a, err := app.Start(ctx, app.Config{Store: st, Artifacts: arts, Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, fmt.Sprint("replica-", i)),
			NoWorker: true, Searcher: searcher, Limits: limits, Logger: quiet})
		if err != nil {
			return f, err
		}
		defer a.Close()
		urls = append(urls, a.URL)

		eng := &computeEngine{compute: o.compute, runs: runs, cached: map[string]bool{}}
		if inTool {
			if eng.searcher, err = newSearcher(); err != nil {
				return f, err
			}
		}
		q, err := remote.NewClient(a.URL, token)
		if err != nil {
			return f, err
		}
		w, err := app.NewWorker(app.WorkerConfig{ID: fmt.Sprint("gpu-", i), Slots: 1, DataDir: filepath.Join(dir, fmt.Sprint("worker-", i)),
			Engines: []engine.Engine{eng}, Queue: q, Logger: quiet})
		if err != nil {
			return f, err
		}
		workerCtx, stop := context.WithCancel(ctx)
		if err := w.Start(workerCtx); err != nil {
			stop()
			return f, err
		}
		defer func() { stop(); w.Wait() }()
	}

	rng := rand.New(rand.NewPCG(7, uint64(len(name))))
	seqs := make([]string, proteins)
	for p := range seqs {
		seqs[p] = protein(rng, 80)
	}
	started := time.Now()
	var ids []string
	for k := range copies {
		for p, seq := range seqs {
			body := map[string]any{"model": "boltz2", "sequence": seq, "params": map[string]any{"use_msa_server": !inTool}}
			if screen {
				body = map[string]any{"model": "boltz2", "input": fmt.Sprintf("sequences:\n- protein: {id: A, sequence: %s}\n- ligand: {id: L, smiles: '%s'}\n", seq, ligand(k)),
					"params": map[string]any{"use_msa_server": true}}
			}
			id, err := create(ctx, urls[(k*proteins+p)%len(urls)], key, body)
			if err != nil {
				return f, err
			}
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		if err := waitSucceeded(ctx, urls[0], key, id); err != nil {
			return f, err
		}
	}
	f.wall = time.Since(started)
	jobs := proteins * copies
	f.leastWall = delay + time.Duration((jobs+slots-1)/slots)*o.compute
	f.idle, f.toolWait = runs.idleGaps(), runs.toolWait()
	for _, seq := range seqs {
		f.searches += server.Searches(seq)
	}
	f.searchesPerChain = float64(f.searches) / float64(proteins)
	return f, nil
}

// createKeys makes the schema, an API key and a worker token.
func createKeys(ctx context.Context, dbURL string) (key, token string, err error) {
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		return "", "", err
	}
	defer st.Close()
	key, rec := apikey.New("bench", time.Now())
	if err := st.CreateKey(ctx, rec); err != nil {
		return "", "", err
	}
	token, rec = apikey.New("bench-gpus", time.Now())
	rec.Worker = true
	return key, token, st.CreateKey(ctx, rec)
}

// protein is a made-up sequence of n residues.
func protein(rng *rand.Rand, n int) string {
	const letters = "ACDEFGHIKLMNPQRSTVWY"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return "M" + string(b[1:])
}

// ligand is the k-th ligand of a screen: an alkane chain, then alcohols of it.
func ligand(k int) string {
	return strings.Repeat("C", k%30+1) + strings.Repeat("O", k/30)
}

func create(ctx context.Context, url, key string, body map[string]any) (string, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/predictions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("create: %s: %.300s", resp.Status, out)
	}
	var j struct{ ID string }
	return j.ID, json.Unmarshal(out, &j)
}

// waitSucceeded holds on the job until it ends, and wants it succeeded.
func waitSucceeded(ctx context.Context, url, key, id string) error {
	for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/jobs/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Prefer", "wait=60")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		var j struct {
			Status string
			Error  *string
		}
		err = json.NewDecoder(resp.Body).Decode(&j)
		resp.Body.Close()
		if err != nil {
			return err
		}
		switch j.Status {
		case "succeeded":
			return nil
		case "failed", "canceled":
			why := ""
			if j.Error != nil {
				why = *j.Error
			}
			return fmt.Errorf("job %s %s: %s", id, j.Status, why)
		}
	}
	return fmt.Errorf("job %s did not end within 30 minutes", id)
}
