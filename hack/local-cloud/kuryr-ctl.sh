#!/usr/bin/env bash
# Controls the kuryr processes of a running local cloud; used by the e2e
# tests and handy by hand.
#   kuryr-ctl.sh controller start|stop|kill|restart [controller flags...]
#   kuryr-ctl.sh daemons restart
#   kuryr-ctl.sh standby start|kill [controller flags...]   a second controller (ports 8083/9656)
# restart and start with flags replace the saved extra flags; `kill` is
# SIGKILL (a crash), `stop` a clean SIGTERM.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for f in "$CLOUD_SCRIPTS"/components/*.sh; do . "$f"; done

if [ "${1:-}" = daemons ] && [ "${2:-}" = restart ]; then
  for n in "${NODES[@]}"; do
    f=$(pidfile "$n-kuryr-daemon")
    if [ -f "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; fi
    rm -f "$f"
  done
  sleep 0.5
  for n in "${NODES[@]}"; do start_kuryr_daemon "$n"; wait_for "$n kuryr-daemon" 30 daemon_ready "$n"; done
  exit 0
fi
if [ "${1:-}" = standby ]; then
  case "${2:-}" in
    start) shift 2
      start_bg kuryr-controller-standby -- "$KURYR_BIN/kuryr-controller" --config-file "$KURYR_CONF" \
        --zap-devel=false --set health_server.port=8083 --set prometheus_exporter.controller_exporter_port=9656 "$@"
      wait_for kuryr-controller-standby 30 curl -fsS http://127.0.0.1:8083/livez ;;
    kill) f=$(pidfile kuryr-controller-standby)
      if [ -f "$f" ]; then kill -KILL "$(cat "$f")" 2>/dev/null || true; fi
      rm -f "$f" ;;
    *) die "usage: $0 standby start|kill" ;;
  esac
  exit 0
fi
[ "${1:-}" = controller ] || die "usage: $0 controller start|stop|kill|restart [flags...] | daemons restart"
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
