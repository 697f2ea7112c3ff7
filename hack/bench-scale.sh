#!/usr/bin/env bash
# The scale tier (make bench-scale, on a running local cloud): pods by the
# thousand on simulated nodes, with kuryr-controller, the API server,
# Neutron and OVN real. What is simulated, and why the figures still hold:
#   - the nodes' kubelets: kwok (sigs.k8s.io/kwok, built into the cache)
#     runs the pods of nodes labelled kuryr.openstack.org/simulated-node
#     (no containers, no CNI: the figures are the controller's side, the
#     pod -> Neutron port -> KuryrPort path, not plugging);
#   - the nodes' ovn-controllers: each simulated node is an OVN chassis
#     record (hostname = node name, in a transport zone of its own so that
#     no real node tunnels to it, encap on a loopback address), kept alive
#     by copying NB_Global's nb_cfg into its Chassis_Private as
#     ovn-controller would; Neutron therefore binds ports to these nodes as
#     to real ones (ML2/OVN refuses a host without a live chassis), and the
#     ports bound there are claimed (Port_Binding chassis and up), so that
#     Neutron sets them ACTIVE as it would.
# SCALE_NODES simulated nodes (default 10), SCALE_PODS pods per run
# (default "1000"; e.g. "1000 3000"); SCALE_YARDSTICK=false skips Neutron's
# own time (a quicker look at kuryr alone). Everything is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. _output/local-cloud.env
. hack/local-cloud/lib.sh
. hack/local-cloud/components/ovn-central.sh
. hack/local-cloud/components/keystone.sh
. hack/local-cloud/components/neutron-bootstrap.sh
KWOK_VERSION=v0.8.0
label=kuryr.openstack.org/simulated-node
nodes=${SCALE_NODES:-10}
sb() { "${IN_ROOT[@]}" ovn-sbctl --db="unix:$OVN_SB_SOCK" "$@"; }
nb_cfg() { "${IN_ROOT[@]}" ovn-nbctl --db="unix:$OVN_NB_SOCK" get NB_Global . nb_cfg; }
names=()
for i in $(seq "$nodes"); do names+=("kwok-node-$i"); done

# kwok and its stages (how a simulated node and pod move on: the module's
# fast ones, and the node's lease heartbeat), cached.
kwok=$CLOUD_CACHE/kwok/$KWOK_VERSION/kwok
stages=$CLOUD_CACHE/kwok/$KWOK_VERSION/stages.yaml
if [ ! -x "$kwok" ] || [ ! -s "$stages" ]; then
  log "kwok $KWOK_VERSION: building from the module proxy (cached after)"
  GOBIN=$(dirname "$kwok") go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  src=$(cd "$(mktemp -d)" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | jq -r .Dir)/kustomize/stage
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    echo "---"
    cat "$src/$f"
  done >"$stages.tmp" && mv "$stages.tmp" "$stages"
fi

pids=()
scale_net=
cleanup() {
  rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$scale_net" ]; then
    "$KURYR_CTL" controller restart >/dev/null 2>&1 || true
    # Refused while kuryr still deletes the pods' ports.
    for _ in $(seq 60); do
      os_curl -fsS -o /dev/null -X DELETE "$NEUTRON_API/networks/$scale_net" 2>/dev/null && scale_net= && break
      sleep 5
    done
    [ -z "$scale_net" ] || log "bench-scale: network kuryr-scale $scale_net left (ports on it)"
  fi
  kubectl delete node -l "$label=true" --wait=false >/dev/null 2>&1 || true
  for n in "${names[@]}"; do
    sb --if-exists chassis-del "$n" >/dev/null 2>&1 || true
    for u in $(sb --bare --columns=_uuid find Chassis_Private "name=$n" 2>/dev/null); do sb destroy Chassis_Private "$u" || true; done
    # Neutron keeps a chassis gone as a dead agent until it is deleted.
    os_curl -fsS -o /dev/null -X DELETE "$NEUTRON_API/agents/$n" 2>/dev/null || true
  done
  exit $rc
}
trap cleanup EXIT

# The pods' subnet: a /19 of its own (the local cloud's pod subnet holds a
# few hundred), given to the controller for the run.
PROJECT_ID=$KURYR_CLOUD_PROJECT
scale_net=$(ensure networks kuryr-scale '{}')
scale_subnet=$(ensure subnets kuryr-scale "{\"network_id\": \"$scale_net\", \"ip_version\": 4, \"cidr\": \"10.200.0.0/19\", \"enable_dhcp\": false, \"gateway_ip\": null}")
"$KURYR_CTL" controller restart --set "neutron_defaults.pod_subnet=$scale_subnet" >/dev/null

# The chassis first: kuryr makes each node's management port as soon as
# the node exists, and Neutron binds it only to a live chassis.
cfg=$(nb_cfg)
for i in $(seq "$nodes"); do
  n=${names[$((i - 1))]}
  sb --may-exist chassis-add "$n" geneve "127.1.$((i / 250)).$((i % 250 + 1))"
  sb set Chassis "$n" "hostname=$n" other_config:datapath-type=netdev other_config:ovn-transport-zones=kuryr-simulated
  u=$(sb --bare --columns=_uuid find Chassis "name=$n")
  [ -n "$(sb --bare --columns=_uuid find Chassis_Private "name=$n")" ] || sb create Chassis_Private "name=$n" "chassis=$u" "nb_cfg=$cfg" >/dev/null
done
# As each node's ovn-controller would: report the NB configuration seen
# (liveness), and claim the ports bound to the node (Port_Binding chassis
# and up: Neutron then sets them ACTIVE), every 2 s.
heartbeat() {
  local -A uuid
  for n in "${names[@]}"; do uuid[$n]=$(sb --bare --columns=_uuid find Chassis "name=$n"); done
  while sleep 2; do
    local c args=()
    c=$(nb_cfg) || continue
    for n in "${names[@]}"; do
      args+=(-- set Chassis_Private "$n" "nb_cfg=$c")
      # At most 10 a node a round: a node's ovn-controller claims its
      # ports as its kubelet plugs them, not all at once.
      for pb in $(sb --bare --columns=_uuid find Port_Binding "options:requested-chassis=$n" 'chassis=[]' 2>/dev/null | head -10); do
        args+=(-- set Port_Binding "$pb" "chassis=${uuid[$n]}" up=true)
      done
    done
    sb "${args[@]:1}" >/dev/null 2>&1 || true
  done
}
heartbeat &
pids+=($!)

for n in "${names[@]}"; do
  cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $n
  labels: {$label: "true", kubernetes.io/hostname: $n, type: kwok}
  annotations: {kwok.x-k8s.io/node: fake}
spec:
  taints: [{key: $label, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "1000"}
  capacity: {cpu: "64", memory: 256Gi, pods: "1000"}
---
EOF
done | kubectl apply -f - >/dev/null
"$kwok" --kubeconfig "$KUBECONFIG" --config "$stages" --manage-all-nodes=false --manage-nodes-with-label-selector="$label=true" \
  --cidr 10.254.0.0/16 --node-ip 127.0.0.1 >"$CLOUD_LOG_DIR/kwok.log" 2>&1 &
pids+=($!)
kubectl wait --for=condition=Ready node -l "$label=true" --timeout=120s >/dev/null
log "bench-scale: $nodes simulated nodes Ready (kwok $KWOK_VERSION, a live OVN chassis each)"

for n in ${SCALE_PODS:-1000}; do
  echo
  bin/kuryr-bench scale -pods "$n" -subnet "$scale_subnet" -yardstick="${SCALE_YARDSTICK:-true}"
done
