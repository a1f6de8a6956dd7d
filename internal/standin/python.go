package standin

import (
	"fmt"
	"strings"
)

// What the stand-ins print as the Python programs they stand in for do: tracebacks and
// progress bars.

// Frame is the frame a stand-in's tracebacks point at: a file of the tool, a line of it
// and, unless "", the source shown under it.
type Frame struct {
	File string
	Line int
	Code string
}

// Traceback is the text Python's traceback module prints for the exception (as
// "RuntimeError: message") raised in function of the frame's file.
func (f Frame) Traceback(function, exception string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Traceback (most recent call last):\n  File \"%s\", line %d, in %s\n", f.File, f.Line, function)
	if f.Code != "" {
		fmt.Fprintf(&b, "    %s\n", f.Code)
	}
	b.WriteString(exception + "\n")
	return b.String()
}

// ProgressBar is one state of a tqdm progress bar: desc, then n of total done.
func ProgressBar(desc string, n, total int) string {
	pct := 0
	if total > 0 {
		pct = 100 * n / total
	}
	bar := strings.Repeat("█", pct/10) + strings.Repeat(" ", 10-pct/10)
	return fmt.Sprintf("%s%3d%%|%s| %d/%d [00:00<00:00, 10.00it/s]", desc, pct, bar, n, total)
}
