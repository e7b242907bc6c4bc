#!/usr/bin/env bash
# release: checks the modules are releasable and prints (or, with --apply,
# performs) the tagging sequence for one version of safety and the servers.
#
# usage: scripts/release.sh VERSION [--apply] [SERVER ...]
#   VERSION   vX.Y.Z, the version given to safety and to every listed server
#   --apply   actually edit go.mod/go.sum, commit and tag (default: dry run)
#
# Order matters (a module may only require what is already tagged):
#   1. tag safety/vX.Y.Z and push it, so the proxy can serve it;
#   2. in each server: require safety vX.Y.Z, `go mod tidy` with GOWORK=off
#      (fills go.sum from the proxy), commit;
#   3. tag <server>/vX.Y.Z and push.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-}; shift || true
apply=0
servers=()
for a in "$@"; do
  case $a in --apply) apply=1 ;; *) servers+=("$a") ;; esac
done
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || { echo "usage: scripts/release.sh vX.Y.Z [--apply] [SERVER ...]" >&2; exit 2; }
if [ ${#servers[@]} -eq 0 ]; then
  for d in sweepd terminald organizerd; do [ -f "$d/main.go" ] && servers+=("$d"); done
fi
problems=0
bad() { echo "release: FAIL: $*" >&2; problems=$((problems+1)); }

for m in safety "${servers[@]}"; do
  [ -f "$m/go.mod" ] || { bad "$m/go.mod is missing"; continue; }
  if grep -Eq '^\s*(replace|exclude)\b' "$m/go.mod"; then
    bad "$m/go.mod has a replace or exclude directive: go install refuses such a module (keep local wiring in go.work)"
  fi
  if git rev-parse -q --verify "refs/tags/$m/$version" >/dev/null; then
    bad "tag $m/$version already exists"
  fi
done
for s in "${servers[@]}"; do
  cur=$(awk '$1=="github.com/bastion-mcp/bastion/safety"{print $2} $1=="require" && $2=="github.com/bastion-mcp/bastion/safety"{print $3}' "$s/go.mod" | head -1)
  [ -n "$cur" ] || bad "$s/go.mod does not require github.com/bastion-mcp/bastion/safety"
  if [ "$cur" != "$version" ]; then
    echo "release: note: $s requires safety $cur; step 2 bumps it to $version"
  fi
done
if [ -n "$(git status --porcelain -- safety "${servers[@]}" 2>/dev/null)" ]; then
  if [ $apply = 1 ]; then bad "uncommitted changes under safety/ or a server: commit first"; else echo "release: note: uncommitted changes (allowed in a dry run)"; fi
fi
[ $problems = 0 ] || { echo "release: $problems problem(s); nothing done" >&2; exit 1; }

show() { printf '%s' "$1"; shift; printf ' %q' "$@"; echo; }
run() { if [ $apply = 1 ]; then show "+" "$@"; "$@"; else show " " "$@"; fi; }
echo "release plan for $version ($([ $apply = 1 ] && echo APPLY || echo dry run)):"
echo "1. safety"
run git tag -a "safety/$version" -m "safety $version"
run git push origin "safety/$version"
echo "2. servers require the new safety (GOWORK=off, so go.sum gets the tagged module's hash from the proxy)"
for s in "${servers[@]}"; do
  run go -C "$s" mod edit -require="github.com/bastion-mcp/bastion/safety@$version"
  if [ $apply = 1 ]; then
    echo "+ (cd $s && GOWORK=off GOPROXY=https://proxy.golang.org go mod tidy)"
    (cd "$s" && GOWORK=off GOPROXY=https://proxy.golang.org go mod tidy)
  else
    echo "  (cd $s && GOWORK=off GOPROXY=https://proxy.golang.org go mod tidy)"
  fi
done
run git commit -m "servers: require safety $version" -- "${servers[@]/%//go.mod}" "${servers[@]/%//go.sum}"
echo "3. server tags"
for s in "${servers[@]}"; do
  run git tag -a "$s/$version" -m "$s $version"
  run git push origin "$s/$version"
done
echo "4. check: GOWORK=off go install github.com/bastion-mcp/bastion/<server>@$version from outside the repository"
echo "5. release artifacts (reproducible: a second make dist gives the same bytes)"
run make dist VERSION="$version"
echo "6. upload to the GitHub release $version (tag $version on the same commit), in this order:"
run git tag -a "$version" -m "Bastion $version (release assets)"
run git push origin "$version"
echo "   a. SHA256SUMS first, so whoever downloads early can check what follows"
echo "      dist/SHA256SUMS"
echo "   b. the MCP bundles (one click in a desktop client)"
for s in "${servers[@]}"; do echo "      dist/${s}_${version}.mcpb"; done
echo "   c. the archives"
for s in "${servers[@]}"; do
  for p in linux_amd64.tar.gz linux_arm64.tar.gz darwin_amd64.tar.gz darwin_arm64.tar.gz windows_amd64.zip; do
    echo "      dist/${s}_${version}_$p"
  done
done
echo "7. MCP registry: publish each dist/registry/<server>/server.json (its package URL and SHA-256 name the uploaded bundle)"
for s in "${servers[@]}"; do echo "      dist/registry/$s/server.json"; done
if [ $apply = 1 ]; then
  echo "steps 6 and 7 are uploads to GitHub and the registry: done by a maintainer with those rights (gh release upload, mcp-publisher); nothing above uploads them"
fi
