#!/usr/bin/env bash
# Controls kuryr (a Deployment and a DaemonSet in kube-system) and the
# processes of a running local cloud; used by the e2e tests and handy by hand.
#   kuryr-ctl.sh controller start|stop|kill|restart [controller flags...]
#   kuryr-ctl.sh daemons restart       rolling restart of the DaemonSet
#   kuryr-ctl.sh upgrade               rebuild the image from this checkout,
#                                      import it, roll both out (an upgrade)
#   kuryr-ctl.sh install               install kuryr again (after an
#                                      uninstall): the chart with the last
#                                      image, then CoreDNS restarted (its
#                                      pods lost their ports)
#   kuryr-ctl.sh install-release DIR   install a release (make release's
#                                      _output/release/VERSION): its image
#                                      imported, its packaged chart upgraded
#                                      to (kept until the next upgrade)
#   kuryr-ctl.sh leader                the pod holding the controller Lease
#   kuryr-ctl.sh metrics               the active controller's metrics
#   kuryr-ctl.sh crash NAME [SIGNAL]   kill a process (SIGKILL by default) as
#                                      a crash would; the kubelet or its
#                                      supervisor restarts it. NAME:
#                                      kuryr-controller (the leader's
#                                      container), NODE-kuryr-daemon, or a
#                                      supervised process as in _output/logs
#                                      (kuryr-node-1-vswitchd, neutron-server...)
#   kuryr-ctl.sh freeze|thaw NAME      SIGSTOP (SIGCONT) a supervised process
#                                      and its workers: a hung service
#   kuryr-ctl.sh hangs                 the processes restarted as hung
#   kuryr-ctl.sh save-logs             copy the kuryr pods' logs into the
#                                      cloud's log directory (kept after
#                                      their pods are gone)
#   kuryr-ctl.sh crash kuryr-controller SIGNAL POD
#                                      signal that controller pod's container
#                                      (STOP freezes a leader, CONT resumes it)
#   kuryr-ctl.sh pid NAME              the pid of a supervised process, or
#                                      of NODE-kuryr-daemon's container
#   kuryr-ctl.sh sql DB STATEMENT      run SQL in a service's database (as
#                                      an operator repairs what an API cannot)
#   kuryr-ctl.sh nbctl ARGS...         ovn-nbctl on the cloud's OVN northbound
#   kuryr-ctl.sh appctl NODE CMD...    ovs-appctl on a node's ovs-vswitchd
#   kuryr-ctl.sh guest start|stop NODE boot a guest node (components/guest-node.sh)
#                                      until it is Ready with its kuryr-daemon;
#                                      power it off and delete its Node
# Flags given to start or restart become the controller Deployment's extra
# args (kept until the next start or restart); restart rolls both replicas
# and waits for a ready leader. `kill` SIGKILLs every controller container
# and scales the Deployment to 0 until `start`; `stop` is a clean scale-down.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for f in "$CLOUD_SCRIPTS"/components/*.sh; do . "$f"; done

