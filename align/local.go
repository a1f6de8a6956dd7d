package align

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LocalConfig configures a Local; the package doc says what runs and how to build the
// databases.
type LocalConfig struct {
	// Dir is the folder of the databases.
	Dir string
	// DB is the name of the main (UniRef) database in Dir; default "uniref30".
	DB string
	// EnvDB is the name of an environmental database in Dir, searched after DB; "" for none.
	EnvDB string
	// Mmseqs is the mmseqs command; default "mmseqs", found on PATH.
	Mmseqs string
	// Threads is the threads of each mmseqs command; default every core.
	Threads int
	// TempDir is where a search keeps its files while it runs; default the system's.
	TempDir string
}

// Local searches with MMseqs2 on this machine.
type Local struct {
	cfg           LocalConfig
	main, env     *database // env is nil without an environmental database
	pairingOption bool      // pairaln takes --pairing-mode (MMseqs2 15 and later)
	source        Source
}

// database is an MMseqs2 database of Dir.
type database struct {
	path       string // Dir/NAME
	expandable bool   // ColabFold's layout: NAME_seq and NAME_aln beside NAME
	taxonomy   bool   // pairaln can pair its hits
}

// members is the database that hits are aligned and read from: the cluster members of an
// expandable database, the database itself otherwise.
func (d *database) members() string {
	if d.expandable {
		return d.path + "_seq"
	}
	return d.path
}

// NewLocal finds the mmseqs command and the databases of cfg.
func NewLocal(cfg LocalConfig) (*Local, error) {
	if cfg.DB == "" {
		cfg.DB = "uniref30"
	}
	if cfg.Mmseqs == "" {
		cfg.Mmseqs = "mmseqs"
	}
	if cfg.Threads <= 0 {
		cfg.Threads = runtime.NumCPU()
	}
	mmseqs, err := exec.LookPath(cfg.Mmseqs)
	if err != nil {
		return nil, fmt.Errorf("align: no mmseqs command (Debian: apt-get install mmseqs2): %w", err)
	}
	cfg.Mmseqs = mmseqs
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, fmt.Errorf("align: the database folder: %w", err)
	}
	version, err := exec.Command(mmseqs, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("align: %s version: %w", mmseqs, err)
	}
	// pairaln's help lists its options: --pairing-mode since MMseqs2 15.
	help, err := exec.Command(mmseqs, "pairaln", "-h").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("align: %s pairaln -h: %w", mmseqs, err)
	}
	l := &Local{cfg: cfg, pairingOption: strings.Contains(string(help), "--pairing-mode")}
	ids := []string{"mmseqs " + strings.TrimSpace(string(version))}
	for _, name := range []string{cfg.DB, cfg.EnvDB} {
		if name == "" {
			continue
		}
		db, id, err := openDatabase(cfg.Dir, name)
		if err != nil {
			return nil, err
		}
		if l.main == nil {
			l.main = db
		} else {
			l.env = db
		}
		ids = append(ids, id)
	}
	l.source = Source{Database: strings.Join(ids, "; "), Mode: "all"}
	if l.env != nil {
		l.source.Mode = "env"
	}
	if l.main.taxonomy {
		l.source.Pairing = "paircomplete"
	}
	return l, nil
}

// dbFiles are the files whose sizes identify a database's content: a rebuilt database
// changes some. Its index (.idx) is left out: building one speeds searches up but does not
// change their results.
var dbFiles = []string{"", ".index", ".dbtype", "_h.index", "_seq", "_seq.index", "_aln", "_aln.index", "_mapping", "_taxonomy"}

