package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// BenchmarkRawCommitLoop is the anchor of BenchmarkCreateDurable: one goroutine committing
// one insert of a job-sized row at a time, durably (WAL, synchronous=FULL), on the same
// disk, through the same driver. It is what the disk allows one transaction at a time.
func BenchmarkRawCommitLoop(b *testing.B) {
	path := filepath.Join(b.TempDir(), "raw.db")
	db, err := sql.Open("sqlite", path+"?_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE rows (id TEXT PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("x", 1024)
	for i := 0; b.Loop(); i++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO rows (id, body) VALUES (?, ?)`, fmt.Sprint(i), body); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkKeyLookup is the API key check every authenticated request makes.
func BenchmarkKeyLookup(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	hashes := make([]string, 100)
	for i := range hashes {
		_, k := apikey.New(fmt.Sprint("bench-", i), time.Now())
		if err := s.CreateKey(ctx, k); err != nil {
			b.Fatal(err)
		}
		hashes[i] = k.Hash
	}
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.KeyByHash(ctx, hashes[n.Add(1)%int64(len(hashes))]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

// BenchmarkLargeInput measures what a job's input size must not change: reading its
// summary (a job view, a wait, an ownership check) and its heartbeats, for an input of 1 KB
// and one at the 8 MB body cap.
func BenchmarkLargeInput(b *testing.B) {
	for _, size := range []int{1 << 10, 8 << 20} {
		s := openTest(b)
		ctx := context.Background()
		at := time.Unix(1_800_000_000, 0)
		j := benchJob(1, at)
		j.Input = job.Input{Sequence: strings.Repeat("A", size)}
		if _, err := s.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("summary/%dKB", size>>10), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.GetJobSummary(ctx, j.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
		l, err := s.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w", Models: []string{j.RunModel}, Now: at, LeaseUntil: at.Add(time.Hour)})
		if err != nil || l == nil {
			b.Fatalf("LeaseJob = %v, %v", l, err)
		}
		b.Run(fmt.Sprintf("heartbeat/%dKB", size>>10), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				hb := store.Heartbeat{ID: l.ID, Attempt: l.Attempt, Now: at, LeaseUntil: at.Add(time.Duration(i) * time.Second)}
				if err := s.Heartbeat(ctx, hb); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
