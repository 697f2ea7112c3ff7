# Shared settings and helpers for the local cloud scripts. Sourced, not run.
# Every path the cloud writes to is defined here, so that `down` can remove
# exactly what `up` created.

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLOUD_SCRIPTS="$REPO_ROOT/hack/local-cloud"

# Pinned Kubernetes release, built from the Go module proxy (build-k8s.sh)
# and run on containerd 2 (build-containerd.sh). These machines have cgroup
# v1: the kubelet runs on it with failCgroupV1 false (node-kube.sh).
K8S_VERSION=${K8S_VERSION:-v1.37.2}

# Build cache survives `down`, so a second `up` does not rebuild.
CLOUD_CACHE=${KURYR_CLOUD_CACHE:-/var/cache/kuryr-cloud}
# Runtime state (databases, containerd roots, OVS dbs, sockets, pids).
CLOUD_STATE=${KURYR_CLOUD_STATE:-/var/lib/kuryr-cloud}
CLOUD_RUN=$CLOUD_STATE/run

# The OpenStack release the cloud runs: 2025.1 (Epoxy) from Debian trixie:
# Keystone 27, Neutron 26, Octavia 16 and ovn-octavia-provider 8, OVN 25.03,
# Open vSwitch 3.5, MariaDB 11.8, etcd 3.5, run chrooted into a root
# build-root.sh makes. (Zed, from the machine's own bookworm, is no longer
# offered: it ran without Keystone, needed a patched ovs-vswitchd, and its
# etcd 3.4.23 is older than Kubernetes 1.31+ supports.)
CLOUD_RELEASE=2025.1
CLOUD_SUITE=trixie
CLOUD_ROOTS=$CLOUD_CACHE/roots
# IN_ROOT: the prefix that runs a command of the release's OpenStack, OVN and
# OVS (chroot into its root).
CLOUD_ROOT=$CLOUD_ROOTS/$CLOUD_SUITE
IN_ROOT=(chroot "$CLOUD_ROOT")
# The cloud's private CA and the certificates it signs (components/pki.sh).
CLOUD_PKI=$CLOUD_STATE/pki
CLOUD_CA=$CLOUD_PKI/ca.crt
# Logs stay in the checkout (and survive `down`) so a failed run can be read.
CLOUD_OUT=$REPO_ROOT/_output
CLOUD_LOG_DIR=$CLOUD_OUT/logs
CLOUD_ENV_FILE=$CLOUD_OUT/local-cloud.env

K8S_BIN=$CLOUD_CACHE/k8s/$K8S_VERSION/bin
# The nodes' container runtime: containerd 2.x and the runc it pins, built
# from the Go module proxy (build-containerd.sh), cached per version.
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
CONTAINERD_BIN=$CLOUD_CACHE/containerd/$CONTAINERD_VERSION-$(sha256sum "$CLOUD_SCRIPTS/build-containerd.sh" | cut -c1-12)/bin
# ovs-vswitchd: the root's (Open vSwitch 3.5, unpatched: it passes
# TestConntrackTupleReuse); KURYR_CLOUD_OVS_VSWITCHD runs another one.
OVS_VSWITCHD=${KURYR_CLOUD_OVS_VSWITCHD:-/usr/sbin/ovs-vswitchd}
IMAGES_DIR=$CLOUD_CACHE/images
# Cluster DNS: CoreDNS from the Go module proxy (build-coredns.sh), cached
# per version.
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
COREDNS_BIN=$CLOUD_CACHE/coredns/$COREDNS_VERSION/coredns

# Nodes: each a network namespace with its own OVS, ovn-controller,
# containerd and kubelet. The first one is also the OVN gateway chassis.
NODES=(${KURYR_CLOUD_NODES:-kuryr-node-1 kuryr-node-2})
# VM nodes (components/vm-node.sh): Kubernetes nodes that are VMs of the
# cloud, each a namespace whose one NIC is a Neutron port (the parent of a
# trunk) on the worker network, plugged into a hypervisor node's br-int
# as Nova plugs a VM (the first VM on the last hypervisor, the next on the
# one before, ...); their pods are nested-macvlan. One, kuryr-vm-1,
# unless KURYR_CLOUD_VM_NODES names others ("kuryr-vm-1 kuryr-vm-2": pods
# across VMs on two hypervisors; "" for none): each more costs CI time.
# A cloud that is up keeps its own (make down, kuryr-ctl.sh need no variable;
# up.sh refuses another list until make down).
if [ -f "$CLOUD_STATE/vm-nodes" ]; then
  VM_NODES=($(cat "$CLOUD_STATE/vm-nodes"))
elif [ -n "${KURYR_CLOUD_VM_NODES+set}" ]; then
  VM_NODES=($KURYR_CLOUD_VM_NODES)
else
  VM_NODES=(kuryr-vm-1)
