# A node's Kubernetes side: containerd and a kubelet inside the node's
# namespace, each with its own roots, sockets and cgroup root, plus the relays
# that join the node's loopback to the control plane's (a node namespace
# cannot reach the root namespace's 127.0.0.1; unix sockets can cross).

RELAY_DIR=$CLOUD_RUN/relay

# relay_unix_to_root NAME PORT: root-namespace unix socket -> 127.0.0.1:PORT.
relay_unix_to_root() {
  mkdir -p "$RELAY_DIR"
  start_bg "relay-$1" -- socat "UNIX-LISTEN:$RELAY_DIR/$1.sock,fork,unlink-early,mode=600" \
    "TCP:127.0.0.1:$2"
}

# relay_tcp_to_unix NAME NS PORT SOCK: NS's 127.0.0.1:PORT (root's if NS is
# empty) -> unix socket SOCK.
relay_tcp_to_unix() {
  local name=$1 ns=$2 port=$3 sock=$4
  if [ -n "$ns" ]; then
    start_bg "$name" "$ns" -- socat "TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$sock"
  else
    start_bg "$name" -- socat "TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$sock"
  fi
}

start_control_relays() {
  relay_unix_to_root apiserver "$APISERVER_PORT"
  relay_unix_to_root neutron "$NEUTRON_PORT"
  relay_unix_to_root octavia "$OCTAVIA_PORT"
  relay_unix_to_root keystone "$KEYSTONE_PORT"
  start_apiserver_outside_relay
}

# The API server's advertised address (EXTERNAL_GW:APISERVER_PORT, the
# "kubernetes" Service's endpoint): a relay in the outside namespace, where
# EXTERNAL_GW lives, to the root namespace's unix relay. Pods reach it
# through their router's SNAT gateway on the first node; the name is the
# same TLS server as 127.0.0.1:APISERVER_PORT (the certificate covers both).
start_apiserver_outside_relay() {
  start_bg relay-apiserver-outside "$OUTSIDE_NS" -- socat \
    "TCP-LISTEN:$APISERVER_PORT,bind=$EXTERNAL_GW,fork,reuseaddr" "UNIX-CONNECT:$RELAY_DIR/apiserver.sock"
  wait_for "the API server on $EXTERNAL_GW:$APISERVER_PORT" 20 apiserver_outside_ready
}
apiserver_outside_ready() {
  nsenter --net="/run/netns/$OUTSIDE_NS" -- curl -fsS --max-time 2 --cacert "$KUBE_CA" \
    "https://$EXTERNAL_GW:$APISERVER_PORT/readyz"
}

# The kubelet and kube-proxy-less pods of a node see the API server, Neutron
# and Octavia on the node's own loopback; the API server reaches the kubelet
# through the root namespace's loopback on the node's own port.
start_node_relays() {
  local node=$1 ns; ns=$(node_ns "$1")
  local r; r=$(node_run "$node")
  local port; port=$(node_kubelet_port "$node")
  relay_tcp_to_unix "$node-relay-apiserver" "$ns" "$APISERVER_PORT" "$RELAY_DIR/apiserver.sock"
  relay_tcp_to_unix "$node-relay-neutron" "$ns" "$NEUTRON_PORT" "$RELAY_DIR/neutron.sock"
  relay_tcp_to_unix "$node-relay-octavia" "$ns" "$OCTAVIA_PORT" "$RELAY_DIR/octavia.sock"
  relay_tcp_to_unix "$node-relay-keystone" "$ns" "$KEYSTONE_PORT" "$RELAY_DIR/keystone.sock"
  start_bg "$node-relay-kubelet-in" "$ns" -- socat \
    "UNIX-LISTEN:$r/kubelet.sock,fork,unlink-early,mode=600" "TCP:127.0.0.1:$port"
  relay_tcp_to_unix "$node-relay-kubelet" "" "$port" "$r/kubelet.sock"
}

# containerd_plugins NODE RUNTIME RUNC: the plugin sections every node's
# containerd has (NRI off, CRI with the pinned pause image, runc, the node's
# CNI directories), with RUNTIME's lines first in the CRI runtime's section
# and RUNC's last in runc's options (empty: none).
containerd_plugins() {
  local d; d=$(node_dir "$1")
  cat <<EOF
  # NRI's socket is one per host (/var/run/nri/nri.sock): two nodes'
  # containerds would take it from each other.
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
  [plugins.'io.containerd.grpc.v1.cri']
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "$(cat "$IMAGES_DIR/pause.ref")"
  [plugins.'io.containerd.cri.v1.runtime']
${2:+$2
}    enable_selinux = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          SystemdCgroup = false
${3:+$3
}    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["$d/cni/bin"]
      conf_dir = "$d/cni/net.d"
      max_conf_num = 1
EOF
}

write_containerd_conf() {
  local node=$1 d; d=$(node_dir "$1")
  local r; r=$(node_run "$node")
  mkdir -p "$d/containerd" "$d/cni/bin" "$d/cni/net.d"
  cp /usr/lib/cni/loopback "$d/cni/bin/loopback"
  local runtime runc
  runtime="    # The VM lacks CAP_SYS_RESOURCE: without this every sandbox fails with
    # \"can't get final child's PID from pipe: EOF\".
    restrict_oom_score_adj = true"
  runc="          BinaryName = \"$CONTAINERD_BIN/runc\"
          Root = \"$r/runc\""
  # containerd 2.x (build-containerd.sh), configuration version 3.
  cat >"$d/containerd/config.toml" <<EOF
version = 3
root = "$d/containerd/root"
state = "$r/containerd"
[grpc]
  address = "$r/containerd.sock"
[ttrpc]
  address = "$r/containerd.sock.ttrpc"
[debug]
  address = "$r/containerd-debug.sock"
[plugins]
  # containerd's own /opt (binaries and libraries it would put first on
  # its PATH), in the node's directory rather than the host's /opt.
  [plugins.'io.containerd.internal.v1.opt']
    path = "$d/containerd/opt"
$(containerd_plugins "$node" "$runtime" "$runc")
EOF
}

