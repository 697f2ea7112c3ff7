# OCI image layouts packed into a tar that `ctr images import` and `skopeo
# copy oci-archive:` accept, without a registry or a container builder: one
# layer per image (FROM scratch), reproducible (sorted, mtime 0, numeric
# owners, gzip without a name or time). Sourced.
#   oci_archive: one image, linux/amd64 (the local cloud's images).
#   oci_multiarch_archive: one image index over several platforms, with
#   annotations (make release).

sha() { sha256sum "$1" | cut -d' ' -f1; }

# oci_blob LAYOUT FILE: moves FILE into LAYOUT's blobs; prints "digest size".
oci_blob() {
  local sum size
  sum=$(sha "$2")
  size=$(stat -c %s "$2")
  mv "$2" "$1/blobs/sha256/$sum"
  echo "sha256:$sum $size"
}

# oci_image LAYOUT ARCH ROOTFS_DIR CONFIG_JSON_FRAGMENT [CREATED]: the
# layer, config and manifest of one platform's image into LAYOUT's blobs;
# prints the manifest's descriptor (JSON, with its platform).
oci_image() {
  local d=$1 arch=$2 rootfs=$3 cfg=$4 created=${5:-1970-01-01T00:00:00Z}
  local diff layer config manifest
  mkdir -p "$d/blobs/sha256"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$d/layer.tar" .
  diff=$(sha "$d/layer.tar")
  gzip -n -c "$d/layer.tar" >"$d/layer.tar.gz" && rm "$d/layer.tar"
  layer=$(oci_blob "$d" "$d/layer.tar.gz")
  jq -n --arg diff "sha256:$diff" --argjson cfg "$cfg" --arg arch "$arch" --arg created "$created" \
    '{architecture: $arch, os: "linux", created: $created, config: $cfg,
      rootfs: {type: "layers", diff_ids: [$diff]}}' >"$d/config.json"
  config=$(oci_blob "$d" "$d/config.json")
  jq -n --arg c "${config% *}" --argjson cs "${config#* }" --arg l "${layer% *}" --argjson ls "${layer#* }" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
      layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $l, size: $ls}]}' \
    >"$d/manifest.json"
  manifest=$(oci_blob "$d" "$d/manifest.json")
  jq -nc --arg m "${manifest% *}" --argjson ms "${manifest#* }" --arg arch "$arch" \
    '{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $m, size: $ms,
      platform: {architecture: $arch, os: "linux"}}'
}

# oci_pack LAYOUT DESCRIPTOR REF OUT.tar: LAYOUT's index.json naming
# DESCRIPTOR as REF, packed into OUT.tar.
oci_pack() {
  local d=$1 desc=$2 ref=$3 out=$4
  jq -n --argjson desc "$desc" --arg ref "$ref" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: [$desc | .annotations = ((.annotations // {}) +
        {"io.containerd.image.name": $ref, "org.opencontainers.image.ref.name": $ref})]}' >"$d/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$d/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$d" -cf "$out" oci-layout index.json blobs
}

# oci_archive NAME REF ROOTFS_DIR CONFIG_JSON_FRAGMENT OUT.tar: one
# linux/amd64 image.
oci_archive() {
  local ref=$2 rootfs=$3 cfg=$4 out=$5 d desc
  d=$(mktemp -d)
  desc=$(oci_image "$d" amd64 "$rootfs" "$cfg")
  oci_pack "$d" "$desc" "$ref" "$out"
  rm -rf "$d"
}

# oci_multiarch_archive REF OUT.tar CONFIG_JSON_FRAGMENT ANNOTATIONS_JSON
# CREATED ARCH=ROOTFS_DIR...: an image index over one image per ARCH, the
# index and every image carrying ANNOTATIONS (org.opencontainers.image.*).
oci_multiarch_archive() {
  local ref=$1 out=$2 cfg=$3 ann=$4 created=$5 d descs='[]' desc index p
  shift 5
  d=$(mktemp -d)
  for p in "$@"; do
    desc=$(oci_image "$d" "${p%%=*}" "${p#*=}" "$(jq -c --argjson a "$ann" '. + {Labels: $a}' <<<"$cfg")" "$created")
    descs=$(jq -c --argjson x "$desc" '. + [$x]' <<<"$descs")
  done
  jq -n --argjson m "$descs" --argjson a "$ann" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: $m, annotations: $a}' \
    >"$d/image-index.json"
  index=$(oci_blob "$d" "$d/image-index.json")
  oci_pack "$d" "$(jq -nc --arg i "${index% *}" --argjson s "${index#* }" --argjson a "$ann" \
    '{mediaType: "application/vnd.oci.image.index.v1+json", digest: $i, size: $s, annotations: $a}')" "$ref" "$out"
  rm -rf "$d"
}
