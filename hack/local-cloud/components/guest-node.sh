# Guest nodes (GUEST_NODES): Kubernetes nodes that are real QEMU guests of
# the cloud (software emulation: no /dev/kvm here), for nested-vlan, whose
# pods are VLAN interfaces of the VM's NIC (this machine's kernel has no
# 802.1Q; the guest's, Debian's cloud kernel, has). Each guest's NIC is a
# Neutron port on the worker network, the parent of a trunk, bound to the
# last hypervisor node and plugged into its br-int as Nova plugs an
# instance (a tap with iface-id, attached-mac, iface-status, vm-uuid). Its
# root is an initramfs (guest/init.sh as /init) with containerd, runc, the
# kubelet and the images it runs, kuryr's included: the kubelet registers
# the node, labelled kuryr.openstack.org/pod-vif=nested-vlan and tainted
# kuryr.openstack.org/vm-node, and kuryr-daemon-nested-vlan (its DaemonSet)
# runs there. The API server reaches the kubelet through a relay into the
# hypervisor node, routed to the worker network by the node's management
# port. Booted on demand: kuryr-ctl.sh guest start|stop NODE.
#
#   kc-<hypervisor>:  br-int --- tg<port>  ~~~ QEMU virtio-net ~~~  ens3 (guest)

# A guest's memory and emulated CPUs (each a host thread while it runs).
GUEST_MEM_MB=${KURYR_CLOUD_GUEST_MEM_MB:-1024}
GUEST_CPUS=${KURYR_CLOUD_GUEST_CPUS:-1}

# worker_net_ids: the worker network's ids (ensure_worker_net made them).
worker_net_ids() {
  BS_WORKER_NET=$(find_id networks kuryr-worker-net)
  BS_WORKER_SUBNET=$(find_id subnets kuryr-worker-subnet)
  BS_WORKER_SG=$(find_id security-groups kuryr-worker-nodes)
  [ -n "$BS_WORKER_NET" ] && [ -n "$BS_WORKER_SUBNET" ] && [ -n "$BS_WORKER_SG" ] \
    || die "no worker network: make up makes it with VM or guest nodes"
}

guest_dir() { echo "$CLOUD_STATE/guests/$1"; }
guest_tap() { echo "tg${1:0:11}"; }

# guest_initrd NODE MAC: the guest's initramfs (uncompressed: the emulated
# kernel unpacks it at memory speed), printed path.
guest_initrd() {
  local node=$1 mac=$2 kernel g root d r
  kernel=$(bash "$CLOUD_SCRIPTS/build-guest.sh") || die "the guest's kernel"
  g=$(guest_dir "$node"); root=$g/root
  d=$(node_dir "$node"); r=$(node_run "$node")
  rm -rf "$root" && mkdir -p "$root"/{bin,usr/local/bin,modules,images,etc/containerd,etc/kubelet,opt/cni/bin} \
    "$root"/{proc,sys,dev,run,tmp,var/lib,var/log,lib64,lib/x86_64-linux-gnu}
  ln -s ../run "$root/var/run"
  cp "$(command -v busybox)" "$root/bin/busybox"
  cp "$CLOUD_SCRIPTS/guest/init.sh" "$root/init"
  cp "$K8S_BIN/kubelet" "$CONTAINERD_BIN"/{containerd,containerd-shim-runc-v2,runc,ctr} "$root/usr/local/bin/"
  # runc and the loopback plugin are dynamically linked.
  cp /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
  cp /lib/x86_64-linux-gnu/{libc.so.6,libseccomp.so.2} "$root/lib/x86_64-linux-gnu/"
  cp /usr/lib/cni/loopback "$root/opt/cni/bin/"
  cp "$kernel"/modules/*.ko "$kernel/modules.order" "$root/modules/"
  cp "$IMAGES_DIR/pause.tar" "$IMAGES_DIR/test-app.tar" "$root/images/"
  # kuryr's image as deployed (the manifests name it), not the last built.
  ctr_node "${NODES[0]}" -n k8s.io images export "$root/images/kuryr.tar" "$(cat "$KURYR_DEPLOYED_REF")" \
    || die "exporting the deployed kuryr image from ${NODES[0]}"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\n' >"$root/etc/group"
  printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
  # The guest asks the cluster's DNS only through its pods.
  printf 'nameserver %s\n' "$CLUSTER_DNS_IP" >"$root/etc/resolv.conf"
  cat >"$root/etc/guest.env" <<EOF
NODE=$node
MAC=$mac
NIC=ens3
MTU=1442
ADDR=$(guest_node_ip "$node")/${WORKER_SUBNET_CIDR#*/}
GW=$WORKER_GW
LABELS=$VM_NODE_LABEL=nested-vlan
CNI_BIN=$d/cni/bin
CNI_CONF=$d/cni/net.d
NODE_RUN=$r
EOF
  write_guest_containerd_conf "$node" >"$root/etc/containerd/config.toml"
  write_guest_kubelet_conf "$node" >"$root/etc/kubelet/config.yaml"
  kubeconfig_for "node-$node" "$root/etc/kubelet/kubeconfig"
  sed -i "s|https://127.0.0.1:$APISERVER_PORT|https://$EXTERNAL_GW:$APISERVER_PORT|" "$root/etc/kubelet/kubeconfig"
  mknod "$root/dev/console" c 5 1
  (cd "$root" && find . | busybox cpio -o -H newc >"$g/initrd" 2>/dev/null) || die "packing $node's initramfs"
  rm -rf "$root"
  echo "$kernel $g/initrd"
}

