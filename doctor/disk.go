package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// diskNeedGB is the free disk a worker's data folder should have: the work folders of the
// jobs running at once, whose structures, confidence files and logs take a few GB for a
// large job. The weights are not counted (they live in the tools' own caches), nor the
// alignments, which the server keeps in its artifact store.
const diskNeedGB = 12

// checkDisk reports the free disk of the data folder, or of its nearest existing parent
// when the worker has not made it yet.
func checkDisk(dir string) DiskReport {
	if dir == "" {
		dir = "."
	}
	path, err := filepath.Abs(dir)
	if err != nil {
		return DiskReport{Line: Line{No, err.Error()}, Path: dir, NeedGB: diskNeedGB}
	}
	for {
		if _, err := os.Stat(path); err == nil || filepath.Dir(path) == path {
			break
		}
		path = filepath.Dir(path)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return DiskReport{Line: Line{No, fmt.Sprintf("cannot tell the free disk of %s: %v", path, err)}, Path: path, NeedGB: diskNeedGB}
	}
	free := float64(st.Bavail) * float64(st.Bsize) / 1e9
	r := DiskReport{Path: path, FreeGB: free, NeedGB: diskNeedGB}
	r.Line = Line{OK, fmt.Sprintf("%.0f GB free in %s (a worker needs about %d GB)", free, path, diskNeedGB)}
	if free < diskNeedGB {
		r.Line = Line{Warn, fmt.Sprintf("only %.1f GB free in %s; a worker needs about %d GB for its work folders", free, path, diskNeedGB)}
	}
	return r
}
