#!/usr/bin/env bash
# organizerd-baseline.sh: organizerd's speed against the previous build, in
# one run. It builds organizerd at BASTION_BENCH_BASE (a commit; default
# HEAD~1, the previous build) into a temporary directory, then runs the two
# organizerd benchmarks with it as $BASTION_BENCH_BASELINE: move_file p50 of
# this build and of the baseline, calls interleaved
# (BenchmarkMoveFileVsFilesystemServer, vs-baseline), and apply_plan of a
# 10,000-file plan, the rounds alternating which build goes first
# (BenchmarkApply10kVsBaseline, apply-ratio). Goal: both ratios <= 1.05.
# MOVES and APPLIES set the number of calls (defaults 500 and 9).
set -euo pipefail
cd "$(dirname "$0")/../.."
go=${GO:-go}
base=${BASTION_BENCH_BASE:-HEAD~1}
rev=$(git rev-parse --short "$base")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
git archive --format=tar "$rev" | tar -x -C "$tmp/src"
echo "organizerd-baseline: building organizerd at $rev" >&2
mkdir "$tmp/bin" # the binary keeps its name: a server must call itself what its file is called
(cd "$tmp/src" && "$go" build -trimpath -o "$tmp/bin/organizerd" ./organizerd)
export BASTION_BENCH_BASELINE="$tmp/bin/organizerd"
"$go" test -run '^$' -bench MoveFileVsFilesystemServer -benchtime "${MOVES:-500}x" ./organizerd/
"$go" test -run '^$' -bench Apply10kVsBaseline -benchtime "${APPLIES:-9}x" -timeout 30m ./organizerd/
