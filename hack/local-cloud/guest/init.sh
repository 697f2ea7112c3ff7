#!/bin/busybox sh
# /init of a guest node (components/guest-node.sh): a QEMU guest whose root
# is its initramfs, with busybox, containerd, runc, the kubelet and the
# images it runs (pause, the test image, kuryr's). It loads its modules,
# configures its NIC as its Neutron port says (guest.env), starts
# containerd, imports the images and starts the kubelet, which registers
# the node; kuryr-daemon then comes as its DaemonSet's pod. Progress goes
# to the console as "GUEST-..." lines, then the kubelet's log.
/bin/busybox --install -s /bin
export PATH=/usr/local/bin:/bin
at() { cut -d' ' -f1 /proc/uptime; }
fail() { echo "GUEST-ERROR $*"; sync; poweroff -f; }

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /sys/fs/cgroup
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup
# The kubelet needs a real filesystem under its root directory (the
# initramfs' rootfs has no statfs of its own), containerd one that overlay
# accepts as an upper directory.
mount -t tmpfs tmpfs /var/lib
mount -t tmpfs tmpfs /var/log
mount --make-rshared /
. /etc/guest.env
mkdir -p /run/netns $CNI_BIN $CNI_CONF $NODE_RUN
cp /opt/cni/bin/loopback "$CNI_BIN/"
echo "GUEST-BOOTED $(at)"

for m in $(cat /modules/modules.order); do insmod "/modules/$m.ko" || fail "insmod $m"; done
ip link set lo up
nic=$(for d in /sys/class/net/*; do [ "$(cat "$d/address")" = "$MAC" ] && basename "$d"; done)
[ -n "$nic" ] || fail "no NIC with MAC $MAC"
ip link set "$nic" name "$NIC" && ip link set "$NIC" mtu "$MTU" up || fail "NIC $nic"
ip addr add "$ADDR" dev "$NIC" && ip route add default via "$GW" || fail "address $ADDR via $GW"
hostname "$NODE"
echo "$NODE" >/etc/hostname
echo "${ADDR%/*} $NODE" >>/etc/hosts
# As on every Kubernetes node: node ports are forwarded to pods.
sysctl -qw net.ipv4.ip_forward=1
echo "GUEST-NIC $NIC $ADDR $(at)"

containerd --config /etc/containerd/config.toml --log-level warn 2>&1 | sed 's/^/containerd: /' &
i=0
until ctr version >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 120 ] || fail "containerd did not start"; sleep 1
done
for t in /images/*.tar; do
  ctr -n k8s.io images import --no-unpack=false "$t" >/dev/null || fail "import $t"
done
echo "GUEST-CONTAINERD $(at)"

kubelet --config /etc/kubelet/config.yaml --kubeconfig /etc/kubelet/kubeconfig \
  --hostname-override "$NODE" --node-ip "${ADDR%/*}" --node-labels "$LABELS" --housekeeping-interval 30s --v 0 2>&1 | sed 's/^/kubelet: /' &
echo "GUEST-KUBELET $(at)"
while sleep 60; do echo "GUEST-UP $(at) s, $(free -m | awk '/Mem/ {print $3}') MiB used"; done
