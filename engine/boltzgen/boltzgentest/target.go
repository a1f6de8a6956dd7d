package boltzgentest

import (
	"fmt"
	"strings"
)

// DesignTarget is the PDB target of the design tests, e2e's and the tier's alike: CA atoms of
// a protein chain A (residues 1-60, with 52A inserted) and DNA chains B and C (1-12). remark,
// when not "", is written as a REMARK 999 line (where a stand-in reads its behaviour).
func DesignTarget(remark string) string {
	var b strings.Builder
	b.WriteString("HEADER    DESIGN TARGET\n")
	if remark != "" {
		fmt.Fprintf(&b, "REMARK 999 %s\n", remark)
	}
	atom := 0
	add := func(chain, res string, n int, icode string) {
		atom++
		fmt.Fprintf(&b, "ATOM  %5d  CA  %3s %s%4d%1s   %8.3f%8.3f%8.3f  1.00 20.00           C\n", atom, res, chain, n, icode, float64(n), 1.0, 2.0)
	}
	for i := 1; i <= 60; i++ {
		add("A", "GLU", i, "")
		if i == 52 {
			add("A", "GLY", 52, "A")
		}
	}
	b.WriteString("TER\n")
	for _, chain := range []string{"B", "C"} {
		for i := 1; i <= 12; i++ {
			add(chain, " DA", i, "")
		}
		b.WriteString("TER\n")
	}
	b.WriteString("END\n")
	return b.String()
}
