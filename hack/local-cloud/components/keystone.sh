# Keystone: fernet tokens of KEYSTONE_TOKEN_LIFETIME
# seconds (KURYR_CLOUD_TOKEN_LIFETIME; short lifetimes prove that kuryr renews
# its tokens), under uWSGI behind the TLS front. What it holds:
#   region RegionOne; services "network" (Neutron) and "load-balancer"
#   (Octavia), each with public, internal and admin endpoints (all https);
#   project "service" with users neutron and octavia (admin: they act for
#   everyone); project "kuryr" owning the cloud's networks, with user kuryr
#   (roles member, load-balancer_member and kuryr, the role the policy file
#   deploy/openstack-policy gives what kuryr needs beyond a member's) and its
#   application credential "kuryr-local-cloud", which kuryr authenticates with;
#   the admin user of `keystone-manage bootstrap` for tests and people.
# Credentials land in $KEYSTONE_DIR and in _output/clouds.yaml.

KEYSTONE_DIR=$CLOUD_STATE/keystone
KEYSTONE_CONF=$KEYSTONE_DIR/keystone.conf
KEYSTONE_TOKEN_LIFETIME=${KURYR_CLOUD_TOKEN_LIFETIME:-3600}
KEYSTONE_URL=https://127.0.0.1:$KEYSTONE_PORT
REGION=RegionOne
ADMIN_PASSWORD=kuryr-local-admin
SERVICE_PASSWORD=kuryr-local-service
KURYR_PASSWORD=kuryr-local-kuryr

write_keystone_conf() {
  mkdir -p -m 700 "$KEYSTONE_DIR/fernet-keys" "$KEYSTONE_DIR/receipt-keys" "$KEYSTONE_DIR/credential-keys"
  cat >"$KEYSTONE_CONF" <<EOF
[DEFAULT]
debug = false
use_stderr = true

[database]
connection = $DB_URL_BASE/keystone

[token]
provider = fernet
expiration = $KEYSTONE_TOKEN_LIFETIME

[fernet_tokens]
key_repository = $KEYSTONE_DIR/fernet-keys

# Auth receipts (multi-factor rules) have a key repository of their own,
# /etc/keystone/fernet-keys/ by default, which the provider requires at
# start (keystone-manage bootstrap exits "… does not exist" without it):
# the Debian root has it only when the package's postinst made it.
[fernet_receipts]
key_repository = $KEYSTONE_DIR/receipt-keys

# The cheapest bcrypt: every password and application credential secret is
# checked on each token request, which takes about a second at the default
# cost on a busy 2-core machine.
[identity]
password_hash_rounds = 4

[credential]
key_repository = $KEYSTONE_DIR/credential-keys

[oslo_middleware]
enable_proxy_headers_parsing = true
EOF
}

# keystone_wsgi: uWSGI's arguments for Keystone's public application.
keystone_wsgi() {
  if [ -e "$CLOUD_ROOT/usr/bin/keystone-wsgi-public" ]; then echo --wsgi-file /usr/bin/keystone-wsgi-public
  else echo --module keystone.wsgi.api:application; fi
}

# keystone_db PASSWORD REGION URL: Keystone's schema and its admin, region
# and catalog entry (the arguments are part of the dump's key).
keystone_db() {
  local km=("${IN_ROOT[@]}" keystone-manage --config-file "$KEYSTONE_CONF")
  "${km[@]}" db_sync
  "${km[@]}" bootstrap --bootstrap-password "$1" --bootstrap-region-id "$2" \
    --bootstrap-admin-url "$3/v3" --bootstrap-public-url "$3/v3" --bootstrap-internal-url "$3/v3"
}

# key_repository DIR: a Fernet key repository as keystone-manage
# fernet_setup and credential_setup make it (0 staged, 1 primary), without
# two more Python processes: a key is 32 random bytes, base64url.
key_repository() {
  [ -f "$1/0" ] && return 0
  mkdir -p "$1" && chmod 700 "$1"
  local i
  for i in 0 1; do (umask 077; openssl rand -base64 32 | tr '+/' '-_' >"$1/$i"); done
}

start_keystone() {
  write_keystone_conf
  key_repository "$KEYSTONE_DIR/fernet-keys"
  key_repository "$KEYSTONE_DIR/receipt-keys"
  key_repository "$KEYSTONE_DIR/credential-keys"
  db_migrate keystone keystone-db-sync keystone_db "$ADMIN_PASSWORD" "$REGION" "$KEYSTONE_URL"
  # shellcheck disable=SC2046 # keystone_wsgi's words are separate arguments
  HEALTH=$(api_health "$KEYSTONE_PORT" /v3) start_bg keystone -- "${IN_ROOT[@]}" uwsgi --plugin python3 \
    --http-socket "127.0.0.1:$(backend_port "$KEYSTONE_PORT")" $(keystone_wsgi) \
    --add-header "Connection: close" \
    --processes 3 --master --die-on-term --lazy-apps --enable-threads --disable-logging \
    --env "OS_KEYSTONE_CONFIG_FILES=$KEYSTONE_CONF" --pyargv "--config-file $KEYSTONE_CONF"
  wait_for keystone 60 curl -fsS --cacert "$CLOUD_CA" "$KEYSTONE_URL/v3"
}

# ks METHOD PATH [JSON]: Keystone's API as admin (os_curl: the admin token
# it keeps for a minute).
ks_token() { # user password project
  curl -fsS --cacert "$CLOUD_CA" -o /dev/null -D - -H 'Content-Type: application/json' \
    -d "$(jq -nc --arg u "$1" --arg p "$2" --arg pr "$3" '{auth: {identity: {methods: ["password"],
      password: {user: {name: $u, domain: {id: "default"}, password: $p}}},
      scope: {project: {name: $pr, domain: {id: "default"}}}}}')" "$KEYSTONE_URL/v3/auth/tokens" \
    | awk 'tolower($1) == "x-subject-token:" {print $2}' | tr -d '\r'
}
ks() {
  local args=(-fsS -X "$1" -H 'Content-Type: application/json' "$KEYSTONE_URL/v3$2")
  [ -n "${3:-}" ] && args+=(-d "$3")
  os_curl "${args[@]}" || die "keystone $1 $2 failed"
}

