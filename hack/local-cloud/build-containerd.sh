#!/usr/bin/env bash
# Builds the container runtime the nodes run: containerd 2.x (containerd,
# containerd-shim-runc-v2, ctr) and the runc release that containerd pins
# (its script/setup/runc-version), both from the Go module proxy.
#
# Why not Debian's: bookworm has containerd 1.6 and trixie 1.7, both end of
# life; kubelet 1.37 runs on 1.7 only through a deprecated fallback (1.7
# cannot report its cgroup driver) that 1.38 removes. forky's 2.1 moves
# under us. runc is built with cgo and seccomp (libseccomp-dev): pods that
# ask for the RuntimeDefault seccomp profile need it.
#
# Cached per version and content of this script in $CLOUD_CACHE/containerd
# (CONTAINERD_BIN, lib.sh); ≈ 10 min cold on 2 cores.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$CONTAINERD_BIN
if [ -x "$out/containerd" ] && [ -x "$out/containerd-shim-runc-v2" ] && [ -x "$out/ctr" ] && [ -x "$out/runc" ]; then
  log "containerd $CONTAINERD_VERSION: cached in $out"
  exit 0
fi
mkdir -p "$CLOUD_LOG_DIR"
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
export GOMODCACHE=$CLOUD_CACHE/gomod GOCACHE=$CLOUD_CACHE/gocache GOTOOLCHAIN=local GOFLAGS= GOBIN=$out.tmp
logf=$CLOUD_LOG_DIR/containerd-build.log
: >"$logf"

# download MODULE@VERSION: the module's directory in the module cache.
download() {
  local j
  j=$(go mod download -json "$1" 2>>"$logf") || true
  jq -r '.Dir // empty' <<<"$j" 2>/dev/null | grep . \
    || die "$1 could not be downloaded: $(jq -r '.Error // empty' <<<"$j" 2>/dev/null)$(tail -3 "$logf")"
}
dir=$(download "github.com/containerd/containerd/v2@$CONTAINERD_VERSION")
runc_version=$(tr -d '[:space:]' <"$dir/script/setup/runc-version")
log "containerd $CONTAINERD_VERSION with runc $runc_version: building (≈ 10 min, cached after)"

# Each is built as its own module at its release (go install MODULE@VERSION),
# with the dependencies that release pins.
pkg=github.com/containerd/containerd/v2/version
ldflags="-s -w -X $pkg.Version=$CONTAINERD_VERSION -X $pkg.Revision=go-module-proxy -X $pkg.Package=github.com/containerd/containerd/v2"
for b in containerd containerd-shim-runc-v2 ctr; do
  log "containerd $CONTAINERD_VERSION: building $b"
  CGO_ENABLED=0 go install -trimpath -tags "no_btrfs no_devmapper no_zfs" -ldflags "$ldflags" \
    "github.com/containerd/containerd/v2/cmd/$b@$CONTAINERD_VERSION" >>"$logf" 2>&1 \
    || { tail -20 "$logf"; die "building $b failed"; }
done
log "containerd $CONTAINERD_VERSION: building runc $runc_version"
CGO_ENABLED=1 go install -trimpath -tags "seccomp urfave_cli_no_docs" -ldflags "-s -w -X main.gitCommit=go-module-proxy" \
  "github.com/opencontainers/runc@$runc_version" >>"$logf" 2>&1 \
  || { tail -20 "$logf"; die "building runc failed (needs gcc, libseccomp-dev, pkg-config)"; }
rm -rf "$out"
mv "$out.tmp" "$out"
log "containerd $CONTAINERD_VERSION: built in $out ($("$out/runc" --version | head -1))"
