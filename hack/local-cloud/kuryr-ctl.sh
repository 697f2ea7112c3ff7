#!/usr/bin/env bash
# Controls the processes of a running local cloud; used by the e2e tests and
# handy by hand.
#   kuryr-ctl.sh controller start|stop|kill|restart [controller flags...]
#   kuryr-ctl.sh daemons restart
#   kuryr-ctl.sh standby start|kill [controller flags...]   a second controller (ports 8083/9656)
#   kuryr-ctl.sh crash NAME [SIGNAL]   kill a supervised process (SIGKILL by
#                                      default) as a crash would; its
#                                      supervisor restarts it (NAME as in
#                                      _output/logs: kuryr-node-1-vswitchd,
#                                      kuryr-controller, neutron-server...)
#   kuryr-ctl.sh pid NAME              the pid of a supervised process
# restart and start with flags replace the saved extra flags; `kill` is
# SIGKILL (a crash) and the controller stays down until `start`; `stop` is
# a clean SIGTERM.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for f in "$CLOUD_SCRIPTS"/components/*.sh; do . "$f"; done

case "${1:-}" in
  crash)
    [ -n "${2:-}" ] || die "usage: $0 crash NAME [SIGNAL]"
    crash_child "$2" "${3:-KILL}" || die "$2 is not running"
    exit 0 ;;
  pid)
    child_pid "${2:?usage: $0 pid NAME}" || die "$2 is not running"
    exit 0 ;;
  daemons)
    [ "${2:-}" = restart ] || die "usage: $0 daemons restart"
    for n in "${NODES[@]}"; do stop_child "$n-kuryr-daemon"; done
    for n in "${NODES[@]}"; do start_kuryr_daemon "$n"; wait_for "$n kuryr-daemon" 30 daemon_ready "$n"; done
    exit 0 ;;
  standby)
    case "${2:-}" in
      start) shift 2
        start_bg kuryr-controller-standby -- "$KURYR_BIN/kuryr-controller" --config-file "$KURYR_CONF" \
          --zap-devel=false --set health_server.port=8083 --set prometheus_exporter.controller_exporter_port=9656 "$@"
        wait_for kuryr-controller-standby 30 curl -fsS http://127.0.0.1:8083/livez ;;
      kill) stop_child kuryr-controller-standby KILL ;;
      *) die "usage: $0 standby start|kill" ;;
    esac
    exit 0 ;;
  controller) ;;
  *) die "usage: $0 controller|daemons|standby|crash|pid ..." ;;
esac
action=${2:-}
shift 2 || true
save_args() { [ $# -gt 0 ] && printf '%s\n' "$@" >"$KURYR_CONTROLLER_ARGS" || rm -f "$KURYR_CONTROLLER_ARGS"; }
case "$action" in
  start) [ $# -gt 0 ] && save_args "$@"; start_kuryr_controller ;;
  stop) stop_kuryr_controller TERM ;;
  kill) stop_kuryr_controller KILL ;;
  restart) stop_kuryr_controller TERM; save_args "$@"; start_kuryr_controller ;;
  *) die "unknown action $action" ;;
esac
