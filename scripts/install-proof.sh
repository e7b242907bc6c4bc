#!/usr/bin/env bash
# install-proof: proves every server installs on its own, exactly as a user
# would run `GOWORK=off go install github.com/bastion-mcp/bastion/<server>@<version>`,
# before anything is tagged. It builds a file:// module proxy from the working
# tree (safety at the version the servers require, each server at a test
# version), then installs each server into a clean GOPATH and module cache
# with the workspace turned off. Third-party modules come from the local
# module cache when present, else from the public proxy.
#
# usage: scripts/install-proof.sh [SERVER ...]   (default: every server dir with a main.go)
set -euo pipefail
cd "$(dirname "$0")/.."
TEST_VERSION=${TEST_VERSION:-v0.1.0-test}
servers=("$@")
if [ ${#servers[@]} -eq 0 ]; then
  for d in sweepd terminald organizerd; do [ -f "$d/main.go" ] && servers+=("$d"); done
fi
tmp=$(mktemp -d); trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
start=$(date +%s)
fail() { echo "install-proof: FAIL: $*" >&2; exit 1; }

safety_version=""
for s in "${servers[@]}"; do
  grep -Eq '^\s*replace\b|^replace\s*\(' "$s/go.mod" && fail "$s/go.mod has a replace directive; go install refuses a module with one"
  v=$(awk '$1=="github.com/bastion-mcp/bastion/safety"{print $2} $1=="require" && $2=="github.com/bastion-mcp/bastion/safety"{print $3}' "$s/go.mod" | head -1)
  [ -n "$v" ] || fail "$s/go.mod does not require github.com/bastion-mcp/bastion/safety"
  [ -z "$safety_version" ] || [ "$v" = "$safety_version" ] || fail "$s requires safety $v, another server requires $safety_version"
  safety_version=$v
done
[ -n "$safety_version" ] || { echo "install-proof: no server to install"; exit 0; }

go build -o "$tmp/modproxy" ./scripts/democlient/cmd/modproxy
proxy="$tmp/proxy"
args=("safety@$safety_version")
for s in "${servers[@]}"; do args+=("$s@$TEST_VERSION"); done
"$tmp/modproxy" -out "$proxy" "${args[@]}"

cache=$(go env GOMODCACHE)/cache/download
export GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
export GOPATH="$tmp/gopath" GOMODCACHE="$tmp/gopath/pkg/mod" GOBIN="$tmp/bin" GOCACHE="${GOCACHE:-$(go env GOCACHE)}"
export GOPROXY="file://$proxy,file://$cache,https://proxy.golang.org"
# Our modules are not in the checksum database before they are tagged.
export GONOSUMDB=github.com/bastion-mcp
cd "$tmp"   # outside the repository: no go.work, no go.mod in reach
for s in "${servers[@]}"; do
  t0=$(date +%s%N)
  go install "github.com/bastion-mcp/bastion/$s@$TEST_VERSION" 2>"$tmp/$s.err" || { cat "$tmp/$s.err" >&2; fail "go install github.com/bastion-mcp/bastion/$s@$TEST_VERSION"; }
  [ -x "$GOBIN/$s" ] || fail "$s was not installed into GOBIN"
  "$GOBIN/$s" --version >/dev/null 2>&1 || fail "installed $s --version failed"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "install-proof: ok  go install github.com/bastion-mcp/bastion/$s@$TEST_VERSION (safety $safety_version) in ${ms}ms"
done
echo "install-proof: ${#servers[@]} server(s) in $(( $(date +%s) - start ))s"
