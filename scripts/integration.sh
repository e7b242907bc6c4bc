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

BIN=$(cd "$BIN" && pwd)
# stdout belongs to the protocol in stdio mode: a session's stdout holds only
# JSON-RPC messages, and the startup log goes to stderr.
mkdir -p "$tmp/code"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"integration","version":"0"}}}'
list='{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
printf '%s\n%s\n' "$init" "$list" | XDG_STATE_HOME="$tmp/state" "$BIN/sweepd" --root "$tmp/code" --log-level debug >"$tmp/out" 2>"$tmp/err" || fail "sweepd stdio session exited non-zero: $(cat "$tmp/err")"
[ -s "$tmp/err" ] || fail "sweepd logged nothing on stderr at --log-level debug"
while IFS= read -r line; do
  [[ $line == '{"jsonrpc":"2.0"'* || $line == '{'*'"jsonrpc":"2.0"'* ]] || fail "sweepd wrote a non-JSON-RPC line to stdout: $line"
done < "$tmp/out"
grep -q '"id":2' "$tmp/out" || fail "no tools/list answer on stdout"
grep -q 'sweepd ready' "$tmp/out" && fail "the startup log reached stdout"

# --print-client-config prints only the snippet on stdout, with absolute paths.
(cd "$tmp" && "$BIN/sweepd" --print-client-config claude-desktop --root code >"$tmp/cfg" 2>/dev/null) || fail "--print-client-config claude-desktop"
grep -q "\"$tmp/code\"" "$tmp/cfg" || fail "client config lacks the absolute root: $(cat "$tmp/cfg")"
"$BIN/sweepd" --print-client-config claude-code --root "$tmp/code" 2>/dev/null | grep -q '^claude mcp add sweepd -- ' || fail "claude-code snippet"
if "$BIN/sweepd" --print-client-config emacs --root "$tmp/code" >/dev/null 2>&1; then fail "unknown client accepted"; fi

# check: effective settings and warnings, non-zero on errors.
XDG_STATE_HOME="$tmp/state" "$BIN/sweepd" check --root "$tmp/code" | grep -q '^ok: sweepd would start' || fail "sweepd check on a good root"
if XDG_STATE_HOME="$tmp/state" "$BIN/sweepd" check --root "$tmp/nope" >"$tmp/chk" 2>&1; then fail "check passed a missing root"; fi
grep -q '^error: sweep root .* does not exist' "$tmp/chk" || fail "check message: $(cat "$tmp/chk")"
echo "integration: stdio, client config, check ok"

# policies/policy.example.toml works as shipped against the demo sandbox its
# header says how to make: in a copy of the repository's layout, run the
# header's command from the root, then every server's check must pass with
# every path it resolves (roots, audit logs, journal) inside that sandbox.
repo="$tmp/repo"; mkdir -p "$repo/scripts"
cp -r "$here/policies" "$repo/"; cp "$here/scripts/make_demo_sandbox.sh" "$repo/scripts/"
example="$repo/policies/policy.example.toml"
make_cmd=$(sed -n 's/^#   \(scripts\/make_demo_sandbox\.sh [^ ]*\)$/\1/p' "$example")
[ -n "$make_cmd" ] || fail "policy.example.toml's header does not give the make_demo_sandbox.sh command"
sandbox=$(cd "$repo" && bash $make_cmd) || fail "$make_cmd failed"
for s in sweepd terminald organizerd; do
  env -i PATH="$PATH" HOME="$tmp/home" XDG_STATE_HOME="$tmp/state" "$BIN/$s" check --config "$example" >"$tmp/chk" 2>&1 ||
    fail "$s check --config policies/policy.example.toml on the demo sandbox: $(cat "$tmp/chk")"
  outside=$(awk -v sb="$sandbox/" '$2 ~ /^\// && index($2, sb) != 1 {print}' "$tmp/chk")
  [ -z "$outside" ] || fail "$s: policy.example.toml resolves paths outside the demo sandbox $sandbox: $outside"
  grep -q "^ok: $s would start" "$tmp/chk" || fail "$s check: $(cat "$tmp/chk")"
done
echo "integration: policy.example.toml against the demo sandbox ok"

# policies/dev.example.toml (terminald's sandbox profile) likewise: its
# header names the same command, and its jail is the sandbox's dev/ project.
dev="$repo/policies/dev.example.toml"
[ "$(sed -n 's/^#   \(scripts\/make_demo_sandbox\.sh [^ ]*\)$/\1/p' "$dev")" = "$make_cmd" ] ||
  fail "dev.example.toml's header does not give the same make_demo_sandbox.sh command"
env -i PATH="$PATH" HOME="$tmp/home" XDG_STATE_HOME="$tmp/state" "$BIN/terminald" check --config "$dev" >"$tmp/chk" 2>&1 ||
  fail "terminald check --config policies/dev.example.toml on the demo sandbox: $(cat "$tmp/chk")"
# Its audit log is the state directory's (audit_log unset), the rest lies in the sandbox.
outside=$(awk -v sb="$sandbox/" -v st="$tmp/state/" '$2 ~ /^\// && index($2, sb) != 1 && index($2, st) != 1 {print}' "$tmp/chk")
[ -z "$outside" ] || fail "terminald: dev.example.toml resolves paths outside the demo sandbox $sandbox: $outside"
grep -q "^ok: terminald would start" "$tmp/chk" || fail "terminald check (dev): $(cat "$tmp/chk")"
echo "integration: dev.example.toml against the demo sandbox ok"
