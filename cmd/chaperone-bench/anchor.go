package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver, the one the store uses
)

// The anchors are what the machine itself can do, measured in the same run as the server
// so that the targets are ratios and not numbers that hold on one machine only: a bare Go
// JSON handler for the reads, a raw SQLite commit loop for the creates.

// bareJob has the fields of the API's job view, so that the bare handler encodes the same
// JSON the API does, from a struct as the API does.
type bareJob struct {
	Object       string         `json:"object"`
	ID           string         `json:"id"`
	Kind         string         `json:"kind"`
	Status       string         `json:"status"`
	Name         string         `json:"name"`
	Model        *string        `json:"model"`
	Protocol     *string        `json:"protocol"`
	Progress     *float64       `json:"progress"`
	Stage        *string        `json:"stage"`
	Done         int            `json:"done"`
	Total        int            `json:"total"`
	Params       map[string]any `json:"params"`
	Error        *string        `json:"error"`
	CreatedAt    *string        `json:"created_at"`
	StartedAt    *string        `json:"started_at"`
	FinishedAt   *string        `json:"finished_at"`
	ResultsReady bool           `json:"results_ready"`
	Links        struct {
		Self    string `json:"self"`
		Results string `json:"results"`
		Archive string `json:"archive"`
		Logs    string `json:"logs"`
	} `json:"links"`
}

// serveBare serves GET /v1/jobs/{id} with the job view in body, re-encoded for every
// request, behind nothing but a check that the request has a bearer key: the least a Go
// JSON API over net/http can do per request.
func serveBare(body json.RawMessage) (url string, closeFn func() error, err error) {
	var j bareJob
	if err := json.Unmarshal(body, &j); err != nil {
		return "", nil, fmt.Errorf("the job the bare handler serves: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		view := j
		view.ID = r.PathValue("id")
		b, err := json.Marshal(view)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(b, '\n'))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed at Close
	return "http://" + ln.Addr().String(), srv.Close, nil
}

// commitLoop is the anchor of the durable creates: one connection inserting one row per
// transaction and committing it, back to back, into a SQLite file in WAL mode on the disk
// the server's store uses, with the given synchronous setting.
type commitLoop struct {
	Synchronous string
	RowBytes    int

	db     *sql.DB
	insert *sql.Stmt
	body   string
}

// openCommitLoop makes a fresh database in dir for rows of rowBytes.
func openCommitLoop(ctx context.Context, dir, synchronous string, rowBytes int) (*commitLoop, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	q := url.Values{
		"_journal_mode": {"WAL"},
		"_synchronous":  {synchronous},
		"_txlock":       {"immediate"},
		"_busy_timeout": {"5000"},
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "anchor.db")+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	l := &commitLoop{Synchronous: strings.ToUpper(synchronous), RowBytes: rowBytes, db: db, body: strings.Repeat("x", rowBytes)}
	var got string
	err = db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got)
	if want := map[string]string{"OFF": "0", "NORMAL": "1", "FULL": "2", "EXTRA": "3"}[l.Synchronous]; err == nil && got != want {
		err = fmt.Errorf("the commit loop asked for synchronous=%s and got %s", synchronous, got)
	}
	if err == nil {
		_, err = db.ExecContext(ctx, `CREATE TABLE rows (seq INTEGER PRIMARY KEY AUTOINCREMENT,
			id TEXT NOT NULL UNIQUE, body TEXT NOT NULL)`)
	}
	if err == nil {
		l.insert, err = db.PrepareContext(ctx, "INSERT INTO rows (id, body) VALUES (?, ?)")
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return l, nil
}

func (l *commitLoop) Close() error { return errors.Join(l.insert.Close(), l.db.Close()) }

func (l *commitLoop) commit(ctx context.Context) error {
	var id [12]byte
	_, _ = rand.Read(id[:])
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.StmtContext(ctx, l.insert).ExecContext(ctx, hex.EncodeToString(id[:]), l.body); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// run commits back to back for warmup, then counts the commits of window.
func (l *commitLoop) run(ctx context.Context, warmup, window time.Duration) (throughput, error) {
	var t throughput
	for start := time.Now(); time.Since(start) < warmup; {
		if err := l.commit(ctx); err != nil {
			return t, err
		}
	}
	cpu0, from := selfCPU(), time.Now()
	for time.Since(from) < window {
		t0 := time.Now()
		if err := l.commit(ctx); err != nil {
			return t, err
		}
		t.N++
		t.Latencies = append(t.Latencies, time.Since(t0))
	}
	t.Window = time.Since(from)
	t.ClientCPU = selfCPU() - cpu0
	slices.Sort(t.Latencies)
	return t, nil
}

// jobRowBytes is the mean size of what a job of the store in dbPath holds (the text columns
// of its row and its input, which the store keeps in a table of its own), so that the commit
// loop writes rows of the same size.
func jobRowBytes(ctx context.Context, dbPath string) (int, error) {
	db, err := sql.Open("sqlite", dbPath+"?_query_only=1&_busy_timeout=5000")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n sql.NullFloat64
	err = db.QueryRowContext(ctx, `SELECT avg(length(id) + length(owner) + length(kind) + length(name)
		+ length(model) + length(protocol) + length(run_model) + length(params) + length(input)
		+ length(status) + 8 * 4) FROM jobs JOIN job_inputs USING (seq)`).Scan(&n)
	if err != nil {
		return 0, err
	}
	if !n.Valid {
		return 0, fmt.Errorf("the store in %s holds no job", dbPath)
	}
	return int(n.Float64 + 0.5), nil
}
