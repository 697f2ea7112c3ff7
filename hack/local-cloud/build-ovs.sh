#!/usr/bin/env bash
# Builds the ovs-vswitchd the local cloud runs: Debian's own Open vSwitch
# 3.1.0 (package openvswitch-source, the exact source of the installed
# openvswitch-switch) with one patch, patches/ovs-conntrack-un-nat.patch.
#
# Why: Debian bookworm's ovs-vswitchd 3.1.0 (and bookworm-backports has no
# newer one) aborts with
#   lib/conntrack.c:1063: assertion conn->conn_type == CT_CONN_TYPE_DEFAULT
#   failed in conn_update_state()
# in its userspace conntrack when a packet arrives on the tuple of a NATed
# connection that has expired but not yet been swept (a TCP connection
# reusing a just-closed 4-tuple, a UDP flow after its timeout). OVN's
# ct_commit adds an all-zero "nat(src)" to every connection through a
# stateful ACL (Neutron security groups) on the netdev datapath, so pods do
# this all the time. Upstream fixed it in 3.1.3 (a larger rework); the patch
# makes the un-NAT entry expire with its parent, prefers the real entry on
# lookup, and turns the remaining cases into ct.inv instead of an abort.
# The e2e test TestConntrackTupleReuse drives that exact pattern.
#
# Cached by the content of this script and the patch; ≈3 min on 2 cores.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
patch=$CLOUD_SCRIPTS/patches/ovs-conntrack-un-nat.patch
[ -z "$CLOUD_SUITE" ] || { log "ovs-vswitchd: Open vSwitch from the $CLOUD_SUITE root, unpatched"; exit 0; }
stamp=$(cat "$0" "$patch" | sha256sum | cut -c1-16)
out=$OVS_BUILD_DIR/$stamp
if [ -x "$out/ovs-vswitchd" ]; then
  ln -sfn "$stamp" "$OVS_BUILD_DIR/current"
  log "ovs-vswitchd: cached in $out"
  exit 0
fi
src=/usr/src/openvswitch/openvswitch.tar.gz
[ -f "$src" ] || die "$src missing: install the openvswitch-source package (install-packages.sh)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "ovs-vswitchd: building Debian's Open vSwitch source with $(basename "$patch") (≈3 min, cached after)"
tar -xzf "$src" -C "$work"
dir=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
{
  (cd "$dir" && patch -p1 <"$patch")
  (cd "$dir" && ./configure --prefix=/usr --localstatedir=/var --sysconfdir=/etc \
    --disable-ssl --disable-libcapng --enable-shared=no)
  (cd "$dir" && make -j"$(nproc)")
} >"$CLOUD_LOG_DIR/build-ovs.log" 2>&1 || die "building ovs-vswitchd failed (see $CLOUD_LOG_DIR/build-ovs.log)"
mkdir -p "$out.tmp"
cp "$dir/vswitchd/ovs-vswitchd" "$out.tmp/ovs-vswitchd"
rm -rf "$out"
mv "$out.tmp" "$out"
ln -sfn "$stamp" "$OVS_BUILD_DIR/current"
log "ovs-vswitchd: built in $out"
