# neutron-server with ML2/OVN: geneve tenant networks, a flat "public"
# provider network, ovn-router and trunk service plugins, behind Keystone
# and the TLS front. No RabbitMQ and no
# agents: with OVN the server talks to the OVN databases directly, and a fake
# transport satisfies oslo.messaging.

NEUTRON_DIR=$CLOUD_STATE/neutron
NEUTRON_CONF=$NEUTRON_DIR/neutron.conf

write_neutron_conf() {
  mkdir -p "$NEUTRON_DIR/lock"
  cat >"$NEUTRON_CONF" <<EOF
[DEFAULT]
core_plugin = ml2
service_plugins = ovn-router,trunk,segments
auth_strategy = keystone
transport_url = fake://
bind_host = 127.0.0.1
bind_port = $(listen_port "$NEUTRON_PORT")
api_workers = 2
rpc_workers = 0
rpc_state_report_workers = 0
state_path = $NEUTRON_DIR
allow_overlapping_ips = true
# A nested-macvlan VM node's pods are allowed address pairs of its port
# (Neutron's default allows 10 per port).
max_allowed_address_pair = 128
global_physnet_mtu = 1500
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
dhcp_agent_notification = false
debug = false
use_stderr = true
log_file =
# Roomy quotas: the benchmarks create hundreds of ports.
[quotas]
quota_port = -1
quota_network = -1
quota_subnet = -1
quota_security_group = -1
quota_security_group_rule = -1
quota_router = -1
quota_floatingip = -1

[database]
connection = $DB_URL_BASE/neutron
max_pool_size = 20

[oslo_concurrency]
lock_path = $NEUTRON_DIR/lock

[ml2]
mechanism_drivers = ovn
type_drivers = geneve,flat
tenant_network_types = geneve
# tag_ports_during_bulk_creation: tags in port create bodies (one request per pod, not two).
extension_drivers = port_security,dns,tag_ports_during_bulk_creation
overlay_ip_version = 4

[ml2_type_geneve]
vni_ranges = 1:65536
max_header_size = 38

[ml2_type_flat]
flat_networks = public

[securitygroup]
enable_security_group = true

[ovn]
ovn_nb_connection = unix:$OVN_NB_SOCK
ovn_sb_connection = unix:$OVN_SB_SOCK
ovn_l3_scheduler = leastloaded
# Octavia health monitors need the metadata port on each network.
ovn_metadata_enabled = true
enable_distributed_floating_ip = false

$(keystone_client_conf neutron)
$(neutron_policy_conf)
EOF
}

# The rules kuryr needs beyond a member's, as an operator installs them
# (deploy/openstack-policy), for the role kuryr's credential has.
neutron_policy_conf() {
  mkdir -p "$NEUTRON_DIR/policy.d"
  cp "$REPO_ROOT/deploy/openstack-policy/neutron-kuryr.yaml" "$NEUTRON_DIR/policy.d/"
  printf '\n[oslo_policy]\npolicy_dirs = %s\n' "$NEUTRON_DIR/policy.d"
}

start_neutron() {
  write_neutron_conf
  db_migrate neutron neutron-db-manage "${IN_ROOT[@]}" neutron-db-manage --config-file "$NEUTRON_CONF" upgrade heads
  HEALTH=$(api_health "$NEUTRON_PORT" /) start_bg neutron-server -- "${IN_ROOT[@]}" neutron-server --config-file "$NEUTRON_CONF"
  wait_for neutron-server 90 curl -fsS --cacert "$CLOUD_CA" "$NEUTRON_URL/"
}
