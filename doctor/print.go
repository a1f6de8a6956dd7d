package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Summary is the line that closes the models: how many can run.
func Summary(models []ModelReport) string {
	n := 0
	for _, m := range models {
		if m.Status != No {
			n++
		}
	}
	return fmt.Sprintf("%d of %d models can run on this worker", n, len(models))
}

// WriteJSON writes the report as indented JSON, for scripts (the field names are
// documented in the README).
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for a person: one line per model with its verdict and the
// one reason, the summary, the machine's lines, then per engine what was found where, so
// that every "no" and "warn" above has its fix below.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tSTATUS\tREASON")
	for _, m := range r.Models {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Model, m.Status, m.Reason)
	}
	fmt.Fprintf(tw, "%s.\n\n", Summary(r.Models))
	fmt.Fprintln(tw, "CHECK\tSTATUS\tRESULT")
	fmt.Fprintf(tw, "gpus\t%s\t%s\n", r.GPUs.Status, r.GPUs.Reason)
	fmt.Fprintf(tw, "alignment server\t%s\t%s\n", r.MSA.Status, r.MSA.Reason)
	fmt.Fprintf(tw, "disk\t%s\t%s\n", r.Disk.Status, r.Disk.Reason)
	if s := r.Server; s != nil {
		fmt.Fprintf(tw, "server\t%s\t%s\n", s.Reached.Status, s.Reached.Reason)
		fmt.Fprintf(tw, "worker token\t%s\t%s\n", s.Token.Status, s.Token.Reason)
		if s.Reached.Status != No {
			offered := Line{OK, "offers " + list(s.Offered)}
			switch {
			case len(s.Offered) == 0:
				offered = Line{No, "offers none of the models that can run here"}
			case len(s.NotOffered) > 0:
				offered = Line{Warn, fmt.Sprintf("offers %s; not %s (a different version of chaperone?)", list(s.Offered), list(s.NotOffered))}
			}
			fmt.Fprintf(tw, "models offered\t%s\t%s\n", offered.Status, offered.Reason)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range r.Engines {
		writeEngine(w, e)
	}
	return nil
}

func list(models []string) string {
	if len(models) == 0 {
		return "none"
	}
	return strings.Join(models, ", ")
}

// writeEngine is one engine's account: its tool, version, self-check and weights.
func writeEngine(w io.Writer, e EngineReport) {
	fmt.Fprintf(w, "\n%s (%s)\n", e.Engine, strings.Join(e.Models, ", "))
	if e.Tool == "" {
		fmt.Fprintf(w, "  tool:       not found (looked: %s)\n", e.Looked)
	} else {
		fmt.Fprintf(w, "  tool:       %s (looked: %s)\n", e.Tool, e.Looked)
	}
	tested := "the engine names no tested version"
	if len(e.Tested) > 0 {
		tested = "tested with " + strings.Join(e.Tested, ", ")
	}
	switch {
	case e.Version == "":
		fmt.Fprintf(w, "  version:    unknown: %s (%s)\n", e.VersionUnknown, tested)
	case e.VersionTested:
		fmt.Fprintf(w, "  version:    %s (%s)\n", e.Version, tested)
	default:
		fmt.Fprintf(w, "  version:    %s, untested (%s)\n", e.Version, tested)
	}
	if e.Check == OK {
		fmt.Fprintln(w, "  self-check: passed")
	} else {
		fmt.Fprintf(w, "  self-check: failed: %s\n", e.CheckDetail)
	}
	for _, wt := range e.Weights {
		where := wt.Path
		if wt.Note != "" {
			where = wt.Note
		}
		fmt.Fprintf(w, "  weights:    %s: %s (%s)\n", wt.Name, wt.State, where)
		if wt.State != "present" && wt.Fetch != "" {
			fetched := ""
			if wt.Fetched {
				fetched = "the tool downloads it on first use with internet; ahead of time: "
			}
			fmt.Fprintf(w, "              %s%s\n", fetched, wt.Fetch)
		}
	}
}
