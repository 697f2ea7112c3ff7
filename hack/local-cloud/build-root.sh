#!/usr/bin/env bash
# Builds the root the local cloud's OpenStack runs from (a release newer than
# the machine's own Debian carries): a Debian $CLOUD_SUITE tree made with
# mmdebstrap (from Debian's own registry, with the keyrings the machine
# already has), holding OpenStack (Keystone, Neutron ML2/OVN, Octavia with
# the OVN provider), OVN, Open vSwitch, MariaDB, etcd and HAProxy (the TLS
# front of the API endpoints). Its daemons run chrooted into it, in the host's
# and the nodes' network namespaces (components/root.sh).
#
# Cached by the content of this script and the package list: built once
# (≈ 4–8 min, mostly download), reused by every later `up` and by CI.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROOT_PACKAGES=(
  keystone python3-keystone
  neutron-server python3-neutron
  octavia-api octavia-driver-agent python3-ovn-octavia-provider
  uwsgi-core uwsgi-plugin-python3 python3-pymysql
  ovn-central ovn-host openvswitch-switch openvswitch-common
  mariadb-server etcd-server haproxy
  iproute2 openssl curl ca-certificates procps
)
stamp=$( (cat "$0"; echo "$CLOUD_SUITE ${ROOT_PACKAGES[*]}") | sha256sum | cut -c1-16)
out=$CLOUD_ROOTS/$CLOUD_SUITE-$stamp
if [ -e "$out/.complete" ]; then
  ln -sfn "$(basename "$out")" "$CLOUD_ROOTS/$CLOUD_SUITE"
  log "root: $CLOUD_SUITE cached in $out"
  exit 0
fi
command -v mmdebstrap >/dev/null || die "mmdebstrap missing: install-packages.sh installs it"
mkdir -p "$CLOUD_ROOTS" "$CLOUD_LOG_DIR"
rm -rf "$out.tmp"
log "root: building a Debian $CLOUD_SUITE root for OpenStack $CLOUD_RELEASE (≈ 4–8 min, cached after)"
# Packages' post-install scripts must not start their services: the cloud
# runs its own instances with their own state (mmdebstrap also keeps
# invoke-rc.d quiet while it installs). Keep apt's temporary files out of
# /tmp (a temporary directory there once vanished mid-install).
mkdir -p /var/tmp/kuryr-cloud
TMPDIR=/var/tmp/kuryr-cloud mmdebstrap --mode=root --variant=apt \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --include="$(IFS=,; echo "${ROOT_PACKAGES[*]}")" \
  --customize-hook='printf "#!/bin/sh\nexit 101\n" >"$1/usr/sbin/policy-rc.d"; chmod +x "$1/usr/sbin/policy-rc.d"' \
  "$CLOUD_SUITE" "$out.tmp" >"$CLOUD_LOG_DIR/build-root.log" 2>&1 \
  || { tail -30 "$CLOUD_LOG_DIR/build-root.log" >&2; rm -rf "$out.tmp"; die "building the $CLOUD_SUITE root failed (see $CLOUD_LOG_DIR/build-root.log)"; }
chroot "$out.tmp" dpkg-query -W -f='${Package} ${Version}\n' \
  keystone neutron-server octavia-api python3-ovn-octavia-provider ovn-central openvswitch-switch \
  mariadb-server etcd-server haproxy >"$out.tmp/.versions"
touch "$out.tmp/.complete"
mv "$out.tmp" "$out"
ln -sfn "$(basename "$out")" "$CLOUD_ROOTS/$CLOUD_SUITE"
# Older roots of this suite are stale once a new one is complete; one that
# a running cloud still has mounts in is left alone.
for old in "$CLOUD_ROOTS/$CLOUD_SUITE"-*; do
  [ -d "$old" ] && [ "$old" != "$out" ] || continue
  findmnt -rn -o TARGET | grep -q "^$old/" || rm -rf "$old"
done
log "root: built in $out ($(du -sh "$out" | cut -f1)): $(tr '\n' ' ' <"$out/.versions")"
