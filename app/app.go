// Package app assembles a chaperone server from its parts: the store, the artifact store,
// the HTTP API, the web app, the reaper and the in-process worker. The stores are inputs: the caller
// opens them (OpenStores opens the embedded defaults) and closes them after the server.
// cmd/chaperone fills its Config from flags and environment; end-to-end tests fill it
// directly.
package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/aligner"
	"github.com/chaperone-bio/chaperone/api"
	"github.com/chaperone-bio/chaperone/artifact"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/artifact/s3"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/doctor"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/postgres"
	"github.com/chaperone-bio/chaperone/store/sqlite"
	"github.com/chaperone-bio/chaperone/web"
	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/backend"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// Config is one server's setup. Zero values take the embedded defaults, but for the stores,
// which are required.
type Config struct {
	Store     store.Store
	Artifacts artifact.Store

	Addr string // listen address, default 127.0.0.1:8080; port 0 picks a free one
	// MetricsAddr, when set, is where /metrics is served instead of on Addr, for the
	// operator alone (a private interface, a scraper's network).
	MetricsAddr string
	DataDir     string // session key, work and cache folders; default ./chaperone-data
	Version     string
	Logger      *slog.Logger
	Limits      catalog.Limits
	// PublicURL, TrustedProxies and ForwardedHeader: see api.Config.
	PublicURL       string
	TrustedProxies  []netip.Prefix
	ForwardedHeader string
	// Worker: Slots 0 means one per GPU found, else 1; NoWorker runs the API alone.
	Slots    int
	NoWorker bool
	WorkerID string // default "local-<hostname>"
	Engines  []engine.Engine
	Tools    engine.Tools
	// WebAssets is the folder of the files the web app fetches (the Mol* viewer); default
	// <DataDir>/web.
	WebAssets string
	// MSAServerURL is the ColabFold-compatible server that the alignment stage searches
	// on, unless Searcher is set; default align.DefaultServer.
	MSAServerURL string
	// Searcher, when set, is what the alignment stage searches with instead (a local
	// MMseqs2, align.Local).
	Searcher align.Searcher
	// AlignCache bounds the shared alignment cache; zero fields take aligner's defaults.
	AlignCache aligner.Limits
	// AlignSlots is how many jobs this server's alignment stage searches at once;
	// default 4.
	AlignSlots int
	// StagingPerJob and StagingPerWorker cap the bytes of unfinished uploads from workers on
	// other machines that this server keeps, per job and per worker token; 0: the
	// defaults of remote.HandlerConfig.
	StagingPerJob, StagingPerWorker int64
	// Queue timing; tests shorten them.
	LeaseTTL    time.Duration // default 30 s
	Heartbeat   time.Duration // default 1 s
	ReapEvery   time.Duration // default 5 s
	MaxAttempts int           // default 2
}

// App is a running server.
type App struct {
	URL string // http://host:port
	// MetricsURL is http://host:port/metrics of Config.MetricsAddr, else of URL.
	MetricsURL string
	Store      store.Store
	Artifacts  artifact.Store
	API        *api.Server

	http    *http.Server
	metrics *http.Server // on Config.MetricsAddr; nil when metrics are served with the API
	remote  *remote.Handler
	worker  *worker.Worker // nil without an in-process worker
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errs    chan error
	once    sync.Once
}

// DefaultDataDir is the data folder when none is given.
const DefaultDataDir = "chaperone-data"

// Stores are a server's job store and artifact store.
type Stores struct {
	Jobs      store.Store
	Artifacts artifact.Store
}

// Locations say where a server's state lives. Empty fields take the defaults of the data
// folder, so that one machine needs nothing but DataDir.
type Locations struct {
	DataDir string
	// Store is a postgres:// URL of a PostgreSQL database shared by replicas; empty: the
	// embedded SQLite database chaperone.db in DataDir.
	Store string
	// Artifacts is an s3://bucket/prefix location (endpoint, region and credentials from
	// the standard AWS environment, see artifact/s3.ConfigFromEnv) or a folder, shared by
	// every replica when there are several; empty: "artifacts" in DataDir.
	Artifacts string
}

// OpenStore opens the job store of the data folder dataDir: the embedded SQLite database
// chaperone.db.
func OpenStore(ctx context.Context, dataDir string) (store.Store, error) {
	return OpenStoreAt(ctx, Locations{DataDir: dataDir})
}

