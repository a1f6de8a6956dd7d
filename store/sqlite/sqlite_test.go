package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/storetest"
)

// openTest opens a store in a fresh folder (which Open must create) and closes it when tb ends.
func openTest(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), "data", "chaperone.db"))
	if err != nil {
		tb.Fatal(err)
	}
	storetest.CloseAtEnd(tb, s)
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t) })
}

func TestReopen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chaperone.db")
	versions := func(s *Store) (n int) {
		t.Helper()
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM goose_db_version`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerIP, ID: "192.0.2.9"}, Kind: job.PredictKind,
		Model: "boltz2", RunModel: "boltz2", Input: job.Input{Sequence: "MKV"}, CreatedAt: time.Now()}
	if _, err := s.CreateJob(ctx, j, store.CreateOptions{IdempotencyKey: "k", RequestHash: "h"}); err != nil {
		t.Fatal(err)
	}
	before := versions(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if after := versions(s); after != before {
		t.Errorf("reopening recorded %d migrations, want none (%d before, %d after)", after-before, before, after)
	}
	sub, _ := fs.Sub(migrations, "migrations")
	p, err := goose.NewProvider(goose.DialectSQLite3, s.w, sub)
	if err != nil {
		t.Fatal(err)
	}
	if pending, err := p.HasPending(ctx); err != nil || pending {
		t.Errorf("HasPending = %v, %v after Open; want false", pending, err)
	}
	got, err := s.GetJob(ctx, j.ID)
	if err != nil {
		t.Fatalf("the job did not survive a reopen: %v", err)
	}
	if got.Input.Sequence != "MKV" {
		t.Errorf("reopened job input = %+v", got.Input)
	}
	// The idempotency entry survived too.
	res, err := s.CreateJob(ctx, &job.Job{ID: job.NewID(), Owner: j.Owner, Kind: job.PredictKind,
		RunModel: "boltz2", CreatedAt: time.Now()}, store.CreateOptions{IdempotencyKey: "k", RequestHash: "h"})
	if err != nil || res.Created || res.Job.ID != j.ID {
		t.Errorf("replay after reopen = %+v, %v; want the original job", res, err)
	}
}

// TestUpgrade opens a database last migrated by an older build, holding jobs, and checks
// that the counts later migrations keep start from what is there; then that the newest
// migration goes down and up again.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chaperone.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := fs.Sub(migrations, "migrations")
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ owner, status string }{
		{"key:a", "queued"}, {"key:a", "succeeded"}, {"key:b", "queued"},
	} {
		if _, err := db.ExecContext(ctx, `INSERT INTO jobs (id, owner, kind, run_model, params, input, status, created_at)
			VALUES (?, ?, 'predict', 'boltz2', '{}', '{"sequence":"MKV"}', ?, 0)`, job.NewID(), r.owner, r.status); err != nil {
			t.Fatal(err)
		}
	}
	// The newest job was deleted: its seq must never be handed out again, across the
	// rebuild of the table too.
	var goneSeq int64
	if err := db.QueryRowContext(ctx, `INSERT INTO jobs (id, owner, kind, run_model, params, input, status, created_at)
		VALUES (?, 'key:a', 'predict', 'boltz2', '{}', '{}', 'queued', 0) RETURNING seq`, job.NewID()).Scan(&goneSeq); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM jobs WHERE seq = ?`, goneSeq); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.QueueDepth(ctx); err != nil || n != 2 {
		t.Errorf("QueueDepth after upgrade = %d, %v; want 2", n, err)
	}
	c := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerKey, ID: "c"}, Kind: job.PredictKind,
		RunModel: "boltz2", CreatedAt: time.Now()}
	res, err := s.CreateJob(ctx, c, store.CreateOptions{Limits: store.Limits{Retained: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Evicted) != 1 {
		t.Errorf("Evicted = %v, want the succeeded job of key:a", res.Evicted)
	}
	var seq int64
	if err := s.r.QueryRowContext(ctx, `SELECT seq FROM jobs WHERE id = ?`, c.ID).Scan(&seq); err != nil || seq <= goneSeq {
		t.Errorf("a job created after the upgrade has seq %d (%v), want above %d, a deleted job's", seq, err, goneSeq)
	}
	// The input lives apart, and the results are the last column, so that nothing else is
	// read past them.
	rows, err := s.r.QueryContext(ctx, `SELECT name FROM pragma_table_info('jobs') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	rows.Close()
	if slices.Contains(cols, "input") || cols[len(cols)-1] != "results" {
		t.Errorf("the columns of jobs are %v, want no input and the results last", cols)
	}
	var jobs, inputs int
	if err := s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_inputs)`).
		Scan(&jobs, &inputs); err != nil || jobs != 3 || inputs != jobs {
		t.Errorf("%d jobs and %d inputs (%v) after one eviction, want 3 of each", jobs, inputs, err)
	}
	if _, err := s.GetJob(ctx, res.Evicted[0]); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("GetJob of the evicted job: %v", err)
	}
	page, err := s.ListJobs(ctx, job.Owner{Kind: job.OwnerKey, ID: "b"}, "", 10)
	if err != nil || len(page.Jobs) != 1 {
		t.Fatalf("ListJobs(key:b) = %+v, %v; want the job made before the upgrade", page, err)
	}
	if old, err := s.GetJob(ctx, page.Jobs[0].ID); err != nil || old.Input.Sequence != "MKV" {
		t.Errorf("a job made before the upgrade reads as %+v, %v; want its input", old, err)
	}
	if l, err := s.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w", Models: []string{"boltz2"}, Now: time.Now(),
		LeaseUntil: time.Now().Add(time.Minute)}); err != nil || l == nil || l.Aligning || l.Searches != nil {
		t.Errorf("LeaseJob after the upgrade = %+v, %v; want a job made before it, with no searches to do", l, err)
	}

	p, err = goose.NewProvider(goose.DialectSQLite3, s.w, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Down(ctx); err != nil {
		t.Fatalf("migrating down: %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("migrating up again: %v", err)
	}
}

// benchJob is a prediction of a realistic size: a couple of targets and the params a
// caller sees after defaults were filled in.
func benchJob(i int, at time.Time) *job.Job {
	return &job.Job{
		ID:       job.NewID(),
		Owner:    job.Owner{Kind: job.OwnerKey, ID: fmt.Sprint("key_", i%1000)},
		Kind:     job.PredictKind,
		Model:    "boltz2",
		RunModel: "boltz2",
		Params: map[string]any{"recycling_steps": 3, "sampling_steps": 200, "diffusion_samples": 1,
			"use_msa_server": true, "output_format": "cif", "affinity": false, "fast": false},
		Input: job.Input{Targets: []job.Target{
			{Name: "t1", Content: ">A|protein\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQTLGQHDFSAGEGLYTHMKALRPDEDRLSPLHSVYVDQWDWERVMGDGERQFSTLKSTVEAIWAGIKATEAAVSEEFGLAPFLPDQIHFVHSQELLSRYPDLDAKGRERAIAKDLGAVFLVGIGGKLSDGHRHDVRAPDYDDWUAEFS\n"},
			{Name: "t2", Content: ">A|protein\nGSHMSLFDFFKNKGSAAAT\n>B|smiles\nCC(=O)OC1=CC=CC=C1C(=O)O\n"},
		}},
		CreatedAt: at,
	}
}

// benchLimits switches every check on without ever refusing, so each create pays for all
// of them.
var benchLimits = store.Limits{ActivePerOwner: 1 << 30, CreatesPerMinute: 1 << 30,
	QueuedServiceWide: 1 << 30, Retained: 1 << 30}

// BenchmarkCreateJob measures durable creates with an idempotency key and every quota
// check, from 1000 owners at 500 creates a second of job time, one caller per CPU.
func BenchmarkCreateJob(b *testing.B) { benchCreate(b, 1) }

// BenchmarkCreateDurable measures the creates of BenchmarkCreateJob as a loaded server
// makes them: 16 callers per CPU, whose writes share commits. BenchmarkRawCommitLoop is its
// anchor.
func BenchmarkCreateDurable(b *testing.B) { benchCreate(b, 16) }

func benchCreate(b *testing.B, parallelism int) {
	s := openTest(b)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1))
			j := benchJob(i, time.Unix(1_800_000_000, 0).Add(time.Duration(i)*2*time.Millisecond))
			_, err := s.CreateJob(ctx, j, store.CreateOptions{IdempotencyKey: j.ID, RequestHash: "h", Limits: benchLimits})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// BenchmarkCreateJobRetained measures creates at the retention cap, where each one evicts
