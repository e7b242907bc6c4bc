# Bastion — build, test, bench. Every target works from a fresh clone.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

GO       ?= go
SERVERS  := sweepd terminald organizerd
MODULES  := safety $(SERVERS) scripts/democlient
BIN      := $(CURDIR)/bin
PKGS     := $(addprefix ./,$(addsuffix /...,$(MODULES)))
NODE_OK  := $(shell test -x scripts/clients/node_modules/.bin/node && scripts/clients/node_modules/.bin/node -e 'process.exit(parseInt(process.versions.node) < 22 ? 1 : 0)' 2>/dev/null && echo yes)

.PHONY: all build install otelcol demo-otel test dist dist-check fmt-check vet unit integration install-proof tidy-check tidy policy-docs policy-check demo clients clients-setup clients-if-node apps apps-setup bench cross clean

all: build

build:
	@mkdir -p $(BIN)
	@for s in $(SERVERS); do $(GO) build -o $(BIN)/$$s ./$$s; done
	@echo "built: $(addprefix bin/,$(SERVERS))"

## otelcol: the test OpenTelemetry Collector (scripts/otelcol, its own module outside go.work: the
## Collector's OTLP receiver and the contrib file exporter, one release), built once into bin/ and
## rebuilt only when its module changes. The telemetry tests in scripts/democlient fail without it.
OTELCOL := $(BIN)/otelcol-bastion
otelcol: $(OTELCOL)
$(OTELCOL): scripts/otelcol/main.go scripts/otelcol/go.mod scripts/otelcol/go.sum
	@mkdir -p $(BIN)
	cd scripts/otelcol && GOWORK=off $(GO) build -o $(OTELCOL) .

## install: go install the three servers from this clone (into $GOBIN, else $(go env GOPATH)/bin):
## today's way to install, until `go install ...@latest` works after the first release.
install:
	$(GO) install $(addprefix ./,$(SERVERS))
	@echo "installed: $(SERVERS) in $$(d=$$($(GO) env GOBIN); [ -n "$$d" ] || d=$$($(GO) env GOPATH)/bin; echo $$d)"

## test: everything CI runs, one line per stage with its time (scripts/test-stages.sh). No test may
## SKIP on Linux, and no stage either: a missing prerequisite (Node 22: `make clients-setup`) fails
## the run up front. dist-check (cross-platform release builds, mostly linking) runs in the background
## beside the stages after unit; its output is in .bench/dist-check.log.
TEST_STAGES := fmt-check vet policy-check tidy-check unit bg:dist-check integration demo install-proof clients apps
test:
	@MAKE="$(MAKE)" bash scripts/test-stages.sh $(TEST_STAGES)

fmt-check:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# unit prints each package's ok/FAIL line as it finishes (the full log is .bench/unit.log).
unit: build otelcol
	@mkdir -p .bench
	@echo "$(GO) test -race -count=1 -v $(PKGS)   (full log: .bench/unit.log)"
	@BASTION_BIN=$(BIN) BASTION_OTELCOL=$(OTELCOL) $(GO) test -race -count=1 -v $(PKGS) 2>&1 | tee .bench/unit.log | { grep --line-buffered -E '^(ok |FAIL|panic:)' || true; } || \
	  { grep -E -- '^(--- FAIL|FAIL|panic:)|_test.go:[0-9]+' .bench/unit.log | head -80; exit 1; }
	@if grep -q -- '--- SKIP' .bench/unit.log; then echo "tests reported SKIP (not allowed on Linux):"; grep -- '--- SKIP' .bench/unit.log; exit 1; fi

## integration: the built binaries, driven as a user and an MCP client would.
integration: build
	@for s in $(SERVERS); do BASTION_BIN=$(BIN) $(GO) test -count=1 -run 'Binary' ./$$s/; done
	bash scripts/integration.sh $(BIN)

## install-proof: GOWORK=off go install of each server from a file:// proxy built from this tree.
install-proof:
	bash scripts/install-proof.sh $(SERVERS)

## tidy-check: GOWORK=off go mod tidy would change no go.mod or go.sum (diff on failure); `make tidy` writes them.
tidy-check:
	bash scripts/install-proof.sh --tidy $(SERVERS)

tidy:
	bash scripts/install-proof.sh --tidy-write $(SERVERS)

## policy-docs: regenerate policies/policy.schema.json and docs/policy.md from safety/config, and
## policies/terminal-section.toml plus the generated [terminal] command sections of the shipped
## policies from safety/command (shipped.go).
policy-docs:
	$(GO) run ./scripts/democlient/cmd/policygen -src safety/config -schema policies/policy.schema.json -doc docs/policy.md -policies policies

