# The targets the README and CI use. Nothing here downloads at run time
# beyond Go modules.

GO      ?= go
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
VERSION := $(shell git describe --tags --exact-match 2>/dev/null || echo 0.1.0-dev)
# Tests build with the tag nexatest, which compiles in the test knobs
# (failpoints, NEXA_TEST_LEASE_TTL, NEXA_TEST_CLOCK_OFFSET). `build` never
# sets it: the binary users run has none of them. Without the tag the
# stories that need a knob skip, saying so.
TESTTAGS := nexatest
LDFLAGS := -s -w -X github.com/nexa-run/nexa/internal/cli.Version=$(VERSION) -X github.com/nexa-run/nexa/internal/cli.Commit=$(COMMIT)

.PHONY: build dist test test-race test-slowpython lint bench fuzz soak demo man clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/nexa ./cmd/nexa

# Release binaries: one static binary per platform, named nexa-OS-ARCH, in
# DIST, with their SHA-256 checksums in DIST/SHA256SUMS (the format
# `sha256sum -c` reads). Each is stamped with VERSION and COMMIT, which
# `nexa version --json` prints; both can be set on the command line. Only
# the files this target writes are removed first, never the directory.
DIST      ?= dist
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
dist:
	@mkdir -p '$(DIST)' && rm -f '$(DIST)'/nexa-*-* '$(DIST)/SHA256SUMS'
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "build $(DIST)/nexa-$$os-$$arch ($(VERSION), $(COMMIT))"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' \
			-o '$(DIST)'/nexa-$$os-$$arch ./cmd/nexa; \
	done
	@cd '$(DIST)' && if command -v sha256sum >/dev/null 2>&1; then sha256sum nexa-*-* > SHA256SUMS; \
		else shasum -a 256 nexa-*-* > SHA256SUMS; fi
	@cat '$(DIST)/SHA256SUMS'

# The test command of the README and of .ci/run.
test:
	$(GO) vet -tags $(TESTTAGS) ./...
	$(GO) test -tags $(TESTTAGS) -count=1 ./...

# The suite under the race detector (slow: several minutes).
test-race:
	$(GO) test -tags $(TESTTAGS) -race -count=1 -timeout 30m ./...

# No test may depend on how fast python3 starts: run the suite with a
# python3 first on PATH that waits PYTHON_DELAY seconds before it execs the
# real one (NEXA_PYTHON is unset so every test goes through it).
PYTHON_DELAY ?= 3
test-slowpython:
	@real=$$(command -v python3) || { echo "test-slowpython: python3 not in PATH"; exit 1; }; \
	dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	printf '#!/bin/sh\nsleep %s\nexec "%s" "$$@"\n' '$(PYTHON_DELAY)' "$$real" > "$$dir/python3" && \
	chmod +x "$$dir/python3" && \
	env -u NEXA_PYTHON PATH="$$dir:$$PATH" $(GO) test -tags $(TESTTAGS) -count=1 -timeout 30m ./...

# Fuzz the parser and the compiler (FUZZTIME each; CI runs a short round).
# The default is a count of inputs, not a duration: Go 1.26's fuzzing
# coordinator can report a bare "context deadline exceeded" failure when a
# duration ends while a starved worker is mid-input (golang/go#75804, fixed
# in Go 1.27), and a count has no deadline to race. A duration (10s) works
# too, on a machine with cores to spare.
FUZZTIME ?= 100000x
fuzz:
	$(GO) test -tags $(TESTTAGS) -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/lang
	$(GO) test -tags $(TESTTAGS) -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) ./internal/compile

# gofmt, vet, staticcheck (pinned in go.mod as a tool) and a tidy module,
# of the production build; `test` vets the test build, and the files only
# it compiles get staticcheck here too.
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt'd:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags $(TESTTAGS) ./internal/failpoint/... ./internal/testknob/...
	$(GO) mod tidy -diff

bench:
	$(GO) test -tags $(TESTTAGS) -run '^$$' -bench . -benchmem ./...

# The soak (internal/soak; docs/guarantees.md quotes its figures): nexa
# workers drain detached runs on a throwaway PostgreSQL cluster while
# workers are killed with kill -9, the server is crashed and restarted,
# decisions race and completed runs are pruned; then every tool execution
# is checked against its side effect. It drives a test build of nexa (its
# workers take one-second leases). SOAK_FLAGS sizes it (-runs, -workers,
# -chaos, -seed to repeat a round; see go run ./internal/soak -h); CI runs
# a short round.
SOAK_FLAGS ?= -runs 1000 -workers 4 -chaos 1s -timeout 30m
soak:
	$(GO) build -tags $(TESTTAGS) -o bin/nexa-soak ./cmd/nexa
	$(GO) run ./internal/soak -nexa bin/nexa-soak $(SOAK_FLAGS)

# A man page per command and help topic in man/ (generated, not committed):
# man -l man/nexa-runs-show.1. The generator is a program of its own, so
# the nexa binary does not carry it.
man:
	rm -rf man
	$(GO) run -ldflags '-X github.com/nexa-run/nexa/internal/cli.Version=$(VERSION)' ./internal/cli/genman man

demo: build
	./examples/review/demo.sh bin/nexa

clean:
	rm -rf bin man dist