fi
# Guest nodes (components/guest-node.sh): Kubernetes nodes that are VMs of
# the cloud as real QEMU guests (software emulation) with kubelet,
# containerd and kuryr-daemon inside, their pods nested-vlan (802.1Q in the
# guest's kernel; this machine's has none); not VM_NODES (is_vm_node is for
# the namespace VMs). Known to the cloud (credentials, names) by default,
# kuryr-guest-1; booted on demand (kuryr-ctl.sh guest start NODE, or
# KURYR_CLOUD_BOOT_GUESTS=yes make up): a guest keeps part of a core busy.
if [ -f "$CLOUD_STATE/guest-nodes" ]; then
  GUEST_NODES=($(cat "$CLOUD_STATE/guest-nodes"))
elif [ -n "${KURYR_CLOUD_GUEST_NODES+set}" ]; then
  GUEST_NODES=($KURYR_CLOUD_GUEST_NODES)
else
  GUEST_NODES=(kuryr-guest-1)
fi
WORKER_SUBNET_CIDR=10.12.0.0/24 # the worker nodes' tenant network (on the router); VM node j gets .(10+j), guest j .(50+j)
WORKER_GW=10.12.0.1
VM_NODE_LABEL=kuryr.openstack.org/pod-vif
VM_NODE_TAINT=kuryr.openstack.org/vm-node
UNDERLAY_NS=kc-underlay
OUTSIDE_NS=kc-outside
UNDERLAY_CIDR_PREFIX=10.250.0   # node i gets .(10+i)/24
EXTERNAL_CIDR=172.24.4.0/24     # the "public" provider network
EXTERNAL_GW=172.24.4.1          # lives in the outside namespace
POD_POOL_PREFIX=10.10.0.0/16
POD_SUBNET_CIDR=10.10.0.0/24
SERVICE_CIDR=10.96.0.0/17       # Kubernetes cluster IPs: lower half of the service subnet
SERVICE_SUBNET_CIDR=10.96.0.0/16
NODE_SUBNET_CIDR=10.11.0.0/24   # the nodes' management ports
VM_SUBNET_CIDR=10.20.0.0/24     # a tenant network for the cloud's VMs (on the router)
KUBERNETES_SVC_IP=10.96.0.1     # the "kubernetes" Service (first address of SERVICE_CIDR)
CLUSTER_DNS_IP=10.96.0.10       # the "kube-dns" Service (CoreDNS)
CLUSTER_DOMAIN=cluster.local

# Control plane ports, all on 127.0.0.1 of the root namespace.
ETCD_PORT=2379
APISERVER_PORT=6443
MYSQL_PORT=3307
NEUTRON_PORT=9696
OCTAVIA_PORT=9876
KEYSTONE_PORT=5000
KUBELET_BASE_PORT=10250        # node i listens on KUBELET_BASE_PORT+i

# How OpenStack is reached: Keystone tokens, over https through the TLS
# front (tls-front.sh).
NEUTRON_URL=https://127.0.0.1:$NEUTRON_PORT
OCTAVIA_URL=https://127.0.0.1:$OCTAVIA_PORT
# The project owning the cloud's networks: Keystone's "kuryr" project (made
# by keystone.sh; empty until then).
PROJECT_ID=$(cat "$CLOUD_STATE/keystone/kuryr-project.id" 2>/dev/null || true)
CLUSTER_NAME=kuryr-local

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

node_index() { # name -> 1-based index (VM node j: 100+j, guest j: 200+j)
  local i
  for i in "${!NODES[@]}"; do
    [ "${NODES[$i]}" = "$1" ] && { echo $((i + 1)); return; }
  done
  for i in "${!VM_NODES[@]}"; do
    [ "${VM_NODES[$i]}" = "$1" ] && { echo $((i + 101)); return; }
  done
  for i in "${!GUEST_NODES[@]}"; do
    [ "${GUEST_NODES[$i]}" = "$1" ] && { echo $((i + 201)); return; }
  done
  return 1
}
is_vm_node() { local i; i=$(node_index "$1") && [ "$i" -gt 100 ] && [ "$i" -le 200 ]; }
is_guest_node() { local i; i=$(node_index "$1") && [ "$i" -gt 200 ]; }
guest_node_ip() { echo "${WORKER_SUBNET_CIDR%.*}.$((50 + $(node_index "$1") - 200))"; }
vm_node_ip() { echo "${WORKER_SUBNET_CIDR%.*}.$((10 + $(node_index "$1") - 100))"; }
# node_ip NODE: the address the node registers with (InternalIP).
node_ip() {
  if is_vm_node "$1"; then vm_node_ip "$1"; elif is_guest_node "$1"; then guest_node_ip "$1"; else node_underlay_ip "$1"; fi
}
node_ns() { echo "kc-$1"; }
node_dir() { echo "$CLOUD_STATE/nodes/$1"; }
node_underlay_ip() { echo "$UNDERLAY_CIDR_PREFIX.$((10 + $(node_index "$1")))"; }
node_kubelet_port() { echo $((KUBELET_BASE_PORT + $(node_index "$1"))); }

