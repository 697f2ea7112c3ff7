#!/usr/bin/env bash
# Builds the Kubernetes binaries the local cloud runs, from the Go module
# proxy, at the pinned release. k8s.io/kubernetes is not meant to be used as a
# module: its go.mod points every staging module at ./staging, so a throwaway
# module replaces each of them with the published v0.Y.Z tag. The result is
# cached per version; a second run costs one stat per binary.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

need=()
for b in "${BINARIES[@]}"; do [ -x "$K8S_BIN/$b" ] || need+=("$b"); done
if [ ${#need[@]} -eq 0 ]; then
  log "kubernetes $K8S_VERSION: cached in $K8S_BIN"
  exit 0
fi

minor=$(echo "$K8S_VERSION" | cut -d. -f2)
staging_version="v0.${K8S_VERSION#v1.}"
work=$CLOUD_CACHE/k8s/$K8S_VERSION/module
mkdir -p "$work" "$K8S_BIN" "$CLOUD_LOG_DIR"
export GOMODCACHE=$CLOUD_CACHE/gomod GOCACHE=$CLOUD_CACHE/gocache GOFLAGS=-mod=mod
export CGO_ENABLED=0 GOTOOLCHAIN=local

# The staging modules are the ones the release's own go.mod replaces with
# ./staging (each release adds some: cri-streaming, externaljwt, ...).
kmod=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p') || true
[ -f "$kmod" ] || die "kubernetes $K8S_VERSION: its go.mod could not be downloaded"
mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/.*#\1#p' "$kmod")
[ ${#staging[@]} -gt 0 ] || die "kubernetes $K8S_VERSION: no staging modules in $kmod"
{
  echo "module kuryr.local/k8s-build"
  echo "go 1.22"
  echo "require k8s.io/kubernetes $K8S_VERSION"
  for m in "${staging[@]}"; do echo "replace $m => $m $staging_version"; done
} >"$work/go.mod"
printf 'package main\n\nimport _ "k8s.io/kubernetes/cmd/kubelet/app"\n\nfunc main() {}\n' >"$work/main.go"

cd "$work"
log "kubernetes $K8S_VERSION: resolving modules"
go mod tidy >"$CLOUD_LOG_DIR/k8s-build.log" 2>&1 || { tail -20 "$CLOUD_LOG_DIR/k8s-build.log"; die "go mod tidy failed"; }

pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor \
  -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
for b in "${need[@]}"; do
  log "kubernetes $K8S_VERSION: building $b"
  go build -trimpath -ldflags "$ldflags" -o "$K8S_BIN/$b.tmp" "k8s.io/kubernetes/cmd/$b" \
    >>"$CLOUD_LOG_DIR/k8s-build.log" 2>&1 || { tail -20 "$CLOUD_LOG_DIR/k8s-build.log"; die "building $b failed"; }
  mv "$K8S_BIN/$b.tmp" "$K8S_BIN/$b"
done
log "kubernetes $K8S_VERSION: built ${need[*]}"
