#!/usr/bin/env bash
# Integration checks against the built binaries, as a new user would run them.
set -euo pipefail
BIN=${1:?usage: integration.sh BIN_DIR}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# sweepd must refuse to start without a root, with a fatal: line and a non-zero exit.
if out=$("$BIN/sweepd" 2>&1 </dev/null); then fail "sweepd started without a root"; fi
[[ $out == fatal:* ]] || fail "sweepd without root printed: $out"
mkdir -p "$tmp/real"; ln -s "$tmp/real" "$tmp/link"
if out=$("$BIN/sweepd" --root "$tmp/link" 2>&1 </dev/null); then fail "sweepd accepted a symlinked root"; fi
[[ $out == *"symbolic link"* ]] || fail "symlinked root message: $out"
"$BIN/sweepd" --version | grep -q '^sweepd ' || fail "sweepd --version"
echo "integration: ok"
