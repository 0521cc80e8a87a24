# Makefile: the README's commands. `make test` is what CI runs.
GO        ?= go
GOBIN     ?= $(shell $(GO) env GOPATH)/bin
PKGS      ?= ./...
# The version stamped into the binaries (`idp-proxy --version`).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The staticcheck release `make lint` runs (installed into GOBIN when another is found).
STATICCHECK_VERSION ?= v0.8.2
# How long `make fuzz` runs each fuzz target.
FUZZTIME  ?= 20s
LDFLAGS   := -X github.com/idp-proxy/idp-proxy/internal/buildinfo.Version=$(VERSION)
# Flags of every `go build` here (build and demo) besides the version's
# -ldflags: one set, so that `make build` after `make demo` reuses the
# compiled dependencies instead of compiling them all again (-ldflags only
# changes the link). `make build BUILDFLAGS=-trimpath` builds like deploy/'s
# images, compiling every dependency once more.
BUILDFLAGS ?=

.PHONY: all build demo test test-e2e test-short lint vet fmt staticcheck fuzz bench bench-instr bench-smoke clean

all: build

build: ## Build the binaries into ./bin, stamped with VERSION (git describe)
	$(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

# The recipe execs the demo, so that the signal make forwards (`make demo &`
# then `kill $$!`) reaches it and stops every part with its ports.
# The other binaries (bin/idp-proxy, bin/shortener: the README's next
# steps) are built in the background at low priority while the demo runs,
# with build's flags: idp-proxy needs some 200 packages the demo does not
# (gRPC, OpenTelemetry's exporters, Redis, cobra, viper), which would
# otherwise be compiled by the user's next `make build`.
demo: ## Whole stack on loopback: dev identity provider, shortener, idp-proxy (Ctrl-C or SIGTERM stops)
	@$(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o bin/idp-demo ./cmd/idp-demo
	@echo "make demo: building bin/idp-proxy and bin/shortener in the background (log: bin/build.log)"
	@(nice $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o bin/ ./cmd/idp-proxy ./cmd/shortener >bin/build.log 2>&1 &)
	@exec bin/idp-demo $(DEMO_FLAGS)

# scripts/gotest.sh runs go test and exits with its status; at the end it
# says which suites skipped for want of TEST_POSTGRES_DSN, TEST_REDIS_URL or
# the end-to-end tools (go test says "ok" for them all the same).
test: vet ## Unit, integration and end-to-end tests with the race detector
	scripts/gotest.sh $(GO) test -race -count=1 -timeout 12m $(PKGS)

test-e2e: ## End-to-end suites only: real provider (oidc-provider), real browser, real binaries
	scripts/gotest.sh $(GO) test -race -count=1 ./test/interop/

test-short: ## Fast tests only (no subprocesses, no PostgreSQL)
	scripts/gotest.sh $(GO) test -short -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet staticcheck ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

staticcheck:
	@PATH="$(GOBIN):$$PATH"; v=$$(staticcheck -version 2>/dev/null); \
	case "$$v" in *"($(STATICCHECK_VERSION:v%=%))"*) ;; *) echo "installing staticcheck $(STATICCHECK_VERSION) (found: $${v:-none})"; \
	  $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) || exit 1;; esac
	@PATH="$(GOBIN):$$PATH" staticcheck $(PKGS)

fuzz: ## Run every fuzz target for FUZZTIME each (default 20s; make fuzz FUZZTIME=1m)
	@./scripts/fuzz.sh $(FUZZTIME)

bench: ## Load benchmark with wrk (apt-get install wrk gnuplot-nox): writes bench/RESULTS.md and bench/results/
	$(GO) run ./bench/run

bench-instr: ## Instructions per request of each proxy, counted by callgrind (needs valgrind, wrk)
	bench/instr.sh

bench-smoke: ## Run the benchmark harness once, briefly (CI; no thresholds)
	$(GO) run ./bench/run -smoke

clean:
	rm -rf bin data
