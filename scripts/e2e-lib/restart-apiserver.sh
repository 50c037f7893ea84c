#!/usr/bin/env bash
# restart-apiserver.sh [DOWN_SECONDS [GRACE_SECONDS]] — restart the e2e
# node's kube-apiserver with the command line it is running with: SIGTERM,
# SIGKILL after GRACE_SECONDS (default 30; a terminating apiserver stops
# listening at once but keeps serving proxied attach streams until it exits),
# stay down DOWN_SECONDS (default 0), start it again the way
# e2e-cluster-up.sh does (own session, log appended, PID recorded), and wait
# until /readyz answers. Used by test/e2e/kube_faults_test.go to prove that a
# job survives an API server restart. Needs root and a running node.
set -euo pipefail
E2E_SCRIPT=restart-apiserver
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

down=${1:-0}
grace=${2:-30}
pid=$(component_pid kube-apiserver) || e2e_die "kube-apiserver is not running (start the node with scripts/e2e-cluster-up.sh)"
mapfile -d '' argv <"/proc/$pid/cmdline"
[ "${#argv[@]}" -gt 0 ] || e2e_die "cannot read the command line of kube-apiserver (pid $pid)"

e2e_log "stopping kube-apiserver (pid $pid)"
kill -TERM "$pid"
for _ in $(seq 1 $((grace * 10))); do
  [ -d "/proc/$pid" ] || break
  sleep 0.1
done
if [ -d "/proc/$pid" ]; then
  e2e_log "kube-apiserver still running ${grace}s after SIGTERM; killing it"
  kill -KILL "$pid" || true
  while [ -d "/proc/$pid" ]; do sleep 0.1; done
fi
sleep "$down"

e2e_daemon "$LOGS/kube-apiserver.log" "${argv[@]}"
newpid=$!
echo "$newpid" >"$PIDS/kube-apiserver.pid"
e2e_log "started kube-apiserver again (pid $newpid)"
wait_for 90 "kube-apiserver /readyz" kctl get --raw /readyz || {
  tail -n 30 "$LOGS/kube-apiserver.log" >&2 || true
  e2e_die "kube-apiserver did not become ready again"
}
e2e_log "kube-apiserver ready again"
