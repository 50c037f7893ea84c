#!/usr/bin/env bash
# e2e-cluster-up.sh — start a real single-node Kubernetes on 127.0.0.1:
# containerd + runc (Debian), etcd (Debian), kube-apiserver,
# kube-controller-manager, kube-scheduler and kubelet (built from the Go
# module by scripts/kube-build.sh into a cache outside the repository).
#
# Idempotent: when the node is already up it only re-imports the images in
# bin/images/ and prints the kubeconfig path. When only its agents
# (containerd, kubelet) are down, they are started again and the node's
# state is kept. A node otherwise half-dead is torn down
# (scripts/e2e-cluster-down.sh) and started afresh. Up and down serialize on
# a lock file beside the state dir.
#
# TETHER_E2E_OWNER=ID (set by e2e.sh) records who started the node, so that
# run alone tears it down (e2e-cluster-down.sh --if-owner ID); running this
# script by hand on a running node clears the owner and keeps it up.
#
# TETHER_E2E_AUDIT=restart: on a running node whose kube-apiserver keeps
# no audit log, restart the apiserver alone with one (see ensure_audit).
#
# Output: the admin kubeconfig path on stdout (also $TETHER_E2E_DIR/kubeconfig;
# `source $TETHER_E2E_DIR/env` exports KUBECONFIG and TETHER_E2E_KUBECONFIG).
# Needs root (mounts, network namespaces, cgroups). Logs: $TETHER_E2E_DIR/logs.
set -euo pipefail
E2E_SCRIPT=e2e-cluster-up
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=e2e-lib/common.sh
. "$here/e2e-lib/common.sh"
# shellcheck source=e2e-lib/pki.sh
. "$here/e2e-lib/pki.sh"
# shellcheck source=e2e-lib/configs.sh
. "$here/e2e-lib/configs.sh"
export PATH="/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin:$PATH"

[ "$(id -u)" = 0 ] || e2e_die "run as root (the node mounts, makes network namespaces and cgroups)"
t0=$(date +%s%N)
ms() { echo $(( ($(date +%s%N) - t0) / 1000000 )); }

# --- packages --------------------------------------------------------------
ensure_packages() {
  local need=() p
  for p in containerd runc etcd-server containernetworking-plugins busybox-static bash-static \
           openssl iptables iproute2 util-linux procps podman; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  e2e_log "installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
}

