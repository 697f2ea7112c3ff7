#!/usr/bin/env bash
# Installs the Debian packages the local cloud runs on. Idempotent: a machine
# that already has them all costs one dpkg query. Package post-install scripts
# would start system services (mariadb, ovs, neutron...); a policy-rc.d that
# refuses every start keeps them stopped, because the cloud runs its own
# instances with their own state directories.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PACKAGES=(
  # Kubernetes side
  etcd-server containerd runc
  # OpenStack side
  mariadb-server python3-pymysql
  neutron-server python3-neutron
  ovn-central ovn-host openvswitch-switch openvswitch-common
  # ovs-vswitchd is rebuilt from Debian's own source, patched (build-ovs.sh)
  openvswitch-source make python3
  octavia-api octavia-driver-agent python3-ovn-octavia-provider uwsgi-core uwsgi-plugin-python3
  # images and plumbing
  busybox-static libc6-dev gcc
  iproute2 ethtool iptables conntrack jq curl procps psmisc socat openssl
  containernetworking-plugins util-linux
  # builds the root newer OpenStack releases run from (build-root.sh)
  mmdebstrap
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
# Some post-install scripts start daemons despite policy-rc.d (e.g. via their
# own init helpers); stop anything not started by us.
for svc in mariadb openvswitch-switch ovn-central ovn-host neutron-server octavia-api octavia-driver-agent etcd containerd; do
  service "$svc" stop >/dev/null 2>&1 || true
done
log "packages: done"
