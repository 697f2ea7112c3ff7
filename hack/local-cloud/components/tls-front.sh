# The OpenStack endpoints' TLS front: HAProxy terminates TLS (a certificate
# of the cloud's CA, pki.sh) on the public ports and forwards to the services
# on their backend ports, as production deployments put their APIs behind a
# load balancer. The services parse X-Forwarded-Proto, so the links they
# return (pagination, version documents) are https.

TLS_FRONT_DIR=$CLOUD_STATE/tls-front
OPENSTACK_SANS="DNS:localhost,IP:127.0.0.1"

# The port each service listens on behind the front (the public port + 10000).
backend_port() { echo $(($1 + 10000)); }

write_tls_front_conf() {
  mkdir -p "$TLS_FRONT_DIR"
  cat "$CLOUD_PKI/openstack.crt" "$CLOUD_PKI/openstack.key" >"$TLS_FRONT_DIR/openstack.pem"
  chmod 600 "$TLS_FRONT_DIR/openstack.pem"
  {
    cat <<EOF2
global
  maxconn 4096
defaults
  mode http
  option forwardfor
  # A connection per request to the services: uWSGI's http-socket closes
  # each one after its answer, and a reused, closed one fails the request.
  option http-server-close
  timeout connect 5s
  timeout client 310s
  timeout server 310s
  timeout http-keep-alive 30s
EOF2
    local svc port
    for svc in "keystone $KEYSTONE_PORT" "neutron $NEUTRON_PORT" "octavia $OCTAVIA_PORT"; do
      set -- $svc
      cat <<EOF2
frontend $1
  bind 127.0.0.1:$2 ssl crt $TLS_FRONT_DIR/openstack.pem
  http-request set-header X-Forwarded-Proto https
  default_backend $1
backend $1
  server $1 127.0.0.1:$(backend_port "$2")
EOF2
    done
  } >"$TLS_FRONT_DIR/haproxy.cfg"
}

start_tls_front() {
  serving_cert openstack "$OPENSTACK_SANS"
  write_tls_front_conf
  start_bg tls-front -- "${IN_ROOT[@]}" haproxy -W -db -f "$TLS_FRONT_DIR/haproxy.cfg"
  wait_for "the TLS front" 10 curl -s -o /dev/null --cacert "$CLOUD_CA" "https://127.0.0.1:$KEYSTONE_PORT/"
}

# api_health PUBLIC-PORT PATH: the liveness probe of an API service (its own
# port, unauthenticated), for its supervisor: a hung one is restarted.
api_health() { echo "curl -fsS -m 10 -o /dev/null http://127.0.0.1:$(listen_port "$1")$2"; }

# listen_port PUBLIC-PORT: where a service listens, behind the front.
listen_port() { backend_port "$1"; }
