# The Neutron resources kuryr needs, created idempotently by name (a second
# `up` finds and reuses them). Everything is owned by PROJECT_ID and tagged
# "kuryr-local-cloud", so tests can tell it from what kuryr creates.
#
#   public          flat external network on physnet "public" (172.24.4.0/24)
#   kuryr-pods      subnet pool 10.10.0.0/16, /24 per subnet
#   kuryr-pod-net   default pod network + subnet from that pool
#   kuryr-service-net / -subnet  10.96.0.0/16: Kubernetes cluster IPs are the
#                   lower half; Neutron allocates only from the upper half,
#                   and the gateway is the last address (10.96.0.1 is the
#                   "kubernetes" Service)
#   kuryr-node-net / -subnet  10.11.0.0/24: the nodes' management ports
#                   (kuryr creates one per node; the node reaches pods
#                   through it, without NAT)
#   kuryr-router    gateway on "public", interfaces on the pod, service and
#                   node subnets
#   kuryr-pods-default  security group ([neutron_defaults] pod_security_groups):
#                   ingress from the nodes (kubelet probes reach pods whatever
#                   the NetworkPolicies) and from the service subnet (a pod
#                   reaching itself through its Service arrives from the VIP);
#                   no egress. What else pods admit comes from kuryr's
#                   NetworkPolicy groups (kuryr-open-ingress/-egress for pods
#                   no policy isolates).

NEUTRON_API=$NEUTRON_URL/v2.0
BOOTSTRAP_TAG=kuryr-local-cloud

neutron() { # METHOD PATH [JSON]
  local args=(-fsS -X "$1" -H 'Content-Type: application/json' "$NEUTRON_API$2")
  [ -n "${3:-}" ] && args+=(-d "$3")
  os_curl "${args[@]}" || die "neutron $1 $2 failed"
}

# find_id COLLECTION NAME: the id of the one resource with that name, or "".
find_id() {
  neutron GET "/$1?name=$2&fields=id" | jq -r --arg c "$1" '.[$c | sub("-";"_")][0].id // empty'
}

