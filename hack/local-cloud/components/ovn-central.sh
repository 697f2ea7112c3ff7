# OVN central: the northbound and southbound databases and ovn-northd. Node
# namespaces reach the southbound database through its unix socket (a node
# namespace cannot reach the root namespace's loopback); Neutron and Octavia
# use the unix sockets too.

OVN_DIR=$CLOUD_STATE/ovn
OVN_RUN=$CLOUD_RUN/ovn
OVN_NB_SOCK=$OVN_RUN/ovnnb_db.sock
OVN_SB_SOCK=$OVN_RUN/ovnsb_db.sock

start_ovsdb() { # name schema sock tcpport
  local name=$1 schema=$2 sock=$3 port=$4
  [ -f "$OVN_DIR/$name.db" ] || "${IN_ROOT[@]}" ovsdb-tool create "$OVN_DIR/$name.db" "$schema"
  start_bg "ovn-$name" -- "${IN_ROOT[@]}" ovsdb-server "$OVN_DIR/$name.db" \
    --remote="punix:$sock" --remote="ptcp:$port:127.0.0.1" \
    --unixctl="$OVN_RUN/$name.ctl" --pidfile="$OVN_RUN/$name.pid" \
    --log-file="$CLOUD_LOG_DIR/ovn-$name-ovsdb.log" -vconsole:off -vfile:info
}

start_ovn_central() {
  mkdir -p "$OVN_DIR" "$OVN_RUN"
  start_ovsdb nb /usr/share/ovn/ovn-nb.ovsschema "$OVN_NB_SOCK" 6641
  start_ovsdb sb /usr/share/ovn/ovn-sb.ovsschema "$OVN_SB_SOCK" 6642
  wait_for ovn-nb 10 "${IN_ROOT[@]}" ovsdb-client list-dbs "unix:$OVN_NB_SOCK"
  wait_for ovn-sb 10 "${IN_ROOT[@]}" ovsdb-client list-dbs "unix:$OVN_SB_SOCK"
  "${IN_ROOT[@]}" ovn-nbctl --db="unix:$OVN_NB_SOCK" --no-wait init
  "${IN_ROOT[@]}" ovn-sbctl --db="unix:$OVN_SB_SOCK" init
  start_bg ovn-northd -- "${IN_ROOT[@]}" ovn-northd --ovnnb-db="unix:$OVN_NB_SOCK" --ovnsb-db="unix:$OVN_SB_SOCK" \
    --unixctl="$OVN_RUN/northd.ctl" --pidfile="$OVN_RUN/northd.pid" \
    --log-file="$CLOUD_LOG_DIR/ovn-northd.log" -vconsole:off -vfile:info
}
