// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb and pg_ctl in a
// temporary folder, run as an unprivileged user when the test runs as root (PostgreSQL
// refuses to run as root). Each test gets a fresh database of its own on the one cluster
// of its test binary. Tests skip, saying why, only when the PostgreSQL binaries are absent
// and CHAPERONE_TEST_POSTGRES is not "required".
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestSomething(t *testing.T) { url := pgtest.Database(t) ... }
//
// It imports nothing of chaperone's.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// unprivileged is the account the cluster runs as when the tests run as root.
const unprivileged = "nobody"

var (
	once     sync.Once
	cluster  *Cluster
	startErr error
	dbSeq    atomic.Int64
)

// Main runs the tests of m and stops the cluster, if one was started, when they are done.
func Main(m *testing.M) int {
	code := m.Run()
	if cluster != nil {
		cluster.Stop()
	}
	return code
}

// Database creates an empty database on the test binary's cluster, starting the cluster
// on first use, and returns its URL. It skips tb when PostgreSQL is not installed and
// fails it when the cluster does not start.
func Database(tb testing.TB) string {
	tb.Helper()
	c := shared(tb)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url, err := c.CreateDatabase(ctx, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return url
}

func shared(tb testing.TB) *Cluster {
	tb.Helper()
	once.Do(func() { cluster, startErr = Start() })
	switch {
	case errors.Is(startErr, ErrNotInstalled) && os.Getenv(RequiredEnv) == "required":
		tb.Fatalf("pgtest: %v, and %s=required", startErr, RequiredEnv)
	case errors.Is(startErr, ErrNotInstalled):
		tb.Skipf("pgtest: %v; install PostgreSQL (Debian: apt-get install postgresql) to run this test", startErr)
	case startErr != nil:
		tb.Fatalf("pgtest: %v", startErr)
	}
	return cluster
}

// RequiredEnv names the environment variable that, set to "required" (as CI does), turns
// the skip for missing binaries into a failure.
const RequiredEnv = "CHAPERONE_TEST_POSTGRES"

// ErrNotInstalled says that no PostgreSQL server binaries were found.
var ErrNotInstalled = errors.New("PostgreSQL binaries (initdb, pg_ctl) not found")

// Cluster is a running PostgreSQL cluster in a temporary folder.
type Cluster struct {
	bin  string // folder of initdb, pg_ctl
	dir  string // removed by Stop
	data string
	port int
	cred *syscall.Credential // nil: run as the current user
}

// URL is the connection URL of database name on c.
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// CreateDatabase creates an empty database called name on c and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return c.URL(name), nil
}

// Start initialises and starts a new cluster listening on a free local port, tuned for
// tests: nothing is synced to disk.
func Start() (*Cluster, error) { return start(false) }

// StartDurable is Start with PostgreSQL's durable defaults (fsync, synchronous commit),
// for measurements.
func StartDurable() (*Cluster, error) { return start(true) }

func start(durable bool) (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		if c.cred, err = credentialOf(unprivileged); err != nil {
			return nil, err
		}
	}
	if c.dir, err = os.MkdirTemp("", "chaperone-pg-"); err != nil {
		return nil, err
	}
	c.data = filepath.Join(c.dir, "data")
	if err := os.Mkdir(c.data, 0o700); err != nil {
		return nil, err
	}
	if c.cred != nil {
		// The folder must be reachable and the data folder owned by the server's user.
		if err := errors.Join(os.Chmod(c.dir, 0o755), os.Chown(c.data, int(c.cred.Uid), int(c.cred.Gid))); err != nil {
			return nil, err
		}
	}
	if c.port, err = freePort(); err != nil {
		return nil, err
	}
	if err := c.run("initdb", "-D", c.data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		os.RemoveAll(c.dir)
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c max_connections=400",
		c.port, c.data)
	if !durable {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	if err := c.run("pg_ctl", "-D", c.data, "-l", filepath.Join(c.data, "log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.data, "log"))
		os.RemoveAll(c.dir)
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	return c, nil
}

// Stop stops the cluster and removes its folder.
func (c *Cluster) Stop() {
	c.run("pg_ctl", "-D", c.data, "-m", "immediate", "-w", "stop")
	os.RemoveAll(c.dir)
}

func (c *Cluster) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}

// findBin looks for initdb on PATH, then in Debian's versioned folders, newest first.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "pg_ctl")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func credentialOf(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("running PostgreSQL as root is refused and %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
