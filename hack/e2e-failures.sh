#!/usr/bin/env bash
# Prints, at the end of a failed e2e run, what a reader of only the tail of
# its output needs: each failed test's own last lines (its messages, whatever
# ran after it), a panic or test timeout with the tests it cut short, then
# the errors the cloud's services logged during the run.
# Usage: [KURYR_LOGS=DIR KURYR_SINCE=TIME] e2e-failures.sh E2E_LOG [SERVICE_LOG OFFSET]...
# (an OpenStack service's log and its size when the run began; kuryr's pods'
# logs and the run's start).
set -uo pipefail
log_file=$1
shift

echo "===== e2e failure summary ====="
# `go test -v` prints a test's lines under "=== RUN/NAME/CONT <test>"; keep
# the last lines of each test of the current package, and print those of
# every failed one when the package ends. A panic (a test's, or the -timeout
# one) ends the package without "--- FAIL" lines: its first lines and the
# tests still running are printed, with theirs.
awk -v keep=25 '
  function flush(   i, j, t, start) {
    for (i = 1; i <= nf; i++) {
      t = failed[i]
      print "--- " t ":"
      start = n[t] > keep ? n[t] - keep + 1 : 1
      for (j = start; j <= n[t]; j++) print buf[t, j % keep]
    }
    if (panicked != "") print panicked
    delete n; delete buf; delete failed; delete seen; nf = 0; cur = ""; panicked = ""; inpanic = 0
  }
  function fail(t) { if (!(t in seen)) { seen[t] = 1; failed[++nf] = t } }
  /^(ok|FAIL|\?) +\t/ || /^FAIL\t/ { flush(); next }
  /^panic: / { inpanic = 1; panicked = "--- " $0; plines = 0; next }
  inpanic {
    if ($0 ~ /^\t\t[^ ]+ \(/) { t = $1; fail(t) }
    else if (plines++ < 6) panicked = panicked "\n" $0
    next
  }
  /^=== (RUN|NAME|CONT|PAUSE) / { cur = $3; next }
  /^ *--- (FAIL|PASS|SKIP): / { if ($2 == "FAIL:") fail($3); next }
  /^(PASS|FAIL)$/ { cur = ""; next }
  cur != "" { n[cur]++; buf[cur, n[cur] % keep] = $0 }
  END { flush() }' "$log_file"

while [ $# -ge 2 ]; do
  service_log=$1 offset=$2
  shift 2
  [ -f "$service_log" ] || continue
  echo "--- $(basename "$service_log" .log) errors during the run (first line of each, counted):"
  # A record's first line carries its request (or [-]); the ones that only
  # say "Traceback" are followed by a record that says what failed.
  tail -c +"$((offset + 1))" "$service_log" | sed -E 's/\x1b\[[0-9;]*m//g' |
    grep -E ' ERROR \S+ \[((None )?req-[^]]*|-)\] ' | grep -v 'Traceback (most recent call last):' |
    sed -E 's/^[0-9-]+ [0-9:.]+ [0-9]+ //; s/\[((None )?req-[^]]*|-)\] //; s/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}/<id>/g; s/pg_[0-9a-f_]{36}/pg_<id>/g' |
    cut -c1-220 | sort | uniq -c | sort -rn | head -15
done
# kuryr's own errors (and failures it retries) during the run, from its
# pods' logs (saved by the caller into KURYR_LOGS; KURYR_SINCE is the run's
# start, RFC 3339 UTC).
if [ -d "${KURYR_LOGS:-}" ]; then
  echo "--- kuryr errors and retried failures during the run (counted):"
  find "$KURYR_LOGS" -name '*.log' -print0 | xargs -0r cat | sed -E 's/^[^ ]+ [^ ]+ [FP] //' |
    jq -rR --arg since "${KURYR_SINCE:-}" '. as $line | (fromjson? // $line)
      | if type == "object" then
          select(.ts >= $since) | select((.level | IN("error", "dpanic", "panic", "fatal")) or ((.msg // "") | test("fail"; "i")))
          | "\(.level) \(.logger // .controller // "-"): \(.msg)" + (if .error then ": \(.error)" elif .reason then ": \(.reason)" else "" end)
        else select(test("^(panic: |fatal error: |E[0-9]{4} )")) end' |
    sed -E 's/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}/<id>/g; s/([0-9]{1,3}\.){3}[0-9]{1,3}(:[0-9]+)?/<ip>/g; s/\.openstack\.org "[^"]*"/.openstack.org "<name>"/g' |
    cut -c1-220 | sort | uniq -c | sort -rn | head -15
fi
echo "===== end of summary ====="
