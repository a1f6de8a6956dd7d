# chaperone: build, test, and measure on this machine.
GO ?= go

.PHONY: build test bench

build:
	$(GO) build -o chaperone ./cmd/chaperone

test:
	$(GO) test ./...

# BENCHFLAGS passes flags to the benchmark, e.g. make bench BENCHFLAGS="-duration 10s".
bench:
	$(GO) run ./cmd/chaperone-bench $(BENCHFLAGS)
