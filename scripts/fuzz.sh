#!/usr/bin/env bash
# fuzz.sh FUZZTIME: run every fuzz target of the Go modules for FUZZTIME each,
# then copy what the fuzzer found interesting into the package's
# testdata/fuzz/<Target>/ (the committed corpus, which plain `go test` and
# `make test` replay as seeds). A crasher fails the run; go test prints the
# file it wrote under testdata/fuzz/, which becomes a named regression test.
set -euo pipefail
fuzztime=${1:-60s}
cache=$(go env GOCACHE)/fuzz
status=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  pkg=$(cd "$dir" && go list .)
  for fn in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    echo "== fuzz $fn ($dir, $fuzztime)"
    if ! (cd "$dir" && go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" .); then
      echo "fuzz: $fn failed; the crasher is under $dir/testdata/fuzz/$fn/"
      status=1
    fi
    if [ -d "$cache/$pkg/$fn" ]; then
      mkdir -p "$dir/testdata/fuzz/$fn"
      cp -n "$cache/$pkg/$fn"/* "$dir/testdata/fuzz/$fn/" 2>/dev/null || true
    fi
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' safety sweepd terminald organizerd | sort)
exit $status
