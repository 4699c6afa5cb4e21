# frontier: the two commands of the quick start are `make demo` and `make test`.
# Each installs what it needs (Go modules through `go`, Python with PyTorch
# through scripts/install-deps.sh).

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
GOFMT ?= $(shell command -v gofmt 2>/dev/null || echo /usr/local/go/bin/gofmt)
BIN := bin/frontier
# Test packages run in parallel up to this many at a time.
TEST_P ?= 2
# The longest packages start first (go test starts packages in the order it
# is given them; ./... adds the rest, each once): listed in import-path
# order, the red team and the Slurm tests, the two longest, started last
# and ran alone at the end, the red team for its last 7 minutes. The Slurm
# tests mostly wait on the cluster, so they start beside the red team,
# whose programs use the cores meanwhile. The engine's tests come next:
# their end-to-end search runs one program at a time for 5 minutes, which
# alone at the end left a core idle. On 2 quiet cores the suite keeps both
# busy (2,168 s of CPU in 1,228 s of wall time, measured once), so the
# order can only close such gaps; a shorter suite needs fewer CPU seconds.
TEST_FIRST := ./internal/verify/redteam ./internal/slurm ./internal/evolve ./cmd/frontier ./internal/eval ./internal/harness
# How long a first build takes (a cold cache), said before it starts:
# 8 minutes of CPU, measured twice; 10 minutes of wall time on 2 cores at a
# load of 6, 18 at a load of 11.
FIRST_BUILD := 5 to 10 minutes on 2 cores, longer on a busy machine
# staticcheck, pinned: a new release may add checks, and a lint that
# changes under a commit is not a check of that commit. 0.8.2 is 2026.2.2.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build deps demo test test-short lint clean

all: build

# The version frontier reports (frontier version, doctor, every result):
# the tag or commit it is built from.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)

# A first build (a cold cache) compiles SQLite and the model SDKs: it says
# so, and lists each package as it is compiled; later builds take seconds.
# modernc.org/sqlite, the largest of them, tells which build this is.
build:
	@if [ "$$($(GO) list -f '{{.Stale}}' modernc.org/sqlite 2>/dev/null)" != false ]; then \
		echo "building $(BIN): the first build compiles SQLite and the model SDKs (OpenAI, Anthropic, Gemini), $(FIRST_BUILD); each package is listed as it is compiled"; \
		$(GO) build -v -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/frontier; \
	else \
		echo "building $(BIN)"; \
		$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/frontier; \
	fi

deps:
	./scripts/install-deps.sh

# The main job: a short evolutionary search on the tiny-1cpu track (the mutate
# baseline, or the model configured in frontier.yaml), then the report.
demo: deps build
	./$(BIN) demo

# The whole test suite, slow end-to-end tests included. Each package is
# said as it finishes, with what still runs every minute, every failure in
# full, and the slowest tests at the end (internal/testsummary runs go test
# -json).
test: deps
	@echo "go vet ./... (on a cold cache it compiles every package first: $(FIRST_BUILD))"
	$(GO) vet ./...
	$(GO) run ./internal/testsummary -go $(GO) -- -p $(TEST_P) -timeout 40m $(TEST_FIRST) ./...

# Everything but the slow end-to-end tests.
test-short:
	$(GO) test -short ./...

# gofmt, vet and staticcheck; the import layering is a test
# (internal/layering), run here too because it takes a tenth of a second.
lint:
	@test -z "$$($(GOFMT) -l $$(git ls-files '*.go'))" || (echo "gofmt would change:"; $(GOFMT) -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) test ./internal/layering/

clean:
	rm -rf bin
