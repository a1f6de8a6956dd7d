package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...": make build sets
// the commit of the git checkout (commit, commitDate, and modified "true" when it had local
// changes), which a plain go build stamps by itself only outside git worktrees (go build
// looks for a .git folder, and a worktree has a .git file).
var (
	version    = "dev"
	commit     string
	commitDate string
	modified   string
)

// release is the release this binary is: what -ldflags set, else the module version that
// go install stamped (a tag, or a pseudo-version naming the commit), else "dev".
func release(info *debug.BuildInfo) string {
	if version != "dev" || info == nil {
		return version
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return version
}

// versionLine is what --version prints and the server reports: the release, and the
// commit it was built from, "modified" when that checkout had local changes.
func versionLine(info *debug.BuildInfo) string {
	v := release(info)
	rev, date, changed := commit, commitDate, modified == "true"
	if rev == "" && info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				date, _, _ = strings.Cut(s.Value, "T")
			case "vcs.modified":
				changed = s.Value == "true"
			}
		}
	}
	if rev == "" {
		return v
	}
	details := []string{"commit " + rev[:min(12, len(rev))]}
	if date != "" {
		details[0] += " of " + date
	}
	if changed {
		details = append(details, "modified")
	}
	return fmt.Sprintf("%s (%s)", v, strings.Join(details, ", "))
}

// buildInfo is this binary's build information, nil when it has none.
func buildInfo() *debug.BuildInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return info
}
