# kuryr itself on the local cloud: its binaries built from this checkout, its
# CRDs installed, and kuryr-controller running in the root namespace next to
# the control plane.

KURYR_BIN=$CLOUD_OUT/bin
# Extra controller flags (e.g. --set kubernetes.pod_subnets_driver=namespace)
# survive restarts through this file.
KURYR_CONTROLLER_ARGS=$CLOUD_STATE/kuryr/controller.args

build_kuryr() {
  mkdir -p "$KURYR_BIN"
  (cd "$REPO_ROOT" && CGO_ENABLED=0 go build -o "$KURYR_BIN/" ./cmd/...) \
    >"$CLOUD_LOG_DIR/kuryr-build.log" 2>&1 || die "building kuryr failed (see $CLOUD_LOG_DIR/kuryr-build.log)"
}

install_crds() {
  "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" apply -f "$REPO_ROOT/config/crd/" >/dev/null \
    || die "installing kuryr CRDs failed"
  "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" wait --for condition=established --timeout=30s \
    crd/kuryrports.openstack.org crd/kuryrnetworks.openstack.org >/dev/null
}

start_kuryr_controller() {
  local args=()
  [ -f "$KURYR_CONTROLLER_ARGS" ] && mapfile -t args <"$KURYR_CONTROLLER_ARGS"
  start_bg kuryr-controller -- "$KURYR_BIN/kuryr-controller" --config-file "$KURYR_CONF" \
    --zap-devel=false --zap-log-level=info "${args[@]}"
  wait_for kuryr-controller 30 curl -fsS "http://127.0.0.1:8082/readyz"
}

stop_kuryr_controller() { # [signal]
  local f; f=$(pidfile kuryr-controller)
  [ -f "$f" ] || return 0
  local pid; pid=$(cat "$f")
  kill "-${1:-TERM}" "$pid" 2>/dev/null
  local i
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$f"
}
