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

# The shipped policies/policy.toml must refuse to start until roots are filled in.
here=$(cd "$(dirname "$0")/.." && pwd)
if out=$(XDG_STATE_HOME="$tmp/state" "$BIN/sweepd" --config "$here/policies/policy.toml" 2>&1 </dev/null); then
  fail "sweepd started with the unfilled policies/policy.toml"
fi
[[ $out == "fatal: no root"* ]] || fail "policy.toml refusal message: $out"

# A policy with an unknown key is refused, naming the key.
printf '[sweep]\nroots = ["%s"]\nrootz = 1\n' "$tmp/real" > "$tmp/bad.toml"
if out=$("$BIN/sweepd" --config "$tmp/bad.toml" 2>&1 </dev/null); then fail "unknown key accepted"; fi
[[ $out == *"rootz"* ]] || fail "unknown key message: $out"

# The audit log may not live inside a root.
if out=$(XDG_STATE_HOME="$tmp/real/state" "$BIN/sweepd" --root "$tmp/real" 2>&1 </dev/null); then fail "audit log inside root accepted"; fi
[[ $out == fatal:* ]] || fail "audit-in-root message: $out"
echo "integration: policies ok"
