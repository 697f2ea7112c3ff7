#!/usr/bin/env bash
# make release VERSION=vX.Y.Z: everything a release ships, built from this
# checkout without a registry, a container builder or the network (Go
# modules are fetched first, then every build runs with GOPROXY=off), into
# _output/release/VERSION/:
#   kuryr-image.oci.tar     the image index (linux/amd64, linux/arm64) as an
#                           OCI archive, annotated with the version, source
#                           and revision; its reference in image.ref
#                           (KURYR_IMAGE_NAME, default ghcr.io/kuryr-k8s/kuryr)
#   kuryr.spdx.json         SPDX 2.3 SBOM: the Go modules in the image's
#                           binaries (read from the amd64 binaries, built
#                           again the same reproducible way)
#   kuryr-X.Y.Z.tgz         the Helm chart, version and image pinned
#   kuryr.yaml              the chart rendered with its defaults (the
#                           kustomize base's content, pinned)
#   kubectl-kuryr-OS-ARCH   the plugin for linux and darwin, amd64 and arm64
#   RELEASE-NOTES.md        the CHANGELOG entry of VERSION
#   SHA256SUMS
# CHANGELOG.md must have a "## [VERSION]" section: without one the script
# makes it from "## [Unreleased]" and stops, for you to review and commit
# it (a release is built from a committed tree: its revision is a commit).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
VERSION=${VERSION:-}
[[ "$VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] \
  || { echo "make release VERSION=vX.Y.Z (semantic version with a leading v), not '$VERSION'" >&2; exit 2; }
IMAGE_NAME=${KURYR_IMAGE_NAME:-ghcr.io/kuryr-k8s/kuryr}
SOURCE=${KURYR_SOURCE:-https://github.com/kuryr-k8s/kuryr}
OUT=$REPO_ROOT/_output/release/$VERSION

if ! grep -q "^## \[${VERSION#v}\]" CHANGELOG.md; then
  grep -q '^## \[Unreleased\]' CHANGELOG.md || { echo "CHANGELOG.md has neither [${VERSION#v}] nor [Unreleased]" >&2; exit 1; }
  sed -i "s/^## \[Unreleased\]/## [Unreleased]\n\n## [${VERSION#v}] - $(date -u +%Y-%m-%d)/" CHANGELOG.md
  echo "CHANGELOG.md: [Unreleased] is now [${VERSION#v}]; review and commit it, then run make release VERSION=$VERSION again" >&2
  exit 1
fi
if [ -n "$(git status --porcelain --untracked-files=no)" ] && [ "${RELEASE_ALLOW_DIRTY:-}" != yes ]; then
  echo "the tree has uncommitted changes: a release is built from a commit (RELEASE_ALLOW_DIRTY=yes to try anyway)" >&2
  exit 1
fi
revision=$(git rev-parse HEAD)
created=$(date -u -d "@$(git log -1 --format=%ct)" +%Y-%m-%dT%H:%M:%SZ)

# Every module first, and helm (built from its module into the cache);
# from then on nothing is fetched.
go mod download
helm=$(bash hack/helm.sh)
export GOPROXY=off GOFLAGS="${GOFLAGS:-} -mod=readonly" KURYR_VERSION=$VERSION
rm -rf "$OUT" && mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== image ($IMAGE_NAME:$VERSION, amd64 + arm64)"
KURYR_IMAGE_OUT=$work/image KURYR_IMAGE_NAME=$IMAGE_NAME KURYR_IMAGE_TAG=$VERSION \
  KURYR_IMAGE_PLATFORMS="amd64 arm64" KURYR_IMAGE_CREATED=$created \
  KURYR_IMAGE_ANNOTATIONS=$(jq -nc --arg v "$VERSION" --arg s "$SOURCE" --arg r "$revision" --arg c "$created" '{
    "org.opencontainers.image.title": "kuryr",
    "org.opencontainers.image.description": "Kubernetes networking on OpenStack Neutron and Octavia",
    "org.opencontainers.image.version": $v, "org.opencontainers.image.source": $s,
    "org.opencontainers.image.revision": $r, "org.opencontainers.image.created": $c,
    "org.opencontainers.image.licenses": "Apache-2.0"}') \
  bash hack/image.sh
mv "$work/image/kuryr.tar" "$OUT/kuryr-image.oci.tar"
mv "$work/image/kuryr.ref" "$OUT/image.ref"

echo "== SBOM"
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w $(bash hack/ldflags.sh)" -o "$work/bin/" \
  ./cmd/kuryr-controller ./cmd/kuryr-daemon ./cmd/kuryr-cni
bash hack/sbom.sh "$VERSION" "$SOURCE" "$created" "$work"/bin/kuryr-* >"$OUT/kuryr.spdx.json"

echo "== Helm chart and manifests"
cp -r deploy/helm/kuryr "$work/chart"
sed -i -e "s/^version: .*/version: ${VERSION#v}/" -e "s/^appVersion: .*/appVersion: $VERSION/" "$work/chart/Chart.yaml"
sed -i "s|^  repository: kuryr.local/kuryr$|  repository: $IMAGE_NAME|" "$work/chart/values.yaml"
grep -q "^  repository: $IMAGE_NAME$" "$work/chart/values.yaml" || { echo "could not pin the image in the chart's values" >&2; exit 1; }
"$helm" lint --strict "$work/chart" --set openstack.cloudsYaml=x >/dev/null
"$helm" package "$work/chart" --destination "$OUT" >/dev/null
{
  echo "# kuryr $VERSION: the Helm chart rendered with its defaults (add kuryr.conf and clouds.yaml: deploy/base)."
  "$helm" template kuryr "$work/chart" --namespace kube-system --set openstack.existingSecret=kuryr-openstack
} >"$OUT/kuryr.yaml"

echo "== kubectl-kuryr"
for os in linux darwin; do
  for arch in amd64 arm64; do
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags="-s -w $(bash hack/ldflags.sh)" \
      -o "$OUT/kubectl-kuryr-$os-$arch" ./cmd/kubectl-kuryr
  done
done

awk -v v="${VERSION#v}" '/^## \[/ {on = index($0, "## [" v "]") == 1} on' CHANGELOG.md >"$OUT/RELEASE-NOTES.md"
(cd "$OUT" && sha256sum -- * >SHA256SUMS)
echo "kuryr $VERSION (revision $revision) in $OUT:"
(cd "$OUT" && ls -l | tail -n +2 | awk '{printf "  %-28s %s\n", $NF, $5}')
