# Cluster DNS: CoreDNS as the Deployment "coredns" and the Service
# "kube-dns" (CLUSTER_DNS_IP) in kube-system, from manifests/coredns.yaml.
# The kubelets point pods at CLUSTER_DNS_IP (node-kube.sh). `up` applies it
# and does not wait for it: CoreDNS needs Services (the "kubernetes" one to
# reach the API server, "kube-dns" to be reached).

COREDNS_MANIFEST=$CLOUD_SCRIPTS/manifests/coredns.yaml

coredns_manifest() {
  sed -e "s|@COREDNS_IMAGE@|$(cat "$IMAGES_DIR/coredns.ref")|g" \
    -e "s|@CLUSTER_DNS_IP@|$CLUSTER_DNS_IP|g" -e "s|@CLUSTER_DOMAIN@|$CLUSTER_DOMAIN|g" "$COREDNS_MANIFEST"
}

deploy_coredns() {
  coredns_manifest | "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" apply -f - \
    >"$CLOUD_LOG_DIR/coredns-apply.log" 2>&1 || die "applying CoreDNS failed (see $CLOUD_LOG_DIR/coredns-apply.log)"
}
