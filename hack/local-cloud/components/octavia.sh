# Octavia API and driver agent with only the OVN provider: load balancers are
# OVN load balancers, no amphora VMs, no worker and no message queue. The
# driver agent's sockets must stay at their default paths under
# /var/run/octavia, so there can be one such Octavia per machine.

OCTAVIA_DIR=$CLOUD_STATE/octavia
OCTAVIA_CONF=$OCTAVIA_DIR/octavia.conf
OCTAVIA_API_WORKERS=${KURYR_CLOUD_OCTAVIA_WORKERS:-4}

write_octavia_conf() {
  mkdir -p "$OCTAVIA_DIR/lock" /var/run/octavia
  cat >"$OCTAVIA_CONF" <<EOF
[DEFAULT]
transport_url = fake://
debug = false
use_stderr = true

[api_settings]
bind_host = 127.0.0.1
bind_port = $(listen_port "$OCTAVIA_PORT")
auth_strategy = keystone
enabled_provider_drivers = ovn:Octavia OVN driver
default_provider_driver = ovn
allow_tls_terminated_listeners = false

[database]
connection = $DB_URL_BASE/octavia
max_pool_size = 10

[driver_agent]
enabled_provider_agents = ovn

[oslo_concurrency]
lock_path = $OCTAVIA_DIR/lock

[ovn]
ovn_nb_connection = unix:$OVN_NB_SOCK
ovn_sb_connection = unix:$OVN_SB_SOCK

[controller_worker]
loadbalancer_topology = SINGLE

$(octavia_neutron_conf)
EOF
}

# Octavia and its OVN provider read Neutron through keystoneauth: as the
# octavia service user, Neutron's endpoint from the catalog.
octavia_neutron_conf() {
  keystone_client_conf octavia
  printf '\n[neutron]\nregion_name = %s\nvalid_interfaces = internal\ncafile = %s\n' "$REGION" "$CLOUD_CA"
}

start_octavia() {
  write_octavia_conf
  db_migrate octavia octavia-db-manage "${IN_ROOT[@]}" octavia-db-manage --config-file "$OCTAVIA_CONF" upgrade head
  start_bg octavia-driver-agent -- "${IN_ROOT[@]}" octavia-driver-agent --config-file "$OCTAVIA_CONF"
  # As production runs it: under uWSGI with several processes. Octavia's own
  # octavia-api is wsgiref's single-threaded server, which serializes every
  # request (20 load balancers created at once took 88 s with it).
  # uWSGI's http-socket closes every connection after its answer: it says
  # so (Connection: close), or clients reuse a closed connection and see a
  # POST reset. --enable-threads, as devstack and production set it: the ovn
  # provider works in threads of the API process (its request helper, its
  # OVSDB connection), which without it run only while a request holds the
  # worker, so load balancers went ACTIVE only as fast as they were polled.
  HEALTH=$(api_health "$OCTAVIA_PORT" /) start_bg octavia-api -- "${IN_ROOT[@]}" uwsgi --plugin python3 --http-socket "127.0.0.1:$(listen_port "$OCTAVIA_PORT")" \
    --add-header "Connection: close" --enable-threads --thunder-lock \
    --wsgi-file /usr/bin/octavia-wsgi --processes "$OCTAVIA_API_WORKERS" --master --die-on-term --lazy-apps \
    --disable-logging --pyargv "--config-file $OCTAVIA_CONF"
  wait_for octavia-api 60 curl -fsS --cacert "$CLOUD_CA" "$OCTAVIA_URL/"
}
