#!/usr/bin/env bash
# Runs the end-to-end tests against the local cloud. If no cloud is running,
# brings one up first and tears it down afterwards (pass or fail); a cloud a
# developer started with `make up` is used as it is and left running.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
. hack/local-cloud/lib.sh

owned=0
if ! bash hack/local-cloud/status.sh >/dev/null 2>&1; then
  owned=1
  trap 'log "e2e: tearing the local cloud down"; bash hack/local-cloud/down.sh >/dev/null 2>&1 || true' EXIT
  bash hack/local-cloud/down.sh >/dev/null 2>&1 || true # leftovers of a crashed run
  # Keystone tokens live 5 minutes: every client (kuryr's, the tests') has
  # to renew its token many times during the run, as it must in production.
  KURYR_CLOUD_TOKEN_LIFETIME=${KURYR_CLOUD_TOKEN_LIFETIME:-300} bash hack/local-cloud/up.sh >/dev/null
fi
# shellcheck disable=SC1090
. "$CLOUD_ENV_FILE"
log "e2e: running against the local cloud (brought up by this run: $([ $owned = 1 ] && echo yes || echo no))"
# Crashes of OVS/OVN daemons during the run fail it (supervise.sh records
# them; the processes were restarted, but a crash is a bug to see).
crashes=$CLOUD_RUN/crashes.log
crash_offset=$(stat -c %s "$crashes" 2>/dev/null || echo 0)
# The OpenStack services' errors during the run go into the failure
# summary (the ovn provider logs inside octavia-api).
service_logs=()
for s in neutron-server octavia-api octavia-driver-agent; do
  service_logs+=("$CLOUD_LOG_DIR/$s.log" "$(stat -c %s "$CLOUD_LOG_DIR/$s.log" 2>/dev/null || echo 0)")
done
run_start=$(date -u +%Y-%m-%dT%H:%M:%S)
# CI's tier leaves out the long tier's tests (KURYR_E2E_LONG=1 runs them;
# docs/testing.md says what of each CI's run still checks): the suite has
# to end within CI's 90 minutes on the 2-core machine CI runs on.
long_tier='^(TestControllerKilledMidway|TestUnboundPortIsBoundAgain|TestPortPool|TestStaticPod|TestNeutronRestartDuringBurst'
long_tier+='|TestPeersMoveBetweenKinds|TestProviderLostState|TestControllerKilledWhileCreatingServices|TestRefusalsOutliveRefusePorts'
long_tier+='|TestSessionAffinity|TestNodePortLocal|TestSelectorlessHeadlessExternalName|TestUpgradeFromPrevious'
long_tier+='|TestPodsOnGuestNode)$'
skip=()
[ -n "${KURYR_E2E_LONG:-}" ] || [ -n "${E2E_RUN:-}" ] || skip=(-skip "$long_tier")
set +e
go test -tags e2e -count=1 -timeout "${E2E_TIMEOUT:-40m}" -p 1 ${E2E_RUN:+-run "$E2E_RUN"} "${skip[@]}" -v ./test/e2e/... \
  2>&1 | tee "$CLOUD_LOG_DIR/e2e.log" | grep --line-buffered -vE '^=== (PAUSE|CONT)'
rc=${PIPESTATUS[0]}
# The long tier (KURYR_E2E_LONG=1, docs/testing.md): the fault campaigns at
# full size, and the same tests again with their workloads on the VM nodes
# (and on the hypervisors: KURYR_E2E_POD_NODES=vms, test/e2e/framework)
# (docs/nested.md names the others and why). CI's run covers VM nodes with
# the nested and faults suites. A run narrowed by E2E_RUN does only what
# E2E_VM_RUN says.
vm_default='^(TestRollingRestart|TestVMsAndPods|TestLoadBalancerService)$'
[ -n "${KURYR_E2E_LONG:-}" ] || vm_default=
if [ -n "${E2E_RUN:-}" ]; then vm_run=${E2E_VM_RUN:-}; else vm_run=${E2E_VM_RUN-$vm_default}; fi
if [ -n "$vm_run" ] && [ -n "${KURYR_CLOUD_VM_NODES:-}" ]; then
  log "e2e: again with the workloads on the VM nodes ($KURYR_CLOUD_VM_NODES) and the hypervisors: $vm_run"
  KURYR_E2E_POD_NODES=vms go test -tags e2e -count=1 -timeout "${E2E_TIMEOUT:-40m}" -p 1 -run "$vm_run" -v \
    ./test/e2e/workload/ ./test/e2e/vms/ ./test/e2e/services/ \
    2>&1 | tee -a "$CLOUD_LOG_DIR/e2e.log" | grep --line-buffered -vE '^=== (PAUSE|CONT)'
  vm_rc=${PIPESTATUS[0]}
  [ "$vm_rc" = 0 ] || rc=$vm_rc
fi
# Last: a migration from the original (its CRDs in place of kuryr's),
# kubectl kuryr uninstall and helm uninstall then kuryr installed again,
# an upgrade (destructive for everything else on the cloud: its own build
# tag). E2E_RUN narrows them too when E2E_DESTRUCTIVE is set.
if [ -z "${E2E_RUN:-}" ] || [ -n "${E2E_DESTRUCTIVE:-}" ]; then
  log "e2e: migration, uninstall and install again, upgrade"
  go test -tags e2e,destructive -count=1 -timeout 25m -p 1 ${E2E_DESTRUCTIVE:+${E2E_RUN:+-run "$E2E_RUN"}} "${skip[@]}" -v ./test/e2e/uninstall/ \
    2>&1 | tee -a "$CLOUD_LOG_DIR/e2e.log" | grep --line-buffered -vE '^=== (PAUSE|CONT)'
  un_rc=${PIPESTATUS[0]}
  [ "$un_rc" = 0 ] || rc=$un_rc
fi
set -e
if [ -s "$crashes" ] && [ "$(stat -c %s "$crashes")" -gt "$crash_offset" ]; then
  log "e2e: FAIL: OVS/OVN daemons crashed during the run (restarted by their supervisors):"
  tail -c +"$((crash_offset + 1))" "$crashes" >&2
  rc=1
fi
# Last, so that it is what the tail of the output shows.
if [ "$rc" != 0 ]; then
  # kuryr's pods' logs, those of pods since replaced included.
  bash hack/local-cloud/kuryr-ctl.sh save-logs || true
  KURYR_LOGS="$CLOUD_LOG_DIR/kuryr-pods" KURYR_SINCE=$run_start \
    bash hack/e2e-failures.sh "$CLOUD_LOG_DIR/e2e.log" "${service_logs[@]}" || true
  # Neutron, overloaded, can leak IPAM allocations (an address held without
  # a port): a subnet then answers 409 IpAddressGenerationFailure to every
  # later create, and every later test fails for that.
  . hack/local-cloud/components/mysql.sh
  leaked=$(mysql_cli -N neutron -e "SELECT COUNT(*) FROM ipamallocations a JOIN ipamsubnets s ON a.ipam_subnet_id = s.id
    LEFT JOIN ipallocations i ON i.ip_address = a.ip_address AND i.subnet_id = s.neutron_subnet_id
    WHERE i.ip_address IS NULL" 2>/dev/null || echo "?")
  log "e2e: Neutron IPAM allocations without a port after the run (leaked unless a create is in flight): $leaked"
fi
exit "$rc"
