# shellcheck shell=bash
# common.sh — settings and helpers shared by the e2e node scripts
# (e2e-cluster-up.sh, e2e-cluster-down.sh, e2e.sh). Source it; it defines
# no behaviour on its own.
#
# Env (all optional):
#   TETHER_E2E_DIR        node state (certs, data, logs, pids)   /var/tmp/tether-e2e
#   TETHER_CACHE          caches outside the repo                 ~/.cache/tether
#   KUBE_VERSION          Kubernetes version built and run        v1.34.4
#   TETHER_E2E_API_PORT   kube-apiserver port on 127.0.0.1       6443
#   TETHER_E2E_ETCD_PORT  etcd client port (peer = +1)            12379

E2E_DIR="${TETHER_E2E_DIR:-/var/tmp/tether-e2e}"
TETHER_CACHE_DIR="${TETHER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
KUBE_VERSION="${KUBE_VERSION:-v1.34.4}"
KUBE_BIN="$TETHER_CACHE_DIR/kube/$KUBE_VERSION"
API_PORT="${TETHER_E2E_API_PORT:-6443}"
ETCD_PORT="${TETHER_E2E_ETCD_PORT:-12379}"
ETCD_PEER_PORT=$((ETCD_PORT + 1))
NODE_NAME=localhost
POD_SUBNET=10.244.0.0/24
BRIDGE=tether0

PKI="$E2E_DIR/pki"
LOGS="$E2E_DIR/logs"
PIDS="$E2E_DIR/pids"
CTRD_DIR="$E2E_DIR/containerd"
CTRD_SOCK="$CTRD_DIR/containerd.sock"
CNI_CONF_DIR="$E2E_DIR/cni/net.d"
KUBELET_DIR="$E2E_DIR/kubelet"
POD_LOGS="$E2E_DIR/pod-logs"
# The admin kubeconfig: the well-known file other tools read.
KUBECONFIG_FILE="$E2E_DIR/kubeconfig"
# A file to source: exports KUBECONFIG and TETHER_E2E_KUBECONFIG.
ENV_FILE="$E2E_DIR/env"
SANDBOX_IMAGE=localhost/tether/pause:dev

# Who may tear the node down: the PID of the e2e.sh run that started it
# (TETHER_E2E_OWNER when up started it). Empty or missing: nobody but a
# person running e2e-cluster-down.sh. Running e2e-cluster-up.sh by hand on
# a running node empties it, so a node in use is not torn down under you.
OWNER_FILE="$E2E_DIR/owner"
# Up and down serialize on this lock (outside E2E_DIR: down removes that).
LOCK_FILE="$E2E_DIR.lock"

# Start order; down stops in reverse.
COMPONENTS=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet)

e2e_log() { echo "[$(date +%H:%M:%S)] ${E2E_SCRIPT:-e2e}: $*" >&2; }
# e2e_die MESSAGE: log the error, also into E2E_ERROR_FILE when set (e2e.sh
# repeats it after the log tails, so the end of a failed run says why), and exit.
e2e_die() {
  e2e_log "ERROR: $*"
  [ -z "${E2E_ERROR_FILE:-}" ] || echo "${E2E_SCRIPT:-e2e}: $*" >>"$E2E_ERROR_FILE"
  exit 1
}

# take_lock: hold LOCK_FILE for the rest of this script (fd 8), unless a
# parent script already holds it (E2E_LOCK_HELD=1).
take_lock() {
  [ "${E2E_LOCK_HELD:-0}" = 1 ] && return 0
  exec 8>"$LOCK_FILE"
  if ! flock -n 8; then
    e2e_log "waiting for another e2e-cluster-up/down to finish ($LOCK_FILE)"
    flock -w 600 8 || e2e_die "$LOCK_FILE stayed locked for 10 minutes (fuser -v $LOCK_FILE shows the holder)"
  fi
  export E2E_LOCK_HELD=1
}

# binary_of NAME: the executable a component runs.
binary_of() {
  case "$1" in
    containerd) command -v containerd ;;
    etcd) command -v etcd ;;
    *) echo "$KUBE_BIN/$1" ;;
  esac
}

# component_pid NAME: print the recorded PID if that process is alive and is
# still the component (guards against PID reuse); fail otherwise.
component_pid() {
  local f="$PIDS/$1.pid" pid exe want
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  want=$(readlink -f "$(binary_of "$1")")
  [ "${exe% (deleted)}" = "$want" ] || return 1
  echo "$pid"
}

# kctl ARGS: kubectl from the cache against the node, as cluster admin.
kctl() { "$KUBE_BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# ctrd ARGS: ctr against the node's containerd, namespace k8s.io.
ctrd() { ctr --address "$CTRD_SOCK" --namespace k8s.io "$@"; }

# wait_for SECONDS WHAT CMD...: run CMD until it succeeds or time runs out.
wait_for() {
  local secs=$1 what=$2 end
  shift 2
  end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$end" ]; then
      e2e_log "timed out after ${secs}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

# node_healthy: every component alive and the apiserver ready.
node_healthy() {
  local c
  for c in "${COMPONENTS[@]}"; do component_pid "$c" >/dev/null || return 1; done
  [ -f "$KUBECONFIG_FILE" ] && kctl get --raw /readyz >/dev/null 2>&1
}

# dump_logs [LINES]: the tails of the node's logs (for failures).
dump_logs() {
  local n=${1:-60} c
  for c in kubelet kube-apiserver kube-controller-manager containerd kube-scheduler etcd; do
    [ -f "$LOGS/$c.log" ] || continue
    echo "===== tail -n $n $LOGS/$c.log =====" >&2
    tail -n "$n" "$LOGS/$c.log" >&2
  done
}

# e2e_daemon LOG CMD ARGS...: start CMD in the background in its own
# session (setsid execs: $! is the daemon itself), stdin /dev/null, output
# appended to LOG. It inherits no descriptor above 2: not the up/down lock
# (fd 8), nor a lock a caller holds (`flock LOCKFILE make e2e` when a test
# restarts the node's agents), which a daemon would hold while it runs.
e2e_daemon() {
  local log=$1
  shift
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
    done
    exec setsid "$@"
  ) >>"$log" 2>&1 </dev/null &
}
