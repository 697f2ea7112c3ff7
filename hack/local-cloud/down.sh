#!/usr/bin/env bash
# Stops everything `up` started (by pid), removes its namespaces, links,
# mounts, cgroups and state, and restores the host settings it changed. Safe
# to run twice, or after a failed `up`. Logs in _output/logs are kept.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
for f in "$CLOUD_SCRIPTS"/components/*.sh; do . "$f"; done

# Containers outlive containerd (their shims are detached): kill each shim
# of this node's containerd along with its containers.
kill_node_containers() {
  local sock; sock=$(node_run "$1")/containerd.sock
  local shim
  for shim in $(pgrep -f "containerd-shim-runc-v2 .*-address $sock" 2>/dev/null); do
    pkill -KILL -P "$shim" 2>/dev/null
    kill -KILL "$shim" 2>/dev/null
  done
}

# kuryr runs in pods: keep its containers' logs (every restart's) with the
# cloud's, in _output/logs/kuryr-pods/.
save_kuryr_logs
log "stopping kubelets and containers"
for n in "${NODES[@]}" "${VM_NODES[@]}"; do stop_named "$n-kubelet"; done
for n in "${NODES[@]}" "${VM_NODES[@]}"; do kill_node_containers "$n"; stop_named "$n-containerd"; done

log "stopping everything else"
if [ -d "$CLOUD_RUN/pids" ]; then
  for f in "$CLOUD_RUN"/pids/*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid)
    stop_named "$name" &
  done
  wait
fi

log "unmounting"
# Deepest first; lazy so a busy mount never blocks the teardown.
findmnt -rn -o TARGET | grep -E "^($CLOUD_STATE|/run/netns/cni-|/run/containerd/)" | sort -r \
  | while read -r m; do umount -l "$m" 2>/dev/null; done
umount_root

log "removing namespaces"
for ns in $(ip netns list | awk '{print $1}'); do
  case "$ns" in
    kc-*) ip netns delete "$ns" ;;
    cni-*) [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && ip netns delete "$ns" ;;
  esac
done

log "removing cgroups"
for n in "${NODES[@]}" "${VM_NODES[@]}"; do
  for sub in /sys/fs/cgroup/*/kc-"$n"; do
    [ -d "$sub" ] && find "$sub" -depth -type d -exec rmdir {} + 2>/dev/null
  done
done

restore_host_settings
# libcni's cache of the nodes' sandboxes (the nodes share the host's
# /var/lib/cni): the entries of this cloud's nodes (their pods' cgroups are
# under kc-<node>) are gone with it; other users' entries stay.
for n in "${NODES[@]}" "${VM_NODES[@]}"; do
  grep -lF "\"cgroupPath\":\"/kc-$n/" /var/lib/cni/results/* 2>/dev/null | xargs -r rm -f || true
done
rm -rf "$CLOUD_STATE" /var/run/octavia/*.sock
rm -f "$CLOUD_ENV_FILE"
log "local cloud is down (logs kept in $CLOUD_LOG_DIR)"
