# kuryr itself on the local cloud: its binaries built from this checkout, its
# CRDs installed, and kuryr-controller running in the root namespace next to
# the control plane.

KURYR_BIN=$CLOUD_OUT/bin
# Extra controller flags (e.g. --set kubernetes.pod_subnets_driver=namespace)
# survive restarts through this file.
KURYR_CONTROLLER_ARGS=$CLOUD_STATE/kuryr/controller.args

build_kuryr() {
  mkdir -p "$KURYR_BIN"
  (cd "$REPO_ROOT" && CGO_ENABLED=0 go build -o "$KURYR_BIN/" ./cmd/...) \
    >"$CLOUD_LOG_DIR/kuryr-build.log" 2>&1 || die "building kuryr failed (see $CLOUD_LOG_DIR/kuryr-build.log)"
}

install_crds() {
  "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" apply -f "$REPO_ROOT/config/crd/" -f "$REPO_ROOT/config/rbac/" >/dev/null \
    || die "installing kuryr CRDs and RBAC failed"
  "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" wait --for condition=established --timeout=30s \
    crd/kuryrports.openstack.org crd/kuryrnetworks.openstack.org crd/kuryrloadbalancers.openstack.org \
    crd/kuryrnetworkpolicies.openstack.org >/dev/null
}

start_kuryr_controller() {
  local args=()
  [ -f "$KURYR_CONTROLLER_ARGS" ] && mapfile -t args <"$KURYR_CONTROLLER_ARGS"
  start_bg kuryr-controller -- "$KURYR_BIN/kuryr-controller" --config-file "$KURYR_CONF" \
    --zap-devel=false --zap-log-level=info "${args[@]}"
  # Live is enough: with controller_ha a standby is never ready.
  wait_for kuryr-controller 30 curl -fsS "http://127.0.0.1:8082/livez"
}

stop_kuryr_controller() { stop_child kuryr-controller "${1:-TERM}"; }

# One kuryr-daemon per node, inside the node's namespace (so its veths and
# OVS are the node's), reaching the API server through the node's loopback
# relay. It installs kuryr-cni and the CNI configuration into the node's
# directories once it can serve; until then the node is NotReady.
start_kuryr_daemon() {
  local node=$1 ns; ns=$(node_ns "$1")
  local d; d=$(node_dir "$node")
  local r; r=$(node_run "$node")
  mkdir -p "$d/kuryr"
  kubeconfig_for "kuryr-daemon-$node" "$d/kuryr/kubeconfig"
  start_bg "$node-kuryr-daemon" "$ns" -- "$KURYR_BIN/kuryr-daemon" --config-file "$KURYR_CONF" \
    --zap-devel=false --zap-log-level=info \
    --set "kubernetes.kubeconfig=$d/kuryr/kubeconfig" \
    --set "cni_daemon.node_name=$node" \
    --set "cni_daemon.socket_path=$r/kuryr-cni.sock" \
    --set "cni_daemon.ovsdb_connection=unix:$r/db.sock" \
    --set "cni_daemon.cni_bin_dir=$d/cni/bin" \
    --set "cni_daemon.cni_conf_dir=$d/cni/net.d" \
    --set "cni_daemon.disable_tx_checksum_offload=true"
}

daemon_ready() { nsenter --net="/run/netns/$(node_ns "$1")" curl -fsS http://127.0.0.1:8090/readyz; }
