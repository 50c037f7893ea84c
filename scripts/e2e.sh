#!/usr/bin/env bash
# e2e.sh — the real-node suite (`make e2e`, after `make build`): build the
# images, bring the e2e node up (or reuse a running one, which is then left
# running), run `go test -tags e2e ./test/e2e/...` against it, and tear down
# the node if this run started it. On failure print the node's log tails.
#
# Exports to the tests: TETHER_E2E_KUBECONFIG, TETHER_E2E_DIR, TETHER_E2E_KUBECTL
# (the kubectl of the node's Kubernetes build).
#
# Env: TETHER_E2E_RUN (go test -run pattern), TETHER_E2E_SKIP (go test -skip
# pattern), TETHER_E2E_KEEP=1 (leave a
# node this run started running), plus those of scripts/e2e-lib/common.sh.
set -euo pipefail
E2E_SCRIPT=e2e
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
# shellcheck source=e2e-lib/common.sh
. "$here/e2e-lib/common.sh"
export PATH="/usr/local/go/bin:$PATH"

t0=$(date +%s)
"$here/build-images.sh"
t_images=$(date +%s)

# Only the node this run starts is torn down at the end (see e2e-cluster-up.sh).
export TETHER_E2E_OWNER="e2e-$$-$(date +%s%N)"
# Why the run failed, repeated at its very end (after the log tails): the
# node scripts' fatal errors and the failed tests' names.
E2E_ERROR_FILE=$(mktemp)
export E2E_ERROR_FILE
test_out=$(mktemp)
status=0
cleanup() {
  if [ "$status" -ne 0 ]; then
    e2e_log "FAILED (exit $status); node log tails follow"
    dump_logs 80
  fi
  if [ "${TETHER_E2E_KEEP:-0}" != 1 ]; then
    "$here/e2e-cluster-down.sh" --if-owner "$TETHER_E2E_OWNER" || true
  fi
  if [ "$status" -ne 0 ]; then
    grep -E -- '^\s*--- FAIL|^(FAIL|panic:)' "$test_out" >>"$E2E_ERROR_FILE" 2>/dev/null || true
    e2e_log "FAILED (exit $status) because:"
    sed 's/^/  /' "$E2E_ERROR_FILE" >&2
  fi
  rm -f "$E2E_ERROR_FILE" "$test_out"
}
trap 'status=$?; cleanup' EXIT
trap 'exit 130' INT TERM

kubeconfig=$("$here/e2e-cluster-up.sh")
t_up=$(date +%s)
if [ "$(cat "$OWNER_FILE" 2>/dev/null)" = "$TETHER_E2E_OWNER" ]; then
  e2e_log "started the node; it is torn down at the end (TETHER_E2E_KEEP=1 keeps it)"
else
  e2e_log "reusing the running node in $E2E_DIR; it stays up afterwards"
fi
export TETHER_E2E_KUBECONFIG="$kubeconfig" KUBECONFIG="$kubeconfig"
export TETHER_E2E_DIR="$E2E_DIR" TETHER_E2E_KUBECTL="$KUBE_BIN/kubectl"

args=(-tags e2e -trimpath -count=1 -timeout 45m)
[ -z "${TETHER_E2E_RUN:-}" ] || args+=(-run "$TETHER_E2E_RUN")
[ -z "${TETHER_E2E_SKIP:-}" ] || args+=(-skip "$TETHER_E2E_SKIP")
rc=0
go test "${args[@]}" -v ./test/e2e/... 2>&1 | tee "$test_out" || rc=$?
e2e_log "images $((t_images - t0))s, node up $((t_up - t_images))s, tests $(( $(date +%s) - t_up ))s"
exit "$rc"
