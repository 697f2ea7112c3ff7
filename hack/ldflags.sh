#!/usr/bin/env bash
# Prints the -X flags that tell kuryr's binaries which build they are
# (pkg/version): the git commit (with -dirty for a modified tree) and, from
# $KURYR_VERSION, the release. Go's own VCS stamp is not relied on: GOFLAGS may
# hold -buildvcs=false, and a tree copied without .git has none.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=github.com/kuryr-k8s/kuryr/pkg/version
rev=$(git rev-parse HEAD 2>/dev/null || true)
if [ -n "$rev" ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  rev=$rev-dirty
fi
flags=""
[ -z "$rev" ] || flags="-X $pkg.revision=$rev"
[ -z "${KURYR_VERSION:-}" ] || flags="$flags -X $pkg.version=$KURYR_VERSION"
echo "$flags"