# The kuryr-daemon DaemonSet's paths (the local cloud's chart values: components/kuryr.sh)
# are the same in the guest: CNI binaries and configuration under the node's
# directory.
write_guest_containerd_conf() {
  local runc="          # The root is the initramfs: pivot_root cannot leave it.
          NoPivotRoot = true"
  cat <<EOF
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[plugins]
$(containerd_plugins "$1" "" "$runc")
EOF
}

write_guest_kubelet_conf() {
  cat <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
port: $(node_kubelet_port "$1")
readOnlyPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
$(kubelet_shared_conf)
evictionHard: {memory.available: "1Mi", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
# nodeStatusUpdateFrequency and syncFrequency unset: under emulation the
# kubelet's own polling is much of an idle guest's load, so its defaults
# (status every 10 s, resync every minute), not the hypervisor nodes' 4 s
# and 10 s.

# Under emulation a CRI call takes minutes when tens of pods start at once
# (50 on pooled ports: "context deadline exceeded" at the default 2 min).
runtimeRequestTimeout: 10m
resolvConf: /etc/resolv.conf
clusterDNS: [$CLUSTER_DNS_IP]
clusterDomain: $CLUSTER_DOMAIN
registerWithTaints: [{key: $VM_NODE_TAINT, value: "true", effect: NoSchedule}]
EOF
}

# plug_guest NODE PORT MAC: the guest's tap, plugged into the hypervisor's
# br-int (a stale one deleted first, its OVS port too: ovs-vswitchd keeps
# reading a gone device under the same name).
plug_guest() {
  local node=$1 port=$2 mac=$3 hv ns tap
  hv=$(vm_hypervisor); ns=$(node_ns "$hv"); tap=$(guest_tap "$port")
  node_vsctl "$hv" --if-exists del-port br-int "$tap"
  ip -n "$ns" link del "$tap" 2>/dev/null || true
  ip -n "$ns" tuntap add dev "$tap" mode tap
  ip -n "$ns" link set "$tap" mtu 1442 up
  node_vsctl "$hv" -- --may-exist add-port br-int "$tap" -- set Interface "$tap" \
    external_ids:iface-id="$port" external_ids:attached-mac="$mac" \
    external_ids:iface-status=active external_ids:vm-uuid="$port"
}

# start_guest_node NODE: the guest's port and trunk, its tap, QEMU
# (supervised: restarted if it stops), the kubelet's relay; waits until the
# node is Ready and its kuryr-daemon runs. A guest running already is
# waited for.
start_guest_node() {
  local node=$1 port mac kernel initrd hv r kport
  is_running "$node-vm" && { guest_wait "$node"; return; }
  worker_net_ids
  port=$(ensure_vm_port "$node")
  mac=$(neutron GET "/ports/$port" | jq -r .port.mac_address)
  read -r kernel initrd < <(guest_initrd "$node" "$mac")
  plug_guest "$node" "$port" "$mac"
  hv=$(vm_hypervisor); r=$(node_run "$node"); kport=$(node_kubelet_port "$node")
  mkdir -p "$r"
  start_bg "$node-relay-kubelet-in" "$(node_ns "$hv")" -- socat \
    "UNIX-LISTEN:$r/kubelet.sock,fork,unlink-early,mode=600" "TCP:$(guest_node_ip "$node"):$kport"
  relay_tcp_to_unix "$node-relay-kubelet" "" "$kport" "$r/kubelet.sock"
  # No vnet headers, no checksum offload: the userspace datapath does not
  # complete partial checksums.
  start_bg "$node-vm" "$(node_ns "$hv")" -- qemu-system-x86_64 -accel tcg -cpu max -m "$GUEST_MEM_MB" -smp "$GUEST_CPUS" \
    -nographic -no-reboot -kernel "$kernel/vmlinuz" -initrd "$initrd" \
    -append "console=ttyS0 panic=-1 quiet loglevel=1" \
    -netdev "tap,id=n0,ifname=$(guest_tap "$port"),script=no,downscript=no,vnet_hdr=off" \
    -device "virtio-net-pci,netdev=n0,mac=$mac,csum=off,guest_csum=off"
  guest_wait "$node"
}

guest_wait() {
  wait_for "$1 Ready" 480 node_is_ready "$1"
  wait_for "$1's kuryr-daemon" 180 guest_daemon_ready "$1"
}

node_is_ready() {
  [ "$(kk get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
guest_daemon_ready() {
  kk -n "$KURYR_NS" get pods -l app.kubernetes.io/component=daemon --field-selector "spec.nodeName=$1" -o json \
    | jq -e '[.items[] | select(.metadata.deletionTimestamp == null) | .status.conditions[]?
        | select(.type == "Ready" and .status == "True")] | length > 0' >/dev/null
}

# stop_guest_node NODE: powers the guest off at once (QEMU killed, as a
# hypervisor failure would; its kuryr pods' logs kept first: they live in
# its memory), unplugs its tap and deletes its Node; its port and trunk stay
# for the next start (their subports are kuryr's to remove).
stop_guest_node() {
  local node=$1 port hv pod
  hv=$(vm_hypervisor)
  if is_running "$node-vm"; then
    mkdir -p "$CLOUD_LOG_DIR/kuryr-pods"
    for pod in $(kk -n "$KURYR_NS" get pods -l app.kubernetes.io/name=kuryr --field-selector "spec.nodeName=$node" \
      -o jsonpath='{.items[*].metadata.name}' 2>/dev/null); do
      kk -n "$KURYR_NS" logs "$pod" --all-containers >"$CLOUD_LOG_DIR/kuryr-pods/$pod.log" 2>&1 || true
    done
  fi
  stop_named "$node-vm"
  stop_named "$node-relay-kubelet"
  stop_named "$node-relay-kubelet-in"
  port=$(find_id ports "$node")
  if [ -n "$port" ]; then
    node_vsctl "$hv" --if-exists del-port br-int "$(guest_tap "$port")"
    ip -n "$(node_ns "$hv")" link del "$(guest_tap "$port")" 2>/dev/null || true
  fi
  kk delete node "$node" --ignore-not-found --wait=false >/dev/null
  rm -rf "$(guest_dir "$node")"
}
