#!/usr/bin/env bash
# install-proof: proves every server installs on its own, exactly as a user
# would run `GOWORK=off go install github.com/bastion-mcp/bastion/<server>@<version>`,
# before anything is tagged. It builds a file:// module proxy from the working
# tree (safety at the version the servers require, each server at a test
# version), then installs each server into a clean GOPATH and module cache
# with the workspace turned off. Third-party modules come from the local
# module cache when present, else from the public proxy.
#
# With --tidy it proves instead that `go mod tidy` would change nothing in
# safety, each server and scripts/democlient: each module is tidied with the
# workspace off, against the same proxy, into a copy of its go.mod and go.sum
# (-modfile; the tree itself is not written), and any change is printed as a
# diff. go.sum lines of Bastion's own modules are left out of the comparison:
# the working tree's safety has no published checksum, and release.sh records
# the tagged one (docs/releasing.md). With --tidy-write it writes the tidied
# files back instead (`make tidy`): a plain `GOWORK=off go mod tidy` in a
# server cannot do it before safety's version is published.
#
# usage: scripts/install-proof.sh [--tidy | --tidy-write] [SERVER ...]   (default: every server dir with a main.go)
set -euo pipefail
cd "$(dirname "$0")/.."
TEST_VERSION=${TEST_VERSION:-v0.1.0-test}
tidy=0 write=0
case ${1:-} in
  --tidy) tidy=1; shift ;;
  --tidy-write) tidy=1 write=1; shift ;;
esac
servers=("$@")
if [ ${#servers[@]} -eq 0 ]; then
  for d in sweepd terminald organizerd; do [ -f "$d/main.go" ] && servers+=("$d"); done
fi
tmp=$(mktemp -d); trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
start=$(date +%s)
me=install-proof; [ $tidy = 0 ] || me=tidy-check
fail() { echo "$me: FAIL: $*" >&2; exit 1; }

# requires: the modules whose go.mod must require one tagged safety.
requires=("${servers[@]}")
[ $tidy = 0 ] || requires+=(scripts/democlient)
safety_version=""
for s in "${requires[@]}"; do
  grep -Eq '^\s*replace\b|^replace\s*\(' "$s/go.mod" && fail "$s/go.mod has a replace directive; go install refuses a module with one"
  v=$(awk '$1=="github.com/bastion-mcp/bastion/safety"{print $2} $1=="require" && $2=="github.com/bastion-mcp/bastion/safety"{print $3}' "$s/go.mod" | head -1)
  [ -n "$v" ] || fail "$s/go.mod does not require github.com/bastion-mcp/bastion/safety"
  [ -z "$safety_version" ] || [ "$v" = "$safety_version" ] || fail "$s requires safety $v, another module requires $safety_version"
  safety_version=$v
done
[ -n "$safety_version" ] || { echo "$me: no server to check"; exit 0; }

go build -o "$tmp/modproxy" ./scripts/democlient/cmd/modproxy
proxy="$tmp/proxy"
args=("safety@$safety_version")
[ $tidy = 1 ] || for s in "${servers[@]}"; do args+=("$s@$TEST_VERSION"); done
"$tmp/modproxy" -out "$proxy" "${args[@]}"

cache=$(go env GOMODCACHE)/cache/download
export GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
export GOPATH="$tmp/gopath" GOMODCACHE="$tmp/gopath/pkg/mod" GOBIN="$tmp/bin" GOCACHE="${GOCACHE:-$(go env GOCACHE)}"
export GOPROXY="file://$proxy,file://$cache,https://proxy.golang.org"
# Our modules are not in the checksum database before they are tagged.
export GONOSUMDB=github.com/bastion-mcp

# ours drops the go.sum lines of Bastion's own modules.
ours() { grep -v '^github\.com/bastion-mcp/bastion/' "$1" || true; }

# tidy_one MODULE_DIR: tidies a copy of MODULE_DIR's go.mod and go.sum and
# prints a diff when the copy differs from the original.
tidy_one() {
  local m=$1 w="$tmp/tidy/$1" t0 ms changed=0
  t0=$(date +%s%N)
  mkdir -p "$w"
  cp "$m/go.mod" "$w/go.mod"
  if [ -f "$m/go.sum" ]; then ours "$m/go.sum" >"$w/go.sum"; else : >"$w/go.sum"; fi
  (cd "$m" && go mod tidy -modfile="$w/go.mod") 2>"$w/err" || { cat "$w/err" >&2; fail "go mod tidy in $m"; }
  diff -u --label "$m/go.mod (committed)" --label "$m/go.mod (after go mod tidy)" "$m/go.mod" "$w/go.mod" || changed=1
  diff -u --label "$m/go.sum (committed)" --label "$m/go.sum (after go mod tidy)" \
    <([ -f "$m/go.sum" ] && ours "$m/go.sum") <(ours "$w/go.sum") || changed=1
  if [ $changed = 1 ] && [ $write = 1 ]; then
    cp "$w/go.mod" "$m/go.mod"
    ours "$w/go.sum" >"$m/go.sum"
    echo "tidy-check: wrote $m/go.mod and $m/go.sum"
    return 0
  fi
  [ $changed = 0 ] || return 1
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "tidy-check: ok  $m (GOWORK=off go mod tidy changes nothing) in ${ms}ms"
}

if [ $tidy = 1 ]; then
  bad=()
  for m in safety "${servers[@]}" scripts/democlient; do tidy_one "$m" || bad+=("$m"); done
  [ ${#bad[@]} = 0 ] || fail "go mod tidy would change ${bad[*]} (diff above); 'make tidy' writes the tidied files"
  echo "tidy-check: $(( ${#servers[@]} + 2 )) module(s) in $(( $(date +%s) - start ))s"
  exit 0
fi

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
