#!/usr/bin/env bash
# make test's driver. Usage: test-stages.sh STAGE... (each STAGE a make target;
# a STAGE written bg:NAME starts in the background, its output kept in
# .bench/NAME.log, and the run waits for it at the end, printing that log
# when it failed: a long stage that needs little of what the others do).
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
  case ${s#bg:} in
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
echo "make test: $n stages (${*//bg:/in the background: }); the whole run takes about 15 minutes on a loaded 2-core machine"
start=$SECONDS
mkdir -p .bench
i=0
bg=()
for s in "$@"; do
  i=$((i + 1))
  t0=$SECONDS
  if [ "${s#bg:}" != "$s" ]; then
    s=${s#bg:}
    rm -f ".bench/$s.result"
    echo "== [$i/$n] $s: started at $(fmt $((t0 - start))) in the background (output: .bench/$s.log)"
    ( if $MAKE --no-print-directory "$s" >".bench/$s.log" 2>&1; then r=ok; else r=FAILED; fi
      echo "$r $((SECONDS - t0))" >".bench/$s.result" ) &
    bg+=("$i:$s:$!")
    continue
  fi
  echo "== [$i/$n] $s: started at $(fmt $((t0 - start)))"
  if ! $MAKE --no-print-directory "$s"; then
    echo "== [$i/$n] $s: FAILED after $(fmt $((SECONDS - t0))) (total $(fmt $((SECONDS - start))))"
    for b in "${bg[@]}"; do kill "${b##*:}" 2>/dev/null; done
    exit 1
  fi
  echo "== [$i/$n] $s: ok in $(fmt $((SECONDS - t0))) (total $(fmt $((SECONDS - start))))"
done
failed=0
for b in "${bg[@]}"; do
  IFS=: read -r j s pid <<<"$b"
  wait "$pid"
  read -r r secs <".bench/$s.result" 2>/dev/null || { r=FAILED; secs=0; }
  if [ "$r" = ok ]; then
    echo "== [$j/$n] $s: ok in $(fmt "$secs") in the background (total $(fmt $((SECONDS - start))))"
  else
    echo "== [$j/$n] $s: FAILED after $(fmt "$secs") in the background (total $(fmt $((SECONDS - start)))); its output:"
    cat ".bench/$s.log"
    failed=1
  fi
done
[ $failed = 0 ] || exit 1
echo "make test: all $n stages passed in $(fmt $((SECONDS - start)))"