# ctr_node NODE ARGS...: the node's containerd client.
ctr_node() {
  local r; r=$(node_run "$1"); shift
  # ctr warns on every call that cgroup v1 is deprecated: these machines
  # have no other.
  CONTAINERD_SUPPRESS_DEPRECATION_WARNINGS=1 "$CONTAINERD_BIN/ctr" --address "$r/containerd.sock" "$@"
}

start_node_containerd() {
  local node=$1 ns; ns=$(node_ns "$1")
  write_containerd_conf "$node"
  # The shim is found on PATH.
  start_bg "$node-containerd" "$ns" -- env PATH="$CONTAINERD_BIN:$PATH" \
    "$CONTAINERD_BIN/containerd" --config "$(node_dir "$node")/containerd/config.toml"
  wait_for "$node containerd" 20 ctr_node "$node" version
  local img
  for img in pause test-app coredns; do
    ctr_node "$node" -n k8s.io images import --no-unpack=false \
      "$IMAGES_DIR/$img.tar" >/dev/null || die "importing $img into $node failed"
  done
}

# The kubelet's pods go under their own cgroup root per node, so two kubelets
# on one host do not fight over /kubepods.
ensure_cgroup_root() {
  local node=$1 sub
  for sub in /sys/fs/cgroup/*/; do
    sub=${sub%/}
    [ "$(basename "$sub")" = unified ] && continue
    mkdir -p "$sub/kc-$node"
    if [ -f "$sub/cpuset.cpus" ]; then
      cat "$sub/cpuset.cpus" >"$sub/kc-$node/cpuset.cpus"
      cat "$sub/cpuset.mems" >"$sub/kc-$node/cpuset.mems"
    fi
  done
}

# kubelet_shared_conf: the kubelet settings every node's has.
kubelet_shared_conf() {
  cat <<EOF
failSwapOn: false
makeIPTablesUtilChains: false
protectKernelDefaults: false
serializeImagePulls: false
# Images are imported, never pulled: garbage collection would lose them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
}

write_kubelet_conf() {
  local node=$1 d; d=$(node_dir "$1")
  local r; r=$(node_run "$node")
  mkdir -p "$d/kubelet/manifests"
  cat >"$d/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $(node_kubelet_port "$node")
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$r/containerd.sock
cgroupDriver: cgroupfs
# These machines have cgroup v1 (deprecated): since 1.35 the kubelet
# refuses it unless told not to.
failCgroupV1: false
cgroupRoot: /kc-$node
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
$(kubelet_shared_conf)
# A controller's log in a fault campaign outgrows the default 10 MiB within
# minutes, and rotated files go with their pod: keep the whole run's.
containerLogMaxSize: 200Mi
containerLogMaxFiles: 2
evictionHard: {memory.available: "1Mi", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
fileCheckFrequency: 0s
volumeStatsAggPeriod: 0s
resolvConf: /etc/resolv.conf
# Pods resolve through CoreDNS (cluster-dns.sh): the kube-dns Service.
clusterDNS: [$CLUSTER_DNS_IP]
clusterDomain: $CLUSTER_DOMAIN
# Static pods (their mirror pods get ports like any other pod).
staticPodPath: $d/kubelet/manifests
# Each node its own pod log directory: two kubelets sharing /var/log/pods
# remove each other's pods' logs as orphans.
podLogsDir: $d/kubelet/pod-logs
EOF
  # A VM node: labelled with its pods' mode, tainted so that only what
  # tolerates it (kuryr's daemon, the nested tests) runs there.
  if is_vm_node "$node"; then
    echo "registerWithTaints: [{key: $VM_NODE_TAINT, value: \"true\", effect: NoSchedule}]" >>"$d/kubelet/config.yaml"
  fi
}

start_node_kubelet() {
  local node=$1 ns; ns=$(node_ns "$1")
  local d; d=$(node_dir "$node")
  ensure_cgroup_root "$node"
  write_kubelet_conf "$node"
  kubeconfig_for "node-$node" "$d/kubelet/kubeconfig"
  # A VM reaches the API server as any VM on the cloud: through its router.
  is_vm_node "$node" && sed -i "s|https://127.0.0.1:$APISERVER_PORT|https://$EXTERNAL_GW:$APISERVER_PORT|" \
    "$d/kubelet/kubeconfig"
  local extra=()
  is_vm_node "$node" && extra=(--node-labels "$VM_NODE_LABEL=nested-macvlan")
  start_bg "$node-kubelet" "$ns" -- "$K8S_BIN/kubelet" "${extra[@]}" \
    --config "$d/kubelet/config.yaml" --kubeconfig "$d/kubelet/kubeconfig" \
    --hostname-override "$node" --node-ip "$(node_ip "$node")" \
    --root-dir "$d/kubelet/root" --cert-dir "$d/kubelet/pki" --v 1
}
