// Command chaperone-bench measures a chaperone server on this machine, over real HTTP on
// loopback, and prints the figures against the project's targets:
//
//  1. durable creates per second (POST /v1/predictions, each a committed SQLite insert),
//     as a share of a raw SQLite commit loop on the same disk measured in the same run;
//  2. GET /v1/jobs/{id} requests per second from concurrent keep-alive clients, as a share
//     of a bare Go JSON handler under the same load in the same run;
//  3. submit-to-running latency with an idle worker;
//  4. server memory held by 10,000 concurrent Prefer: wait long-polls.
//
// Run it with "make bench". It is a benchmark harness, never a server a user runs: its
// servers use the test-only engine (engine/enginetest), whose jobs succeed at once or
// hang as their name says, so that the figures are those of the job service itself and
// not of a model. Each server runs in a child process (this binary, re-executed) so that
// its memory and CPU are measured apart from the load generator's; the load generator
// shares the machine's cores with it, as any loopback benchmark does.
//
// A MISS is reported, never fatal: the command fails only when it cannot measure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/store/sqlite"
)

// Targets. Throughput is a share of its anchor, measured in the same run.
const (
	targetCreates = 0.30 // durable creates, of the raw SQLite commit loop
	targetGets    = 0.50 // GET /v1/jobs/{id}, of the bare JSON handler
	targetPickup  = 20 * time.Millisecond
	targetWaiters = 100.0 // MB of server RSS that the held long-polls add, at most
)

// benchLimit replaces the quotas and caps that a benchmark would otherwise run into. It is
// not zero, so every check still runs (and costs what it costs) on every create.
const benchLimit = 1_000_000

type options struct {
	duration, warmup time.Duration
	clients, owners  int
	rounds           int
	samples          int
	gap              time.Duration
	waiters          int
	hold             time.Duration
	dataDir          string
	profileDir       string
	logLevel         slog.Level
	synchronous      string
	postgres         bool
}

func main() {
	if raw := os.Getenv(serveEnv); raw != "" {
		serveChild(raw)
		return
	}
	var o options
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured time of each throughput phase (creates, gets)")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before each throughput phase")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds of each throughput phase, alternating with its anchor; -duration is split between them")
	flag.IntVar(&o.clients, "clients", 16, "concurrent keep-alive clients in the throughput phases")
	flag.IntVar(&o.owners, "owners", 256, "distinct API keys (owners); each request uses one at random")
	flag.IntVar(&o.samples, "samples", 200, "serial submissions for the pickup latency")
	flag.DurationVar(&o.gap, "gap", 10*time.Millisecond, "pause between pickup samples, so the worker is idle at each submit")
	flag.IntVar(&o.waiters, "waiters", 10_000, "concurrent Prefer: wait=60 long-polls held for the memory figure")
	flag.DurationVar(&o.hold, "hold", 3*time.Second, "how long the long-polls are held while the server's CPU is measured")
	flag.StringVar(&o.dataDir, "data", "", "parent of the servers' data folders (default: a temporary folder, removed afterwards)")
	flag.TextVar(&o.logLevel, "server-log-level", slog.LevelInfo, "the servers' log level (info, as chaperone serve's default, logs every request); the log goes to server.log in each data folder")
	flag.StringVar(&o.synchronous, "anchor-synchronous", "FULL", "SQLite synchronous setting of the raw commit loop, the anchor of the creates (set it as the store sets its own)")
	flag.BoolVar(&o.postgres, "postgres", true, "also measure deployments of 1, 2 and 4 replicas on PostgreSQL with a remote worker (needs PostgreSQL's server binaries)")
	flag.StringVar(&o.profileDir, "profile", "", "write into this folder the server's CPU profile of each throughput phase and its heap profile while the long-polls are held")
	flag.Parse()
	if o.clients < 1 || o.owners < 1 || o.samples < 1 || o.waiters < 1 || o.rounds < 1 || o.duration <= 0 {
		fmt.Fprintln(os.Stderr, "chaperone-bench: -clients, -owners, -samples, -waiters, -rounds and -duration must be positive")
		os.Exit(2)
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chaperone-bench:", err)
		os.Exit(1)
	}
}

// results is everything run measured.
type results struct {
	creates, gets throughput
	jobsHeld      int // jobs in the store while the gets ran
	pickup        pickup
	waiters       waiters
	fdLimit       uint64

	bare        throughput // the anchor of the gets
	commits     throughput // the anchor of the creates
	synchronous string     // the commit loop's
	rowBytes    int        // the commit loop's
}

