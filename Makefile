# Makefile: the README's commands. `make test` is what CI runs.
GO        ?= go
GOBIN     ?= $(shell $(GO) env GOPATH)/bin
PKGS      ?= ./...
# The version stamped into the binaries (`idp-proxy --version`).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/idp-proxy/idp-proxy/internal/buildinfo.Version=$(VERSION)

.PHONY: all build demo test test-e2e test-short lint vet fmt staticcheck fuzz bench bench-instr bench-smoke clean

all: build

build: ## Build the binaries into ./bin, stamped with VERSION (git describe)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

demo: ## Whole stack on loopback: dev identity provider, shortener, idp-proxy (Ctrl-C stops)
	@$(GO) build -o bin/idp-demo ./cmd/idp-demo
	@trap '' INT; bin/idp-demo $(DEMO_FLAGS)

test: vet ## Unit, integration and end-to-end tests with the race detector
	$(GO) test -race -count=1 -timeout 12m $(PKGS)

test-e2e: ## End-to-end suites only: real provider (oidc-provider), real browser, real binaries
	$(GO) test -race -count=1 ./test/interop/

test-short: ## Fast tests only (no subprocesses, no PostgreSQL)
	$(GO) test -short -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet staticcheck ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

staticcheck:
	@command -v staticcheck >/dev/null 2>&1 || test -x $(GOBIN)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@latest
	@PATH="$(GOBIN):$$PATH" staticcheck $(PKGS)

fuzz: ## Run every fuzz target for a short while (FUZZTIME=30s)
	@./scripts/fuzz.sh $${FUZZTIME:-20s}

bench: ## Load benchmark with wrk (apt-get install wrk gnuplot-nox): writes bench/RESULTS.md and bench/results/
	$(GO) run ./bench/run

bench-instr: ## Instructions per request of each proxy, counted by callgrind (needs valgrind, wrk)
	bench/instr.sh

bench-smoke: ## Run the benchmark harness once, briefly (CI; no thresholds)
	$(GO) run ./bench/run -smoke

clean:
	rm -rf bin data