// openDatabase finds the database name of dir, its layout and taxonomy, and names it by
// its content.
func openDatabase(dir, name string) (*database, string, error) {
	db := &database{path: filepath.Join(dir, name)}
	if !exists(db.path + ".dbtype") {
		return nil, "", fmt.Errorf("align: no MMseqs2 database %s in %s (no %s.dbtype); the align package doc says how to build one", name, dir, name)
	}
	db.expandable = exists(db.path+"_seq.dbtype") && exists(db.path+"_aln.dbtype")
	// What MMseqs2 asks of a taxonomy database (Parameters::findMissingTaxDbFiles).
	db.taxonomy = exists(db.path+"_mapping") && (exists(db.path+"_taxonomy") ||
		exists(db.path+"_nodes.dmp") && exists(db.path+"_names.dmp") && exists(db.path+"_merged.dmp"))
	h := sha256.New()
	for _, suffix := range dbFiles {
		if info, err := os.Stat(db.path + suffix); err == nil {
			fmt.Fprintf(h, "%s %d\n", suffix, info.Size())
		}
	}
	return db, name + "#" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Source says which databases and mmseqs version l searches with.
func (l *Local) Source() Source { return l.source }

// searchParams are colabfold_search's search parameters (its default sensitivity, set by
// the k-mer thresholds of the ColabFold server).
var searchParams = []string{"--num-iterations", "3", "-a", "-e", "0.1", "--max-seqs", "10000", "--k-score", "seq:96,prof:80"}

// Search aligns q's distinct chains in a temporary folder, which it removes.
func (l *Local) Search(ctx context.Context, q Query) (Result, error) {
	chains, err := q.distinct()
	if err != nil {
		return Result{}, err
	}
	work, err := os.MkdirTemp(l.cfg.TempDir, "align-")
	if err != nil {
		return Result{}, fmt.Errorf("align: %w", err)
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "query.fasta"), []byte(queryFASTA(chains)), 0o644); err != nil {
		return Result{}, fmt.Errorf("align: %w", err)
	}
	threads := []string{"--threads", strconv.Itoa(l.cfg.Threads)}
	main := l.main
	steps := [][]string{
		{"createdb", "query.fasta", "qdb", "--shuffle", "0", "--dbtype", "1"},
		cat([]string{"search", "qdb", main.path, "res", "tmp"}, searchParams, threads),
		{"mvdb", "tmp/latest/profile_1", "prof_res"},
		{"lndb", "qdb_h", "prof_res_h"},
	}
	steps = append(steps, msaSteps(main, "qdb", "prof_res", "res", "uniref.a3m",
		[]string{"--expansion-mode", "0", "-e", "inf", "--expand-filter-clusters", "1", "--max-seq-id", "0.95"}, threads)...)
	files := []string{"uniref.a3m"}
	if env := l.env; env != nil {
		steps = append(steps, cat([]string{"search", "prof_res", env.path, "res_env", "tmp_env"}, searchParams, threads))
		steps = append(steps, msaSteps(env, "prof_res", "tmp_env/latest/profile_1", "res_env", "env.a3m",
			[]string{"-e", "inf", "--expansion-mode", "0"}, threads)...)
		files = append(files, "env.a3m")
	}
	pair := len(chains) > 1 && main.taxonomy
	if pair {
		steps = append(steps, l.pairSteps(threads)...)
	}
	for _, args := range steps {
		if err := l.run(ctx, work, args); err != nil {
			return Result{}, err
		}
	}
	res := Result{Chains: chains, Source: l.source}
	if res.Unpaired, err = readAlignments(work, chains, files); err != nil {
		return Result{}, err
	}
	if pair {
		if res.Paired, err = readAlignments(work, chains, []string{"pair.a3m"}); err == nil {
			err = checkPaired(res.Paired)
		}
		if err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// msaSteps turn the hits res that the queries (profiles prof) found in db into the
// alignment file out, as colabfold_search does with its default filter: expand hits on
// cluster representatives to their members (expandable databases only), realign them
// with the profiles, filter and write A3M.
func msaSteps(db *database, query, prof, res, out string, expand, threads []string) [][]string {
	var steps [][]string
	hits := res
	if db.expandable {
		hits = res + "_exp"
		steps = append(steps, cat([]string{"expandaln", query, db.members(), res, db.path + "_aln", hits}, expand, threads))
	}
	target := db.members()
	return append(steps,
		cat([]string{"align", prof, target, hits, res + "_realign", "-e", "10", "--max-accept", "100000", "--alt-ali", "10", "-a"}, threads),
		cat([]string{"filterresult", "qdb", target, res + "_realign", res + "_filter",
			"--qid", "0", "--qsc", "0.8", "--diff", "0", "--max-seq-id", "1.0", "--filter-min-enable", "100"}, threads),
		cat([]string{"result2msa", "qdb", target, res + "_filter", out, "--msa-format-mode", "6",
			"--filter-msa", "1", "--filter-min-enable", "1000", "--diff", "3000", "--qid", "0.0,0.2,0.4,0.6,0.8,1.0",
			"--qsc", "0", "--max-seq-id", "0.95"}, threads),
	)
}

// pairSteps pair the main search's hits by taxon, as colabfold_search pairs: expand,
// score the hits, keep each chain's best hit of each taxon all chains share, align those,
// and write them as A3M, row i of every chain from the same taxon.
func (l *Local) pairSteps(threads []string) [][]string {
	db := l.main
	target := db.members()
	var steps [][]string
	hits := "res"
	if db.expandable {
		hits = "res_pexp"
		steps = append(steps, cat([]string{"expandaln", "qdb", target, "res", db.path + "_aln", hits,
			"--expansion-mode", "0", "-e", "inf", "--expand-filter-clusters", "0", "--max-seq-id", "0.95"}, threads))
	}
	var pairing []string
	if l.pairingOption {
		pairing = []string{"--pairing-mode", "1"}
	}
	return append(steps,
		cat([]string{"align", "prof_res", target, hits, "res_pair_realign", "-e", "0.001", "--max-accept", "1000000", "--alignment-mode", "1"}, threads),
		cat([]string{"pairaln", "qdb", db.path, "res_pair_realign", "res_pair"}, pairing, threads),
		cat([]string{"align", "prof_res", target, "res_pair", "res_pair_bt", "-e", "inf", "-a"}, threads),
		cat([]string{"pairaln", "qdb", db.path, "res_pair_bt", "res_final"}, pairing, threads),
		cat([]string{"result2msa", "qdb", target, "res_final", "pair.a3m", "--msa-format-mode", "5",
			"--filter-msa", "0", "--filter-min-enable", "1000", "--diff", "3000", "--qid", "0.2,0.4,0.6,0.8,1.0",
			"--qsc", "0", "--max-seq-id", "0.95"}, threads),
	)
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// run runs one mmseqs command in the work folder. mmseqs runs its workflows as shell
// scripts of further mmseqs commands, so cancelling kills its whole process group.
func (l *Local) run(ctx context.Context, work string, args []string) error {
	cmd := exec.CommandContext(ctx, l.cfg.Mmseqs, args...)
	cmd.Dir = work
	// MMSEQS_CALL_DEPTH=1 keeps workflows from printing their every parameter, as
	// colabfold_search sets it.
	cmd.Env = append(os.Environ(), "MMSEQS_CALL_DEPTH=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("align: mmseqs %s: %w", args[0], context.Cause(ctx))
	}
	if err != nil {
		return fmt.Errorf("align: mmseqs %s failed (%v): %s", strings.Join(args, " "), err, lastLines(string(out), 5))
	}
	return nil
}

// readAlignments reads the alignment files of a search, each an MMseqs2 database whose
// data file holds every query's block, and gives each chain its alignment.
func readAlignments(work string, chains, names []string) ([]string, error) {
	files := map[string][]byte{}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			return nil, fmt.Errorf("align: mmseqs wrote no %s: %w", name, err)
		}
		files[name] = data
	}
	out, err := assemble(chains, files, names)
	if err != nil {
		return nil, fmt.Errorf("align: %w", err)
	}
	return out, nil
}

// lastLines is the end of a command's output, for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
