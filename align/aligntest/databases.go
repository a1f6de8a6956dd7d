package aligntest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Two made-up proteins of the test databases (testdata/README): ChainA and ChainB have
// relatives in them, and a complex of the two pairs ten of them.
const (
	ChainA = "MSKIEELRKAGVDPETLAKLWNEGRSVEEIAEALGLSVDEVRKAYEEHFKGNPLTAEQLK"
	ChainB = "MTNLQEIFDRAKSGDWEAVRELLKRYGPMVYHTARRLTGNEHDAEDCVQETFLKAWRSLG"
)

// testdata is the folder of this package's test sequences, wherever a test runs.
func testdata() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata")
}

// Sequence is a sequence of the test databases: its name, its organism (OX= of its
// header) and its residues.
type Sequence struct {
	Name  string
	Taxon int
	Seq   string
}

// Sequences reads the FASTA files of the named databases (uniref and cf are built
// from testdata/uniref.fasta).
func Sequences(t testing.TB, dbs ...string) []Sequence {
	t.Helper()
	var out []Sequence
	for _, db := range dbs {
		if db == "cf" {
			db = "uniref"
		}
		f, err := os.Open(filepath.Join(testdata(), db+".fasta"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if header, ok := strings.CutPrefix(line, ">"); ok {
				var s Sequence
				if _, err := fmt.Sscanf(header, "%s OX=%d", &s.Name, &s.Taxon); err != nil {
					t.Fatalf("%s: header %q: %v", f.Name(), line, err)
				}
				out = append(out, s)
			} else {
				out[len(out)-1].Seq += line
			}
		}
	}
	return out
}

// RequireMmseqs fails the test under CI, whose .ci/run installs Debian's mmseqs2, when
// mmseqs is missing: a test that quietly skipped there would count for nothing. Elsewhere
// it skips.
func RequireMmseqs(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("mmseqs"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no mmseqs (apt-get install mmseqs2): %v", err)
		}
		t.Skipf("no mmseqs (apt-get install mmseqs2): %v", err)
	}
}

// Databases builds the test's databases in a temporary folder, as an operator would:
//   - uniref: a plain database of testdata/uniref.fasta with its taxonomy (createtaxdb
//     from a taxonomy dump and mapping of the test's own);
//   - env: a plain database of testdata/env.fasta, without taxonomy;
//   - cf: testdata/uniref.fasta in ColabFold's expandable layout (representatives of
//     clusters, cf_seq their members, cf_aln the alignments between them), with the
//     members' taxonomy under cf's name, as ColabFold ships it.
func Databases(t testing.TB) string {
	t.Helper()
	RequireMmseqs(t)
	dir, tmp := t.TempDir(), t.TempDir()
	writeTaxonomy(t, tmp, Sequences(t, "uniref"))
	taxdb := []string{"--ncbi-tax-dump", tmp, "--tax-mapping-file", filepath.Join(tmp, "map.tsv")}
	uniref, env := filepath.Join(testdata(), "uniref.fasta"), filepath.Join(testdata(), "env.fasta")
	for _, args := range [][]string{
		{"createdb", uniref, dir + "/uniref"},
		append([]string{"createtaxdb", dir + "/uniref", tmp + "/t1"}, taxdb...),
		{"createdb", env, dir + "/env"},
		{"createdb", uniref, dir + "/cf_seq"},
		{"linclust", dir + "/cf_seq", tmp + "/clu", tmp + "/t2", "--min-seq-id", "0.3", "-c", "0.5"},
		{"createsubdb", tmp + "/clu", dir + "/cf_seq", dir + "/cf"},
		{"createsubdb", tmp + "/clu", dir + "/cf_seq_h", dir + "/cf_h"},
		{"align", dir + "/cf", dir + "/cf_seq", tmp + "/clu", dir + "/cf_aln", "-a", "-e", "inf"},
		append([]string{"createtaxdb", dir + "/cf_seq", tmp + "/t3"}, taxdb...),
	} {
		if out, err := exec.Command("mmseqs", append(args, "-v", "1")...).CombinedOutput(); err != nil {
			t.Fatalf("mmseqs %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, suffix := range []string{"_mapping", "_taxonomy"} {
		if err := os.Symlink("cf_seq"+suffix, filepath.Join(dir, "cf"+suffix)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeTaxonomy writes, in dir, an NCBI taxonomy dump of the organisms of seqs (each a
// species under the root) and map.tsv, the organism of each sequence.
func writeTaxonomy(t testing.TB, dir string, seqs []Sequence) {
	t.Helper()
	nodes, names, mapping := "1\t|\t1\t|\tno rank\t|\n", "1\t|\troot\t|\t\t|\tscientific name\t|\n", ""
	seen := map[int]bool{}
	for _, s := range seqs {
		mapping += fmt.Sprintf("%s\t%d\n", s.Name, s.Taxon)
		if !seen[s.Taxon] {
			seen[s.Taxon] = true
			nodes += fmt.Sprintf("%d\t|\t1\t|\tspecies\t|\n", s.Taxon)
			names += fmt.Sprintf("%d\t|\torganism %d\t|\t\t|\tscientific name\t|\n", s.Taxon, s.Taxon)
		}
	}
	for name, text := range map[string]string{"nodes.dmp": nodes, "names.dmp": names, "merged.dmp": "", "delnodes.dmp": "", "map.tsv": mapping} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
