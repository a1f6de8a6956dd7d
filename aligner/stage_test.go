package aligner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/align/aligntest"
	"github.com/chaperone-bio/chaperone/aligner"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/sqlite"
)

const (
	lysozyme  = "KVFGRCELAAAMKRHGLDNYRGYSLGNWVCAAKFESNFNTQATNRNTDGSTDYGILQINSRWWCNDGRTPGSRNLCNIPCSALLSSDITASVNCAKKIVSDGNGMNAWVAWRNRCKGTDVQAWIRGCRL"
	ubiquitin = "MQIFVKTLTGKTITLEVEPSDTIENVKAKIQDKEGIPPDQQRLIFAGKQLEDGRTLSDYNIQKESTLHLVLRLRGG"
)

// env is one deployment's shared parts: a job store, an artifact store and a stand-in
// ColabFold server, which any number of stages (replicas) use.
type env struct {
	t        *testing.T
	store    store.Store
	cache    *aligner.Cache
	server   *aligntest.ColabFold
	searcher align.Searcher
}

func newEnv(t *testing.T, delay time.Duration) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "chaperone.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artifactfs.Open(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arts.Close() })
	server := aligntest.NewColabFold(delay)
	t.Cleanup(server.Close)
	searcher, err := align.NewRemote(align.RemoteConfig{URL: server.URL, Poll: 10 * time.Millisecond,
		Retry: align.Retry{Attempts: 2, Backoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, store: st, server: server, searcher: searcher,
		cache: aligner.NewCache(arts, searcher.Source(), aligner.Limits{})}
}

// stage starts a stage, as a replica would, until the test ends.
func (e *env) stage(searcher align.Searcher) *aligner.Stage { return e.stageNamed("", searcher) }

// stageNamed starts a stage that claims under the name holder.
func (e *env) stageNamed(holder string, searcher align.Searcher) *aligner.Stage {
	if searcher == nil {
		searcher = e.searcher
	}
	s := aligner.New(aligner.Config{Store: e.store, Cache: e.cache, Searcher: searcher, Slots: 3, Holder: holder,
		ClaimTTL: 5 * time.Second, Poll: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
	return s
}

// create queues a prediction job of one target that needs the searches.
func (e *env) create(searches ...job.Search) string {
	e.t.Helper()
	return e.createOf(1, searches...)
}

// createOf queues a prediction job of total targets that needs the searches.
func (e *env) createOf(total int, searches ...job.Search) string {
	e.t.Helper()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerKey, ID: "k1"}, Kind: job.PredictKind,
		Model: "boltz2", RunModel: "boltz2", Params: map[string]any{"use_msa_server": true},
		Input: job.Input{Sequence: "MK"}, Status: job.Queued, CreatedAt: time.Now(), Searches: searches, Total: total}
	if _, err := e.store.CreateJob(context.Background(), j, store.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return j.ID
}

// until waits for the job to be as ok says, on the store's notifications.
func (e *env) until(id string, what string, ok func(*store.JobSummary) bool) *store.JobSummary {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		changed := e.store.Watch(ctx, id)
		j, err := e.store.GetJobSummary(ctx, id)
		if err != nil {
			e.t.Fatal(err)
		}
		if ok(j) {
			return j
		}
		select {
		case <-changed:
		case <-ctx.Done():
			e.t.Fatalf("job %s never became %s: status %s, stage %q, aligning %v, error %q", id, what, j.Status, j.Stage, j.Aligning, j.Error)
		}
	}
}

func (e *env) aligned(id string) *store.JobSummary {
	return e.until(id, "aligned", func(j *store.JobSummary) bool { return !j.Aligning || j.Status.Terminal() })
}

func chains(seqs ...string) job.Search { return job.Search{Chains: seqs} }

func TestAStageSearchesAJobsTargetsAndFreesItForTheWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	st := e.stage(nil)
	id := e.create(chains(lysozyme), chains(ubiquitin, lysozyme, ubiquitin))
	j := e.aligned(id)
	if j.Status != job.Queued || j.Aligning || j.Stage != "" {
		t.Fatalf("job %s after aligning: status %s, aligning %v, stage %q; want queued for a worker", id, j.Status, j.Aligning, j.Stage)
	}
	for _, tc := range []struct {
		chains     []string
		wantPaired bool
	}{{[]string{lysozyme}, false}, {[]string{ubiquitin, lysozyme, ubiquitin}, true}} {
		res, ok, err := e.cache.Get(context.Background(), tc.chains)
		if err != nil || !ok {
			t.Fatalf("the cache lacks the alignments of %d chains: %v", len(tc.chains), err)
		}
		for i, seq := range res.Chains {
			// A chain's unpaired alignment is kept from its first search, where the server
			// numbered it by its place in that query.
			var n int
			fmt.Sscanf(res.Unpaired[i], ">%d", &n)
			want := aligntest.UnirefBlock(n-101, seq) + aligntest.EnvBlock(n-101, seq)
			if res.Unpaired[i] != want {
				t.Errorf("unpaired A3M of chain %d =\n%s\nwant\n%s", i+1, res.Unpaired[i], want)
			}
			if tc.wantPaired && res.Paired[i] != aligntest.PairedBlock(i, seq) {
				t.Errorf("paired A3M of chain %d =\n%s\nwant\n%s", i+1, res.Paired[i], aligntest.PairedBlock(i, seq))
			}
		}
		if (res.Paired != nil) != tc.wantPaired {
			t.Errorf("%d chains: paired %v, want paired %v", len(tc.chains), res.Paired != nil, tc.wantPaired)
		}
	}
	// Lysozyme was searched alone and again within the complex: the server pairs a
	// complex's chains only when it searched them together.
	if got := st.Stats(); got.Searched != 2 {
		t.Errorf("stats %+v; want 2 searches", got)
	}
}

func TestAChainIsSearchedOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 300*time.Millisecond)
	stages := []*aligner.Stage{e.stage(nil), e.stage(nil)}
	var ids []string
	for range 12 {
		ids = append(ids, e.create(chains(lysozyme)))
	}
	for _, id := range ids {
		if j := e.aligned(id); j.Status != job.Queued {
			t.Fatalf("job %s: status %s, error %q", id, j.Status, j.Error)
		}
	}
	if n := e.server.Searches(lysozyme); n != 1 {
		t.Errorf("the server searched the chain %d times for 12 jobs on two stages; want 1", n)
	}
	var sum aligner.Stats
	for _, s := range stages {
		st := s.Stats()
		sum.Searched, sum.Hits, sum.Waited = sum.Searched+st.Searched, sum.Hits+st.Hits, sum.Waited+st.Waited
	}
	if sum.Searched != 1 || sum.Hits+sum.Waited != 11 {
		t.Errorf("stats of both stages %+v; want 1 search, 11 from the cache or the other's search", sum)
	}
}

func TestAFailedSearchFailsTheJobInTheServersWords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	e.server.FailNext("ERROR", "ERROR")
	e.stage(nil)
	id := e.create(chains(ubiquitin))
	j := e.aligned(id)
	if j.Status != job.Failed || j.Stage != job.StageMSA || !strings.Contains(j.Error, "alignment search failed") || !strings.Contains(j.Error, "ERROR") {
		t.Fatalf("job: status %s, stage %q, error %q; want failed at msa in the server's words", j.Status, j.Stage, j.Error)
	}
	// The next job of the chain is searched afresh: a failure is not kept.
	id = e.create(chains(ubiquitin))
	if j := e.aligned(id); j.Status != job.Queued {
		t.Fatalf("a second job: status %s, error %q", j.Status, j.Error)
	}
}

// TestAFailedSearchNamesItsTarget: of a job of several targets, the failure names the
// target whose search failed, counted among all the job's targets.
func TestAFailedSearchNamesItsTarget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	e.stage(nil)
	if j := e.aligned(e.create(chains(ubiquitin))); j.Status != job.Queued {
		t.Fatalf("the first job: status %s, error %q", j.Status, j.Error)
	}
	e.server.FailNext("ERROR", "ERROR")
	id := e.createOf(3, job.Search{Chains: []string{ubiquitin}, Target: 1}, job.Search{Chains: []string{lysozyme}, Target: 3})
	if j := e.aligned(id); j.Status != job.Failed || !strings.HasPrefix(j.Error, "alignment search of target 3 failed: ") {
		t.Fatalf("job: status %s, error %q; want failed, naming target 3", j.Status, j.Error)
	}
}

// stoppable records that a search ended because its context did.
type stoppable struct {
	align.Searcher
	started chan struct{}
	stopped chan error
	once    sync.Once
}

func (s *stoppable) Search(ctx context.Context, q align.Query) (align.Result, error) {
	s.once.Do(func() { close(s.started) })
	res, err := s.Searcher.Search(ctx, q)
	if ctx.Err() != nil {
		s.stopped <- err
	}
	return res, err
}

func TestCancelStopsTheSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Hour)
	s := &stoppable{Searcher: e.searcher, started: make(chan struct{}), stopped: make(chan error, 1)}
	e.stage(s)
	id := e.create(chains(lysozyme))
	e.until(id, "searched", func(j *store.JobSummary) bool { return j.Stage == job.StageMSA })
	<-s.started
	if _, err := e.store.CancelJob(context.Background(), id, job.Owner{Kind: job.OwnerKey, ID: "k1"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.stopped:
		if err == nil {
			t.Error("the search of a canceled job gave alignments")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the search went on after its job was canceled")
	}
	if j, _ := e.store.GetJobSummary(context.Background(), id); j.Status != job.Canceled {
		t.Errorf("job status %s; want canceled", j.Status)
	}
}

// A replica killed while it searched held its job's claim; started again under its name,
// it frees that claim at once instead of leaving the job for the claim to run out (here
// an hour).
func TestARestartedStageTakesUpTheJobsItHeldAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	id := e.create(chains(ubiquitin))
	now := time.Now()
	if j, err := e.store.ClaimAlignment(context.Background(), "replica-a", now, now.Add(time.Hour)); err != nil || j == nil || j.ID != id {
		t.Fatalf("the earlier run's claim: %v, %v", j, err)
	}
	e.stageNamed("replica-a", nil)
	if j := e.aligned(id); j.Status != job.Queued || j.Aligning {
		t.Fatalf("job after the restart: status %s, aligning %v, error %q", j.Status, j.Aligning, j.Error)
	}
}
