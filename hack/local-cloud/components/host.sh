# Host settings the cloud changes, saved first so `down` restores them.
#  - /etc/hosts: node names resolve to 127.0.0.1, so the API server reaches
#    each kubelet through the loopback relay (the kubelet refuses a loopback
#    node IP, so the node's address type "Hostname" is what gets used).
#  - sysctls the kubelet sets on start.
#  - /run/netns, which `ip netns add` turns into a mount point on first use.

HOSTS_MARK="# kuryr-local-cloud"
HOSTS_LOCK=/run/kuryr-local-cloud-hosts.lock
SAVED_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)

save_host_settings() {
  mkdir -p "$CLOUD_STATE"
  local f=$CLOUD_STATE/sysctl.saved s
  if [ ! -f "$f" ]; then
    for s in "${SAVED_SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$f.tmp"
    mv "$f.tmp" "$f"
  fi
  if [ ! -f "$CLOUD_STATE/netns-mount.saved" ]; then
    mountpoint -q /run/netns && echo yes >"$CLOUD_STATE/netns-mount.saved" || echo no >"$CLOUD_STATE/netns-mount.saved"
  fi
  (
    flock 9
    grep -q "$HOSTS_MARK" /etc/hosts || echo "127.0.0.1 ${NODES[*]} ${VM_NODES[*]} ${GUEST_NODES[*]} $HOSTS_MARK" >>/etc/hosts
  ) 9>"$HOSTS_LOCK"
}

restore_host_settings() {
  local f=$CLOUD_STATE/sysctl.saved line
  if [ -f "$f" ]; then
    while read -r line; do sysctl -q -w "$line" >/dev/null || log "could not restore $line"; done <"$f"
    rm -f "$f"
  fi
  if [ "$(cat "$CLOUD_STATE/netns-mount.saved" 2>/dev/null)" = no ] && [ -z "$(ls /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null && rmdir /run/netns 2>/dev/null
  fi
  # /etc/hosts may be a bind mount: rewritten in place, never replaced;
  # under a lock, as two teardowns at once (a test run's trap and a
  # developer's make down) would read it truncated and empty it.
  (
    flock 9
    if grep -q "$HOSTS_MARK" /etc/hosts; then
      local tmp; tmp=$(grep -v "$HOSTS_MARK" /etc/hosts)
      printf '%s\n' "$tmp" >/etc/hosts
    fi
  ) 9>"$HOSTS_LOCK"
}