policy-check:
	@t=$$(mktemp -d); trap 'rm -rf "$$t"' EXIT; \
	$(GO) run ./scripts/democlient/cmd/policygen -src safety/config -schema $$t/policy.schema.json -doc $$t/policy.md -policies policies -policies-out $$t; \
	stale=; for f in policy.schema.json terminal-section.toml policy.toml policy.example.toml dev.example.toml; do \
	  diff -u policies/$$f $$t/$$f || stale="$$stale policies/$$f"; done; \
	diff -u docs/policy.md $$t/policy.md || stale="$$stale docs/policy.md"; \
	if [ -n "$$stale" ]; then echo "stale:$$stale: run make policy-docs"; exit 1; fi

## demo: build, seed a sandbox in a temporary directory, drive each server through a scripted session.
demo: build
	@d=$$(bash scripts/make_demo_sandbox.sh); trap 'rm -rf "$$d"' EXIT; \
	echo "sandbox: $$d"; \
	$(GO) run ./scripts/democlient -bin $(BIN) -sandbox "$$d"

## demo-otel: the demo session with telemetry on, sent to the test Collector, printed as trace trees,
## metrics and the audit log records (docs/telemetry.md).
demo-otel: build otelcol
	bash scripts/demo-otel.sh $(BIN) $(OTELCOL)

## clients: real third-party clients (TS SDK, conformance suite, Inspector CLI); needs `make clients-setup`
## (Node 22), and fails without it.
# npm ci refuses this lockfile (vite lists an optional dependency that is not
# on the registry), so install from the lockfile and prove it did not move.
clients-setup:
	@cd scripts/clients && cp package-lock.json .package-lock.pinned && \
	npm install --no-save --no-audit --no-fund && \
	if ! cmp -s package-lock.json .package-lock.pinned; then mv .package-lock.pinned package-lock.json; echo "clients-setup: npm changed the lockfile; pins are stale"; exit 1; fi; \
	rm -f .package-lock.pinned

clients: build
	bash scripts/clients/run.sh $(BIN)

## apps: the MCP Apps views (sweepd scan, organizerd plan) in headless Debian chromium, hosted by the
## official ext-apps AppBridge connected to the built servers; needs `make apps-setup` and chromium
## (apt-get install -y chromium). A missing one fails the stage with how to install it; it never skips.
apps-setup:
	cd scripts/apps && npm ci --no-audit --no-fund

apps: build
	bash scripts/apps/run.sh $(BIN)

# clients-if-node is the old name of the clients stage: it fails without Node 22 (never skips).
clients-if-node:
	@if [ "$(NODE_OK)" = yes ]; then $(MAKE) --no-print-directory clients; \
	else echo "clients: Node 22 is missing: run make clients-setup"; exit 1; fi

