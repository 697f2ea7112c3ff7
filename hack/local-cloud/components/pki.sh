# The cloud's private CA and the serving certificates it signs: the
# Kubernetes API server's, and the OpenStack endpoints' (the TLS front,
# tls-front.sh). Made once per cloud (`down` removes them); the CA is also
# every pod's service-account ca.crt and the CA bundle kuryr trusts for
# OpenStack.

# (CLOUD_PKI, CLOUD_CA: lib.sh)

pki_conf() { # SANS -> an openssl configuration on stdout
  cat <<CNF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = kuryr-local-cloud-ca
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[serving]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = $1
CNF
}

cloud_ca() {
  mkdir -p "$CLOUD_PKI"
  [ -f "$CLOUD_CA" ] && return 0
  pki_conf "DNS:localhost" >"$CLOUD_PKI/ca.cnf"
  openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 -config "$CLOUD_PKI/ca.cnf" -extensions ca \
    -keyout "$CLOUD_PKI/ca.key" -out "$CLOUD_CA.tmp" 2>/dev/null || die "creating the cloud's CA failed"
  chmod 600 "$CLOUD_PKI/ca.key"
  mv "$CLOUD_CA.tmp" "$CLOUD_CA"
}

# serving_cert NAME SANS: $CLOUD_PKI/NAME.crt and NAME.key, signed by the
# cloud's CA, valid for SANS (openssl subjectAltName syntax).
serving_cert() {
  local name=$1 sans=$2
  cloud_ca
  [ -f "$CLOUD_PKI/$name.crt" ] && return 0
  pki_conf "$sans" >"$CLOUD_PKI/$name.cnf"
  openssl req -new -nodes -newkey rsa:2048 -subj "/CN=$name" -config "$CLOUD_PKI/$name.cnf" \
    -keyout "$CLOUD_PKI/$name.key" -out "$CLOUD_PKI/$name.csr" 2>/dev/null \
    && openssl x509 -req -sha256 -days 825 -in "$CLOUD_PKI/$name.csr" -CA "$CLOUD_CA" -CAkey "$CLOUD_PKI/ca.key" \
      -set_serial "0x$(openssl rand -hex 16)" -extfile "$CLOUD_PKI/$name.cnf" -extensions serving \
      -out "$CLOUD_PKI/$name.crt.tmp" 2>/dev/null \
    || die "creating the certificate of $name failed"
  chmod 600 "$CLOUD_PKI/$name.key"
  mv "$CLOUD_PKI/$name.crt.tmp" "$CLOUD_PKI/$name.crt"
}
