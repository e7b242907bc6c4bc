#!/usr/bin/env bash
# make apps: the MCP Apps views in a real browser. Headless Debian chromium,
# driven by puppeteer-core, hosts each view through the official ext-apps
# AppBridge connected to the built server over stdio (host.mjs).
# Needs `make apps-setup` (npm ci of this directory's lockfile) and
# chromium (`apt-get install -y chromium`); a missing one FAILS, it never skips.
#
# usage: scripts/apps/run.sh BIN_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: run.sh BIN_DIR}" && pwd)
# Node 22 from make clients-setup when it is there; the system's node otherwise.
[ -x "$here/../clients/node_modules/.bin/node" ] && export PATH="$here/../clients/node_modules/.bin:$PATH"
command -v node >/dev/null || { echo "apps: node not found: apt-get install -y nodejs npm, then make apps-setup" >&2; exit 1; }
[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ] || { echo "apps: node $(node --version) is too old (need 20+)" >&2; exit 1; }
for m in puppeteer-core @modelcontextprotocol/ext-apps @modelcontextprotocol/client; do
  [ -d "$here/node_modules/$m" ] || { echo "apps: npm module $m missing: run make apps-setup" >&2; exit 1; }
done
[ -n "${CHROMIUM:-}" ] || command -v chromium >/dev/null || { echo "apps: chromium missing: apt-get install -y chromium (or set CHROMIUM)" >&2; exit 1; }
fail=0
node "$here/sweepd.test.mjs" "$BIN" || fail=1
node "$here/organizerd.test.mjs" "$BIN" || fail=1
echo "screenshots: $here/artifacts"
[ $fail = 0 ] && echo "apps: ok" || { echo "apps: FAIL"; exit 1; }
