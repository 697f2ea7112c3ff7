# A node's network: its namespace, its underlay link, its own Open vSwitch
# (userspace datapath: the kernel has no openvswitch module) and its
# ovn-controller, whose chassis hostname is the Kubernetes node name so that
# Neutron can bind ports to it.
#
#   kc-underlay:  br-ul (Linux bridge) --- ul-<i> ... eth-ul in each node
#   kc-<node>:    br-phy (netdev, holds eth-ul and the Geneve endpoint IP)
#                 br-int (netdev, OVN integration bridge)
#                 br-ex  (netdev, first node only: provider bridge) --- veth --- kc-outside

node_run() { echo "$CLOUD_RUN/nodes/$1"; }
node_vsctl() { "${IN_ROOT[@]}" ovs-vsctl --timeout=30 --db="unix:$(node_run "$1")/db.sock" "${@:2}"; }
# in_ns NS CMD...: runs a command in a namespace, keeping the root mount
# namespace (unlike `ip netns exec`), so that mounts made by containerd and the
# kubelet (pod netns, volumes) are visible to every process of the cloud.
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" -- "$@"; }

# no_tx_offload DEV [NS]: the userspace datapath reads veths through
# AF_PACKET and never completes partial checksums, so TCP through it breaks
# unless the senders compute them.
no_tx_offload() {
  if [ -n "${2:-}" ]; then in_ns "$2" ethtool -K "$1" tx off >/dev/null 2>&1 || true
  else ethtool -K "$1" tx off >/dev/null 2>&1 || true; fi
}

ensure_ns() {
  [ -e "/run/netns/$1" ] || ip netns add "$1"
  ip -n "$1" link set lo up
}

ensure_underlay() {
  ensure_ns "$UNDERLAY_NS"
  ip -n "$UNDERLAY_NS" link show br-ul >/dev/null 2>&1 || {
    ip -n "$UNDERLAY_NS" link add br-ul type bridge
    ip -n "$UNDERLAY_NS" link set br-ul up
  }
}

ensure_outside() {
  ensure_ns "$OUTSIDE_NS"
}

# veth_into A_NS A_NAME B_NS B_NAME: a veth pair between two namespaces,
# created in the root namespace under temporary names and moved.
veth_into() {
  local ans=$1 aname=$2 bns=$3 bname=$4 tmp=kc$RANDOM
  ip -n "$ans" link show "$aname" >/dev/null 2>&1 && return 0
  ip link add "${tmp}a" type veth peer name "${tmp}b"
  ip link set "${tmp}a" netns "$ans" name "$aname"
  ip link set "${tmp}b" netns "$bns" name "$bname"
  ip -n "$ans" link set "$aname" up
  ip -n "$bns" link set "$bname" up
  no_tx_offload "$aname" "$ans"
  no_tx_offload "$bname" "$bns"
}

start_node_ovs() {
  local node=$1 ns; ns=$(node_ns "$1")
  local d; d=$(node_dir "$node")/ovs
  local r; r=$(node_run "$node")
  mkdir -p "$d" "$r"
  [ -f "$d/conf.db" ] || "${IN_ROOT[@]}" ovsdb-tool create "$d/conf.db" /usr/share/openvswitch/vswitch.ovsschema
  start_bg "$node-ovsdb" "$ns" -- env OVS_RUNDIR="$r" "${IN_ROOT[@]}" ovsdb-server "$d/conf.db" \
    --remote="punix:$r/db.sock" --unixctl="$r/ovsdb-server.ctl" --pidfile="$r/ovsdb-server.pid" \
    --log-file="$CLOUD_LOG_DIR/$node-ovsdb.log" -vconsole:off -vfile:info
  # Answering, not only bound: a client can connect before listen().
  wait_for "$node ovsdb" 10 "${IN_ROOT[@]}" ovsdb-client list-dbs "unix:$r/db.sock"
  node_vsctl "$node" --no-wait init
  node_vsctl "$node" --no-wait set Open_vSwitch . \
    external_ids:system-id="$node" external_ids:hostname="$node" \
    external_ids:ovn-remote="unix:$OVN_SB_SOCK" \
    external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip="$(node_underlay_ip "$node")" \
    external_ids:ovn-bridge=br-int external_ids:ovn-bridge-datapath-type=netdev
  start_bg "$node-vswitchd" "$ns" -- env OVS_RUNDIR="$r" "${IN_ROOT[@]}" "$OVS_VSWITCHD" "unix:$r/db.sock" \
    --unixctl="$r/ovs-vswitchd.ctl" --pidfile="$r/ovs-vswitchd.pid" \
    --log-file="$CLOUD_LOG_DIR/$node-vswitchd.log" -vconsole:off -vfile:info
}

