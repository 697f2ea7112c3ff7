#!/usr/bin/env bash
# Installs the Debian packages the local cloud runs on. Idempotent: a machine
# that already has them all costs one dpkg query. Package post-install scripts
# would start system services (mariadb, ovs, neutron...); a policy-rc.d that
# refuses every start keeps them stopped, because the cloud runs its own
# instances with their own state directories.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PACKAGES=(
  # Kubernetes side (containerd and runc are built: build-containerd.sh;
  # runc with seccomp needs libseccomp-dev and pkg-config)
  libseccomp-dev pkg-config
  # images and plumbing
  busybox-static libc6-dev gcc
  iproute2 ethtool iptables conntrack jq curl procps psmisc socat openssl
  containernetworking-plugins util-linux
  # builds the root the cloud's OpenStack runs from (build-root.sh)
  mmdebstrap
  # ovsdb-server and the Open_vSwitch schema for the unit tests of pkg/ovs
  openvswitch-switch openvswitch-common
  # the guest that runs nested-vlan pods on a real 802.1Q stack
  # (test/e2e/nested; its kernel: build-guest.sh)
  qemu-system-x86
)

mkdir -p "$CLOUD_LOG_DIR"
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  log "packages: all ${#PACKAGES[@]} present"
  exit 0
fi

log "packages: installing ${missing[*]}"
policy=/usr/sbin/policy-rc.d
had_policy=0
[ -e "$policy" ] && had_policy=1
if [ $had_policy -eq 0 ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
# A stale package list makes installs fail with 404s; refresh once a day.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
  "${missing[@]}" >"$CLOUD_LOG_DIR/apt.log" 2>&1 || {
  tail -30 "$CLOUD_LOG_DIR/apt.log" >&2
  die "apt-get install failed (full log: $CLOUD_LOG_DIR/apt.log)"
}
# Open vSwitch's post-install script starts its daemons despite policy-rc.d:
# the host's own are not the cloud's (those run in the root).
service openvswitch-switch stop >/dev/null 2>&1 || true
log "packages: done"
