package main

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLineNamesTheCommit(t *testing.T) {
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "1e56197a3b2cd4e5f60718293a4b5c6d7e8f9012"},
			{Key: "vcs.time", Value: "2026-11-28T05:13:57Z"}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name    string
		ldflags string // main.version as -ldflags set it
		info    *debug.BuildInfo
		want    string
		stamp   [3]string // main.commit, main.commitDate and main.modified, as make build sets them
	}{
		{"make build", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev (commit 822128c2e037 of 2026-11-29, modified)",
			[3]string{"822128c2e037a1b2c3d4e5f60718293a4b5c6d7e", "2026-11-29", "true"}},
		{"make build outside a checkout", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", [3]string{}},
		{"go build in a checkout", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			"dev (commit 1e56197a3b2c of 2026-11-28)", [3]string{}},
		{"with local changes", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			"dev (commit 1e56197a3b2c of 2026-11-28, modified)", [3]string{}},
		{"go install of a tag", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0", [3]string{}},
		{"a release build", "v1.4.0", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			"v1.4.0 (commit 1e56197a3b2c of 2026-11-28)", [3]string{}},
		{"built without VCS information", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", [3]string{}},
		{"no build information", "dev", nil, "dev", [3]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(v, c, d, m string) { version, commit, commitDate, modified = v, c, d, m }(version, commit, commitDate, modified)
			version = tc.ldflags
			commit, commitDate, modified = tc.stamp[0], tc.stamp[1], tc.stamp[2]
			if got := versionLine(tc.info); got != tc.want {
				t.Errorf("versionLine = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMakeBuildStampsTheCommit: the binary make build builds says which commit it is,
// in a git worktree too (where go build alone stamps nothing).
func TestMakeBuildStampsTheCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout (git rev-parse: %v): no commit to stamp", err)
	}
	bin := filepath.Join(t.TempDir(), "chaperone")
	build := exec.Command("make", "-s", "build", "OUT="+bin)
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if want := "dev (commit " + strings.TrimSpace(string(head)) + " of "; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("chaperone --version of make build: %q (%v), want it to start with %q", out, err, want)
	}
}
