#!/usr/bin/env bash
# e2e-cluster-down.sh — stop the e2e node started by e2e-cluster-up.sh and
# remove what it created: its pods (deleted while the kubelet still runs, so
# CNI and volumes are torn down properly), the recorded processes (by PID
# only), leftover containers and their shims, mounts under the state dir,
# the CNI bridge, the kubelet's cgroups and
# log links, and the state dir itself. Safe to run when nothing is up.
# The Kubernetes binaries in the cache are kept.
#
#   e2e-cluster-down.sh                 stop the node
#   e2e-cluster-down.sh --if-owner ID   stop it only if the run ID started it
#                                       and nobody pinned it since (see up)
set -uo pipefail
E2E_SCRIPT=e2e-cluster-down
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=e2e-lib/common.sh
. "$here/e2e-lib/common.sh"
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"

[ "$(id -u)" = 0 ] || e2e_die "run as root"
owner=""
case "${1:-}" in
  --if-owner) owner=${2:?--if-owner needs an ID} ;;
  "") ;;
  *) e2e_die "usage: e2e-cluster-down.sh [--if-owner ID]" ;;
esac
take_lock
if [ -n "$owner" ] && [ "$(cat "$OWNER_FILE" 2>/dev/null)" != "$owner" ]; then
  e2e_log "leaving the node up: it was not started by this run, or was pinned by e2e-cluster-up.sh since"
  exit 0
fi
if [ ! -d "$E2E_DIR" ]; then
  e2e_log "nothing to do: $E2E_DIR does not exist"
  exit 0
fi
t0=$(date +%s%N)
ms() { echo $(( ($(date +%s%N) - t0) / 1000000 )); }

no_pod_tasks() { [ -z "$(ctrd tasks ls -q 2>/dev/null)" ]; }

# 1. Pods away while apiserver and kubelet run: the kubelet stops sandboxes,
#    calls CNI DEL and unmounts volumes.
if component_pid kube-apiserver >/dev/null && component_pid kubelet >/dev/null && [ -x "$KUBE_BIN/kubectl" ]; then
  kctl delete pods --all --all-namespaces --grace-period=1 --wait=true --timeout=40s >/dev/null 2>&1 \
    || e2e_log "some pods did not go away in 40s; killing their containers"
  if component_pid containerd >/dev/null; then
    wait_for 20 "pod sandboxes to stop" no_pod_tasks || true
  fi
  e2e_log "pods deleted ($(ms) ms)"
fi

# 2. Stop the recorded processes (by PID only): TERM, then KILL after 10 s.
#    The Kubernetes components together, then etcd; containerd goes last,
#    after its leftover tasks are killed.
gone() { [ ! -d "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
stop_pids() {
  local name pid pids=() names=() i
  for name in "$@"; do
    if pid=$(component_pid "$name"); then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
      names+=("$name")
    fi
  done
  for i in "${!pids[@]}"; do
    local n=0
    until gone "${pids[$i]}"; do
      n=$((n + 1))
      if [ "$n" -ge 200 ]; then
        e2e_log "${names[$i]} (pid ${pids[$i]}) ignored SIGTERM for 10s; killing it"
        kill -KILL "${pids[$i]}" 2>/dev/null || true
        break
      fi
      sleep 0.05
    done
  done
  for name in "$@"; do rm -f "$PIDS/$name.pid"; done
}
stop_pids kubelet kube-scheduler kube-controller-manager kube-apiserver
stop_pids etcd

# 3. Leftover containers: kill their tasks, delete them, so their shims
#    exit; then containerd itself.
if component_pid containerd >/dev/null; then
  for t in $(ctrd tasks ls -q 2>/dev/null); do
    ctrd tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true
  done
  sleep 0.5
  for t in $(ctrd tasks ls -q 2>/dev/null); do
    ctrd tasks delete -f "$t" >/dev/null 2>&1 || true
  done
fi
stop_pids containerd
e2e_log "processes stopped ($(ms) ms)"

# 4. containerd shims started for this node's socket (they outlive containerd).
for pid in $(pgrep -x containerd-shim-runc-v2 2>/dev/null || true); do
  if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-address $CTRD_SOCK "; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
done

# 5. Mounts under the state dir, deepest first (the pods' network
#    namespaces live there too: netns_mounts_under_state_dir).
umount_under() {
  local m
  awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo \
    | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2- | while read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || e2e_log "could not unmount $m"
    done
}
umount_under "$E2E_DIR"

# 6. The CNI bridge and the kubelet's pod cgroups and log links.
ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE" 2>/dev/null
for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
done
if [ -d /var/log/containers ]; then
  for l in /var/log/containers/*.log; do
    [ -L "$l" ] && case "$(readlink "$l")" in "$POD_LOGS"/*) rm -f "$l" ;; esac
  done
fi

# 7. The kubelet's iptables chains (KUBE-FIREWALL and its INPUT/OUTPUT
#    jumps, the canary and hint chains), unless another kubelet runs here.
if ! pgrep -x kubelet >/dev/null; then
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    for chain in INPUT OUTPUT; do
      while "$ipt" -t filter -D "$chain" -j KUBE-FIREWALL 2>/dev/null; do :; done
    done
    for table in filter nat mangle; do
      for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
        "$ipt" -t "$table" -F "$chain" 2>/dev/null && "$ipt" -t "$table" -X "$chain" 2>/dev/null
      done
    done
  done
fi

# 8. The state itself.
rm -rf "$E2E_DIR" || e2e_log "could not remove all of $E2E_DIR (a mount still busy?)"
e2e_log "node stopped and cleaned ($(ms) ms)"
