#!/usr/bin/env bash
# Part of `make test`: the README's layout table names every Go package
# directory, and every "kuryr-..." name (tags, resource names, components)
# is spelled in one file, the vocabulary, and nowhere else.
set -euo pipefail
cd "$(dirname "$0")/.."
VOCABULARY=pkg/names/names.go
rc=0

# The directories in the first column of the README's "Repository layout"
# table: each `path/` in backquotes, with {a,b} alternatives expanded.
listed=$(awk '/^## Repository layout/ {on = 1; next} /^## / {on = 0} on && /^\| `/' README.md |
  cut -d'|' -f2 | grep -o '`[^`]*`' | tr -d '`' | while read -r p; do
    eval "printf '%s\n' $p"
  done | sed 's#/*$##' | sort -u)
for dir in $(git ls-files '*.go' | xargs -n1 dirname | grep -v '/testdata' | sort -u); do
  if ! grep -qxF "$dir" <<<"$listed"; then
    echo "layout: package directory $dir/ is missing from the README's layout table"
    rc=1
  fi
done

# A "kuryr-..." name (a string literal that is a name, a tag or a prefix:
# "kuryr-x", "kuryr-x=", "kuryr-x-", "kuryr-x-%d") outside the vocabulary
# file. Messages that mention a component ("kuryr-daemon stopped") are not
# names; tests may spell the names they expect.
if out=$(git grep -nE '"kuryr-[a-z0-9-]*(=|%[0-9]*[a-z])?"' -- '*.go' ":!*_test.go" ":!$VOCABULARY" |
  grep -vE '^[^:]+:[0-9]+:\s*//'); then
  echo "vocabulary: \"kuryr-...\" names spelled outside $VOCABULARY (use its constants):"
  echo "$out"
  rc=1
fi
exit $rc