func run(o options, out io.Writer) error {
	var r results
	var err error
	// The waiters' connections need a descriptor each on both sides; the server process
	// inherits this limit.
	if r.fdLimit, err = raiseFDLimit(uint64(o.waiters + o.clients + 256)); err != nil {
		return err
	}
	root := o.dataDir
	if root == "" {
		if root, err = os.MkdirTemp("", "chaperone-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(root)
	}
	if o.profileDir != "" {
		if o.profileDir, err = filepath.Abs(o.profileDir); err != nil {
			return err
		}
		if err := os.MkdirAll(o.profileDir, 0o750); err != nil {
			return err
		}
	}
	limits := catalog.DefaultLimits()
	limits.ActiveJobsPerOwner = benchLimit
	limits.CreatesPerMinute = benchLimit
	limits.QueuedJobs = benchLimit
	limits.RetainedJobs = benchLimit
	// Every connection of the load comes from this one address, as from a proxy that does
	// not forward client addresses: the per-client bounds would refuse all but 64 of them.
	limits.ConnectionsPerClient = benchLimit
	limits.HeldWaitsPerClient = benchLimit

	fmt.Fprintf(out, "chaperone bench: %s/%s, %d CPUs, %s, load average %s at start; server in a child process, clients here, HTTP/1.1 keep-alive on loopback\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), loadAverage())
	fmt.Fprint(out, wrap(fmt.Sprintf("Limits raised for the benchmark, so that it measures the server and not "+
		"its quotas: active_jobs_per_owner, creates_per_owner_per_minute, queued_jobs and retained_jobs "+
		"(defaults 16, 60, 1000, 1000), and connections_per_client and held_waits_per_client (64, 16: "+
		"all the load comes from this one address, as through a proxy that does not forward clients) "+
		"are all %d. Every quota check still runs on every create and every connection. "+
		"The servers log at %s level, as chaperone serve does by default, into a file.", benchLimit, o.logLevel), 100, ""))
	fmt.Fprintln(out)

	// Server 1: its worker's one slot is busy with a job that never ends, so every job
	// created stays queued (a real insert, nothing leased), and the hanging job serves
	// the long-polls.
	if err := busyServerPhases(o, &r, root, limits); err != nil {
		return err
	}
	// Server 2: an idle worker, for the pickup latency.
	if err := idleServerPhase(o, &r, filepath.Join(root, "idle"), limits); err != nil {
		return err
	}
	report(out, o, r)
	if o.postgres {
		figs, err := postgresPhases(o, root, limits)
		if err != nil {
			return fmt.Errorf("PostgreSQL: %w", err)
		}
		reportPostgres(out, figs)
	}
	return nil
}

// busyServerPhases runs the phases of the server whose worker is busy, each throughput
// phase in rounds that alternate with its anchor's, so that both see the same machine
// (other work on it comes and goes).
func busyServerPhases(o options, r *results, root string, limits catalog.Limits) error {
	dir := filepath.Join(root, "busy")
	keys, err := makeKeys(dir, o.owners)
	if err != nil {
		return err
	}
	srv, err := startServer(childConfig{DataDir: dir, Slots: 1, Limits: limits, LogLevel: o.logLevel})
	if err != nil {
		return err
	}
	defer srv.Close()
	ctx := context.Background()
	c := newClient(srv.URL, o.clients)
	defer c.close()

	hang, err := c.create(ctx, keys[0], "hang")
	if err != nil {
		return err
	}
	if err := waitRunning(ctx, c, keys[0], hang.ID); err != nil {
		return err
	}

	// 4. Long-polls on the hanging job, first, while the server holds little else: the
	// SQLite page caches that the creates fill are memory outside Go's heap that could
	// move the RSS figure.
	r.waiters, err = holdWaiters(srv, keys[0], hang.ID, o.waiters, o.hold, o.profileDir)
	if err != nil {
		return err
	}
	// 1. Creates, each by a random owner, against the commit loop. The ids are kept by
	// owner for the gets. The creates' warm-up gives the loop the size of a job row.
	var mu sync.Mutex
	byOwner := make([][]string, o.owners)
	create := func(ctx context.Context, rng *rand.Rand) error {
		k := rng.IntN(o.owners)
		j, err := c.create(ctx, keys[k], "hang")
		if err == nil {
			mu.Lock()
			byOwner[k] = append(byOwner[k], j.ID)
			mu.Unlock()
		}
		return err
	}
	if _, err := closedLoop(srv, o.clients, 0, o.warmup, create); err != nil {
		return err
	}
	if r.rowBytes, err = jobRowBytes(ctx, filepath.Join(dir, "chaperone.db")); err != nil {
		return err
	}
	loop, err := openCommitLoop(ctx, filepath.Join(root, "anchor"), o.synchronous, r.rowBytes)
	if err != nil {
		return err
	}
	defer loop.Close()
	r.synchronous = loop.Synchronous
	r.creates, err = profiled(srv, o.profileDir, "creates", func() (throughput, error) {
		return alternate(o, &r.commits, func(warmup, window time.Duration) (throughput, error) {
			return closedLoop(srv, o.clients, warmup, window, create)
		}, func(warmup, window time.Duration) (throughput, error) {
			return loop.run(ctx, warmup, window)
		})
	})
	if err != nil {
		return err
	}

	// 2. Gets: a random job of a random owner, read with that owner's key, against the bare
	// handler answering the same requests with the view of one of those jobs.
	var ids, idKeys []string
	for k, l := range byOwner {
		for _, id := range l {
			ids = append(ids, id)
			idKeys = append(idKeys, keys[k])
		}
	}
	r.jobsHeld = len(ids) + 1 // and the hanging job
	if len(ids) == 0 {
		return errors.New("no job was created, so there is nothing to read")
	}
	code, view, err := c.do(ctx, "GET", "/v1/jobs/"+ids[0], nil, "Authorization", "Bearer "+idKeys[0])
	if err == nil && code != 200 {
		err = fmt.Errorf("get: status %d: %.300s", code, view)
	}
	if err != nil {
		return err
	}
	bare, err := startServer(childConfig{DataDir: filepath.Join(root, "bare"), Bare: view})
	if err != nil {
		return err
	}
	defer bare.Close()
	bc := newClient(bare.URL, o.clients)
	defer bc.close()
	get := func(c *client) func(ctx context.Context, rng *rand.Rand) error {
		return func(ctx context.Context, rng *rand.Rand) error {
			i := rng.IntN(len(ids))
			_, err := c.get(ctx, idKeys[i], ids[i])
			return err
		}
	}
	r.gets, err = profiled(srv, o.profileDir, "gets", func() (throughput, error) {
		return alternate(o, &r.bare, func(warmup, window time.Duration) (throughput, error) {
			return closedLoop(srv, o.clients, warmup, window, get(c))
		}, func(warmup, window time.Duration) (throughput, error) {
			return closedLoop(bare, o.clients, warmup, window, get(bc))
		})
	})
	return err
}

// alternate runs o.rounds rounds of a slice of measured, then a slice of its anchor, and
// returns the measured total, adding the anchor's into anchorTotal. The first slice of each
// has the full warm-up; later ones a short one, their connections and caches being warm.
func alternate(o options, anchorTotal *throughput, measured, anchor func(warmup, window time.Duration) (throughput, error)) (throughput, error) {
	var total throughput
	slice := o.duration / time.Duration(o.rounds)
	warmup := o.warmup
	for range o.rounds {
		m, err := measured(warmup, slice)
		if err != nil {
			return total, err
		}
		total.add(m)
		a, err := anchor(warmup, slice)
		if err != nil {
			return total, err
		}
		anchorTotal.add(a)
		warmup = min(o.warmup, roundWarmup)
	}
	return total, nil
}

// roundWarmup is the warm-up of every round of alternate after the first.
const roundWarmup = 200 * time.Millisecond

func idleServerPhase(o options, r *results, dir string, limits catalog.Limits) error {
	keys, err := makeKeys(dir, 1)
	if err != nil {
		return err
	}
	srv, err := startServer(childConfig{DataDir: dir, Slots: 1, Limits: limits, LogLevel: o.logLevel})
	if err != nil {
		return err
	}
	defer srv.Close()
	c := newClient(srv.URL, 1)
	defer c.close()
	// 3. One warm-up job, so the first sample does not pay for cold caches.
	if _, err := measurePickup(context.Background(), c, keys[0], 1, o.gap); err != nil {
		return err
	}
	r.pickup, err = measurePickup(context.Background(), c, keys[0], o.samples, o.gap)
	return err
}

// profiled runs phase, with the server's CPU profile recorded into dir/name.pprof when
// dir is set.
func profiled(srv *server, dir, name string, phase func() (throughput, error)) (throughput, error) {
	if dir == "" {
		return phase()
	}
	if err := srv.StartProfile(filepath.Join(dir, name+".pprof")); err != nil {
		return throughput{}, err
	}
	t, err := phase()
	if err2 := srv.StopProfile(); err == nil {
		err = err2
	}
	return t, err
}

// makeKeys issues n API keys in the store of dir before its server starts, as
// "chaperone keys create" would, and returns them.
func makeKeys(dir string, n int) ([]string, error) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "chaperone.db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	keys := make([]string, n)
	for i := range keys {
		key, rec := apikey.New(fmt.Sprintf("bench-%d", i), time.Now())
		if err := st.CreateKey(ctx, rec); err != nil {
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}

// raiseFDLimit lifts the soft limit on open files to at least need where the hard limit
// allows (Go raises it to the hard limit by itself on Linux; this only checks).
func raiseFDLimit(need uint64) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur >= need {
		return l.Cur, nil
	}
	if l.Max < need {
		return l.Cur, fmt.Errorf("the open-files limit is %d (hard %d), below the %d the benchmark needs; lower -waiters or raise it (ulimit -n)", l.Cur, l.Max, need)
	}
	l.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	return need, nil
}

// loadAverage is the 1-minute load average: other work on the machine shares its cores
// with the benchmark.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func report(out io.Writer, o options, r results) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(cols ...any) {
		for i, c := range cols {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	verdict := func(ok bool) string {
		if ok {
			return "OK"
		}
		return "MISS"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	lat := func(sorted []time.Duration) string {
		return fmt.Sprintf("p50 %s, p99 %s", ms(percentile(sorted, 50)), ms(percentile(sorted, 99)))
	}
	cores := func(t throughput) string {
		return fmt.Sprintf("server %.2f cores, clients %.2f cores", t.ServerCPU.Seconds()/t.Window.Seconds(), t.ClientCPU.Seconds()/t.Window.Seconds())
	}
	ratio := func(measured, anchor float64) float64 {
		if anchor == 0 {
			return 0
		}
		return measured / anchor
	}
	share := func(measured, anchor throughput) string {
		return fmt.Sprintf("%.0f /s / %.0f /s = %.2f", measured.Rate(), anchor.Rate(), ratio(measured.Rate(), anchor.Rate()))
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	w := r.waiters
	heap := goMem(w.During) - goMem(w.Before)
	rss := int64(w.During.RSS) - int64(w.Before.RSS)
	pickupOK := func(sorted []time.Duration) string { return verdict(percentile(sorted, 50) < targetPickup) }

	row("#", "figure", "measured / anchor = ratio", "target", "result")
	row("1", "durable creates (POST /v1/predictions → 202)", share(r.creates, r.commits),
		fmt.Sprintf("≥ %.2f", targetCreates), verdict(ratio(r.creates.Rate(), r.commits.Rate()) >= targetCreates))
	row("", "  anchor: raw SQLite commit loop, synchronous="+r.synchronous, "", "", "")
	row("", "  latency", lat(r.creates.Latencies), "", "")
	row("2", "GET /v1/jobs/{id} (→ 200)", share(r.gets, r.bare),
		fmt.Sprintf("≥ %.2f", targetGets), verdict(ratio(r.gets.Rate(), r.bare.Rate()) >= targetGets))
	row("", "  anchor: bare Go JSON handler, same clients", "", "", "")
	row("", "  latency", lat(r.gets.Latencies)+" (bare: "+lat(r.bare.Latencies)+")", "", "")
	row("3", "pickup, server: started_at − created_at", lat(r.pickup.Server), "p50 < "+ms(targetPickup), pickupOK(r.pickup.Server))
	row("", "  client: send → a GET shows it running", lat(r.pickup.Seen), "p50 < "+ms(targetPickup), pickupOK(r.pickup.Seen))
	row("", "  client: send → long-poll shows it succeeded", lat(r.pickup.Done), "", "")
	row("4", fmt.Sprintf("server RSS added by %d held waits", w.N), fmt.Sprintf("%.1f MB", mb(rss)),
		fmt.Sprintf("≤ %.0f MB", targetWaiters), verdict(mb(rss) <= targetWaiters))
	row("", "  same, Go heap+stack", fmt.Sprintf("%.1f MB", mb(heap)),
		fmt.Sprintf("≤ %.0f MB", targetWaiters), verdict(mb(heap) <= targetWaiters))
	tw.Flush()

	fmt.Fprintf(out, "\nHow each figure was measured:\n")
	note := func(n int, format string, args ...any) {
		fmt.Fprint(out, wrap(fmt.Sprintf("%d. ", n)+fmt.Sprintf(format, args...), 100, "   "))
	}
	fmt.Fprint(out, wrap(fmt.Sprintf("Each throughput phase runs in %d rounds of %s, each followed by a round of its anchor, "+
		"so that both see the same machine while other work on it comes and goes; the first round of each has "+
		"%s of warm-up, later ones %s.", o.rounds, o.duration/time.Duration(o.rounds), o.warmup, min(o.warmup, roundWarmup)), 100, ""))
	note(1, "%d clients in a closed loop (each sends its next request when its last is answered), "+
		"%s measured in all, each request with the API key of one of %d owners at random. "+
		"Each 202 is a committed SQLite transaction of the store that runs every quota check. The worker's "+
		"only slot is busy with a job that never ends, so the jobs stay queued (about %d per owner at the "+
		"end). %d answered, %d failed; %s.%s The anchor: one connection of this process inserting one row "+
		"of %d bytes (a job row's mean size) per transaction and committing it, back to back, "+
		"into a SQLite file in WAL mode next to the store's, with synchronous=%s; %d commits, latency %s.",
		o.clients, o.duration, o.owners, r.jobsHeld/o.owners, r.creates.N, r.creates.Errors, cores(r.creates), errNote(r.creates),
		r.rowBytes, r.synchronous, r.commits.N, lat(r.commits.Latencies))
	note(2, "The same clients, each GET a random job of a random owner (with that owner's key) among the "+
		"%d jobs the store then holds; each request checks the key and reads the row. %d answered, %d failed; %s.%s "+
		"The anchor: a net/http server in a child process of its own that answers the same requests (same "+
		"clients, ids and keys) by encoding a job view of the same fields and values from a struct, after "+
		"checking only that a bearer key is present. %d answered, %d failed; %s.%s",
		r.jobsHeld, r.gets.N, r.gets.Errors, cores(r.gets), errNote(r.gets), r.bare.N, r.bare.Errors, cores(r.bare), errNote(r.bare))
	note(3, "%d \"ok\" jobs (the stand-in tool: one shell process) submitted one at a time, %s apart, "+
		"to a second server whose one-slot worker is idle. The first line is the server's own view, "+
		"both stamps taken by the server and stored to the millisecond (so 0 means under 1 ms): "+
		"from the API accepting the job to the worker leasing it. The second is what a client sees: "+
		"from sending the create until a GET (polled back to back, no hold) shows it running or later; "+
		"it includes the create's round trip and one poll's. The third: until a Prefer: wait "+
		"long-poll, sent once it ran, answers with it succeeded (the tool ran and the job completed).",
		len(r.pickup.Server), o.gap)
	note(4, "%d connections, each holding GET /v1/jobs/{id} with Prefer: wait=60 on the running job "+
		"that never ends. The server process reports its own memory, after two full GCs, the second "+
		"returning free memory to the OS (debug.FreeOSMemory), before the long-polls and while they are held: "+
		"RSS is VmRSS (%.1f MB before, %.1f MB while held); heap+stack is HeapInuse+StackInuse (here %+.1f MB heap, "+
		"%+.1f MB stacks); the clients are another process and are not counted. This runs first on its server, "+
		"before the creates fill SQLite's page caches (memory outside Go's heap). Server goroutines %d → %d; "+
		"while held, the server used %.1f%% of one core over %s; %d long-polls ended early.%s Once released: "+
		"heap+stack %+.1f MB and RSS %+.1f MB against before. Open-files limit %d.",
		w.N, mb(int64(w.Before.RSS)), mb(int64(w.During.RSS)),
		mb(int64(w.During.HeapInuse)-int64(w.Before.HeapInuse)), mb(int64(w.During.StackInuse)-int64(w.Before.StackInuse)),
		w.Before.Goroutines, w.During.Goroutines, 100*w.CPU.Seconds()/w.Hold.Seconds(), w.Hold,
		w.Early, earlyNote(w), mb(goMem(w.After)-goMem(w.Before)), mb(int64(w.After.RSS)-int64(w.Before.RSS)), r.fdLimit)
}

// wrap breaks text into lines of at most width, indenting every line after the first.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && line+1+len([]rune(word)) > width {
			b.WriteString("\n" + indent)
			line = len(indent)
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len([]rune(word))
	}
	return b.String() + "\n"
}

// goMem is the memory the Go runtime holds for the heap and goroutine stacks.
func goMem(s serverStats) int64 { return int64(s.HeapInuse + s.StackInuse) }

func errNote(t throughput) string {
	if t.FirstErr == nil {
		return ""
	}
	return fmt.Sprintf(" First error: %v.", t.FirstErr)
}

func earlyNote(w waiters) string {
	if w.FirstErr == nil {
		return ""
	}
	return fmt.Sprintf(" First: %v.", w.FirstErr)
}