save_args() { [ $# -gt 0 ] && printf '%s\n' "$@" >"$KURYR_CONTROLLER_ARGS" || rm -f "$KURYR_CONTROLLER_ARGS"; }

# apply_controller [restart]: the manifests with the saved flags; with
# "restart", a new restartedAt so that the controller rolls even when its
# args did not change. Waits for the rollout and a ready leader.
apply_controller() {
  local stamp
  stamp=$(kk -n "$KURYR_NS" get deployment kuryr-controller \
    -o jsonpath='{.spec.template.metadata.annotations.kuryr\.openstack\.org/restartedAt}' 2>/dev/null || true)
  [ "${1:-}" = restart ] && stamp=$(date +%s.%N)
  helm_kuryr "${stamp:-0}"
  kk -n "$KURYR_NS" rollout status deployment/kuryr-controller --timeout=180s >/dev/null \
    || die "kuryr-controller did not roll out"
  wait_for "a ready kuryr-controller leader" 60 leader_ready
}

# leader_ready: the Lease names a current pod, and that pod is Ready.
leader_ready() {
  local l pod node cid
  l=$(kuryr_leader) || return 1
  while read -r pod node cid; do
    [ "$pod" = "$l" ] || continue
    nsenter --net="/run/netns/$(node_ns "$node")" curl -fsS --max-time 2 http://127.0.0.1:8082/readyz >/dev/null
    return
  done < <(kuryr_pods controller)
  return 1
}

# crash_kuryr COMPONENT NODE|"" SIGNAL: kills the component's container (on
# NODE, or the leader's for the controller). A container not running yet
# (restarting, or in the kubelet's back-off after earlier crashes) is
# waited for, up to 330 s (the kubelet's back-off reaches 300 s), as a
# crash can only hit a running process.
crash_kuryr() {
  local until=$((SECONDS + 330))
  while [ $SECONDS -lt $until ]; do
    crash_kuryr_once "$@" && return 0
    sleep 0.5
  done
  die "no running kuryr $1 container${2:+ on $2} to crash"
}

crash_kuryr_once() {
  local want=$2 pod node cid
  if [ "$1" = controller ] && [ -z "$want" ]; then want=$(kuryr_leader) || return 1; fi
  while read -r pod node cid; do
    if { [ "$1" = controller ] && [ "$pod" = "$want" ]; } || { [ "$1" = daemon ] && [ "$node" = "$want" ]; }; then
      [ -n "$cid" ] && crash_container "$node" "$cid" "$3" 2>/dev/null
      return
    fi
  done < <(kuryr_pods "$1")
  return 1
}

# The kubelet removes a deleted pod's logs: keep kuryr's before any action
# that may replace its pods (the e2e tests' restarts), for the record.
case "${1:-}" in controller|daemons|upgrade|crash|save-logs) save_kuryr_logs ;; esac

case "${1:-}" in
  crash)
    [ -n "${2:-}" ] || die "usage: $0 crash NAME [SIGNAL] | crash kuryr-controller SIGNAL POD"
    case "$2" in
      kuryr-controller) crash_kuryr controller "${4:-}" "${3:-KILL}" ;;
      *-kuryr-daemon) crash_kuryr daemon "${2%-kuryr-daemon}" "${3:-KILL}" ;;
      *) crash_child "$2" "${3:-KILL}" || die "$2 is not running" ;;
    esac
    exit 0 ;;
  freeze|thaw)
    # A supervised process and its workers stopped (SIGSTOP: alive,
    # answering nothing) or resumed.
    sig=STOP; [ "$1" = thaw ] && sig=CONT
    signal_tree "${2:?usage: $0 freeze|thaw NAME}" "$sig" || die "$2 is not running"
    exit 0 ;;
  save-logs) exit 0 ;; # saved above
  hangs)
    # The processes the supervisors restarted as hung (supervise.sh).
    cat "$CLOUD_RUN/hangs.log" 2>/dev/null || true
    exit 0 ;;
  pid)
    case "${2:?usage: $0 pid NAME}" in
      *-kuryr-daemon) kuryr_pid daemon "${2%-kuryr-daemon}" || die "$2 is not running" ;;
      *) child_pid "$2" || die "$2 is not running" ;;
    esac
    exit 0 ;;
  sql)
    [ $# -eq 3 ] || die "usage: $0 sql DB STATEMENT"
    mysql_cli "$2" -e "$3"
    exit 0 ;;
  nbctl)
    shift
    "${IN_ROOT[@]}" ovn-nbctl --db="unix:$OVN_NB_SOCK" "$@"
    exit 0 ;;
  appctl)
    [ $# -ge 3 ] || die "usage: $0 appctl NODE COMMAND..."
    node=$2
    shift 2
    "${IN_ROOT[@]}" ovs-appctl -t "$(node_run "$node")/ovs-vswitchd.ctl" "$@"
    exit 0 ;;
  leader)
    kuryr_leader || die "no kuryr-controller leader"
    exit 0 ;;
  metrics)
    l=$(kuryr_leader) || die "no kuryr-controller leader"
    node=$(kk -n "$KURYR_NS" get pod "$l" -o jsonpath='{.spec.nodeName}')
    nsenter --net="/run/netns/$(node_ns "$node")" curl -fsSk \
      -H "Authorization: Bearer $(awk '$1 == "token:" {print $2; exit}' "$ADMIN_KUBECONFIG")" https://127.0.0.1:9654/metrics
    exit 0 ;;
  daemons)
    [ "${2:-}" = restart ] || die "usage: $0 daemons restart"
    # Every kuryr-daemon DaemonSet: the hypervisors' and the VM nodes'.
    mapfile -t sets < <(kk -n "$KURYR_NS" get daemonsets -o name | grep '^daemonset.apps/kuryr-daemon')
    kk -n "$KURYR_NS" rollout restart "${sets[@]}" >/dev/null
    for ds in "${sets[@]}"; do
      kk -n "$KURYR_NS" rollout status "$ds" --timeout=180s >/dev/null || die "${ds#*/} did not roll out"
    done
    exit 0 ;;
  upgrade)
    build_kuryr
    import_kuryr_images
    deploy_kuryr
    wait_for "a ready kuryr-controller leader" 60 leader_ready
    exit 0 ;;
  install)
    deploy_kuryr
    wait_for "a ready kuryr-controller leader" 60 leader_ready
    kk -n kube-system rollout restart deployment/coredns >/dev/null
    kk -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null || die "CoreDNS did not roll out"
    exit 0 ;;
  install-release)
    [ $# -eq 2 ] && [ -f "$2/image.ref" ] || die "usage: $0 install-release DIR (make release's _output/release/VERSION)"
    chart=$(ls "$2"/kuryr-*.tgz 2>/dev/null | head -1)
    [ -n "$chart" ] || die "no packaged chart (kuryr-*.tgz) in $2"
    import_kuryr_images "$2/kuryr-image.oci.tar" "$2/image.ref"
    realpath "$chart" >"$KURYR_CHART_FILE"
    deploy_kuryr
    wait_for "a ready kuryr-controller leader" 60 leader_ready
    exit 0 ;;
  guest)
    [ $# -eq 3 ] && is_guest_node "$3" || die "usage: $0 guest start|stop NODE (one of: ${GUEST_NODES[*]})"
    case "$2" in
      # A guest that did not come up is stopped (its init powers it off on
      # an error, and QEMU, supervised, would boot it again and again).
      start) "$BASH" "$0" guest boot "$3" \
        || { stop_guest_node "$3"; die "guest $3 did not start (its console: $CLOUD_LOG_DIR/$3-vm.log)"; } ;;
      boot) timed "$3" start_guest_node "$3" ;;
      stop) stop_guest_node "$3" ;;
      *) die "usage: $0 guest start|stop NODE" ;;
    esac
    exit 0 ;;
  controller) ;;
  *) die "usage: $0 controller|daemons|upgrade|leader|metrics|crash|freeze|thaw|hangs|save-logs|pid|sql|nbctl|appctl|guest ..." ;;
esac
action=${2:-}
shift 2 || true
case "$action" in
  start) [ $# -gt 0 ] && save_args "$@"; apply_controller ;;
  stop)
    kk -n "$KURYR_NS" scale deployment/kuryr-controller --replicas=0 >/dev/null
    kk -n "$KURYR_NS" wait --for=delete pod -l "$KURYR_CONTROLLER_PODS" --timeout=90s >/dev/null 2>&1 || true ;;
  kill)
    # SIGKILL first, so that no controller does any clean shutdown work.
    while read -r pod node cid; do
      [ -n "$cid" ] && crash_container "$node" "$cid" KILL || true
    done < <(kuryr_pods controller)
    kk -n "$KURYR_NS" scale deployment/kuryr-controller --replicas=0 >/dev/null
    kk -n "$KURYR_NS" delete pod -l "$KURYR_CONTROLLER_PODS" --grace-period=0 --force >/dev/null 2>&1 || true ;;
  restart) save_args "$@"; apply_controller restart ;;
  *) die "unknown action $action" ;;
esac
