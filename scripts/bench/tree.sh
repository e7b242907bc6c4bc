#!/usr/bin/env bash
# tree.sh [DIR]: builds, once, the 2,002,000-file tree that `make bench` scans,
# OUTSIDE the repository (default ${XDG_CACHE_HOME:-~/.cache}/bastion-bench/tree-2m),
# and prints its path. DIR.stamp records what was built; the tree is rebuilt
# when the stamp is missing or names another shape. Shape: 1,000 projects in
# 25 groups, each a package.json, src/index.js and a node_modules of 20
# packages × 100 files of 300 bytes (1,000 finds for sweepd; ~8 GB on disk).
# BENCH_PROJECTS overrides the project count (the stamp then differs).
set -euo pipefail
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/bastion-bench/tree-2m}
projects=${BENCH_PROJECTS:-1000}
pkgs=20
files=100
stamp="bastion-bench tree v1: $projects projects, each package.json + src/index.js + node_modules of $pkgs packages x $files files of 300 bytes"
if [ -d "$dir" ] && [ -f "$dir.stamp" ] && [ "$(cat "$dir.stamp")" = "$stamp" ]; then
  echo "$dir"
  exit 0
fi
echo "tree.sh: building $dir ($stamp); this takes minutes" >&2
mkdir -p "$(dirname "$dir")"
rm -rf "$dir" "$dir.stamp" "$dir.building"
work="$dir.building"
tpl="$work/template"
payload=$(printf 'x%.0s' $(seq 300))
mkdir -p "$tpl/src"
printf '{"name":"p"}' >"$tpl/package.json"
printf '%s' "$payload" >"$tpl/src/index.js"
for ((k = 0; k < pkgs; k++)); do
  lib=$(printf '%s/node_modules/pkg%02d/lib' "$tpl" "$k")
  mkdir -p "$lib"
  for ((f = 0; f < files; f++)); do
    printf '%s' "$payload" >"$(printf '%s/f%02d.js' "$lib" "$f")"
  done
done
for ((g = 0; g < 25; g++)); do mkdir -p "$(printf '%s/tree/group%02d' "$work" "$g")"; done
# Two copies at a time: the machine the figures are published for has 2 vCPUs.
for ((p = 0; p < projects; p++)); do
  printf '%s/tree/group%02d/proj%04d\n' "$work" $((p % 25)) "$p"
done | xargs -P 2 -n 50 sh -c 'for d; do cp -a "$0" "$d"; done' "$tpl"
mv "$work/tree" "$dir"
rm -rf "$work"
printf '%s' "$stamp" >"$dir.stamp"
echo "tree.sh: built $(find "$dir" -type f | wc -l) files" >&2
echo "$dir"