// a finished job; each op also cancels the new job, so that there is always one to evict.
func BenchmarkCreateJobRetained(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	const retained = 1000
	limits := benchLimits
	limits.Retained = retained
	at := time.Unix(1_800_000_000, 0)
	createCancel := func(i int) {
		j := benchJob(i, at.Add(time.Duration(i)*2*time.Millisecond))
		res, err := s.CreateJob(ctx, j, store.CreateOptions{Limits: limits})
		if err != nil {
			b.Fatal(err)
		}
		if i >= retained && len(res.Evicted) != 1 {
			b.Fatalf("create %d evicted %v, want one job", i, res.Evicted)
		}
		if _, err := s.CancelJob(ctx, j.ID, j.Owner, j.CreatedAt); err != nil {
			b.Fatal(err)
		}
	}
	for i := range retained {
		createCancel(i)
	}
	for i := 0; b.Loop(); i++ {
		createCancel(retained + i)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates+cancels/s")
}

// BenchmarkGetJob reads succeeded jobs, results included, from many goroutines.
func BenchmarkGetJob(b *testing.B) {
	benchRead(b, func(s *Store, id string) error {
		_, err := s.GetJob(context.Background(), id)
		return err
	})
}

// BenchmarkGetJobSummary reads the summaries of the jobs of BenchmarkGetJob, as a job view,
// an ownership check or a waiter does.
func BenchmarkGetJobSummary(b *testing.B) {
	benchRead(b, func(s *Store, id string) error {
		_, err := s.GetJobSummary(context.Background(), id)
		return err
	})
}

// benchRead measures read on 1000 succeeded jobs with results, from many goroutines.
func benchRead(b *testing.B, read func(s *Store, id string) error) {
	s := openTest(b)
	ctx := context.Background()
	const jobs = 1000
	ids := make([]string, jobs)
	at := time.Unix(1_800_000_000, 0)
	for i := range ids {
		j := benchJob(i, at)
		if _, err := s.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		l, err := s.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w", Models: []string{"boltz2"}, Now: at, LeaseUntil: at.Add(time.Hour)})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.CompleteJob(ctx, l.ID, l.Attempt, store.Outcome{Status: job.Succeeded, Now: at,
			Results: benchResults(l.ID)}); err != nil {
			b.Fatal(err)
		}
		ids[i] = l.ID
	}
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := read(s, ids[n.Add(1)%jobs]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
}