// OpenStoreAt opens the job store that loc names. serve and keys both open it here, so
// that they always agree on where the state is.
func OpenStoreAt(ctx context.Context, loc Locations) (store.Store, error) {
	var (
		st  store.Store
		err error
	)
	switch {
	case postgres.IsURL(loc.Store):
		st, err = postgres.Open(ctx, loc.Store)
	case loc.Store == "":
		st, err = sqlite.Open(ctx, filepath.Join(loc.DataDir, "chaperone.db"))
	default:
		err = fmt.Errorf("%q is not a postgres:// URL", loc.Store)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the job store: %w", err)
	}
	return st, nil
}

// OpenStores opens both stores of the data folder dataDir: the job store of OpenStore and
// the artifact folder "artifacts".
func OpenStores(ctx context.Context, dataDir string) (Stores, error) {
	return OpenStoresAt(ctx, Locations{DataDir: dataDir})
}

// OpenStoresAt opens both stores that loc names.
func OpenStoresAt(ctx context.Context, loc Locations) (Stores, error) {
	st, err := OpenStoreAt(ctx, loc)
	if err != nil {
		return Stores{}, err
	}
	arts, err := openArtifacts(ctx, loc)
	if err != nil {
		st.Close()
		return Stores{}, fmt.Errorf("opening the artifact store: %w", err)
	}
	return Stores{Jobs: st, Artifacts: arts}, nil
}

func openArtifacts(ctx context.Context, loc Locations) (artifact.Store, error) {
	switch {
	case s3.IsURL(loc.Artifacts):
		cfg, err := s3.ConfigFromEnv(loc.Artifacts)
		if err != nil {
			return nil, err
		}
		return s3.Open(ctx, cfg)
	case loc.Artifacts == "":
		return artifactfs.Open(filepath.Join(loc.DataDir, "artifacts"))
	default:
		return artifactfs.Open(loc.Artifacts)
	}
}

// Close closes both stores; an artifact store holds something to close when it is an
// io.Closer.
func (s Stores) Close() error {
	err := s.Jobs.Close()
	if c, ok := s.Artifacts.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// Start starts serving from the stores of cfg; it returns once the listener is bound.
func Start(ctx context.Context, cfg Config) (*App, error) {
	if cfg.Store == nil || cfg.Artifacts == nil {
		return nil, errors.New("app: Config needs a Store and Artifacts")
	}
	cfg = withDefaults(cfg)
	log := cfg.Logger
	st, arts := cfg.Store, cfg.Artifacts
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	secret, err := sessionSecret(filepath.Join(cfg.DataDir, "session.key"))
	if err != nil {
		return nil, err
	}

	if _, err := api.CanonicalForwardedHeader(cfg.ForwardedHeader); err != nil {
		return nil, fmt.Errorf("forwarded header: %w", err)
	}
	searcher := cfg.Searcher
	if searcher == nil {
		if searcher, err = align.NewRemote(align.RemoteConfig{URL: cfg.MSAServerURL, UserAgent: "chaperone"}); err != nil {
			return nil, err
		}
	}
	shared, ok := arts.(artifact.Shared)
	if !ok {
		return nil, fmt.Errorf("app: the artifact store %T keeps no shared files, where the alignment cache lives", arts)
	}
	alignments := aligner.NewCache(shared, searcher.Source(), cfg.AlignCache)
	cat := catalog.New(cfg.Limits)
	cat.MSAServer, cat.MSASearch = searcher.Source().Server, searcher.Source().String()
	if err := addInputRules(cat, cfg.Engines); err != nil {
		return nil, err
	}
	queue := backend.New(backend.Config{Store: st, Artifacts: arts, MaxAttempts: cfg.MaxAttempts,
		LeaseTTL: cfg.LeaseTTL, Heartbeat: cfg.Heartbeat, Alignments: alignments, Logger: log})
	stage := aligner.New(aligner.Config{Store: st, Cache: alignments, Searcher: searcher, Slots: cfg.AlignSlots,
		Holder: alignerName(cfg.DataDir), Log: log.With("part", "aligner")})
	remoteWorkers, err := remote.NewHandler(remote.HandlerConfig{Queue: queue, Keys: st, Leases: queue,
		Staging: filepath.Join(cfg.DataDir, "uploads"), StagingPerJob: cfg.StagingPerJob, StagingPerWorker: cfg.StagingPerWorker,
		SweepEvery: cfg.LeaseTTL, PublicURL: cfg.PublicURL, Logger: log})
	if err != nil {
		return nil, err
	}
	// Until the in-process worker has checked its engines, creates wait for it (briefly)
	// rather than learn that no worker can run their model.
	var starting chan struct{}
	if !cfg.NoWorker {
		starting = make(chan struct{})
	}
	srv := api.New(api.Config{
		Catalog:          cat,
		Store:            st,
		Artifacts:        arts,
		Logger:           log,
		Version:          cfg.Version,
		PublicURL:        cfg.PublicURL,
		TrustedProxies:   cfg.TrustedProxies,
		ForwardedHeader:  cfg.ForwardedHeader,
		SessionSecret:    secret,
		WorkerTTL:        cfg.LeaseTTL,
		MetricsElsewhere: cfg.MetricsAddr != "",
		Starting:         starting,
		Workers:          remoteWorkers,
		Collectors:       []prometheus.Collector{alignmentMetrics{stage}},
	})
	webapp := web.New(web.Config{AssetDir: cfg.WebAssets, Logger: log})
	srv.Handle("GET /{$}", srv.Session(webapp.Page()))
	srv.Handle("GET /web/", webapp)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	// Held long-polls leave net/http while they wait, and come back through this listener.
	ln = srv.Listener(ln)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &App{
		URL:       "http://" + ln.Addr().String(),
		Store:     st,
		Artifacts: arts,
		API:       srv,
		remote:    remoteWorkers,
		// No ReadTimeout or WriteTimeout: they would cut long-polls and archives that
		// stream for as long as they take. Headers are bounded here, a create's body in
		// the API, and an idle keep-alive connection is closed after two minutes.
		http: &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		cancel: cancel,
		errs:   make(chan error, 2),
	}
	a.MetricsURL = a.URL + "/metrics"
	a.wg.Go(func() {
		if err := a.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.errs <- err
		}
	})
	if cfg.MetricsAddr != "" {
		if err := a.serveMetrics(cfg.MetricsAddr, log); err != nil {
			a.Close()
			return nil, err
		}
	}
	a.wg.Go(func() { queue.Reap(runCtx, cfg.ReapEvery) })
	a.wg.Go(func() { stage.Run(runCtx) })
	if !cfg.NoWorker {
		w, err := NewWorker(WorkerConfig{ID: cfg.WorkerID, Slots: cfg.Slots, DataDir: cfg.DataDir,
			Engines: cfg.Engines, Tools: cfg.Tools, Limits: cfg.Limits, Queue: queue, Logger: log})
		if err != nil {
			a.Close()
			return nil, err
		}
		err = w.Start(runCtx)
		close(starting)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.worker = w
		a.wg.Go(func() {
			if err := w.Wait(); err != nil {
				a.errs <- fmt.Errorf("worker: %w", err)
			}
		})
	}
	log.Info("chaperone serving", "url", a.URL, "data", cfg.DataDir, "worker", !cfg.NoWorker, "slots", cfg.Slots)
	return a, nil
}