## bench: speed goals as ratios against baselines measured in the same run.
# Each line prints the measured ratio (or overhead) next to its goal.
bench: build otelcol
	@echo "== sweepd: scan vs find -prune + du -s, reclaim vs rm -rf (500 projects, 200,000+ files; goals <= 1.0x, <= 1.25x)"
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./sweepd/internal/sweep/
	@echo "== terminald: run_command(\"true\") over stdio vs fork/exec of /bin/true and bubblewrap, in eight arrival patterns: back to back (baselines between calls), NoGap (blocks of 20 calls with nothing between), Paced (25 ms between calls), AfterBurst (paced after 4 parallel calls), Bursts (2 parallel calls, max_concurrent, every 100 ms; baselines as parallel pairs), BurstsBackToBack (the same pairs, each right after the last), BurstsBeyondMax (4 parallel calls: two queue; reported, not a goal), RandomGaps (exponential pauses, mean 15 ms) (goals: p50 overhead < 3 ms, <= half of bubblewrap's, p99/p50 < 3)"
	$(GO) test -run '^$$' -bench 'RunTrueOverStdio($$|NoGap|Paced|AfterBurst|Bursts|RandomGaps|InAProject)' -benchtime 300x ./terminald/
	@echo "== terminald: the same after a second of idle before each call and each baseline, as an agent's model thinks between commands (60 calls; same goals, reported)"
	$(GO) test -run '^$$' -bench RunTrueOverStdioIdle1s -benchtime 1x ./terminald/
	@echo "== terminald: its own CPU per call, run_command(\"true\") and explain_command (the MCP floor), 1,000 calls each"
	$(GO) test -run '^$$' -bench ServerCPUPerCall -benchtime 1x ./terminald/
	@echo "== terminald through the official TypeScript SDK client over stdio (as issue 19 measured it): run_command(\"true\") paced, back to back, after a burst, random gaps, bursts of 2 paced and back to back, vs /bin/true and bubblewrap started from the same Node process (needs make clients-setup)"
	@d=$$(mktemp -d) && mkdir -p $$d/jail && \
	  printf 'audit_log = "%s/audit.jsonl"\n[terminal]\njail_root = "%s/jail"\n[terminal.state]\ndir = "%s/state"\n[terminal.allowlist]\ncommands = ["true"]\n' $$d $$d $$d >$$d/policy.toml && \
	  PATH="$(CURDIR)/scripts/clients/node_modules/.bin:$$PATH" node scripts/clients/latency.mjs $(BIN)/terminald $$d/policy.toml 200; s=$$?; rm -rf $$d; exit $$s
	@echo "== terminald sessions: start vs foreground run_command(\"true\") (goal: ratio <= 1.2), read_output with data waiting (goal: p50 < 1 ms), a session printing 50 MB (goal: server peak RSS < 64 MB)"
	$(GO) test -run '^$$' -bench 'SessionStartVsRunTrue|ReadOutputWithDataWaiting|Session50MBOutputServerRSS' -benchtime 1x ./terminald/
	@echo "== sandbox: go test of a small module in the sandbox vs directly, caches warm (goal: ratio <= 1.15)"
	$(GO) test -run '^$$' -bench GoTestSandboxVsDirect -benchtime 8x ./safety/sandbox/
	@echo "== organizerd: apply a 10,000-file plan vs a plain rename loop (goal <= 2x)"
	$(GO) test -run '^$$' -bench Apply10kVsRenameLoop -benchtime 3x ./safety/journal/
	@echo "== organizerd: move_file p50 vs the official filesystem MCP server's (Node 22 from make clients-setup; skipped without it), same client, same run (goal: ratio <= 1.0); then where organizerd's time goes"
	$(GO) test -run '^$$' -bench MoveFileVsFilesystemServer -benchtime 500x ./organizerd/
	$(GO) test -run '^$$' -bench MoveFileBreakdown -benchtime 300x ./organizerd/internal/organizer/
	@echo "== organizerd: move_file p50 and apply_plan of 10,000 files vs the previous build (BASTION_BENCH_BASE, default HEAD~1), built and measured in the same run (goal: vs-baseline and apply-ratio <= 1.05)"
	GO=$(GO) bash scripts/bench/organizerd-baseline.sh
	@echo "== radar: rules-only paths/s; full summary vs bare walk of 100,000 files, without and with git facts, in one repository and in 200 (goal <= 1.5x)"
	$(GO) test -run '^$$' -bench 'ClassifyRulesOnly|SummaryVsWalk|SummaryGitVsWalk|SummaryReposVsWalk' -benchtime 3x ./safety/risk/
	@echo "== core: audit append vs plain fsync append; sandbox Run vs exec; redaction throughput"
	$(GO) test -run '^$$' -bench . -benchtime 200x ./safety/audit/
	$(GO) test -run '^$$' -bench 'RunTrue|ExecTrue' -benchtime 200x ./safety/sandbox/
	@echo "== sandbox: what the protected-path check adds to a prepared Run of /bin/true in a git repository (goal, with the memory cgroup: <= 0.5 ms)"
	$(GO) test -run '^$$' -bench 'ProtectedPathsCost' -benchtime 200x ./safety/sandbox/
	$(GO) test -run '^$$' -bench 'BenchmarkScan' -benchtime 50x ./safety/protect/
	$(GO) test -run '^$$' -bench . ./safety/redact/
	@echo "== soak: 100,000 calls of each read-only tool in one stdio session of a server process (RSS, fds, threads, goroutines at start and end; caps +16 MiB, +2, +4, +8)"
	$(GO) test -run '^$$' -bench SoakReadOnlyTools -benchtime 1x ./safety/mcpkit/
	@echo "== hostile input + soak of the built servers: every hostile stdio input (peak RSS cap 96 MiB), then 100,000 calls of each read-only tool in one session"
	$(GO) test -run '^$$' -bench ServerBinaries -benchtime 1x -timeout 60m ./safety/mcpkit/
	@echo "== hostile input: stdio and HTTP servers' peak RSS through every hostile input (cap 96 MiB each), 200 concurrent HTTP sessions, 1,000 idle connections"
	$(GO) test -count=1 -run 'TestStdioHostileInput|TestHTTPHostileInput|TestHTTPConcurrentSessions|TestHTTPSlowClientAndConnectionFlood' -v ./safety/mcpkit/ | grep -E 'VmHWM|sessions x|idle connections|cut off|^(ok|FAIL|---)'
	@echo "== views: the sweepd scan view rendering 500 finds in headless chromium (goal < 500 ms; needs make apps-setup and chromium); the views' share of each binary"
	PATH="$(CURDIR)/scripts/clients/node_modules/.bin:$$PATH" node scripts/apps/bench.mjs $(BIN)
	@echo "embedded view bytes: $$(cat safety/mcpkit/view/* sweepd/internal/sweep/view/* | wc -c) in sweepd, $$(cat safety/mcpkit/view/* organizerd/internal/organizer/view/* | wc -c) in organizerd (budget 300 KB each)"
	@echo "== telemetry: run_command(\"true\") and move_file p50, telemetry on (live local Collector) and with the Collector down, vs off, off-again is the noise floor (goal <= 1.05x each)"
	BASTION_BIN=$(BIN) BASTION_OTELCOL=$(OTELCOL) $(GO) test -run '^$$' -bench TelemetryOverhead -benchtime 1x ./scripts/democlient/ | grep -E 'p50|^(ok|FAIL)'
	@$(MAKE) --no-print-directory bench-scale

