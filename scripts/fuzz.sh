#!/usr/bin/env bash
# fuzz.sh [DURATION] — run every Go fuzz target in the module for DURATION
# each (default 20s; `make fuzz FUZZTIME=5m`). Fails if any target finds a
# crash; the failing input is left in PKG/testdata/fuzz/TARGET/ by the Go
# tool, where `go test` replays it as a regression seed from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-20s}"
GO="${GO:-go}"

# Packages whose test files declare a fuzz target (cheap pre-filter, so the
# heavy packages are not compiled just to list nothing).
mapfile -t dirs < <(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . |
  grep -v '^./\.git/' | xargs -r -n1 dirname | sort -u)
if [ ${#dirs[@]} -eq 0 ]; then
  echo "fuzz.sh: no fuzz targets found" >&2
  exit 1
fi

failed=()
ran=0
for dir in "${dirs[@]}"; do
  pkg=$("$GO" list "$dir")
  # The authoritative list: what `go test -list` reports for the package.
  mapfile -t targets < <("$GO" test -list '^Fuzz' "$pkg" | grep -E '^Fuzz' || true)
  for target in "${targets[@]}"; do
    echo "=== fuzz $pkg $target for $duration"
    ran=$((ran + 1))
    if ! "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$duration" \
      -fuzzminimizetime 30s "$pkg"; then
      failed+=("$pkg $target")
    fi
  done
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} of $ran fuzz targets failed:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "fuzz.sh: $ran fuzz targets ran for $duration each, no failures"