// WorkerConfig is one worker's setup: the in-process worker of a server, or a worker on
// another machine (chaperone worker) whose Queue reaches the server over HTTP.
type WorkerConfig struct {
	ID      string
	Slots   int // 0: one per GPU found, else 1
	DataDir string
	Engines []engine.Engine
	Tools   engine.Tools
	// Limits give the runtime caps and the stall timeout; zero fields take the catalog's
	// defaults.
	Limits catalog.Limits
	Queue  worker.Queue
	Logger *slog.Logger
}

// NewWorker makes a worker with its work and cache folders in cfg.DataDir, running the
// jobs of cfg.Queue on its GPUs.
func NewWorker(cfg WorkerConfig) (*worker.Worker, error) {
	reg, err := engine.NewRegistry(cfg.Engines...)
	if err != nil {
		return nil, err
	}
	if cfg.Slots == 0 {
		cfg.Slots = max(1, len(GPUs()))
	}
	logFindings(cfg.Logger, cfg.ID, cfg.Engines, cfg.Tools)
	runtime, stall := Caps(cfg.Limits)
	return worker.New(worker.Config{
		ID:      cfg.ID,
		Slots:   cfg.Slots,
		GPUs:    GPUs(),
		Engines: reg,
		Tools:   cfg.Tools,
		Queue:   cfg.Queue,
		WorkDir: filepath.Join(cfg.DataDir, "work"),
		Runtime: runtime,
		Stall:   stall,
		Logger:  cfg.Logger,
	}), nil
}

// logFindings logs once what `chaperone doctor` says of each model on this worker, in its
// words, and how many can run. It runs the engines' checks, which the worker's first check
// then finds cached.
func logFindings(log *slog.Logger, workerID string, engines []engine.Engine, tools engine.Tools) {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("worker", workerID)
	models := doctor.Models(context.Background(), engines, tools, doctor.SystemGPUs{})
	for _, m := range models {
		attrs := []any{"model", m.Model, "status", string(m.Status), "reason", m.Reason}
		if m.Detail != "" {
			attrs = append(attrs, "detail", m.Detail)
		}
		log.Info("model on this worker", attrs...)
	}
	log.Info(doctor.Summary(models))
}

