# shellcheck shell=bash
# pki.sh — certificates and kubeconfigs of the e2e node, made with openssl.
# Source after common.sh; call make_pki then make_kubeconfigs.

# _cert NAME SUBJECT KIND [SANS]: a P-256 key and a certificate signed by
# the cluster CA (or front-proxy CA for names starting with front-proxy).
# KIND is client or server.
_cert() {
  local name=$1 subj=$2 kind=$3 sans=${4:-} ca=ca ext
  case "$name" in front-proxy-*) ca=front-proxy-ca ;; esac
  ext="$PKI/$name.ext"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ "$kind" = server ]; then echo "extendedKeyUsage=serverAuth"; else echo "extendedKeyUsage=clientAuth"; fi
    [ -z "$sans" ] || echo "subjectAltName=$sans"
  } >"$ext"
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key" 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$ext"
}

_ca() {
  local name=$1 cn=$2
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key" 2>/dev/null
  openssl req -x509 -new -key "$PKI/$name.key" -subj "/CN=$cn" -days 3650 \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" \
    -out "$PKI/$name.crt" 2>/dev/null
}

# make_pki: all keys and certificates, unless a complete set exists.
make_pki() {
  [ -f "$PKI/.complete" ] && return 0
  rm -rf "$PKI"
  mkdir -p "$PKI"
  chmod 0700 "$PKI"
  _ca ca tether-e2e-ca
  _ca front-proxy-ca tether-e2e-front-proxy-ca
  _cert apiserver /CN=kube-apiserver server \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1"
  _cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" client
  _cert admin "/O=system:masters/CN=kubernetes-admin" client
  _cert controller-manager /CN=system:kube-controller-manager client
  _cert scheduler /CN=system:kube-scheduler client
  _cert kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" client
  _cert kubelet-server "/CN=$NODE_NAME" server "DNS:$NODE_NAME,IP:127.0.0.1"
  _cert front-proxy-client /CN=front-proxy-client client
  # Service-account token signing key pair.
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  touch "$PKI/.complete"
}

# _kubeconfig FILE CERTNAME: a self-contained kubeconfig (certs embedded).
_kubeconfig() {
  local file=$1 cert=$2
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tether-e2e
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $cert
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$cert.crt")
    client-key-data: $(base64 -w0 "$PKI/$cert.key")
contexts:
- name: tether-e2e
  context:
    cluster: tether-e2e
    user: $cert
    namespace: default
current-context: tether-e2e
EOF
  chmod 0600 "$file"
}

# make_kubeconfigs: admin (KUBECONFIG_FILE), controller-manager, scheduler, kubelet.
make_kubeconfigs() {
  _kubeconfig "$KUBECONFIG_FILE" admin
  _kubeconfig "$E2E_DIR/controller-manager.kubeconfig" controller-manager
  _kubeconfig "$E2E_DIR/scheduler.kubeconfig" scheduler
  _kubeconfig "$E2E_DIR/kubelet.kubeconfig" kubelet-client
  cat >"$ENV_FILE" <<EOF
export KUBECONFIG=$KUBECONFIG_FILE
export TETHER_E2E_KUBECONFIG=$KUBECONFIG_FILE
EOF
}
