#!/usr/bin/env bash
# Builds CoreDNS, the cluster DNS of the local cloud, from the Go module proxy
# at the pinned release (COREDNS_VERSION in lib.sh): a static binary (no cgo)
# with CoreDNS's default plugin set. Cached per version: a second run costs
# one stat. build-images.sh packs it into the image kuryr.local/coredns.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -x "$COREDNS_BIN" ]; then
  log "coredns $COREDNS_VERSION: cached in $(dirname "$COREDNS_BIN")"
  exit 0
fi
out=$(dirname "$COREDNS_BIN")
mkdir -p "$out" "$CLOUD_LOG_DIR"
export GOMODCACHE=$CLOUD_CACHE/gomod GOCACHE=$CLOUD_CACHE/gocache GOFLAGS=-mod=mod
export CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN=$out/.tmp
log "coredns $COREDNS_VERSION: building from the module proxy (≈ 3 min, cached after)"
t0=$SECONDS
rm -rf "$GOBIN"
# CoreDNS's go.mod has no replace directives, so `go install module@version`
# builds exactly the release, with its own go.sum.
go install -trimpath \
  -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" \
  "github.com/coredns/coredns@$COREDNS_VERSION" >"$CLOUD_LOG_DIR/build-coredns.log" 2>&1 \
  || { tail -20 "$CLOUD_LOG_DIR/build-coredns.log"; die "building coredns failed (see $CLOUD_LOG_DIR/build-coredns.log)"; }
"$GOBIN/coredns" -version >>"$CLOUD_LOG_DIR/build-coredns.log" 2>&1 || die "the built coredns does not run"
mv "$GOBIN/coredns" "$COREDNS_BIN"
rm -rf "$GOBIN"
log "coredns $COREDNS_VERSION: built in $((SECONDS - t0)) s ($COREDNS_BIN)"