# --- images ----------------------------------------------------------------
# import_images: every bin/images/*.tar into containerd's k8s.io namespace:
# the docker-archives of the test images and the multi-platform OCI archives
# of tether-shim and tether (--all-platforms keeps the arm64 content too, as
# a registry pull of the index would make it available).
import_images() {
  local snap=$1 tar n=0
  [ -f "$repo/bin/images/pause.tar" ] || {
    e2e_log "bin/images/pause.tar is missing; building the pause image"
    "$repo/scripts/build-images.sh" pause
  }
  for tar in "$repo"/bin/images/*.tar; do
    ctrd images import --all-platforms --snapshotter "$snap" "$tar" >/dev/null \
      || e2e_die "ctr images import $tar failed"
    n=$((n + 1))
  done
  e2e_log "imported $n image(s) from bin/images ($(ms) ms)"
}

# --- processes -------------------------------------------------------------
# start NAME ARGS...: run a component in its own session, log to LOGS/NAME.log,
# record its PID (the process itself: setsid execs, it does not fork here).
start() {
  local name=$1 bin pid
  shift
  bin=$(binary_of "$name")
  [ -x "$bin" ] || e2e_die "$name binary $bin is missing"
  e2e_daemon "$LOGS/$name.log" "$bin" "$@"
  pid=$!
  echo "$pid" >"$PIDS/$name.pid"
  # Until the background shell and setsid have exec'd, /proc/PID/exe names
  # them, not the component; on a loaded machine that can take well over
  # 50 ms. Wait for the exec; fail at once if the process is gone.
  local i
  for i in $(seq 1 200); do
    component_pid "$name" >/dev/null && return 0
    [ -d "/proc/$pid" ] || break
    sleep 0.05
  done
  tail -n 30 "$LOGS/$name.log" >&2 || true
  e2e_die "$name (pid $pid) did not start (after $i checks); log: $LOGS/$name.log"
}

port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }

check_ports() {
  local p
  for p in "$API_PORT" "$ETCD_PORT" "$ETCD_PEER_PORT" 10250 10248 10257 10259; do
    port_free "$p" || e2e_die "port $p on this machine is in use (ss -ltnp 'sport = :$p'); stop its owner or set TETHER_E2E_API_PORT/TETHER_E2E_ETCD_PORT"
  done
}

node_ready() {
  [ "$(kctl get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

default_ns_usable() {
  kctl -n default get serviceaccount default && kctl -n default get configmap kube-root-ca.crt
}

fail() {
  dump_logs 40
  e2e_die "$* (state and logs kept in $E2E_DIR; scripts/e2e-cluster-down.sh cleans up)"
}

# apiserver_args: kube-apiserver's command line (after the binary).
apiserver_args() {
  local args=(
    --etcd-servers "http://127.0.0.1:$ETCD_PORT"
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT"
    --endpoint-reconciler-type none --service-cluster-ip-range 10.96.0.0/16
    --client-ca-file "$PKI/ca.crt"
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key"
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key"
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types Hostname,InternalIP
    --service-account-issuer https://kubernetes.default.svc.cluster.local
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key"
    --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group
    --requestheader-extra-headers-prefix X-Remote-Extra-
    --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key"
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged=true
    --audit-policy-file "$AUDIT_POLICY" --audit-log-path "$AUDIT_LOG"
    --audit-log-format json --audit-log-maxsize 100 --audit-log-maxbackup 1
  )
  printf '%s\0' "${args[@]}"
}

# ensure_audit: a node started before the apiserver kept an audit trail
# gets one when TETHER_E2E_AUDIT=restart: its kube-apiserver alone is
# restarted with this script's command line (the other components and the
# pods keep running; attach streams through it are cut, and resumed by
# their clients). That disturbs every test running on the node, so it is
# asked for, under the node's exclusive lock, never done by an e2e run.
ensure_audit() {
  local pid
  pid=$(component_pid kube-apiserver) || return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- '--audit-log-path' && return 0
  if [ "${TETHER_E2E_AUDIT:-}" != restart ]; then
    e2e_log "kube-apiserver (pid $pid) keeps no audit log (make bench counts requests from it); to restart it with one, with nothing else running on the node: TETHER_E2E_AUDIT=restart scripts/e2e-cluster-up.sh"
    return 0
  fi
  e2e_log "kube-apiserver (pid $pid) keeps no audit log; restarting it with one"
  write_audit_policy
  kill -TERM "$pid"
  local i
  for i in $(seq 1 300); do
    [ -d "/proc/$pid" ] || break
    sleep 0.1
  done
  if [ -d "/proc/$pid" ]; then
    kill -KILL "$pid" || true
    while [ -d "/proc/$pid" ]; do sleep 0.1; done
  fi
  local argv
  mapfile -d '' argv < <(apiserver_args)
  start kube-apiserver "${argv[@]}"
  wait_for 90 "kube-apiserver /readyz" kctl get --raw /readyz || fail "kube-apiserver did not become ready again"
  e2e_log "kube-apiserver restarted with an audit log ($(ms) ms)"
}

start_containerd() { start containerd --config "$CTRD_DIR/config.toml"; }
start_kubelet() {
  start kubelet \
    --config "$E2E_DIR/kubelet.yaml" --kubeconfig "$E2E_DIR/kubelet.kubeconfig" \
    --hostname-override "$NODE_NAME" --root-dir "$KUBELET_DIR" --v 1
}

# restart_node_agents: when only the node's agents (containerd, kubelet)
# are down and the control plane runs (a test stopped them to lose the
# node), start them again with the node's state kept: its pods, and the
# other tests' namespaces, survive.
restart_node_agents() {
  local c down=()
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
    component_pid "$c" >/dev/null || return 1
  done
  for c in containerd kubelet; do
    component_pid "$c" >/dev/null || down+=("$c")
  done
  [ ${#down[@]} -gt 0 ] || return 1
  e2e_log "restarting ${down[*]} (the control plane runs)"
  if ! component_pid containerd >/dev/null; then
    start_containerd
    wait_for 30 "containerd" ctrd version || fail "containerd did not start"
  fi
  component_pid kubelet >/dev/null || start_kubelet
}

# --- main ------------------------------------------------------------------
take_lock
ensure_packages
KUBE_BIN="$("$here/kube-build.sh")"
restart_node_agents || true

if node_healthy; then
  ensure_audit
  snap=$(sed -n 's/^ *snapshotter = "\(.*\)"/\1/p' "$CTRD_DIR/config.toml")
  import_images "${snap:-overlayfs}"
  wait_for 60 "node Ready" node_ready || fail "the running node is not Ready"
  if [ -z "${TETHER_E2E_OWNER:-}" ]; then
    # Brought up by hand: nobody's e2e.sh run tears it down any more.
    : >"$OWNER_FILE"
  fi
  e2e_log "node already up ($(ms) ms)"
  echo "$KUBECONFIG_FILE"
  exit 0
fi

if [ -d "$E2E_DIR" ]; then
  e2e_log "found a stopped or half-running node in $E2E_DIR; cleaning it first"
  "$here/e2e-cluster-down.sh" >&2
fi
check_ports

mkdir -p "$E2E_DIR" "$LOGS" "$PIDS"
echo "${TETHER_E2E_OWNER:-}" >"$OWNER_FILE"
make_pki
make_kubeconfigs
snap=$(write_containerd_config)
write_cni_config
write_kubelet_config
e2e_log "config and certificates ready ($(ms) ms, snapshotter $snap)"

start_containerd
start etcd --name tether-e2e --data-dir "$E2E_DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "tether-e2e=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync \
  --logger zap --log-level warn
wait_for 30 "etcd health" curl -fsS "http://127.0.0.1:$ETCD_PORT/health" || fail "etcd did not become healthy"
e2e_log "etcd healthy ($(ms) ms)"

write_audit_policy
mapfile -d '' apiserver_argv < <(apiserver_args)
start kube-apiserver "${apiserver_argv[@]}"
# While the apiserver starts: containerd up, images in.
wait_for 30 "containerd" ctrd version || fail "containerd did not start"
import_images "$snap"
wait_for 90 "kube-apiserver /readyz" kctl get --raw /readyz || fail "kube-apiserver did not become ready"
e2e_log "kube-apiserver ready ($(ms) ms)"

start kube-controller-manager \
  --kubeconfig "$E2E_DIR/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$E2E_DIR/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$E2E_DIR/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port 10257 \
  --client-ca-file "$PKI/ca.crt" --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" \
  --root-ca-file "$PKI/ca.crt" --service-account-private-key-file "$PKI/sa.key" \
  --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
  --use-service-account-credentials --leader-elect=false \
  --controllers '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller'
start kube-scheduler \
  --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
  --authentication-kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
  --authorization-kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false
start_kubelet

wait_for 120 "node $NODE_NAME Ready" node_ready || fail "node $NODE_NAME did not become Ready"
e2e_log "node Ready ($(ms) ms)"
wait_for 60 "ServiceAccount default and ConfigMap kube-root-ca.crt" default_ns_usable \
  || fail "the default namespace did not get its ServiceAccount and kube-root-ca.crt (controller-manager)"
e2e_log "node usable ($(ms) ms); kubeconfig: $KUBECONFIG_FILE"
echo "$KUBECONFIG_FILE"
