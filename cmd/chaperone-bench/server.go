package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
)

// serveEnv, when set, makes this binary a chaperone server configured by the JSON in it,
// controlled over stdin and stdout (see serveChild), instead of the load generator. The
// server runs in its own process so that its memory and CPU are measured apart from the
// clients'.
const serveEnv = "CHAPERONE_BENCH_SERVE"

// benchModels are the catalog models the test engine claims.
var benchModels = []string{"boltz2", "esmfold2"}

// childConfig is what the load generator tells a server process.
type childConfig struct {
	DataDir  string         `json:"data_dir"`
	Slots    int            `json:"slots"`
	Limits   catalog.Limits `json:"limits"`
	LogLevel slog.Level     `json:"log_level"`
	// Bare, when set, makes the process the bare JSON handler serving this job view
	// instead of a chaperone server (the anchor of the reads).
	Bare json.RawMessage `json:"bare,omitempty"`
	// Store, when set, is the PostgreSQL database of a replica, which then runs without a
	// worker (serve --store URL --no-worker).
	Store string `json:"store,omitempty"`
}

// serverStats is a server process's own account of itself.
type serverStats struct {
	HeapInuse  uint64        `json:"heap_inuse"`  // bytes
	StackInuse uint64        `json:"stack_inuse"` // bytes
	RSS        uint64        `json:"rss"`         // bytes, VmRSS of /proc/self/status
	Goroutines int           `json:"goroutines"`
	CPU        time.Duration `json:"cpu"` // user + system time used so far
	Err        string        `json:"error,omitempty"`
}

// serveChild runs a server as cfg says. It prints the server's URL, then answers one
// line of JSON per command read from stdin:
//
//	stats          CPU, goroutines and RSS, cheaply (no GC)
//	mem            the same after two full GCs, the second returning free memory to the
//	               OS, so that heap and RSS are what the server holds live
//	profile PATH   start a CPU profile into PATH
//	stop           stop the CPU profile
//	heap PATH      write a heap profile (after a GC) into PATH
//
// It shuts down when stdin closes, so it never outlives the load generator.
func serveChild(raw string) {
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		os.Exit(2)
	}
	// Log as "chaperone serve" does (JSON, one access-log line per request at info), into a
	// file in place of the terminal; warnings go to the terminal too.
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		os.Exit(1)
	}
	logFile, err := os.Create(filepath.Join(cfg.DataDir, "server.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		os.Exit(1)
	}
	defer logFile.Close()
	log := slog.New(slog.NewMultiHandler(
		slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: cfg.LogLevel}),
		slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	url, closeServer, err := startChild(cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		os.Exit(1)
	}
	fmt.Println(url)

	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	var profile *os.File
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		var st serverStats
		switch cmd {
		case "mem":
			// Two collections: what sync.Pools held at the first is freed at the second.
			runtime.GC()
			debug.FreeOSMemory()
			st = selfStats()
		case "stats":
			st = selfStats()
		case "profile":
			f, err := os.Create(arg)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				st.Err = err.Error()
			}
			profile = f
		case "heap":
			runtime.GC()
			f, err := os.Create(arg)
			if err == nil {
				err = errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
			}
			if err != nil {
				st.Err = err.Error()
			}
		case "stop":
			pprof.StopCPUProfile()
			if profile != nil {
				profile.Close()
			}
		default:
			st.Err = "unknown command " + strconv.Quote(cmd)
		}
		_ = out.Encode(st)
	}
	if err := closeServer(); err != nil {
		fmt.Fprintln(os.Stderr, "bench server: closing:", err)
	}
}

// startChild starts what cfg asks for: the bare handler, or a chaperone server with the
// test engine.
func startChild(cfg childConfig, log *slog.Logger) (string, func() error, error) {
	if cfg.Bare != nil {
		return serveBare(cfg.Bare)
	}
	stores, err := app.OpenStoresAt(context.Background(), app.Locations{DataDir: cfg.DataDir, Store: cfg.Store})
	if err != nil {
		return "", nil, err
	}
	a, err := app.Start(context.Background(), app.Config{
		Store:     stores.Jobs,
		Artifacts: stores.Artifacts,
		Addr:      "127.0.0.1:0",
		DataDir:   cfg.DataDir,
		Version:   "bench",
		Logger:    log,
		Limits:    cfg.Limits,
		Engines:   []engine.Engine{enginetest.New(benchModels...)},
		Slots:     cfg.Slots,
		NoWorker:  cfg.Store != "",
		WorkerID:  "bench-worker",
	})
	if err != nil {
		stores.Close()
		return "", nil, err
	}
	return a.URL, func() error { return errors.Join(a.Close(), stores.Close()) }, nil
}

func selfStats() serverStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	st := serverStats{HeapInuse: m.HeapInuse, StackInuse: m.StackInuse, Goroutines: runtime.NumGoroutine()}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		st.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	rss, err := vmRSS()
	if err != nil {
		st.Err = err.Error()
	}
	st.RSS = rss
	return st
}

// vmRSS reads the resident set size of this process.
func vmRSS() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/self/status")
}

// server is a chaperone server process started by the load generator.
type server struct {
	URL string

	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex // one command at a time
	out   *bufio.Scanner
}

// startServer starts this binary as a server process and waits for its URL.
func startServer(cfg childConfig) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), serveEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if !s.out.Scan() {
		s.Close()
		return nil, fmt.Errorf("the server process printed no URL (%v)", s.out.Err())
	}
	s.URL = strings.TrimSpace(s.out.Text())
	return s, nil
}

func (s *server) command(line string) (serverStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st serverStats
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		return st, err
	}
	if !s.out.Scan() {
		return st, fmt.Errorf("the server process did not answer %q (%v)", line, s.out.Err())
	}
	if err := json.Unmarshal(s.out.Bytes(), &st); err != nil {
		return st, err
	}
	if st.Err != "" {
		return st, errors.New(st.Err)
	}
	return st, nil
}

// Stats is cheap; Mem collects garbage first and is for memory figures only.
func (s *server) Stats() (serverStats, error) { return s.command("stats") }
func (s *server) Mem() (serverStats, error)   { return s.command("mem") }

func (s *server) StartProfile(path string) error {
	_, err := s.command("profile " + path)
	return err
}

func (s *server) WriteHeapProfile(path string) error {
	_, err := s.command("heap " + path)
	return err
}

func (s *server) StopProfile() error {
	_, err := s.command("stop")
	return err
}

// Close ends the server (by closing its stdin) and waits for it, killing it if it takes
// longer than its own shutdown allows.
func (s *server) Close() {
	s.stdin.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}
