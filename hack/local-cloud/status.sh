#!/usr/bin/env bash
# Shows every component of the local cloud with its pid and health. Exits
# non-zero if anything that should run is down or unhealthy.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
for f in "$CLOUD_SCRIPTS"/components/*.sh; do . "$f"; done

bad=0
row() { printf '  %-34s %-8s %s\n' "$1" "$2" "$3"; }
check() { "$@" >/dev/null 2>&1 && echo ok || echo FAIL; }

# health NAME: a component-specific probe, or just "running".
health() {
  local node
  case "$1" in
    relay-apiserver-outside) check apiserver_outside_ready ;;
    *-relay-*|relay-*) echo ok ;;
    etcd) check curl -fsS "http://127.0.0.1:$ETCD_PORT/health" ;;
    kube-apiserver) check curl -fsS --cacert "$KUBE_CA" "https://127.0.0.1:$APISERVER_PORT/readyz" ;;
    kube-controller-manager) check curl -fsSk https://127.0.0.1:10257/healthz ;;
    kube-scheduler) check curl -fsSk https://127.0.0.1:10259/healthz ;;
    mysql) check mysql_cli -e 'select 1' ;;
    keystone) check curl -fsS --cacert "$CLOUD_CA" "$KEYSTONE_URL/v3" ;;
    neutron-server) check os_curl -fsS "$NEUTRON_URL/v2.0/networks?limit=1" ;;
    octavia-api) check os_curl -fsS "$OCTAVIA_URL/v2/lbaas/providers" ;;
    ovn-nb) check "${IN_ROOT[@]}" ovn-nbctl --db="unix:$OVN_NB_SOCK" --timeout=5 show ;;
    ovn-sb) check "${IN_ROOT[@]}" ovn-sbctl --db="unix:$OVN_SB_SOCK" --timeout=5 show ;;
    *-ovsdb) check node_vsctl "${1%-ovsdb}" show ;;
    *-vswitchd) node=${1%-vswitchd}; check "${IN_ROOT[@]}" ovs-appctl -t "$(node_run "$node")/ovs-vswitchd.ctl" version ;;
    *-ovn-controller) node=${1%-ovn-controller}
      [ "$("${IN_ROOT[@]}" ovn-appctl -t "$(node_ovn_ctl "$node")" connection-status 2>/dev/null)" = connected ] \
        && echo ok || echo FAIL ;;
    *-containerd) node=${1%-containerd}; check ctr_node "$node" version ;;
    *-kubelet) node=${1%-kubelet}; check nsenter --net="/run/netns/$(node_ns "$node")" curl -fsS http://127.0.0.1:10248/healthz ;;
    *) echo ok ;;
  esac
}

echo "Processes (pid of the process; each runs under a supervisor that restarts it):"
if [ -d "$CLOUD_RUN/pids" ]; then
  for f in $(ls "$CLOUD_RUN"/pids/*.pid 2>/dev/null | sort); do
    name=$(basename "$f" .pid)
    pid=$(child_pid "$name" || echo -)
    if kill -0 "$(cat "$f")" 2>/dev/null && [ "$pid" != - ]; then
      h=$(health "$name")
    else
      h="DEAD (log: $CLOUD_LOG_DIR/$name.log)"
    fi
    restarts=$(grep -c "supervise $name: .*restarting" "$CLOUD_LOG_DIR/$name.log" 2>/dev/null)
    hangs=$(grep -c " $name hung:" "$CLOUD_RUN/hangs.log" 2>/dev/null)
    why=""
    [ "${hangs:-0}" -gt 0 ] && why=", $hangs of them hung"
    [ "${restarts:-0}" -gt 0 ] && h="$h (restarted $restarts times$why)"
    case "$h" in ok*) ;; *) bad=1 ;; esac
    row "$name" "$pid" "$h"
  done
  if [ -s "$CLOUD_RUN/hangs.log" ]; then
    echo "API services restarted for not answering (their supervisors' liveness probes), $CLOUD_RUN/hangs.log:"
    sed 's/^/  /' "$CLOUD_RUN/hangs.log"
  fi
  if [ -s "$CLOUD_RUN/crashes.log" ]; then
    echo "OVS/OVN crashes recorded in $CLOUD_RUN/crashes.log:"
    grep '^===' "$CLOUD_RUN/crashes.log" | sed 's/^=== /  /'
  fi
else
  echo "  (nothing started: run make up)"
  exit 1
fi

if [ -f "$ADMIN_KUBECONFIG" ] && is_running kube-apiserver; then
  echo "Kubernetes nodes:"
  "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" get nodes -o wide 2>&1 | sed 's/^/  /'
  # kuryr runs as pods: every one of them Ready, and the controller's
  # Lease held.
  echo "kuryr (kube-system: Deployment kuryr-controller, DaemonSet kuryr-daemon; leader $(kuryr_leader 2>/dev/null || echo NONE)):"
  kk -n kube-system get pods -l app.kubernetes.io/name=kuryr -o wide 2>&1 | sed 's/^/  /'
  kuryr_leader >/dev/null 2>&1 || bad=1
  [ "$(kk -n kube-system get pods -l app.kubernetes.io/name=kuryr -o json 2>/dev/null | jq '[.items[]
    | select(any(.status.conditions[]?; .type == "Ready" and .status == "True") | not)] | length')" = 0 ] || bad=1
  # Shown, not judged: CoreDNS is Ready only once Services work.
  echo "Cluster DNS (kube-system/coredns, Service kube-dns $CLUSTER_DNS_IP):"
  "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" -n kube-system get pods -l k8s-app=kube-dns -o wide 2>&1 | sed 's/^/  /'
fi
if is_running neutron-server; then
  echo "Neutron OVN agents:"
  os_curl -fsS "$NEUTRON_URL/v2.0/agents" 2>/dev/null \
    | jq -r '.agents[] | "  \(.host)\t\(.agent_type)\talive=\(.alive)"' || bad=1
fi
[ -f "$CLOUD_RUN/timings" ] && { echo "Start-up timings (last up):"; sed 's/^  /  /' "$CLOUD_RUN/timings"; }
exit $bad
