#!/usr/bin/env bash
# Builds kuryr's container image as an OCI archive, without a registry or a
# container builder: _output/images/kuryr.tar, its reference in
# _output/images/kuryr.ref. One image for the three components:
#   /kuryr-controller  (run as uid 65532)
#   /kuryr-daemon      (root: it plugs pods' interfaces)
#   /kuryr-cni         (copied to the node's CNI bin dir by the daemon)
# FROM scratch: static binaries, CA certificates for OpenStack endpoints,
# and /var/run -> /run (containerd names pod netns under /var/run/netns).
# The tag is the binaries' content hash unless KURYR_IMAGE_TAG is set, so a
# changed build rolls out and an unchanged one does not.
#   load into a registry:  skopeo copy oci-archive:_output/images/kuryr.tar docker://REGISTRY/kuryr:TAG
#   or into containerd:    ctr -n k8s.io images import _output/images/kuryr.tar
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO_ROOT/hack/local-cloud/oci.sh"
OUT=${KURYR_IMAGE_OUT:-$REPO_ROOT/_output/images}
IMAGE_NAME=${KURYR_IMAGE_NAME:-kuryr.local/kuryr}
# KURYR_IMAGE_PLATFORMS="amd64 arm64" (make release): an image index over
# one image per architecture, annotated (KURYR_IMAGE_ANNOTATIONS, JSON).
PLATFORMS=${KURYR_IMAGE_PLATFORMS:-amd64}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ca=${KURYR_IMAGE_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -f "$ca" ] || { echo "no CA bundle at $ca: set KURYR_IMAGE_CA_BUNDLE" >&2; exit 1; }

# rootfs DIR ARCH: the image's files for ARCH. With KURYR_IMAGE_BINARIES
# (amd64 only), binaries built that way already (make up's) are used
# instead of building them again.
rootfs() {
  local r=$1 arch=$2 b
  mkdir -p "$r/etc/ssl/certs" "$r/run" "$r/tmp" "$r/var"
  chmod 1777 "$r/tmp"
  if [ -n "${KURYR_IMAGE_BINARIES:-}" ] && [ "$arch" = amd64 ]; then
    for b in kuryr-controller kuryr-daemon kuryr-cni; do cp "$KURYR_IMAGE_BINARIES/$b" "$r/$b"; done
  else
    (cd "$REPO_ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags="-s -w $(bash hack/ldflags.sh)" -o "$r/" \
      ./cmd/kuryr-controller ./cmd/kuryr-daemon ./cmd/kuryr-cni)
  fi
  ln -s ../run "$r/var/run"
  cp "$ca" "$r/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$r/etc/group"
}

roots=()
for arch in $PLATFORMS; do
  rootfs "$work/$arch" "$arch"
  roots+=("$arch=$work/$arch")
done
tag=${KURYR_IMAGE_TAG:-$(cat "$work"/*/kuryr-* | sha256sum | cut -c1-12)}
ref=$IMAGE_NAME:$tag
# Cmd only, no Entrypoint: the manifests name the binary to run.
config='{"Cmd":["/kuryr-controller"],"Env":["PATH=/"],"User":"65532:65532"}'
if [ "$PLATFORMS" = amd64 ] && [ -z "${KURYR_IMAGE_ANNOTATIONS:-}" ]; then
  oci_archive kuryr "$ref" "$work/amd64" "$config" "$OUT/kuryr.tar.tmp"
else
  oci_multiarch_archive "$ref" "$OUT/kuryr.tar.tmp" "$config" "${KURYR_IMAGE_ANNOTATIONS:-{\}}" \
    "${KURYR_IMAGE_CREATED:-1970-01-01T00:00:00Z}" "${roots[@]}"
fi
mv "$OUT/kuryr.tar.tmp" "$OUT/kuryr.tar"
echo "$ref" >"$OUT/kuryr.ref"
echo "$ref ($PLATFORMS, $(du -h "$OUT/kuryr.tar" | cut -f1)) in $OUT/kuryr.tar"
