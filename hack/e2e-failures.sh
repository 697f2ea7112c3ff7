#!/usr/bin/env bash
# Prints, at the end of a failed e2e run, what a reader of only the tail of
# its output needs: each failed test's own last lines (its messages, whatever
# ran after it), then the errors the cloud's services logged during the run.
# Usage: e2e-failures.sh E2E_LOG NEUTRON_LOG NEUTRON_OFFSET
set -uo pipefail
log_file=$1 neutron_log=${2:-} neutron_offset=${3:-0}

echo "===== e2e failure summary ====="
# `go test -v` prints a test's lines under "=== RUN/NAME/CONT <test>"; keep
# the last 12 lines of each test and print those of every failed one.
awk '
  /^=== (RUN|NAME|CONT|PAUSE) / { cur = $3; next }
  /^(FAIL|PASS|ok |\?)/ { cur = ""; next }
  /^ *--- (FAIL|PASS|SKIP): / {
    if ($2 == "FAIL:") failed[++nf] = $3
    next
  }
  cur != "" {
    n[cur]++; buf[cur, n[cur] % 12] = $0
  }
  END {
    for (i = 1; i <= nf; i++) {
      t = failed[i]
      print "--- " t ":"
      start = n[t] > 12 ? n[t] - 11 : 1
      for (j = start; j <= n[t]; j++) print buf[t, j % 12]
    }
  }' "$log_file"

if [ -n "$neutron_log" ] && [ -f "$neutron_log" ]; then
  echo "--- neutron-server errors during the run (first line of each, counted):"
  tail -c +"$((neutron_offset + 1))" "$neutron_log" | grep -E ' ERROR .*\[(None )?req-' |
    sed -E 's/^[0-9-]+ [0-9:.]+ [0-9]+ //; s/\[[^]]*req-[^]]*\] //; s/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}/<id>/g; s/pg_[0-9a-f_]{36}/pg_<id>/g' |
    cut -c1-220 | sort | uniq -c | sort -rn | head -15
fi
echo "===== end of summary ====="
