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
