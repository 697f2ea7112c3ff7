# VM nodes (KURYR_CLOUD_VM_NODES): Kubernetes nodes that are VMs of the
# cloud, as Nova makes them. Each is a network namespace whose one NIC,
# ens3, is the VM's Neutron port on the worker network (10.12.0.0/24, on the
# cluster's router), bound to a hypervisor node (vm_hypervisor) and plugged
# into its br-int the way os-vif plugs a Nova instance (a tap with iface-id,
# attached-mac, iface-status and vm-uuid); the port is the parent of a trunk
# (nested-vlan's subports go there). Inside run containerd and a kubelet
# (like every node's) that reaches the API server as a VM on the cloud does:
# through its router to the "kubernetes" Service's endpoint on the outside
# network. The API server reaches the kubelet through a relay, as it does
# every node's. No OVS or ovn-controller runs inside: the node is labelled
# kuryr.openstack.org/pod-vif=nested-macvlan (its pods' addresses are
# allowed address pairs of its port, the pods macvlans of ens3) and tainted
# kuryr.openstack.org/vm-node, so only what tolerates it runs there.
#
#   kc-<hypervisor>:  br-int --- tap<port>  ~~~ veth ~~~  ens3 (kc-<vm node>)

# vm_hypervisor [NODE]: the hypervisor a VM runs on: the i-th VM node on
# the i-th hypervisor from the last (round the list), a guest node (and no
# NODE) on the last.
vm_hypervisor() {
  local i
  for i in "${!VM_NODES[@]}"; do
    if [ "${VM_NODES[$i]}" = "${1:-}" ]; then
      echo "${NODES[$((${#NODES[@]} - 1 - i % ${#NODES[@]}))]}"
      return
    fi
  done
  echo "${NODES[-1]}"
}

# ensure_worker_net: the worker network, its subnet on the router, and the
# VMs' security group (admits everything: the nodes serve the cluster and
# their pods, whose traffic crosses the VM's port).
ensure_worker_net() {
  local net sub sg
  net=$(ensure networks kuryr-worker-net '{}')
  sub=$(ensure subnets kuryr-worker-subnet "$(jq -nc --arg n "$net" --arg c "$WORKER_SUBNET_CIDR" --arg g "$WORKER_GW" \
    '{network_id: $n, cidr: $c, ip_version: 4, gateway_ip: $g, enable_dhcp: false}')")
  router_has_interface "$BS_ROUTER" "$sub" \
    || neutron PUT "/routers/$BS_ROUTER/add_router_interface" "{\"subnet_id\": \"$sub\"}" >/dev/null
  sg=$(ensure security-groups kuryr-worker-nodes '{"description": "kuryr local cloud: the VM nodes"}')
  neutron GET "/security-group-rules?security_group_id=$sg&direction=ingress" |
    jq -e '.security_group_rules | length > 0' >/dev/null ||
    neutron POST /security-group-rules "$(jq -nc --arg sg "$sg" --arg p "$PROJECT_ID" \
      '{security_group_rule: {security_group_id: $sg, direction: "ingress", ethertype: "IPv4", project_id: $p}}')" >/dev/null
  declare -g BS_WORKER_NET=$net BS_WORKER_SUBNET=$sub BS_WORKER_SG=$sg
}

# ensure_vm_port NODE: the VM's port (bound to the hypervisor, as Nova
# binds an instance's) and its trunk; prints the port's id.
ensure_vm_port() {
  local node=$1 port
  port=$(find_id ports "$node")
  if [ -z "$port" ]; then
    port=$(neutron POST /ports "$(jq -nc --arg n "$node" --arg net "$BS_WORKER_NET" --arg s "$BS_WORKER_SUBNET" \
      --arg ip "$(node_ip "$node")" --arg sg "$BS_WORKER_SG" --arg h "$(vm_hypervisor "$node")" --arg p "$PROJECT_ID" \
      --arg d "$(cat /proc/sys/kernel/random/uuid)" \
      '{port: {name: $n, network_id: $net, project_id: $p, fixed_ips: [{subnet_id: $s, ip_address: $ip}],
        security_groups: [$sg], "binding:host_id": $h, device_owner: "compute:nova", device_id: $d}}')" | jq -r .port.id)
    neutron PUT "/ports/$port/tags/$BOOTSTRAP_TAG" >/dev/null
  fi
  [ -n "$(find_id trunks "$node-trunk")" ] || neutron POST /trunks "$(jq -nc --arg n "$node-trunk" --arg p "$port" \
    --arg pr "$PROJECT_ID" '{trunk: {name: $n, port_id: $p, project_id: $pr}}')" >/dev/null
  echo "$port"
}

# plug_vm NODE PORT: the VM's NIC, plugged into the hypervisor's br-int.
plug_vm() {
  local node=$1 port=$2 ns hv mac dev tap
  ns=$(node_ns "$node"); hv=$(vm_hypervisor "$node")
  read -r mac dev < <(neutron GET "/ports/$port" | jq -r '"\(.port.mac_address) \(.port.device_id)"')
  tap="tap${port:0:11}"
  ensure_ns "$ns"
  veth_into "$(node_ns "$hv")" "$tap" "$ns" ens3
  ip -n "$ns" link set ens3 address "$mac" mtu 1442
  ip -n "$(node_ns "$hv")" link set "$tap" mtu 1442
  node_vsctl "$hv" -- --may-exist add-port br-int "$tap" -- set Interface "$tap" \
    external_ids:iface-id="$port" external_ids:attached-mac="$mac" \
    external_ids:iface-status=active external_ids:vm-uuid="$dev"
  ip -n "$ns" addr replace "$(vm_node_ip "$node")/${WORKER_SUBNET_CIDR#*/}" dev ens3
  ip -n "$ns" route replace default via "$WORKER_GW"
  # As on every Kubernetes node (kubeadm's preflight requires it): node
  # ports are forwarded to pods.
  in_ns "$ns" sysctl -qw net.ipv4.ip_forward=1
  wait_for "$node's port ACTIVE" 60 vm_port_active "$port"
}
vm_port_active() { neutron GET "/ports/$1" | jq -e '.port.status == "ACTIVE"' >/dev/null; }

# start_vm_node NODE: the VM (port, trunk, NIC), the kubelet's relay, its
# containerd and kubelet.
start_vm_node() {
  local node=$1 port r kport
  port=$(ensure_vm_port "$node")
  plug_vm "$node" "$port"
  r=$(node_run "$node"); kport=$(node_kubelet_port "$node")
  mkdir -p "$r"
  start_bg "$node-relay-kubelet-in" "$(node_ns "$node")" -- socat \
    "UNIX-LISTEN:$r/kubelet.sock,fork,unlink-early,mode=600" "TCP:127.0.0.1:$kport"
  relay_tcp_to_unix "$node-relay-kubelet" "" "$kport" "$r/kubelet.sock"
  timed "$node containerd" start_node_containerd "$node"
  timed "$node kubelet" start_node_kubelet "$node"
}
