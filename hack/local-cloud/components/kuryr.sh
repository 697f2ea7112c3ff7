# kuryr itself on the local cloud, installed as a Kubernetes workload the way
# an operator installs it: its image built from this checkout and imported
# into every node's containerd (there is no registry), then its Helm chart
# (deploy/helm/kuryr) with the bootstrap's kuryr.conf and the image's tag.

KURYR_BIN=$CLOUD_OUT/bin
KURYR_IMAGE_TAR=$CLOUD_OUT/images/kuryr.tar
KURYR_IMAGE_REF_FILE=$CLOUD_OUT/images/kuryr.ref
# The image the nodes have (imported), which the manifests name: not the
# last one built, which may not be imported yet.
KURYR_DEPLOYED_REF=$CLOUD_STATE/kuryr/image.ref
# Extra controller flags (e.g. --set kubernetes.pod_subnets_driver=namespace)
# survive restarts through this file; they become the Deployment's args.
KURYR_CONTROLLER_ARGS=$CLOUD_STATE/kuryr/controller.args
KURYR_NS=kube-system
KURYR_CONTROLLER_PODS=app.kubernetes.io/name=kuryr,app.kubernetes.io/component=controller

kk() { "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

# build_kuryr: the binaries (tests and benches use them from the host) and
# the image.
build_kuryr() {
  mkdir -p "$KURYR_BIN"
  # Built once, with the image's flags; the image takes these binaries.
  { (cd "$REPO_ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags="-s -w $(bash hack/ldflags.sh)" -o "$KURYR_BIN/" ./cmd/...) \
      && KURYR_IMAGE_BINARIES=$KURYR_BIN bash "$REPO_ROOT/hack/image.sh"; } \
    >"$CLOUD_LOG_DIR/kuryr-build.log" 2>&1 || die "building kuryr failed (see $CLOUD_LOG_DIR/kuryr-build.log)"
}

# import_kuryr_images [TAR REF_FILE]: the last built image (or a
# release's: kuryr-ctl.sh install-release) into every node's containerd;
# from then on the manifests name it.
import_kuryr_images() {
  local n tar=${1:-$KURYR_IMAGE_TAR} ref=${2:-$KURYR_IMAGE_REF_FILE}
  # This checkout's image goes with this checkout's chart.
  [ $# -gt 0 ] || rm -f "$KURYR_CHART_FILE"
  for n in "${NODES[@]}" "${VM_NODES[@]}"; do
    ctr_node "$n" -n k8s.io images import --no-unpack=false --platform linux/amd64 \
      "$tar" >/dev/null || die "importing the kuryr image into $n failed"
  done
  mkdir -p "$(dirname "$KURYR_DEPLOYED_REF")"
  cp "$ref" "$KURYR_DEPLOYED_REF"
  # A guest node takes the image when it boots (its containerd is inside).
  for n in "${GUEST_NODES[@]}"; do
    is_running "$n-vm" && log "guest node $n runs an older kuryr image: restart it (kuryr-ctl.sh guest stop $n; ... start $n)"
  done
  return 0
}

# The chart installed: this checkout's, or a release's packaged chart
# (kuryr-ctl.sh install-release) until the next build from the checkout.
KURYR_CHART_FILE=$CLOUD_STATE/kuryr/chart
kuryr_chart() {
  if [ -s "$KURYR_CHART_FILE" ]; then cat "$KURYR_CHART_FILE"; else echo "$REPO_ROOT/deploy/helm/kuryr"; fi
}

# The local cloud's values for the chart (deploy/helm/kuryr), beside the
# generated kuryr.conf, the Secret's clouds.yaml and the cloud's CA.
KURYR_VALUES=$CLOUD_STATE/kuryr/values.json

# kuryr_conf_values: kuryr.conf (INI) as the chart's `config` values,
# without what the chart sets itself (where it mounts the credentials). A
# line it cannot read is an error, not a value dropped.
kuryr_conf_values() {
  jq -Rn 'reduce (inputs | sub("^\\s+"; "") | select(length > 0 and (startswith("#") or startswith(";") | not))) as $l
      ({s: null, c: {}};
       if ($l | test("^\\[.*\\]$")) then .s = ($l | ltrimstr("[") | rtrimstr("]")) | .c[.s] //= {}
       elif .s == null then error("kuryr.conf: an option before any section: \($l)")
       else (($l | capture("^(?<k>[^=]+?)\\s*=\\s*(?<v>.*)$")) // error("kuryr.conf: cannot read: \($l)")) as $kv
         | .c[.s][$kv.k] = $kv.v end)
    | .c | del(.neutron.clouds_file)' "$1"
}

# write_kuryr_values [STAMP]: the chart's values for the local cloud: its
# kuryr.conf, the image the nodes have, the nodes' paths under CLOUD_STATE
# (each node has its own CNI directories and kuryr-cni socket and, on
# hypervisor nodes, Open vSwitch: the daemon takes its node's from
# $(KUBERNETES_NODE_NAME)), a DaemonSet per kind of VM node, the saved extra
# controller flags and a restart stamp (a rollout even when nothing else
# changed).
write_kuryr_values() {
  local ref nodes=$CLOUD_STATE/nodes run=$CLOUD_STATE/run/nodes nested='[]'
  ref=$(cat "$KURYR_DEPLOYED_REF")
  mkdir -p "$(dirname "$KURYR_VALUES")"
  # VM nodes reach the API server as a VM on the cloud does, through their
  # router (the "kubernetes" Service's endpoint on the outside network).
  local vm_args
  vm_args=$(jq -nc --arg a "$nodes/\$(KUBERNETES_NODE_NAME)/attachments" \
    '["--set=kubernetes.api_root=https://172.24.4.1:6443", "--set=cni_daemon.attachments_dir=\($a)"]')
  # nested-macvlan (KURYR_CLOUD_VM_NODES): longer than the controller's bind
  # timeout (60 s), which a VM pod's port made by a controller that then
  # died waits out (docs/nested.md).
  [ ${#VM_NODES[@]} -gt 0 ] && nested=$(jq -c --argjson a "$vm_args" \
    '. + [{name: "nested", podVif: "nested-macvlan", extraArgs: ($a + ["--set=cni_daemon.vif_annotation_timeout=90"])}]' <<<"$nested")
  # nested-vlan (KURYR_CLOUD_GUEST_NODES: the guest's initramfs has the
  # same paths).
  [ ${#GUEST_NODES[@]} -gt 0 ] && nested=$(jq -c --argjson a "$vm_args" \
    '. + [{name: "nested-vlan", podVif: "nested-vlan", extraArgs: $a}]' <<<"$nested")
  jq -n --argjson config "$(kuryr_conf_values "$KURYR_CONF")" --arg repo "${ref%:*}" --arg tag "${ref##*:}" \
    --arg stamp "${1:-0}" --arg nodes "$nodes" --arg run "$run" --argjson nested "$nested" \
    --argjson args "$(if [ -s "$KURYR_CONTROLLER_ARGS" ]; then jq -Rn '[inputs]' <"$KURYR_CONTROLLER_ARGS"; else echo '[]'; fi)" '
    {image: {repository: $repo, tag: $tag},
     config: $config,
     controller: {extraArgs: $args, podAnnotations: {"kuryr.openstack.org/restartedAt": $stamp}},
     daemon: {
       hostPaths: {openvswitch: "", socketDir: "", cniBin: "", cniConf: "", state: ""},
       extraArgs: [
         "--set=cni_daemon.socket_path=\($run)/$(KUBERNETES_NODE_NAME)/kuryr-cni.sock",
         "--set=cni_daemon.cni_bin_dir=\($nodes)/$(KUBERNETES_NODE_NAME)/cni/bin",
         "--set=cni_daemon.cni_conf_dir=\($nodes)/$(KUBERNETES_NODE_NAME)/cni/net.d",
         "--set=cni_daemon.ovsdb_connection=unix:\($run)/$(KUBERNETES_NODE_NAME)/db.sock",
         # OVS userspace datapath never completes partial checksums.
         "--set=cni_daemon.disable_tx_checksum_offload=true"],
       extraVolumes: [
         {name: "cloud-run-nodes", hostPath: {path: $run, type: "Directory"}},
         {name: "cloud-nodes", hostPath: {path: $nodes, type: "Directory"}}],
       extraVolumeMounts: [
         {name: "cloud-run-nodes", mountPath: $run},
         {name: "cloud-nodes", mountPath: $nodes}]},
     nestedDaemons: $nested}' >"$KURYR_VALUES"
}

# helm_kuryr [STAMP]: install or upgrade the release "kuryr" with the local
# cloud's values (server-side apply, taking over what kubectl scale or
# rollout restart changed since).
helm_kuryr() {
  local helm
  helm=$(CACHE=$CLOUD_CACHE bash "$REPO_ROOT/hack/helm.sh") || die "building helm failed"
  write_kuryr_values "${1:-0}"
  replace_old_daemonsets
  "$helm" upgrade --install kuryr "$(kuryr_chart)" --kubeconfig "$ADMIN_KUBECONFIG" \
    --namespace "$KURYR_NS" --server-side=true --force-conflicts --take-ownership --values "$KURYR_VALUES" \
    --set-file openstack.cloudsYaml="$KURYR_CLOUDS_YAML" --set-file openstack.caBundle="$CLOUD_CA" \
    >"$CLOUD_LOG_DIR/kuryr-deploy.log" 2>&1 \
    || die "helm upgrade --install kuryr failed (see $CLOUD_LOG_DIR/kuryr-deploy.log)"
}

# replace_old_daemonsets: kuryr-daemon DaemonSets made before each had a
# selector of its own (kuryr.openstack.org/daemonset; a selector cannot
# change) are deleted, so that the chart makes them again (the nodes' pods
# keep their network; new pods wait for the new daemons).
replace_old_daemonsets() {
  local ds sets
  sets=$(kk -n "$KURYR_NS" get daemonsets -l app.kubernetes.io/name=kuryr -o json) || die "listing kuryr's DaemonSets failed"
  for ds in $(jq -r '.items[] | select(.spec.selector.matchLabels["kuryr.openstack.org/daemonset"] == null) | .metadata.name' <<<"$sets"); do
    log "replacing DaemonSet $ds (its selector predates kuryr.openstack.org/daemonset)"
    kk -n "$KURYR_NS" delete daemonset "$ds" --wait=true >/dev/null
  done
}

# deploy_kuryr: install kuryr through its chart and wait until every kuryr
# pod is rolled out.
deploy_kuryr() {
  helm_kuryr
  kuryr_rollout_wait
}

kuryr_rollout_wait() {
  kk -n "$KURYR_NS" rollout status daemonset/kuryr-daemon --timeout=180s >/dev/null \
    || die "kuryr-daemon did not roll out: kubectl -n $KURYR_NS describe ds/kuryr-daemon"
  if [ ${#VM_NODES[@]} -gt 0 ]; then
    kk -n "$KURYR_NS" rollout status daemonset/kuryr-daemon-nested --timeout=240s >/dev/null \
      || die "kuryr-daemon-nested did not roll out: kubectl -n $KURYR_NS describe ds/kuryr-daemon-nested"
  fi
  kk -n "$KURYR_NS" rollout status deployment/kuryr-controller --timeout=180s >/dev/null \
    || die "kuryr-controller did not roll out: kubectl -n $KURYR_NS describe deploy/kuryr-controller"
}

# kuryr_pods COMPONENT: "pod node containerID" of each kuryr pod running
# COMPONENT (controller, daemon); the container id only while it runs
# (between a crash and its restart, e.g. in the kubelet's back-off, none).
kuryr_pods() {
  kk -n "$KURYR_NS" get pods -l "app.kubernetes.io/name=kuryr,app.kubernetes.io/component=$1" -o json \
    | jq -r '.items[] | select(.metadata.deletionTimestamp == null)
        | "\(.metadata.name) \(.spec.nodeName) \(if .status.containerStatuses[0].state.running then .status.containerStatuses[0].containerID else "" end)"'
}

# kuryr_pid COMPONENT NODE: the host pid of the component's container on
# NODE.
kuryr_pid() {
  local pod node cid
  while read -r pod node cid; do
    [ "$node" = "$2" ] && [ -n "$cid" ] || continue
    ctr_node "$node" -n k8s.io tasks ls \
      | awk -v id="${cid#containerd://}" '$1 == id && $3 == "RUNNING" {print $2; f=1} END {exit !f}'
    return
  done < <(kuryr_pods "$1")
  return 1
}

# kuryr_leader: the pod holding the controller_ha Lease.
kuryr_leader() {
  local id
  id=$(kk -n "$KURYR_NS" get lease kuryr-controller -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) || return 1
  [ -n "$id" ] && echo "${id%_*}"
}

# crash_container NODE CONTAINER_ID [SIGNAL]: kills a container's process as
# a crash would (SIGKILL by default); the kubelet restarts it.
crash_container() {
  ctr_node "$1" -n k8s.io tasks kill -s "${3:-KILL}" "${2#containerd://}" >/dev/null
}

# save_kuryr_logs: the kuryr pods' container logs (the kubelets' files, one
# per container restart) into the cloud's log directory, where they stay
# after their pods are gone.
save_kuryr_logs() {
  local n d
  for n in "${NODES[@]}" "${VM_NODES[@]}"; do
    for d in "$(node_dir "$n")"/kubelet/pod-logs/kube-system_kuryr-*; do
      [ -d "$d" ] || continue
      mkdir -p "$CLOUD_LOG_DIR/kuryr-pods"
      cp -r "$d" "$CLOUD_LOG_DIR/kuryr-pods/" 2>/dev/null || true
    done
  done
}

daemon_ready() { nsenter --net="/run/netns/$(node_ns "$1")" curl -fsS http://127.0.0.1:8090/readyz; }