# ks_ensure COLLECTION NAME BODY [FILTER]: the id of the named resource,
# created with BODY (+ its name) if missing.
ks_ensure() {
  local coll=$1 name=$2 body=$3 filter=${4:-} id
  id=$(ks GET "/$coll?name=$name$filter" | jq -r --arg c "$coll" '.[$c][0].id // empty')
  [ -n "$id" ] || id=$(ks POST "/$coll" "{\"${coll%s}\": $(jq -c --arg n "$name" '. + {name: $n}' <<<"$body")}" \
    | jq -r ".${coll%s}.id")
  echo "$id"
}

ks_grant() { ks PUT "/projects/$1/users/$2/roles/$3" >/dev/null; }

ks_endpoints() { # service-id url
  local iface
  for iface in public internal admin; do
    ks GET "/endpoints?service_id=$1&interface=$iface" | jq -e '.endpoints | length > 0' >/dev/null && continue
    ks POST /endpoints "$(jq -nc --arg s "$1" --arg u "$2" --arg i "$iface" --arg r "$REGION" \
      '{endpoint: {service_id: $s, url: $u, interface: $i, region_id: $r, enabled: true}}')" >/dev/null
  done
}

# bootstrap_keystone: the projects, users, roles, services and endpoints
# above, idempotently; the kuryr project's id and the application credential
# in $KEYSTONE_DIR.
bootstrap_keystone() {
  local service kuryr admin_role member_role lbm_role kuryr_role u id
  service=$(ks_ensure projects service '{"domain_id": "default"}')
  kuryr=$(ks_ensure projects kuryr '{"domain_id": "default", "description": "owns the local cloud'"'"'s networks and what kuryr creates"}')
  admin_role=$(ks_ensure roles admin '{}')
  member_role=$(ks_ensure roles member '{}')
  lbm_role=$(ks_ensure roles load-balancer_member '{}')
  kuryr_role=$(ks_ensure roles kuryr '{"description": "what kuryr needs beyond a member: deploy/openstack-policy"}')
  for u in neutron octavia; do
    id=$(ks_ensure users "$u" "$(jq -nc --arg p "$SERVICE_PASSWORD" --arg d "$service" \
      '{domain_id: "default", password: $p, default_project_id: $d}')")
    ks_grant "$service" "$id" "$admin_role"
  done
  id=$(ks_ensure users kuryr "$(jq -nc --arg p "$KURYR_PASSWORD" --arg d "$kuryr" \
    '{domain_id: "default", password: $p, default_project_id: $d}')")
  for u in "$member_role" "$lbm_role" "$kuryr_role"; do ks_grant "$kuryr" "$id" "$u"; done
  ks_endpoints "$(ks_ensure services neutron '{"type": "network"}')" "https://127.0.0.1:$NEUTRON_PORT"
  ks_endpoints "$(ks_ensure services octavia '{"type": "load-balancer"}')" "https://127.0.0.1:$OCTAVIA_PORT"
  echo "$kuryr" >"$KEYSTONE_DIR/kuryr-project.id"
  [ -s "$KEYSTONE_DIR/kuryr-appcred.json" ] || kuryr_application_credential "$id"
}

# kuryr_application_credential USER-ID: made by the kuryr user itself (as
# an operator makes one), with its roles in the kuryr project.
kuryr_application_credential() {
  curl -fsS --cacert "$CLOUD_CA" -H 'Content-Type: application/json' \
    -H "X-Auth-Token: $(ks_token kuryr "$KURYR_PASSWORD" kuryr)" \
    -d '{"application_credential": {"name": "kuryr-local-cloud", "description": "kuryr on the local cloud"}}' \
    "$KEYSTONE_URL/v3/users/$1/application_credentials" \
    | jq '.application_credential | {id, secret}' >"$KEYSTONE_DIR/kuryr-appcred.json.tmp" \
    || die "creating kuryr's application credential failed"
  mv "$KEYSTONE_DIR/kuryr-appcred.json.tmp" "$KEYSTONE_DIR/kuryr-appcred.json"
}

# keystone_client_conf USER: the sections with which a service (neutron,
# octavia) validates tokens and reaches other services as USER of the
# service project.
keystone_client_conf() {
  local s
  for s in keystone_authtoken service_auth; do
    cat <<EOF
[$s]
www_authenticate_uri = $KEYSTONE_URL
auth_url = $KEYSTONE_URL
auth_type = password
username = $1
password = $SERVICE_PASSWORD
project_name = service
user_domain_id = default
project_domain_id = default
region_name = $REGION
cafile = $CLOUD_CA

EOF
  done
  cat <<EOF
[oslo_middleware]
enable_proxy_headers_parsing = true
EOF
}

# os_curl CURL-ARGS...: curl to an OpenStack API as the cloud's admin: with
# an admin token (reused for a minute) and the cloud's CA.
os_curl() {
  local f=$KEYSTONE_DIR/admin.token
  if [ -z "$(find "$f" -mmin -1 2>/dev/null)" ]; then
    ks_token admin "$ADMIN_PASSWORD" admin >"$f.tmp.$BASHPID" && mv "$f.tmp.$BASHPID" "$f"
  fi
  curl --cacert "$CLOUD_CA" -H "X-Auth-Token: $(cat "$f")" "$@"
}