# setup_node_bridges: br-int, and br-phy carrying the Geneve endpoint.
setup_node_bridges() {
  local node=$1 ns; ns=$(node_ns "$1")
  node_vsctl "$node" -- --may-exist add-br br-int \
    -- set bridge br-int datapath_type=netdev fail_mode=secure other_config:disable-in-band=true \
    -- --may-exist add-br br-phy -- set bridge br-phy datapath_type=netdev \
    -- --may-exist add-port br-phy eth-ul
  ip -n "$ns" addr replace "$(node_underlay_ip "$node")/24" dev br-phy
  ip -n "$ns" link set br-phy up
}

# setup_gateway: the first node holds the provider bridge and is the OVN
# gateway chassis, so router gateways, SNAT and floating IPs live there.
setup_gateway() {
  local node=$1 ns; ns=$(node_ns "$1")
  ensure_outside
  veth_into "$ns" ex-gw "$OUTSIDE_NS" ex-out
  node_vsctl "$node" -- --may-exist add-br br-ex -- set bridge br-ex datapath_type=netdev \
    -- --may-exist add-port br-ex ex-gw \
    -- set Open_vSwitch . external_ids:ovn-bridge-mappings=public:br-ex \
       external_ids:ovn-cms-options=enable-chassis-as-gw
  ip -n "$ns" link set br-ex up
  ip -n "$OUTSIDE_NS" addr replace "$EXTERNAL_GW/24" dev ex-out
}

start_node_ovn_controller() {
  local node=$1 ns; ns=$(node_ns "$1")
  local r; r=$(node_run "$node")
  start_bg "$node-ovn-controller" "$ns" -- env OVS_RUNDIR="$r" OVN_RUNDIR="$r" \
    "${IN_ROOT[@]}" ovn-controller "unix:$r/db.sock" --pidfile="$r/ovn-controller.pid" \
    --log-file="$CLOUD_LOG_DIR/$node-ovn-controller.log" -vconsole:off -vfile:info
}

# ovn-controller is started without --unixctl: its socket is named after its pid.
node_ovn_ctl() { echo "$(node_run "$1")/ovn-controller.$(cat "$(node_run "$1")/ovn-controller.pid" 2>/dev/null).ctl"; }

start_node_net() {
  local node=$1 ns; ns=$(node_ns "$1")
  local i; i=$(node_index "$node")
  ensure_ns "$ns"
  # kuryr-daemon serves node ports by DNAT to addresses behind the node's
  # management port: traffic from other nodes and VMs is forwarded.
  # (IPv6 too, where the kernel has it.)
  in_ns "$ns" sysctl -qw net.ipv4.ip_forward=1
  in_ns "$ns" sysctl -qw net.ipv6.conf.all.forwarding=1 2>/dev/null || true
  veth_into "$UNDERLAY_NS" "ul-$i" "$ns" eth-ul
  ip -n "$UNDERLAY_NS" link set "ul-$i" master br-ul
  start_node_ovs "$node"
  setup_node_bridges "$node"
  [ "$i" = 1 ] && setup_gateway "$node"
  start_node_ovn_controller "$node"
}
