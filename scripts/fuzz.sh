#!/usr/bin/env bash
# Runs every fuzz target in the module for a while each.
#   scripts/fuzz.sh [FUZZTIME]     e.g. scripts/fuzz.sh 1m
# New crashers land in the package's testdata/fuzz/<Target>/ and then run as
# ordinary regression cases in `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-20s}"

# "pkgdir FuzzName" for every fuzz target in a _test.go file.
targets=$(git ls-files '*_test.go' | xargs grep -H -o '^func Fuzz[A-Za-z0-9_]*' |
  sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)#\1 \2#' | sort -u)

if [ -z "$targets" ]; then
  echo "no fuzz targets found" >&2
  exit 1
fi

status=0
while read -r dir name; do
  echo "==> ./$dir $name ($fuzztime)"
  if ! go test "./$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime"; then
    status=1
  fi
done <<<"$targets"
exit $status
