# Cluster DNS: CoreDNS as the Deployment "coredns" and the Service
# "kube-dns" (CLUSTER_DNS_IP) in kube-system, from manifests/coredns.yaml.
# The kubelets point pods at CLUSTER_DNS_IP (node-kube.sh). `up` applies it
# and does not wait for it: CoreDNS needs Services (the "kubernetes" one to
# reach the API server, "kube-dns" to be reached).

COREDNS_MANIFEST=$CLOUD_SCRIPTS/manifests/coredns.yaml
# KURYR_CLOUD_COREDNS=0 leaves CoreDNS out (the image is still imported).
CLUSTER_DNS_ENABLED=${KURYR_CLOUD_COREDNS:-1}

coredns_manifest() {
  sed -e "s|@COREDNS_IMAGE@|$(cat "$IMAGES_DIR/coredns.ref")|g" \
    -e "s|@CLUSTER_DNS_IP@|$CLUSTER_DNS_IP|g" -e "s|@CLUSTER_DOMAIN@|$CLUSTER_DOMAIN|g" "$COREDNS_MANIFEST"
}

deploy_coredns() {
  if [ "$CLUSTER_DNS_ENABLED" = 0 ]; then
    log "cluster DNS: left out (KURYR_CLOUD_COREDNS=0)"
    return 0
  fi
  coredns_manifest | "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" apply -f - \
    >"$CLOUD_LOG_DIR/coredns-apply.log" 2>&1 || die "applying CoreDNS failed (see $CLOUD_LOG_DIR/coredns-apply.log)"
}
