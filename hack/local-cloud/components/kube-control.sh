# etcd, kube-apiserver, kube-controller-manager and kube-scheduler, all on
# 127.0.0.1 of the root namespace. Sourced by up.sh.
#
# The API server advertises EXTERNAL_GW:APISERVER_PORT (the "kubernetes"
# Service's endpoints, kept by the lease reconciler): a relay in the outside
# namespace listens there (start_control_relays), so pods reach it through
# their router's SNAT gateway. Its serving certificate is signed by a CA of
# this cloud (KUBE_CA, made on each `up`), which is also every pod's
# service-account ca.crt.

KUBE_DIR=$CLOUD_STATE/kube
ADMIN_KUBECONFIG=$KUBE_DIR/admin.kubeconfig
KUBE_CA=$CLOUD_CA # pki.sh
# Names and addresses the API server's certificate is valid for: the
# in-cluster names and ClusterIP, the advertised address, loopback (host,
# node relays).
APISERVER_SANS="DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
APISERVER_SANS+=",DNS:kubernetes.default.svc.$CLUSTER_DOMAIN,DNS:localhost"
APISERVER_SANS+=",IP:$KUBERNETES_SVC_IP,IP:$EXTERNAL_GW,IP:127.0.0.1"

start_etcd() {
  mkdir -p "$CLOUD_STATE/etcd"
  start_bg etcd -- "${IN_ROOT[@]}" etcd --name kuryr-local --data-dir "$CLOUD_STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls http://127.0.0.1:2380 \
    --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster kuryr-local=http://127.0.0.1:2380 \
    --quota-backend-bytes 2147483648 --log-level warn
  wait_for etcd 20 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

# kube_credentials writes the service-account key pair, a static token file
# (an admin and one identity per node for the Node authorizer) and a
# kubeconfig per identity. Tokens are random per cloud.
kube_credentials() {
  mkdir -p "$KUBE_DIR"
  [ -f "$KUBE_DIR/sa.key" ] || {
    openssl genrsa -out "$KUBE_DIR/sa.key" 2048 2>/dev/null
    openssl rsa -in "$KUBE_DIR/sa.key" -pubout -out "$KUBE_DIR/sa.pub" 2>/dev/null
  }
  [ -f "$KUBE_DIR/tokens.csv" ] && return 0
  local tok n
  tok() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
  # kuryr runs in pods with its service accounts' own tokens, under the
  # RBAC of the chart (deploy/helm/kuryr).
  {
    echo "$(tok),admin,admin,system:masters"
    for n in "${NODES[@]}" "${VM_NODES[@]}" "${GUEST_NODES[@]}"; do
      echo "$(tok),system:node:$n,node-$n,system:nodes"
    done
  } >"$KUBE_DIR/tokens.csv"
  chmod 600 "$KUBE_DIR/tokens.csv"
}

# kubeconfig_for ID OUT: a kubeconfig with the token of identity ID (the
# token file's uid column), verifying the API server against the cloud's CA.
kubeconfig_for() {
  local user=$1 out=$2 token
  token=$(awk -F, -v u="$user" '$3==u {print $1}' "$KUBE_DIR/tokens.csv")
  [ -n "$token" ] || die "no token for $user"
  cat >"$out" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER_NAME
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$KUBE_CA")
users:
- name: $user
  user:
    token: $token
contexts:
- name: $CLUSTER_NAME
  context: {cluster: $CLUSTER_NAME, user: $user}
current-context: $CLUSTER_NAME
EOF
  chmod 600 "$out"
}

start_kube_control() {
  kube_credentials
  serving_cert apiserver "$APISERVER_SANS"
  kubeconfig_for admin "$ADMIN_KUBECONFIG"
  start_bg kube-apiserver -- "$K8S_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --advertise-address "$EXTERNAL_GW" --endpoint-reconciler-type lease \
    --tls-cert-file "$CLOUD_PKI/apiserver.crt" --tls-private-key-file "$CLOUD_PKI/apiserver.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --token-auth-file "$KUBE_DIR/tokens.csv" \
    --authorization-mode Node,RBAC \
    --service-account-key-file "$KUBE_DIR/sa.pub" \
    --service-account-signing-key-file "$KUBE_DIR/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --allow-privileged=true \
    --kubelet-preferred-address-types Hostname \
    --profiling=false --v 1
  wait_for kube-apiserver 60 curl -fsS --cacert "$KUBE_CA" "https://127.0.0.1:$APISERVER_PORT/readyz"
  start_bg kube-controller-manager -- "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$ADMIN_KUBECONFIG" --leader-elect=false \
    --bind-address 127.0.0.1 \
    --service-account-private-key-file "$KUBE_DIR/sa.key" \
    --root-ca-file "$KUBE_CA" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --profiling=false --v 1
  start_bg kube-scheduler -- "$K8S_BIN/kube-scheduler" \
    --kubeconfig "$ADMIN_KUBECONFIG" --leader-elect=false \
    --bind-address 127.0.0.1 --profiling=false --v 1
}
