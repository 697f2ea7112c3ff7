# The root the cloud's OpenStack release runs from (build-root.sh): its daemons
# run chrooted into it, in the host's or a node's network namespace. They see
# the kernel's /proc, /sys and /dev, and, at the same paths as on the host,
# the cloud's state (databases, sockets, certificates), its logs and the
# Octavia driver agent's sockets. Every bind mount is a slave of its source,
# so that unmounting it never propagates back to the host.

root_mounts() { # the host paths bound at the same path inside the root
  echo "$CLOUD_STATE" "$CLOUD_LOG_DIR" /run/octavia
}

mount_root() {
  local r p
  r=$(readlink -f "$CLOUD_ROOT")
  [ -e "$r/.complete" ] || die "the $CLOUD_SUITE root is missing: run build-root.sh"
  mountpoint -q "$r/proc" || mount -t proc proc "$r/proc"
  # Made slaves every time: a run interrupted between the bind and the
  # rslave must not leave a shared mount whose unmount reaches the host.
  for p in /sys /dev; do
    mountpoint -q "$r$p" || mount --rbind "$p" "$r$p"
    mount --make-rslave "$r$p"
  done
  for p in $(root_mounts); do
    mkdir -p "$p" "$r$p"
    mountpoint -q "$r$p" || mount --bind "$p" "$r$p"
    mount --make-rslave "$r$p"
  done
  # Names the kubelets' nodes resolve to (host.sh), as on the host.
  cp /etc/hosts "$r/etc/hosts"
}

# umount_root: every mount inside the root, deepest first (lazy, so that a
# busy one never blocks the teardown).
umount_root() {
  [ -d "$CLOUD_ROOTS" ] || return 0
  local roots; roots=$(readlink -f "$CLOUD_ROOTS")
  findmnt -rn -o TARGET | grep "^$roots/" | sort -r | while read -r m; do
    mount --make-rslave "$m" 2>/dev/null
    umount -l "$m" 2>/dev/null
  done
}