// BenchmarkLeaseJob measures a lease with 1000 jobs of 1000 owners waiting; each op also
// completes the leased job and queues a new one, so the queue stays as long.
func BenchmarkLeaseJob(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	const queued = 1000
	at := time.Unix(1_800_000_000, 0)
	for i := range queued {
		if _, err := s.CreateJob(ctx, benchJob(i, at), store.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	req := store.LeaseRequest{WorkerID: "w", Models: []string{"esmfold2", "boltz2"}, Loaded: []string{"boltz2"},
		Now: at, LeaseUntil: at.Add(time.Hour)}
	for i := 0; b.Loop(); i++ {
		l, err := s.LeaseJob(ctx, req)
		if err != nil || l == nil {
			b.Fatalf("LeaseJob = %v, %v", l, err)
		}
		if err := s.CompleteJob(ctx, l.ID, l.Attempt, store.Outcome{Status: job.Succeeded, Now: at}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.CreateJob(ctx, benchJob(queued+i, at), store.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "leases/s")
}

func benchResults(id string) *job.Results {
	r := &job.Results{}
	for _, t := range []string{"t1", "t2"} {
		iptm, complexPLDDT, score := 0.7, 0.9, 0.86
		r.Rows = append(r.Rows, job.PredictionRow{ID: t, Status: job.RowOK, NChains: 1, NResidues: 240, Samples: 1, MSA: true,
			RuntimeS: 41.2, Scores: &job.Scores{PLDDT: 0.91, PTM: 0.88, IPTM: &iptm, ComplexPLDDT: &complexPLDDT, ConfidenceScore: &score}})
		r.Artifacts = append(r.Artifacts,
			job.Artifact{Path: t + ".cif", Target: t, Type: job.ArtifactStructure},
			job.Artifact{Path: t + "/confidence_" + id + ".json", Target: t, Type: job.ArtifactConfidence},
			job.Artifact{Path: t + "/pae_" + id + ".npz", Target: t, Type: job.ArtifactPAE})
	}
	return r
}

// TestAPanicInAWriteReleasesTheWriter: a write that panics, recovered above it as the HTTP
// layer recovers a handler, must not keep the one writer connection from the next write.
func TestAPanicInAWriteReleasesTheWriter(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	func() {
		defer func() { _ = recover() }()
		_ = s.write(t.Context(), func(context.Context, *sql.Tx, func(...string)) error { panic("a bug") })
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerIP, ID: "192.0.2.1"}, Kind: job.PredictKind,
		RunModel: "boltz2", Status: job.Queued, CreatedAt: time.Now()}
	if _, err := s.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
		t.Fatalf("the write after a panicking one: %v", err)
	}
}