# pidfile helpers: every process we start records its pid in $CLOUD_RUN/pids.
pidfile() { echo "$CLOUD_RUN/pids/$1.pid"; }
is_running() {
  local f; f=$(pidfile "$1")
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

# kill_group PID: the process, and everything in its process group (socat's
# per-connection children, for instance); TERM first, KILL after 5 s.
kill_group() {
  local pid=$1 i
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
}

# stop_named NAME: stops what start_bg NAME started.
stop_named() {
  local f=$(pidfile "$1")
  [ -f "$f" ] && kill_group "$(cat "$f")"
  rm -f "$f"
}

# start_bg NAME [netns] -- CMD...: starts CMD in the background, supervised
# (supervise.sh: restarted whenever it exits, crashes of OVS/OVN daemons
# recorded), with its output in $CLOUD_LOG_DIR/NAME.log and the supervisor's
# pid in the pidfile. With a netns the command runs inside it. With HEALTH
# set (HEALTH="curl ..." start_bg ...), a process that stops answering it is
# restarted as hung.
start_bg() {
  local name=$1; shift
  local ns=""
  if [ "$1" != "--" ]; then ns=$1; shift; fi
  shift # --
  if is_running "$name"; then return 0; fi
  mkdir -p "$CLOUD_RUN/pids" "$CLOUD_RUN/sup" "$CLOUD_LOG_DIR"
  rm -f "$CLOUD_RUN/sup/$name".*
  local sup=(env CLOUD_RUN="$CLOUD_RUN" CLOUD_LOG_DIR="$CLOUD_LOG_DIR" SUPERVISE_HEALTH="${HEALTH:-}"
    "$CLOUD_SCRIPTS/supervise.sh" "$name" --)
  if [ -n "$ns" ]; then
    # nsenter keeps the root mount namespace (ip netns exec would not).
    setsid nsenter --net="/run/netns/$ns" -- "${sup[@]}" "$@" >>"$CLOUD_LOG_DIR/$name.log" 2>&1 </dev/null &
  else
    setsid "${sup[@]}" "$@" >>"$CLOUD_LOG_DIR/$name.log" 2>&1 </dev/null &
  fi
  echo $! >"$(pidfile "$name")"
}

# child_pid NAME: the pid of the supervised process (not its supervisor).
child_pid() { cat "$CLOUD_RUN/sup/$1.child" 2>/dev/null; }

# crash_child NAME [SIGNAL]: kills the process (SIGKILL by default) as a
# crash would; its supervisor restarts it and records no crash. A process
# between a crash and its restart is waited for (up to 20 s).
crash_child() {
  local pid="" i
  for i in $(seq 200); do pid=$(child_pid "$1") && break; sleep 0.1; done
  [ -n "$pid" ] || return 1
  touch "$CLOUD_RUN/sup/$1.expected"
  kill "-${2:-KILL}" "$pid" 2>/dev/null || { rm -f "$CLOUD_RUN/sup/$1.expected"; return 1; }
}

# signal_tree NAME SIGNAL: signals the supervised process and every process
# under it (an API's workers): STOP freezes a service (alive, answering
# nothing, as when all its workers block), CONT resumes it. Its supervisor's
# hang detector keeps probing: a freeze longer than HANG_PROBES x
# HANG_EVERY (40 s) is killed and restarted as hung.
signal_tree() {
  local pid; pid=$(child_pid "$1") || return 1
  local all=() todo=("$pid") p
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}; todo=("${todo[@]:1}")
    all+=("$p")
    mapfile -t -O "${#todo[@]}" todo < <(pgrep -P "$p")
  done
  kill "-$2" "${all[@]}" 2>/dev/null
}

# stop_child NAME [SIGNAL]: stops the process (SIGTERM by default; SIGKILL
# stands for a crash) and its supervisor, for good.
stop_child() {
  local name=$1 sig=${2:-TERM} f pid child i
  f=$(pidfile "$name")
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  touch "$CLOUD_RUN/sup/$name.stop"
  child=$(child_pid "$name" || true)
  if [ -n "$child" ]; then kill "-$sig" "$child" 2>/dev/null; else kill -TERM "$pid" 2>/dev/null; fi
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$f" "$CLOUD_RUN/sup/$name.stop"
}

# run_logged NAME CMD...: runs a one-shot step with its output in
# $CLOUD_LOG_DIR/NAME.log, stopping `up` with a pointer to it on failure.
run_logged() {
  local name=$1; shift
  "$@" >"$CLOUD_LOG_DIR/$name.log" 2>&1 || die "$name failed (see $CLOUD_LOG_DIR/$name.log)"
}

# wait_for DESC TIMEOUT_S CMD...: polls CMD every 0.1 s.
wait_for() {
  local desc=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && die "timed out after ${timeout}s waiting for $desc"
    sleep 0.1
  done
}

# timed NAME CMD...: runs CMD and records how long it took.
timed() {
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@"
  local t1; t1=$(date +%s.%N)
  mkdir -p "$CLOUD_RUN"
  awk -v n="$name" -v a="$t0" -v b="$t1" 'BEGIN{printf "  %-26s %6.2fs\n", n, b-a}' \
    | tee -a "$CLOUD_RUN/timings" >&2
}
