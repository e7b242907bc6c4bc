#!/usr/bin/env bash
# make_demo_sandbox: seeds a sandbox for the Bastion demo (and for trying
# the servers by hand) and prints its directory on stdout.
#
# usage: scripts/make_demo_sandbox.sh [DIR]     (default: a new temporary directory)
#
#   DIR/code/       projects with regenerable junk for sweepd: a Node project
#                   (node_modules), a Rust crate (target), a Python project
#                   (.venv with pyvenv.cfg, __pycache__, .pytest_cache), and a
#                   kept project (.bastion-keep) whose junk must never go
#   DIR/terminal/   terminald's jail: a small project to list, grep and git in
#   DIR/inbox/      organizerd's workspace: documents, images, a dotfile
#                   (.bashrc), an installer (setup.exe), a symlink (link.pdf),
#                   a .env holding a fake secret for the risk radar
#   DIR/state/      audit logs, the organizer journal, terminald's private HOME
#   DIR/policy.toml a policy naming all of the above (absolute paths)
#
# Nothing outside DIR is touched. The fake secret is not a credential.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
D=${1:-}
if [ -z "$D" ]; then D=$(mktemp -d "${TMPDIR:-/tmp}/bastion-demo.XXXXXX"); fi
mkdir -p "$D"
D=$(cd "$D" && pwd -P)
if [ -n "$(ls -A "$D" 2>/dev/null)" ] && [ ! -f "$D/.bastion-demo" ]; then
  echo "make_demo_sandbox: $D is not empty and not a demo sandbox; refusing to write into it" >&2
  exit 1
fi
rm -rf "$D/code" "$D/terminal" "$D/inbox" "$D/state"
touch "$D/.bastion-demo"
fill() { # fill DIR N: N small files in DIR
  mkdir -p "$1"; for i in $(seq 1 "$2"); do printf 'generated file %s\n' "$i" > "$1/f$i.js"; done
}

# --- code/ for sweepd ---------------------------------------------------
c="$D/code"
mkdir -p "$c/webapp/src" "$c/crate/src" "$c/pyproj/pkg" "$c/kept/webapp2"
echo '{"name":"webapp","version":"1.0.0"}' > "$c/webapp/package.json"
echo 'console.log("hi")' > "$c/webapp/src/index.js"
fill "$c/webapp/node_modules/left-pad" 40
fill "$c/webapp/node_modules/.bin" 3
printf '[package]\nname = "crate"\nversion = "0.1.0"\n' > "$c/crate/Cargo.toml"
echo 'fn main() {}' > "$c/crate/src/main.rs"
mkdir -p "$c/crate/target/debug/deps"; head -c 200000 /dev/zero > "$c/crate/target/debug/crate"
printf '[project]\nname = "pyproj"\n' > "$c/pyproj/pyproject.toml"
echo 'print("hi")' > "$c/pyproj/pkg/main.py"
mkdir -p "$c/pyproj/.venv/lib" "$c/pyproj/pkg/__pycache__" "$c/pyproj/.pytest_cache"
echo 'home = /usr/bin' > "$c/pyproj/.venv/pyvenv.cfg"
fill "$c/pyproj/.venv/lib" 20
printf 'x' > "$c/pyproj/pkg/__pycache__/main.cpython-312.pyc"
echo '{}' > "$c/pyproj/.pytest_cache/README.md"
touch "$c/kept/.bastion-keep"
echo '{"name":"kept"}' > "$c/kept/webapp2/package.json"
fill "$c/kept/webapp2/node_modules/big" 10

# --- terminal/ for terminald ---------------------------------------------
t="$D/terminal"
mkdir -p "$t/src"
printf 'package main\n\nfunc main() { println("hello") }\n' > "$t/src/main.go"
printf '# demo project\nTODO: write docs\n' > "$t/README.md"
printf 'a\nb\nc\n' > "$t/letters.txt"

# --- dev/ for terminald in the sandbox profile -----------------------------
# A workspace with a Go module, a C program and a Python test suite: the
# builds and tests run through a shell and interpreters, inside the kernel
# boundary.
v="$D/dev"
mkdir -p "$v/gomod" "$v/cprog" "$v/pytests"
printf 'module example.com/demo\n\ngo 1.25\n' > "$v/gomod/go.mod"
printf 'package demo\n\n// Sum adds.\nfunc Sum(a, b int) int { return a + b }\n' > "$v/gomod/sum.go"
printf 'package demo\n\nimport "testing"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal("2+3")\n\t}\n}\n' > "$v/gomod/sum_test.go"
printf '#include <stdio.h>\nint main(void) { puts("hello from C"); return 0; }\n' > "$v/cprog/hello.c"
printf 'hello: hello.c\n\tcc -O2 -o hello hello.c\n\nrun: hello\n\t./hello\n' > "$v/cprog/Makefile"
printf 'import unittest\n\n\nclass TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n' > "$v/pytests/test_add.py"

