#!/usr/bin/env bash
# bench.sh — `make bench` (after `make build`): measure Tether against its
# baselines side by side on this machine and write bench/results.md.
#
# 1. Go benchmarks of the hot paths (`go test -bench`): protocol encoder and
#    decoder, the shim's pump+emitter, the client session's decode path.
# 2. bench/harness: relay throughput vs a `cat` relay and a GitLab attach-path
#    emulation, partial-output latency, per-script overhead, shim memory and
#    size, and the real node when scripts/e2e-cluster-up.sh has one running.
#
# Environment (see bench/harness/main.go for all of them):
#   BENCH_BIG_BYTES  bytes relayed while the shim's RSS is sampled (default 10GiB)
#   BENCH_BYTES      bytes per throughput run (default 1GiB)
#   BENCH_REPEAT     runs per measurement (default 3)
#   BENCH_ONLY       sections to run, e.g. cli,relay,latency (default all)
#   BENCH_GO=0       skip the Go benchmarks
#   BENCH_OUT        results file (default bench/results.md; "-" for stdout only)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
GO="${GO:-go}"
for b in bin/tether bin/tether-shim; do
  [ -x "$b" ] || { echo "bench.sh: $b is missing: run 'make build' (or 'make bench')" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "${BENCH_GO:-1}" != 0 ]; then
  echo "bench.sh: Go benchmarks (protocol, internal/shim, client)" >&2
  # -run '^$': benchmarks only, no tests.
  CGO_ENABLED=0 "$GO" test -run '^$' -bench . -benchmem -count 1 \
    ./protocol/ ./internal/shim/ ./client/ | tee "$work/gobench.txt" >&2
  export BENCH_GOBENCH="$work/gobench.txt"
fi

"$GO" build -o "$work/harness" ./bench/harness
echo "bench.sh: harness (relay, latency, overhead, memory, node)" >&2
"$work/harness" -repo .
