#!/usr/bin/env bash
# make test's driver. Usage: test-stages.sh STAGE... (each STAGE a make target).
# It checks every stage's prerequisites up front and fails at once, saying
# how to get what is missing (nothing is skipped: a stage that cannot run
# fails). Then it runs the stages in order, printing a line as each starts
# and one with its elapsed time as it ends, and stops at the first failure.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}

fmt() { local s=$1; printf '%dm%02ds' $((s / 60)) $((s % 60)); }

missing=()
node=scripts/clients/node_modules/.bin/node
for s in "$@"; do
  case $s in
  clients|dist-check)
    if ! { [ -x "$node" ] && "$node" -e 'process.exit(parseInt(process.versions.node) < 22 ? 1 : 0)' 2>/dev/null; }; then
      missing+=("Node 22 and the pinned MCP clients in scripts/clients/node_modules (stages clients and dist-check): run \`make clients-setup\` (npm install from the pinned lockfile; it brings Node 22, so only npm is needed)")
      break
    fi ;;
  apps)
    if [ ! -d scripts/apps/node_modules/puppeteer-core ] || [ ! -d scripts/apps/node_modules/@modelcontextprotocol/ext-apps ]; then
      missing+=("the browser-test modules in scripts/apps/node_modules (stage apps): run \`make apps-setup\` (npm ci from the pinned lockfile)")
    fi
    if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null; then
      missing+=("chromium (stage apps, the MCP Apps views in a real browser): apt-get install -y chromium (or set CHROMIUM to a Chromium executable)")
    fi ;;
  esac
done
command -v git >/dev/null || missing+=("git (the gitignore oracle, the install proof, the demo): install it with your package manager")
if [ ${#missing[@]} -gt 0 ]; then
  echo "make test: cannot run every stage; missing:"
  printf '  - %s\n' "${missing[@]}"
  exit 1
fi

n=$#
echo "make test: $n stages ($*); the whole run takes about 8-12 minutes on a loaded 2-core machine"
start=$SECONDS
i=0
for s in "$@"; do
  i=$((i + 1))
  t0=$SECONDS
  echo "== [$i/$n] $s: started at $(fmt $((t0 - start)))"
  if ! $MAKE --no-print-directory "$s"; then
    echo "== [$i/$n] $s: FAILED after $(fmt $((SECONDS - t0))) (total $(fmt $((SECONDS - start))))"
    exit 1
  fi
  echo "== [$i/$n] $s: ok in $(fmt $((SECONDS - t0))) (total $(fmt $((SECONDS - start))))"
done
echo "make test: all $n stages passed in $(fmt $((SECONDS - start)))"
