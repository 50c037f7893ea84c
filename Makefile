# Tether — see README.md. Every target works from a fresh clone with Go installed;
# tools the targets need are installed by .ci/run (CI) or scripts/tools.sh.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Same flags as the Kubernetes build in scripts/ so cached objects are shared.
export CGO_ENABLED := 0
GOFLAGS_BUILD := -trimpath -ldflags "-s -w -X github.com/tether-ci/tether/internal/version.Version=$(VERSION)"
BIN := bin
FUZZTIME ?= 20s

.PHONY: all build install test unit lint fuzz bench e2e demo images release clean tools

all: build

# bin/tether-stage, GitLab's run_exec, is the C build (static, it starts in
# ~2 ms) when a C compiler (cc or gcc) is found, else the Go build: a clone
# without one still builds, runs `make demo` and the tests. The Go build, the
# reference, is bin/tether-stage-go either way (scripts/build-stage.sh).
build:
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/tether-shim ./cmd/shim
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/tether ./cmd/tether
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/tether-pool ./cmd/tether-pool
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/tether-stage-go ./cmd/tether-stage
	scripts/build-stage.sh build $(BIN)/tether-stage "$$($(GO) env GOOS)" "$$($(GO) env GOARCH)" "$(VERSION)"

# make install: tether, tether-pool (the pools' controller, which `tether pool
# serve|status` runs), tether-stage (the C build when a C compiler is found)
# and tether-shim side by side in GOBIN
# (default $(go env GOPATH)/bin), where the local backend finds the shim next
# to tether.
install:
	@dest="$$($(GO) env GOBIN)"; [ -n "$$dest" ] || dest="$$($(GO) env GOPATH)/bin"; mkdir -p "$$dest"; \
	  $(GO) build $(GOFLAGS_BUILD) -o "$$dest/tether-shim" ./cmd/shim && \
	  $(GO) build $(GOFLAGS_BUILD) -o "$$dest/tether" ./cmd/tether && \
	  $(GO) build $(GOFLAGS_BUILD) -o "$$dest/tether-pool" ./cmd/tether-pool && \
	  scripts/build-stage.sh build "$$dest/tether-stage" "$$($(GO) env GOOS)" "$$($(GO) env GOARCH)" "$(VERSION)" && \
	  echo "installed $$dest/tether, $$dest/tether-pool, $$dest/tether-stage and $$dest/tether-shim"

# make test: lint, then every unit, real-process and in-process attach test,
# all under the race detector (the programs the tests run as processes are
# built with it too, see internal/testing/testbin). -race needs cgo and a C
# compiler (gcc); the binaries `make build` ships stay static.
test: lint build unit

unit:
	@command -v gcc >/dev/null || { echo "make unit: the race detector needs a C compiler: apt-get install gcc"; exit 1; }
	CGO_ENABLED=1 GORACE=halt_on_error=1 $(GO) test -race -trimpath -count=1 -timeout 30m ./...

lint:
	@scripts/tools.sh staticcheck >/dev/null
	@out=$$(find . \( -path ./bin -o -path ./.git \) -prune -o -name '*.go' -print | xargs gofmt -l); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$$(scripts/tools.sh staticcheck) ./...
	scripts/build-stage.sh lint

# Each fuzz target for FUZZTIME (make test runs the seed corpora).
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

bench: build
	@scripts/bench.sh

images: build
	@scripts/build-images.sh

# make release VERSION=v1.2.3: binaries for linux/darwin × amd64/arm64, the
# tether-shim and tether OCI image archives (linux/amd64 + linux/arm64), the
# Helm chart, the plain manifests and SHA256SUMS in dist/ (scripts/release.sh).
release:
	@scripts/release.sh "$(if $(filter command line environment,$(origin VERSION)),$(VERSION))"

e2e: build
	@scripts/e2e.sh

demo: build
	@scripts/demo.sh

clean:
	rm -rf $(BIN) dist
