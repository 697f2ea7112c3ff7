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
OUT=$REPO_ROOT/_output/images
IMAGE_NAME=${KURYR_IMAGE_NAME:-kuryr.local/kuryr}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
r=$work/root
mkdir -p "$r/etc/ssl/certs" "$r/run" "$r/tmp" "$r/var"
chmod 1777 "$r/tmp"
# amd64, as the image's config says (hack/local-cloud/oci.sh). With
# KURYR_IMAGE_BINARIES, binaries built that way already (make up's) are
# used instead of building them again.
if [ -n "${KURYR_IMAGE_BINARIES:-}" ]; then
  for b in kuryr-controller kuryr-daemon kuryr-cni; do cp "$KURYR_IMAGE_BINARIES/$b" "$r/$b"; done
else
  (cd "$REPO_ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags="-s -w $(bash hack/ldflags.sh)" -o "$r/" \
    ./cmd/kuryr-controller ./cmd/kuryr-daemon ./cmd/kuryr-cni)
fi
ln -s ../run "$r/var/run"
ca=${KURYR_IMAGE_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -f "$ca" ] || { echo "no CA bundle at $ca: set KURYR_IMAGE_CA_BUNDLE" >&2; exit 1; }
cp "$ca" "$r/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"$r/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$r/etc/group"
tag=${KURYR_IMAGE_TAG:-$(cat "$r"/kuryr-* | sha256sum | cut -c1-12)}
ref=$IMAGE_NAME:$tag
# Cmd only, no Entrypoint: the manifests name the binary to run.
oci_archive kuryr "$ref" "$r" '{"Cmd":["/kuryr-controller"],"Env":["PATH=/"],"User":"65532:65532"}' "$OUT/kuryr.tar.tmp"
mv "$OUT/kuryr.tar.tmp" "$OUT/kuryr.tar"
echo "$ref" >"$OUT/kuryr.ref"
echo "$ref ($(du -h "$OUT/kuryr.tar" | cut -f1)) in $OUT/kuryr.tar"
