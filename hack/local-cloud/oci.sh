# oci_archive: an OCI image layout (one layer tarball, a config, a manifest,
# an index) packed into a tar that `ctr images import` and `skopeo copy
# oci-archive:` accept, without a registry or a container builder. Sourced.

sha() { sha256sum "$1" | cut -d' ' -f1; }

# oci_archive NAME REF ROOTFS_DIR CONFIG_JSON_FRAGMENT OUT.tar
oci_archive() {
  local name=$1 ref=$2 rootfs=$3 cfg=$4 out=$5
  local d; d=$(mktemp -d)
  mkdir -p "$d/blobs/sha256"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$d/layer.tar" .
  local diff; diff=$(sha "$d/layer.tar")
  gzip -n -c "$d/layer.tar" >"$d/layer.tar.gz"
  local lsum; lsum=$(sha "$d/layer.tar.gz")
  local lsize; lsize=$(stat -c %s "$d/layer.tar.gz")
  mv "$d/layer.tar.gz" "$d/blobs/sha256/$lsum"
  rm "$d/layer.tar"
  jq -n --arg diff "sha256:$diff" --argjson cfg "$cfg" \
    '{architecture:"amd64", os:"linux", config:$cfg,
      rootfs:{type:"layers", diff_ids:[$diff]}}' >"$d/config.json"
  local csum; csum=$(sha "$d/config.json")
  local csize; csize=$(stat -c %s "$d/config.json")
  mv "$d/config.json" "$d/blobs/sha256/$csum"
  jq -n --arg c "sha256:$csum" --argjson cs "$csize" --arg l "sha256:$lsum" --argjson ls "$lsize" \
    '{schemaVersion:2, mediaType:"application/vnd.oci.image.manifest.v1+json",
      config:{mediaType:"application/vnd.oci.image.config.v1+json", digest:$c, size:$cs},
      layers:[{mediaType:"application/vnd.oci.image.layer.v1.tar+gzip", digest:$l, size:$ls}]}' \
    >"$d/manifest.json"
  local msum; msum=$(sha "$d/manifest.json")
  local msize; msize=$(stat -c %s "$d/manifest.json")
  mv "$d/manifest.json" "$d/blobs/sha256/$msum"
  jq -n --arg m "sha256:$msum" --argjson ms "$msize" --arg ref "$ref" \
    '{schemaVersion:2, manifests:[{mediaType:"application/vnd.oci.image.manifest.v1+json",
      digest:$m, size:$ms, platform:{architecture:"amd64", os:"linux"},
      annotations:{"io.containerd.image.name":$ref, "org.opencontainers.image.ref.name":$ref}}]}' \
    >"$d/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$d/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 -C "$d" -cf "$out" oci-layout index.json blobs
  rm -rf "$d"
}

