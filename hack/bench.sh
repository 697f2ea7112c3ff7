#!/usr/bin/env bash
# Runs the benchmarks on a running local cloud (make up), twice: with a
# Neutron port per pod created on demand (the default), and with ready-port
# pools (vif_pool_driver = neutron, 25 ports per node, the original's main
# start-up optimisation); then pods of VM nodes: the VM node's
# (nested-macvlan; relabelled nested-vlan, controller side) and the guest
# node's (nested-vlan, booted for it, on demand and with pools of subports);
# then Services (Octavia load balancers) and
# NetworkPolicies (security groups and peer groups) with the controller
# in its default configuration. Prints figures; asserts nothing.
# BENCH_SECTIONS picks sections (default: all of "pods vm guest services
# policies"), e.g. BENCH_SECTIONS=guest make bench.
set -euo pipefail
cd "$(dirname "$0")/.."
. _output/local-cloud.env
# The sections asked for, checked before anything is changed.
sections=" ${BENCH_SECTIONS:-pods vm guest services policies} "
[ -n "${sections// /}" ] || { echo "BENCH_SECTIONS names no section" >&2; exit 2; }
for s in $sections; do
  case $s in pods | vm | guest | services | policies) ;; *) echo "BENCH_SECTIONS: unknown section $s" >&2; exit 2 ;; esac
done
section() { [[ $sections == *" $1 "* ]]; }
# A benchmark that fails leaves the controller as its section set it (pools,
# batch sizes): put back the default.
# A guest node booted for its section is powered off.
guest=${KURYR_CLOUD_GUEST_NODES:-}
guest=${guest%% *}
trap 'rc=$?; [ $rc = 0 ] || "$KURYR_CTL" controller restart >/dev/null 2>&1 || true
  [ -z "$guest" ] || "$KURYR_CTL" guest stop "$guest" >/dev/null 2>&1 || true; exit $rc' EXIT
# The controller's count of ready pooled ports (Neutron lists a bulk
# request's ports before the request has returned them to the controller).
pool_ports() { "$KURYR_CTL" metrics | awk '/^kuryr_port_pool_free_ports/ {s += $2} END {print s + 0}'; }
# settle: wait until no pool refill is running (the count stays put for 5 s),
# so that a refill never overlaps the Neutron yardstick.
settle() {
  local last=-1 same=0 n
  for _ in $(seq 120); do
    n=$(pool_ports)
    if [ "$n" = "$last" ]; then same=$((same + 1)); else same=0; last=$n; fi
    [ $same -ge 5 ] && return 0
    sleep 1
  done
}
bench() { settle; bin/kuryr-bench ports; echo; settle; bin/kuryr-bench pods; }
# Every section starts from the controller's default configuration,
# whatever an earlier run left.
"$KURYR_CTL" controller restart
section vm && [ -z "${KURYR_CLOUD_VM_NODES:-}" ] && echo "=== no VM node in this cloud: section vm skipped"
section guest && [ -z "$guest" ] && echo "=== no guest node in this cloud: section guest skipped"

if section pods; then
  echo "=== ports created on demand ([kubernetes] vif_pool_driver = noop)"
  bench

  echo
  echo "=== ready-port pools ([kubernetes] vif_pool_driver = neutron, [vif_pool] ports_pool_min = 25)"
  "$KURYR_CTL" controller restart --set kubernetes.vif_pool_driver=neutron \
    --set vif_pool.ports_pool_min=25 --set vif_pool.ports_pool_batch=25
  want=$((25 * $(wc -w <<<"$KURYR_CLOUD_NODES")))
  for _ in $(seq 120); do
    n=$(pool_ports)
    [ "$n" -ge "$want" ] && break
    sleep 1
  done
  echo "pools filled: $n ready ports"
  bench
  "$KURYR_CTL" controller restart   # back to the default; the sweep deletes the pools
fi

if section vm && [ -n "${KURYR_CLOUD_VM_NODES:-}" ]; then
  vm=${KURYR_CLOUD_VM_NODES%% *}
  echo
  echo "=== VM node $vm: nested-macvlan pods (pairs on the VM's port)"
  settle
  bin/kuryr-bench vmpods
  echo
  echo "=== VM node $vm labelled nested-vlan: subports on demand (controller side: this kernel has no 802.1Q)"
  settle
  bin/kuryr-bench vmpods -mode nested-vlan
  echo
  echo "=== VM node $vm labelled nested-vlan: pools of subports ([vif_pool] ports_pool_min = 50)"
  "$KURYR_CTL" controller restart --set kubernetes.vif_pool_driver=neutron \
    --set vif_pool.ports_pool_min=50 --set vif_pool.ports_pool_batch=50
  bin/kuryr-bench vmpods -mode nested-vlan -pool-wait 50
  "$KURYR_CTL" controller restart
fi

# fresh_guest: the guest node booted anew (an emulated guest still tearing
# down the last run's pods would take the host's cores from the next one).
fresh_guest() {
  "$KURYR_CTL" guest stop "$guest"
  KURYR_CLOUD_GUEST_MEM_MB=3072 KURYR_CLOUD_GUEST_CPUS=2 "$KURYR_CTL" guest start "$guest"
}
if section guest && [ -n "$guest" ]; then
  echo
  echo "=== guest node $guest (a QEMU guest: software emulation, 2 vCPUs, 3 GiB): nested-vlan pods on subports, on demand"
  fresh_guest
  settle
  bin/kuryr-bench vmpods -node "$guest"
  echo
  echo "=== guest node $guest: pools of subports ([vif_pool] ports_pool_min = 50)"
  "$KURYR_CTL" controller restart --set kubernetes.vif_pool_driver=neutron \
    --set vif_pool.ports_pool_min=50 --set vif_pool.ports_pool_batch=50
  fresh_guest
  bin/kuryr-bench vmpods -node "$guest" -pool-wait 50
  "$KURYR_CTL" controller restart
  "$KURYR_CTL" guest stop "$guest"
fi

if section services; then
  echo
  echo "=== Services: Octavia load balancers (the controller in its default configuration)"
  settle
  bin/kuryr-bench services
fi

if section policies; then
  echo
  echo "=== NetworkPolicies: security groups and peer groups (200 pods: bulks of 10 ports)"
  # With bulks of 50, Neutron on 2 cores took over 30 s per bulk while 200
  # pods started: the requests timed out and Neutron leaked IPAM allocations.
  "$KURYR_CTL" controller restart --set controller.port_batch_size=10
  settle
  bin/kuryr-bench policy
  "$KURYR_CTL" controller restart
fi
