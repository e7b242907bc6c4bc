# Bastion — build, test, bench. Every target works from a fresh clone.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

GO       ?= go
MODULES  := safety sweepd
SERVERS  := sweepd
BIN      := $(CURDIR)/bin
PKGS     := $(addprefix ./,$(addsuffix /...,$(MODULES)))

.PHONY: all build test fmt-check vet unit integration bench cross clean

all: build

build:
	@mkdir -p $(BIN)
	@for s in $(SERVERS); do $(GO) build -o $(BIN)/$$s ./$$s; done
	@echo "built: $(addprefix bin/,$(SERVERS))"

## test: everything CI runs. No test may SKIP on Linux.
test: fmt-check vet unit integration

fmt-check:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	@mkdir -p .bench
	$(GO) test -race -count=1 -v $(PKGS) > .bench/unit.log 2>&1 || { grep -E -- '^(--- FAIL|FAIL|panic:)|_test.go:[0-9]+' .bench/unit.log | head -80; exit 1; }
	@grep -E '^(ok|FAIL|---)' .bench/unit.log | grep -v -- '--- PASS' | grep -v -- '--- SKIP' || true
	@if grep -q -- '--- SKIP' .bench/unit.log; then echo "tests reported SKIP (not allowed on Linux):"; grep -- '--- SKIP' .bench/unit.log; exit 1; fi

## integration: the built binaries, driven as a user and an MCP client would.
integration: build
	BASTION_BIN=$(BIN) $(GO) test -count=1 -run 'Binary' ./sweepd/
	bash scripts/integration.sh $(BIN)

## bench: speed goals as ratios against baselines measured in the same run.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./sweepd/internal/sweep/
	$(GO) test -run '^$$' -bench . -benchtime 200x ./safety/audit/ ./safety/redact/ 2>/dev/null || true

cross:
	@for os_arch in darwin/amd64 darwin/arm64 windows/amd64; do \
	  for s in $(SERVERS); do \
	    GOOS=$${os_arch%/*} GOARCH=$${os_arch#*/} $(GO) build -o /dev/null ./$$s && echo "ok $$s $$os_arch"; \
	  done; \
	done

clean:
	rm -rf $(BIN) .bench