# --- inbox/ for organizerd and the radar ----------------------------------
i="$D/inbox"
mkdir -p "$i"
printf '%%PDF-1.4\n%% demo report\n' > "$i/report.pdf"
printf 'PK demo document\n' > "$i/notes.docx"
printf 'quarterly numbers\n' > "$i/budget.xlsx"
printf '\xff\xd8\xff\xe0 demo jpeg\n' > "$i/photo.jpg"
printf '\x89PNG demo png\n' > "$i/screenshot.png"
printf 'export PATH="$HOME/bin:$PATH"\n' > "$i/.bashrc"
printf 'MZ demo installer\n' > "$i/setup.exe"
ln -s report.pdf "$i/link.pdf"
# A fake secret (AWS's documented example key), so the radar has something to flag.
printf 'DATABASE_URL=postgres://demo:demo@localhost/demo\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n' > "$i/.env"
# Old enough that "recently modified" protections do not apply to the demo files.
find "$i" -maxdepth 1 -type f -exec touch -d '2 days ago' {} +

# The same fake secret beside code, for the radar's file-context reads on
# every server's root.
cp "$i/.env" "$c/webapp/.env"; cp "$i/.env" "$t/.env"; cp "$i/.env" "$v/.env"

# --- state/ and policy.toml ------------------------------------------------
mkdir -p "$D/state/terminal"
{
  echo "# Bastion demo policy (generated by scripts/make_demo_sandbox.sh)"
  echo "audit_log = \"$D/state/audit.jsonl\""
  echo 'audit_fail_mode = "closed"'
  echo
  echo '[sweep]'
  echo "roots = [\"$c\"]"
  echo
  echo '[terminal]'
  echo "jail_root = \"$t\""
  echo '[terminal.state]'
  echo "dir = \"$D/state/terminal\""
  echo
  if [ -f "$here/policies/terminal-section.toml" ]; then cat "$here/policies/terminal-section.toml"; fi
  echo
  echo '[organizer]'
  echo "workspace_root = \"$i\""
  echo "journal = \"$D/state/organizer.journal\""
} > "$D/policy.toml"
# A second policy for terminald in the sandbox profile, jailed in dev/.
# Go's own directory goes on the PATH (and, outside /usr, into the read
# paths) wherever this machine has it.
gobin=$(dirname "$(command -v go 2>/dev/null || echo /usr/local/go/bin/go)")
goroot=$(cd "$gobin/.." && pwd -P)
mkdir -p "$D/state/dev"
{
  echo "# Bastion demo policy: terminald in the sandbox profile (generated by scripts/make_demo_sandbox.sh)"
  echo "audit_log = \"$D/state/dev-audit.jsonl\""
  echo
  echo '[terminal]'
  echo 'profile = "sandbox"'
  echo "jail_root = \"$v\""
  echo '[terminal.state]'
  echo "dir = \"$D/state/dev\""
  echo '[terminal.limits]'
  echo 'timeout_seconds = 300'
  echo 'memory_mb = 4096'
  echo '[terminal.sandbox]'
  echo 'network = "deny"'
  echo 'caches = ["go"]'
  case "$goroot" in
    /usr|/usr/*) ;;
    *) echo "read_paths = [\"/usr\", \"/bin\", \"/sbin\", \"/lib\", \"/lib64\", \"/etc/alternatives\", \"/etc/ld.so.cache\", \"/etc/passwd\", \"/etc/group\", \"/etc/nsswitch.conf\", \"/etc/localtime\", \"/etc/ssl\", \"$goroot\"]" ;;
  esac
  echo '[terminal.env]'
  echo "path = [\"$gobin\", \"/usr/local/bin\", \"/usr/bin\", \"/bin\"]"
  # The command policy: policies/dev.example.toml's generated section (Dev
  # in safety/command/shipped.go), the one source of the sandbox profile's.
  sed -n '/^# ---- BEGIN generated/,/^# ---- END generated/p' "$here/policies/dev.example.toml"
} > "$D/dev-policy.toml"
echo "$D"