# ensure COLLECTION NAME BODY: id of the named resource, created if missing.
ensure() {
  local coll=$1 name=$2 body=$3 id key
  id=$(find_id "$coll" "$name")
  if [ -z "$id" ]; then
    key=${coll%s}; key=${key//-/_}; [ "$coll" = subnetpools ] && key=subnetpool
    [ "$coll" = security-groups ] && key=security_group
    id=$(neutron POST "/$coll" "{\"$key\": $(jq -c --arg n "$name" --arg p "$PROJECT_ID" \
      '. + {name: $n, project_id: $p}' <<<"$body")}" | jq -r ".$key.id")
    neutron PUT "/$coll/$id/tags/$BOOTSTRAP_TAG" >/dev/null
  fi
  echo "$id"
}

router_has_interface() { # router subnet
  neutron GET "/ports?device_id=$1&fields=fixed_ips" | jq -e --arg s "$2" \
    '[.ports[].fixed_ips[].subnet_id] | index($s) != null' >/dev/null
}

# bootstrap_neutron: the networks, subnets, router and security group the
# cloud's users find. The independent chains are made at once (each
# request waits on Neutron, not on the CPU), then the router joins them.
bootstrap_neutron() {
  local d pids=(); d=$(mktemp -d)
  os_curl -fsS -o /dev/null "$NEUTRON_API/networks?limit=1" # one admin token for all
  ( pub=$(ensure networks public '{"router:external": true, "provider:network_type": "flat",
      "provider:physical_network": "public", "shared": true}') && echo "$pub" >"$d/pub"
    ensure subnets public-subnet "$(jq -nc --arg n "$pub" --arg c "$EXTERNAL_CIDR" --arg g "$EXTERNAL_GW" \
      '{network_id: $n, cidr: $c, ip_version: 4, gateway_ip: $g, enable_dhcp: false,
        allocation_pools: [{start: "172.24.4.10", end: "172.24.4.250"}]}')" >"$d/pubsub" ) & pids+=($!)
  ( pool=$(ensure subnetpools kuryr-pods "$(jq -nc --arg p "$POD_POOL_PREFIX" \
      '{prefixes: [$p], default_prefixlen: 24, min_prefixlen: 16, max_prefixlen: 28}')") && echo "$pool" >"$d/pool"
    podnet=$(ensure networks kuryr-pod-net '{}') && echo "$podnet" >"$d/podnet"
    ensure subnets kuryr-pod-subnet "$(jq -nc --arg n "$podnet" --arg p "$pool" --arg c "$POD_SUBNET_CIDR" \
      '{network_id: $n, subnetpool_id: $p, cidr: $c, ip_version: 4, enable_dhcp: false}')" >"$d/podsub" ) & pids+=($!)
  ( svcnet=$(ensure networks kuryr-service-net '{}') && echo "$svcnet" >"$d/svcnet"
    ensure subnets kuryr-service-subnet "$(jq -nc --arg n "$svcnet" --arg c "$SERVICE_SUBNET_CIDR" \
      '{network_id: $n, cidr: $c, ip_version: 4, enable_dhcp: false, gateway_ip: "10.96.255.254",
        allocation_pools: [{start: "10.96.128.1", end: "10.96.255.253"}]}')" >"$d/svcsub" ) & pids+=($!)
  ( nodenet=$(ensure networks kuryr-node-net '{}') && echo "$nodenet" >"$d/nodenet"
    ensure subnets kuryr-node-subnet "$(jq -nc --arg n "$nodenet" --arg c "$NODE_SUBNET_CIDR" \
      '{network_id: $n, cidr: $c, ip_version: 4, enable_dhcp: false}')" >"$d/nodesub" ) & pids+=($!)
  ( vmnet=$(ensure networks kuryr-vm-net '{}') && echo "$vmnet" >"$d/vmnet"
    ensure subnets kuryr-vm-subnet "$(jq -nc --arg n "$vmnet" --arg c "$VM_SUBNET_CIDR" \
      '{network_id: $n, cidr: $c, ip_version: 4, enable_dhcp: false}')" >"$d/vmsub" ) & pids+=($!)
  ( sg=$(ensure security-groups kuryr-pods-default '{"description": "kuryr pods: reached by the nodes (health checks) and by their own Services (hairpin)"}') \
      && echo "$sg" >"$d/sg" && ensure_pod_sg_rules "$sg" ) & pids+=($!)
  local p rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc = 0 ] || die "neutron bootstrap failed"
  local pub pubsub pool podnet podsub svcnet svcsub nodenet nodesub vmnet vmsub router sg f
  for f in pub pubsub pool podnet podsub svcnet svcsub nodenet nodesub vmnet vmsub sg; do
    [ -s "$d/$f" ] || die "neutron bootstrap: no $f"
    printf -v "$f" '%s' "$(cat "$d/$f")"
  done
  rm -rf "$d"
  router=$(ensure routers kuryr-router "$(jq -nc --arg n "$pub" '{external_gateway_info: {network_id: $n, enable_snat: true}}')")
  local s
  for s in "$podsub" "$svcsub" "$nodesub" "$vmsub"; do
    router_has_interface "$router" "$s" || neutron PUT "/routers/$router/add_router_interface" "{\"subnet_id\": \"$s\"}" >/dev/null
  done
  router_commit_all "$router"
  declare -g BS_PUBLIC_NET=$pub BS_PUBLIC_SUBNET=$pubsub BS_POD_POOL=$pool BS_POD_NET=$podnet \
    BS_POD_SUBNET=$podsub BS_SERVICE_NET=$svcnet BS_SERVICE_SUBNET=$svcsub BS_NODE_SUBNET=$nodesub BS_ROUTER=$router BS_POD_SG=$sg \
    BS_VM_NET=$vmnet BS_VM_SUBNET=$vmsub
}

router_commit_all() {
  "${IN_ROOT[@]}" ovn-nbctl --db="unix:$OVN_NB_SOCK" --timeout=10 \
    set Logical_Router "neutron-$1" options:ct-commit-all=true
}

# ensure_pod_sg_rules SG: exactly the base group's rules (a cloud made by an
# older version, which admitted the pods here and all egress, converges).
ensure_pod_sg_rules() {
  local sg=$1 want rule id cidr
  want=$(printf '%s\n' "ingress IPv4 $NODE_SUBNET_CIDR" "ingress IPv4 $SERVICE_SUBNET_CIDR")
  while read -r id rule; do
    [ -n "$id" ] || continue
    grep -qxF "$rule" <<<"$want" || neutron DELETE "/security-group-rules/$id" >/dev/null
  done < <(neutron GET "/security-group-rules?security_group_id=$sg" |
    jq -r '.security_group_rules[] | "\(.id) \(.direction) \(.ethertype) \(.remote_ip_prefix // "any")"')
  for cidr in "$NODE_SUBNET_CIDR" "$SERVICE_SUBNET_CIDR"; do
    neutron GET "/security-group-rules?security_group_id=$sg&direction=ingress&remote_ip_prefix=$cidr" |
      jq -e '.security_group_rules | length > 0' >/dev/null && continue
    neutron POST /security-group-rules "$(jq -nc --arg sg "$sg" --arg c "$cidr" --arg p "$PROJECT_ID" \
      '{security_group_rule: {security_group_id: $sg, direction: "ingress", ethertype: "IPv4", remote_ip_prefix: $c, project_id: $p}}')" >/dev/null
  done
}