## bench-scale: the 2,002,000-file tree, built once by scripts/bench/tree.sh and cached outside the
## repository (${XDG_CACHE_HOME:-~/.cache}/bastion-bench/tree-2m; ~8 GB, minutes to build), scanned by
## the sweepd binary and summarised by the organizerd binary; peak RSS from each server's VmHWM.
.PHONY: bench-scale
bench-scale:
	@tree=$$(bash scripts/bench/tree.sh); \
	echo "== sweepd scale: scan vs find -prune + du -s (goal <= 1.0x) and vs gdu -n (goal <= 0.5x; skipped without gdu), peak RSS <= 256 MB"; \
	BASTION_BENCH_TREE="$$tree" $(GO) test -run '^$$' -bench Scale2MScan -benchtime 1x -timeout 60m ./sweepd/; \
	echo "== radar scale: get_context_summary, [radar] summary_max_entries past the tree, vs a bare walk (goal <= 1.5x), peak RSS <= 256 MB"; \
	BASTION_BENCH_TREE="$$tree" $(GO) test -run '^$$' -bench Scale2MSummary -benchtime 1x -timeout 60m ./organizerd/

## fuzz: every fuzz target of the modules for FUZZTIME each (default 60s); what the fuzzer
## finds interesting is copied into the package's testdata/fuzz/ (commit it: `make test` replays
## those corpora as seeds, without fuzzing). A crasher fails the run.
FUZZTIME ?= 60s
.PHONY: fuzz
fuzz:
	bash scripts/fuzz.sh $(FUZZTIME)

## dist: the release artifacts of VERSION (vX.Y.Z) in dist/: an archive per server and platform,
## an MCP bundle per server, registry/<server>/server.json, SHA256SUMS (scripts/democlient/cmd/dist).
dist:
	@[ -n "$(VERSION)" ] || { echo "usage: make dist VERSION=vX.Y.Z"; exit 2; }
	rm -rf dist
	$(GO) run ./scripts/democlient/cmd/dist -version $(VERSION) -out dist
	@echo "dist: $$(ls dist | wc -l) entries in dist/; SHA256SUMS lists the release assets"

## dist-check: dist built twice is the same bytes; the bundles pass mcpb validate/info/pack and
## start from their own mcp_config under the TypeScript SDK client (Node 22: `make clients-setup`).
DIST_CHECK_VERSION := v0.0.0-check
dist-check:
	@t=$$(mktemp -d); trap 'rm -rf "$$t"' EXIT; \
	for run in a b; do SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 1700000000) \
	  $(GO) run ./scripts/democlient/cmd/dist -version $(DIST_CHECK_VERSION) -out $$t/$$run; done; \
	if ! diff -r $$t/a $$t/b >/dev/null; then echo "dist-check: two builds of the same tree differ:"; diff -r $$t/a $$t/b | head; exit 1; fi; \
	echo "dist-check: two builds, $$(find $$t/a -type f | wc -l) files, byte-identical"; \
	if [ "$(NODE_OK)" = yes ]; then PATH="$(CURDIR)/scripts/clients/node_modules/.bin:$$PATH" node scripts/clients/bundles.mjs "$(CURDIR)" $$t/a $(DIST_CHECK_VERSION); \
	else echo "dist-check: the bundle checks need Node 22, which is missing: run make clients-setup"; exit 1; fi

## cross: the servers build for macOS and Windows (portable fallbacks; see docs/guarantees.md).
cross:
	@for os_arch in darwin/amd64 darwin/arm64 windows/amd64; do \
	  for s in $(SERVERS); do \
	    GOOS=$${os_arch%/*} GOARCH=$${os_arch#*/} $(GO) build -o /dev/null ./$$s && echo "cross: ok $$s $$os_arch"; \
	  done; \
	done

clean:
	rm -rf $(BIN) .bench
