#!/usr/bin/env bash
# supervise.sh NAME -- CMD...: runs CMD and restarts it whenever it exits,
# as a systemd host would (Restart=always: after 0.5 s, doubling up to 8 s
# while it keeps dying within a minute of its start). Started by start_bg
# (lib.sh), which records this supervisor's pid.
#
# Every exit is logged to the component's log. An exit nobody asked for, of
# an OVS or OVN daemon (ovsdb-server, ovs-vswitchd, ovn-controller,
# ovn-northd), is also recorded in $CLOUD_RUN/crashes.log with the last lines
# of its logs: the e2e run fails on it, loudly (hack/e2e.sh).
#
# Control files in $CLOUD_RUN/sup (see lib.sh: crash_child, stop_child):
#   NAME.child     the pid of the running CMD
#   NAME.expected  the next exit was asked for: restart, record no crash
#   NAME.stop      stop: do not restart
# SIGTERM/SIGINT stop CMD (SIGTERM) and this supervisor.
#
# With SUPERVISE_HEALTH (a shell command: an API request with its own time
# bound), a process that answered once and then fails HANG_PROBES probes in
# a row, HANG_EVERY seconds apart, is hung (alive, not serving: e.g. every
# API worker blocked): it is killed and restarted, and the restart recorded
# in $CLOUD_RUN/hangs.log (`make status` shows it).
set -u
name=$1; shift 2 # NAME --
: "${CLOUD_RUN:?}" "${CLOUD_LOG_DIR:?}"
sup=$CLOUD_RUN/sup
mkdir -p "$sup"
critical=0
case "$name" in
  *-ovsdb | *-vswitchd | *-ovn-controller | ovn-nb | ovn-sb | ovn-northd) critical=1 ;;
esac
logs=("$CLOUD_LOG_DIR/$name.log")
for a in "$@"; do
  case "$a" in --log-file=*) logs+=("${a#--log-file=}") ;; esac
done

child=""
stopping=0
stop() {
  stopping=1
  [ -n "$child" ] && kill -TERM "$child" 2>/dev/null
}
trap stop TERM INT

say() { printf '%s supervise %s: %s\n' "$(date +%H:%M:%S.%3N)" "$name" "$*"; }

describe() { # exit status -> words
  local rc=$1
  if [ "$rc" -gt 128 ]; then echo "killed by signal $((rc - 128)) ($(kill -l "$((rc - 128))" 2>/dev/null))"
  else echo "exited with status $rc"; fi
}

record_crash() { # how
  local f
  {
    echo "=== $(date '+%F %T') $name $1 (restarted)"
    for f in $(printf '%s\n' "${logs[@]}" | sort -u); do
      [ -f "$f" ] || continue
      echo "--- last lines of $f:"
      tail -n 8 "$f"
    done
  } >>"$CLOUD_RUN/crashes.log"
}

HANG_PROBES=${HANG_PROBES:-4}
HANG_EVERY=${HANG_EVERY:-10}

# watch PID: the hang detector of one run of CMD (a background loop that
# ends with it).
watch() {
  local pid=$1 fails=0 served=0
  while sleep "$HANG_EVERY" && kill -0 "$pid" 2>/dev/null; do
    if bash -c "$SUPERVISE_HEALTH" >/dev/null 2>&1; then
      served=1 fails=0
      continue
    fi
    [ $served = 1 ] || continue
    fails=$((fails + 1))
    [ $fails -ge "$HANG_PROBES" ] || continue
    say "hung: its API did not answer $fails probes in a row ($((fails * HANG_EVERY)) s); killing it to restart it"
    echo "$(date '+%F %T') $name hung: no answer to $fails probes in $((fails * HANG_EVERY)) s (killed, restarted)" >>"$CLOUD_RUN/hangs.log"
    # Its workers too: a uWSGI master killed alone leaves them holding its
    # socket, and the restarted one could not bind it.
    pkill -KILL -P "$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null
    return
  done
}

delay=0.5
while [ $stopping = 0 ]; do
  started=$SECONDS
  "$@" &
  child=$!
  echo "$child" >"$sup/$name.child"
  watcher=""
  if [ -n "${SUPERVISE_HEALTH:-}" ]; then watch "$child" & watcher=$!; fi
  wait "$child"
  rc=$?
  # wait returns early (>128) on a trapped signal: wait again for the real
  # exit; 127 means the child is already reaped.
  while [ $rc -gt 128 ] && kill -0 "$child" 2>/dev/null; do
    wait "$child"
    rc=$?
    [ $rc = 127 ] && break
  done
  child=""
  # The watcher and its sleep: a sleep left behind would hold the log open.
  [ -z "$watcher" ] || { pkill -P "$watcher" 2>/dev/null; kill "$watcher" 2>/dev/null; }
  rm -f "$sup/$name.child"
  if [ $stopping = 1 ] || [ -e "$sup/$name.stop" ]; then
    rm -f "$sup/$name.stop" "$sup/$name.expected"
    say "stopped ($(describe "$rc"))"
    exit 0
  fi
  how=$(describe "$rc")
  if [ -e "$sup/$name.expected" ]; then
    rm -f "$sup/$name.expected"
    say "$how, as asked; restarting"
    delay=0.5
  else
    if [ $((SECONDS - started)) -ge 60 ]; then delay=0.5; fi
    say "$how; restarting in ${delay}s"
    [ $critical = 1 ] && record_crash "$how"
  fi
  sleep "$delay" &
  wait $! 2>/dev/null
  delay=$(awk -v d="$delay" 'BEGIN { d *= 2; if (d > 8) d = 8; print d }')
done
say "stopped"
