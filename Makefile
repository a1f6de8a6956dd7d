# chaperone: build, test, and measure on this machine.
GO ?= go

.PHONY: build test bench bench-align realtools

# OUT is the binary built. The commit of the git checkout goes into it (chaperone --version
# shows it); outside a checkout it is left out.
OUT ?= chaperone
COMMIT = $(shell git rev-parse HEAD 2>/dev/null)
COMMIT_DATE = $(shell git log -1 --format=%cs 2>/dev/null)
MODIFIED = $(if $(shell git status --porcelain --untracked-files=no 2>/dev/null),true)

build:
	$(GO) build -ldflags "-X main.commit=$(COMMIT) -X main.commitDate=$(COMMIT_DATE) -X main.modified=$(MODIFIED)" -o $(OUT) ./cmd/chaperone

test:
	$(GO) test ./...

# make bench measures the server against anchors run on this machine in the same run (a bare
# Go JSON handler, a raw SQLite commit loop) and holds 10,000 long-polls, which needs an
# open-files limit (ulimit -n) above 10,300; it takes under a minute. BENCHFLAGS passes flags
# to it, e.g. make bench BENCHFLAGS="-duration 10s -waiters 2000".
bench:
	$(GO) run ./cmd/chaperone-bench $(BENCHFLAGS)

# make bench-align measures the alignment stage: GPU slots' idle time and searches per chain
# with the searches made inside the jobs (as the tools did) and ahead of them by the stage,
# against a stand-in ColabFold server of a set delay; it starts PostgreSQL (Debian's
# postgresql package) and takes about 6 minutes. ALIGNBENCHFLAGS passes flags to it, e.g.
# make bench-align ALIGNBENCHFLAGS="-delays 4s -proteins 4".
bench-align:
	$(GO) run ./cmd/chaperone-alignbench $(ALIGNBENCHFLAGS)

# make realtools is the real-package tier: it installs the releases of engine/pins/pins.json
# from PyPI, each in its own environment under ~/.cache/chaperone/realtools (reused while its
# pin is unchanged; about 8 GB for all, torch's files shared by hard links), then runs every
# TestUpstream test, which drives the real tools on the CPU. A fresh machine downloads about
# 4 GB first.
realtools:
	python3 internal/realtools/realtools.py install
	CHAPERONE_REALTOOLS=required OMP_NUM_THREADS=1 $(GO) test -count=1 -timeout 60m -run '^TestUpstream' ./...
