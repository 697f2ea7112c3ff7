#!/usr/bin/env bash
# Brings up the local cloud: Kubernetes + Neutron ML2/OVN + OVN + Octavia on
# this machine, nodes as network namespaces. Idempotent: what runs is left
# running, what exists is reused. See README.md for the topology.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for f in "$CLOUD_SCRIPTS"/components/*.sh; do . "$f"; done

[ "$(id -u)" = 0 ] || die "the local cloud needs root (network namespaces, OVS, kubelet)"
[ "${KURYR_CLOUD_RELEASE:-$CLOUD_RELEASE}" = "$CLOUD_RELEASE" ] \
  || die "KURYR_CLOUD_RELEASE $KURYR_CLOUD_RELEASE: the local cloud runs OpenStack $CLOUD_RELEASE only"
log "OpenStack $CLOUD_RELEASE"
mkdir -p "$CLOUD_LOG_DIR" "$CLOUD_RUN"

log "preparing (install, build, images: cached after the first run)"
bash "$CLOUD_SCRIPTS/install-packages.sh"
: >"$CLOUD_RUN/timings"
# The root is mostly download and dpkg, the rest compiling: side by side.
# kuryr's own build too, niced (build-kuryr.sh). Each in a process group of
# its own, stopped with up if up stops first.
setsid bash "$CLOUD_SCRIPTS/build-root.sh" & p_root=$!
setsid nice -n 10 bash "$CLOUD_SCRIPTS/build-kuryr.sh" & p_build=$!
trap 'kill -- -$p_root -$p_build 2>/dev/null || true' EXIT
bash "$CLOUD_SCRIPTS/build-k8s.sh"
bash "$CLOUD_SCRIPTS/build-containerd.sh"
bash "$CLOUD_SCRIPTS/build-coredns.sh"
bash "$CLOUD_SCRIPTS/build-images.sh"
wait $p_root || die "building the $CLOUD_RELEASE root failed; its log is in $CLOUD_LOG_DIR"
# kuryr's build, if still going, gets its share of the cores back; one that
# failed stops up now rather than after the control plane.
built=0
if kill -0 $p_build 2>/dev/null; then
  renice -n 0 -g $p_build >/dev/null 2>&1 || true
else
  wait $p_build || die "building kuryr failed (see $CLOUD_LOG_DIR/kuryr-build.log)"
  built=1
fi
trap 'kill -- -$p_build 2>/dev/null || true' EXIT

t0=$(date +%s.%N)
if [ -n "${KURYR_CLOUD_VM_NODES+set}" ] && [ "$(echo $KURYR_CLOUD_VM_NODES)" != "${VM_NODES[*]}" ]; then
  die "the cloud is up with VM nodes \"${VM_NODES[*]}\": make down before KURYR_CLOUD_VM_NODES=\"$KURYR_CLOUD_VM_NODES\""
fi
if [ -n "${KURYR_CLOUD_GUEST_NODES+set}" ] && [ "$(echo $KURYR_CLOUD_GUEST_NODES)" != "${GUEST_NODES[*]}" ]; then
  die "the cloud is up with guest nodes \"${GUEST_NODES[*]}\": make down before KURYR_CLOUD_GUEST_NODES=\"$KURYR_CLOUD_GUEST_NODES\""
fi
mkdir -p "$CLOUD_STATE" && echo "${VM_NODES[*]}" >"$CLOUD_STATE/vm-nodes" && echo "${GUEST_NODES[*]}" >"$CLOUD_STATE/guest-nodes"
save_host_settings
mount_root
cloud_ca

# join PID...: waits for background phases; any failure stops `up`, once
# the other phases have stopped too (a teardown must not race them).
join() {
  local p rc=0
  for p in "$@"; do wait "$p" || rc=1; done
  [ $rc = 0 ] && return 0
  kill $(jobs -p) 2>/dev/null || true
  kill -- -$p_build 2>/dev/null || true
  wait || true
  die "a component failed to start; logs are in $CLOUD_LOG_DIR"
}

log "starting control plane"
( timed etcd start_etcd && timed kube-control-plane start_kube_control ) & p_kube=$!
( timed mariadb start_mysql ) & p_db=$!
( timed ovn-central start_ovn_central ) & p_ovn=$!
ensure_underlay
join $p_ovn
pids=()
for n in "${NODES[@]}"; do ( timed "$n network" start_node_net "$n" ) & pids+=($!); done
join $p_db
start_tls_front
( timed keystone start_keystone && timed keystone-bootstrap bootstrap_keystone ) & p_keystone=$!
( timed neutron-server start_neutron ) & p_neutron=$!
( timed octavia start_octavia ) & p_octavia=$!
join "${pids[@]}" $p_kube
start_control_relays
pids=()
for n in "${NODES[@]}"; do
  ( start_node_relays "$n" && timed "$n containerd" start_node_containerd "$n" \
    && timed "$n kubelet" start_node_kubelet "$n" ) & pids+=($!)
done
join $p_neutron $p_keystone
PROJECT_ID=$(cat "$KEYSTONE_DIR/kuryr-project.id")
timed neutron-bootstrap bootstrap_neutron
# VM nodes once their worker network is there (their hypervisor's OVS is
# up: the node networks have joined).
if [ ${#VM_NODES[@]} -gt 0 ] || [ ${#GUEST_NODES[@]} -gt 0 ]; then
  timed worker-net ensure_worker_net
  for n in "${VM_NODES[@]}"; do ( timed "$n" start_vm_node "$n" ) & pids+=($!); done
fi
write_kuryr_conf
write_clouds_yaml
join $p_octavia "${pids[@]}"
# Applied, not waited for: CoreDNS reaches the API server through the
# "kubernetes" Service, and pods reach it through "kube-dns".
timed coredns deploy_coredns
[ $built = 1 ] || wait $p_build || die "building kuryr failed (see $CLOUD_LOG_DIR/kuryr-build.log)"
trap - EXIT
import_kuryr_images
timed kuryr deploy_kuryr
write_env_file

# nodes_ready: every hypervisor and VM node Ready (a guest node is not
# waited for here: booted on demand).
nodes_ready() {
  local ready n
  ready=$("$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" get nodes -o \
    jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')
  for n in "${NODES[@]}" "${VM_NODES[@]}"; do
    grep -qx "$n True" <<<"$ready" || return 1
  done
}
chassis_up() {
  # Neutron's alive=true filter does not work for OVN agents: read the field.
  [ "$(os_curl -fsS "$NEUTRON_API/agents" | jq '[.agents[] | select(.alive and
    (.agent_type | startswith("OVN Controller")))] | length')" -ge ${#NODES[@]} ]
}
timed "nodes ready" wait_for "nodes Ready" 120 nodes_ready
timed "ovn chassis alive" wait_for "OVN controller agents alive" 60 chassis_up
if [ "${KURYR_CLOUD_BOOT_GUESTS:-}" = yes ]; then
  for n in "${GUEST_NODES[@]}"; do timed "$n" start_guest_node "$n"; done
fi

total=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
log "local cloud up in ${total}s (after install/build). Per component:"
awk '{print $NF, $0}' "$CLOUD_RUN/timings" | sort -rn | cut -d" " -f2- >&2 || true
echo "  total                      ${total}s" >>"$CLOUD_RUN/timings"
log "logs: $CLOUD_LOG_DIR    status: make status    stop: make down"
echo "# source this file: . $CLOUD_ENV_FILE"
cat "$CLOUD_ENV_FILE"
