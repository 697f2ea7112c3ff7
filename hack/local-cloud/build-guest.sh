#!/usr/bin/env bash
# Fetches the kernel of the QEMU guest that test/e2e/nested boots to run
# nested-vlan pods on a real 802.1Q stack (this machine's kernel has none):
# Debian's cloud kernel (linux-image-cloud-amd64, resolved to its current
# version), unpacked with dpkg-deb, never installed on the host; kept are
# vmlinuz and the modules the guest loads itself, in load order
# (virtio-net, 8021q and what they depend on; for a guest node overlay,
# containerd's snapshots, and nf_tables with what kuryr-daemon's node-port
# rules use: NAT, masquerade, fib, numgen). Cached per kernel version and module list:
# a second run costs one apt-cache query. Prints the directory.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# The modules the guest needs, with what each depends on before it.
MODULES=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
  failover net_failover virtio_net llc stp garp mrp 8021q overlay
  nfnetlink libcrc32c nf_tables nf_defrag_ipv4 nf_defrag_ipv6 nf_conntrack nf_nat nft_chain_nat nft_nat
  nft_masq nft_fib nft_fib_ipv4 nft_fib_ipv6 nft_fib_inet nft_numgen)

# The cache key's module part.
MODS_KEY=$(echo "${MODULES[*]}" | sha256sum | cut -c1-8)
# cached: the newest kernel fetched before with these modules (when apt
# cannot fetch another)
cached() { ls -d "$CLOUD_CACHE"/guest/linux-image-*-"$MODS_KEY"/modules.order 2>/dev/null | sort -V | tail -1 | xargs -r dirname; }
fallback() {
  local c
  c=$(cached)
  [ -n "$c" ] || die "guest kernel: $*"
  log "guest kernel: $* — using the cached $(basename "$c")"
  echo "$c"
  exit 0
}

pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}' || true)
[ -n "$pkg" ] || fallback "apt knows no linux-image-cloud-amd64 (apt-get update?)"
out=$CLOUD_CACHE/guest/$pkg-$MODS_KEY
if [ -f "$out/modules.order" ]; then
  echo "$out"
  exit 0
fi
mkdir -p "$CLOUD_LOG_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log "guest kernel: fetching $pkg"
(cd "$tmp" && apt-get download "$pkg" >"$CLOUD_LOG_DIR/build-guest.log" 2>&1) \
  || fallback "apt-get download $pkg failed (see $CLOUD_LOG_DIR/build-guest.log)"
dpkg-deb -x "$tmp"/*.deb "$tmp/root"
rm -rf "$out.tmp" && mkdir -p "$out.tmp/modules"
cp "$tmp"/root/boot/vmlinuz-* "$out.tmp/vmlinuz"
for m in "${MODULES[@]}"; do
  f=$(find "$tmp/root" -path '*/modules/*' -name "$m.ko" 2>/dev/null | head -1 || true)
  [ -n "$f" ] || die "guest kernel $pkg has no module $m"
  cp "$f" "$out.tmp/modules/"
done
printf '%s\n' "${MODULES[@]}" >"$out.tmp/modules.order"
rm -rf "$out" && mv "$out.tmp" "$out"
log "guest kernel: $pkg in $out"
echo "$out"