// Caps are the runtime cap per job kind and the stall cap of limits, whose zero fields
// take the catalog's defaults: what a worker holds the jobs it runs to.
func Caps(l catalog.Limits) (runtime map[job.Kind]time.Duration, stall time.Duration) {
	limits := catalog.New(l).Limits
	return map[job.Kind]time.Duration{
		job.PredictKind: limits.PredictRuntime,
		job.DesignKind:  limits.DesignRuntime,
		job.EmbedKind:   limits.EmbedRuntime,
	}, limits.Stall
}

// Drain stops the in-process worker taking work and returns once its running jobs ended, or
// with ctx's error; the API goes on serving meanwhile. Close then hands back what still runs.
func (a *App) Drain(ctx context.Context) error {
	if a.worker == nil {
		return nil
	}
	return a.worker.Drain(ctx)
}

// serveMetrics serves the API's metrics alone on addr.
func (a *App) serveMetrics(addr string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.API.Metrics())
	a.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	a.MetricsURL = "http://" + ln.Addr().String() + "/metrics"
	a.wg.Go(func() {
		if err := a.metrics.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.errs <- err
		}
	})
	return nil
}

// Err delivers a failure of the HTTP server or the worker.
func (a *App) Err() <-chan error { return a.errs }

// Close stops serving: held long-polls are answered, the worker hands back running jobs,
// and open requests get a few seconds to finish. The stores stay open: they are the
// caller's to close, after Close.
func (a *App) Close() error {
	var err error
	a.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Shutdown does not see the long-polls held outside net/http: answer them first,
		// and the leases remote workers hold, which it would wait for.
		a.API.EndHolds(ctx)
		a.remote.Close()
		err = a.http.Shutdown(ctx)
		if err != nil {
			a.http.Close()
		}
		if a.metrics != nil {
			a.metrics.Close()
		}
		a.cancel()
		a.wg.Wait()
	})
	return err
}

func withDefaults(cfg Config) Config {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.WebAssets == "" {
		cfg.WebAssets = filepath.Join(cfg.DataDir, "web")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MSAServerURL == "" {
		cfg.MSAServerURL = align.DefaultServer
	}
	// The catalog fills every limit left at zero with its default; the worker's caps must be
	// the limits the catalog advertises, so they are taken from it.
	cfg.Limits = catalog.New(cfg.Limits).Limits
	if cfg.Slots == 0 {
		cfg.Slots = max(1, len(GPUs()))
	}
	if cfg.WorkerID == "" {
		host, _ := os.Hostname()
		cfg.WorkerID = "local-" + host
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = backend.DefaultLeaseTTL
	}
	if cfg.ReapEvery == 0 {
		cfg.ReapEvery = 5 * time.Second
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 2
	}
	return cfg
}

// addInputRules registers with the catalog the input rules of the engines' tools, from
// the engines the server is given rather than from a worker, so that a server without one
// refuses at submit what the tool would fail on all the same.
func addInputRules(cat *catalog.Catalog, engines []engine.Engine) error {
	for _, e := range engines {
		rules, ok := e.(engine.InputRules)
		if !ok {
			continue
		}
		for _, model := range e.Models() {
			err := cat.AddInputRule(model, func(cx *bio.Complex, params map[string]any) error {
				return rules.CheckInput(model, cx, params)
			})
			if err != nil {
				return fmt.Errorf("engine %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// sessionSecret loads the key that signs web sessions, making it on first start, so
// sessions survive a restart.
func sessionSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) >= 32 {
		return b, nil
	}
	b = make([]byte, 32)
	_, _ = rand.Read(b)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("writing the session key: %w", err)
	}
	return b, nil
}

var nvidiaDevice = regexp.MustCompile(`^nvidia([0-9]+)$`)

// GPUs lists the CUDA device ids the in-process worker may use: those of
// CUDA_VISIBLE_DEVICES when the operator set it (so a server limited to some GPUs stays
// within them), else every NVIDIA GPU the machine exposes as /dev/nvidiaN.
func GPUs() []string {
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		var ids []string
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
		return ids
	}
	entries, err := os.ReadDir("/dev")
	if err != nil {
		return nil
	}
	var ids []int
	for _, e := range entries {
		if m := nvidiaDevice.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			ids = append(ids, n)
		}
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, n := range ids {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// alignerName names a server's alignment stage in its claims: the same on every start of
// the same replica (its host and data folder), different for two replicas of one host.
func alignerName(dataDir string) string {
	host, _ := os.Hostname()
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	return fmt.Sprintf("aligner-%s-%x", host, sum[:4])
}
