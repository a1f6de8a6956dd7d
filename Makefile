# chaperone: build, test, and measure on this machine.
GO ?= go

.PHONY: build test bench

build:
	$(GO) build -o chaperone ./cmd/chaperone

test:
	$(GO) test ./...

# make bench measures the server against anchors run on this machine in the same run (a bare
# Go JSON handler, a raw SQLite commit loop) and holds 10,000 long-polls, which needs an
# open-files limit (ulimit -n) above 10,300; it takes under a minute. BENCHFLAGS passes flags
# to it, e.g. make bench BENCHFLAGS="-duration 10s -waiters 2000".
bench:
	$(GO) run ./cmd/chaperone-bench $(BENCHFLAGS)
