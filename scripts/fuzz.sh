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

# count DIR: files in DIR (0 if it does not exist).
count() {
  if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()
ran=0
for dir in "${dirs[@]}"; do
  pkg=$("$GO" list "$dir")
  # The authoritative list: what `go test -list` reports for the package.
  mapfile -t targets < <("$GO" test -list '^Fuzz' "$pkg" | grep -E '^Fuzz' || true)
  for target in "${targets[@]}"; do
    echo "=== fuzz $pkg $target for $duration"
    ran=$((ran + 1))
    corpus="$dir/testdata/fuzz/$target"
    before=$(count "$corpus")
    set +e
    "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$duration" \
      -fuzzminimizetime 30s "$pkg" 2>&1 | tee "$log" | grep -v '^fuzz: elapsed'
    rc=${PIPESTATUS[0]}
    set -e
    if [ "$rc" -eq 0 ]; then
      continue
    fi
    after=$(count "$corpus")
    # Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a
    # failure ("context deadline exceeded", no failing input written):
    # golang/go#75804, fixed in Go 1.27. Anything else is a real failure.
    if [ "$after" -eq "$before" ] && ! grep -q 'Failing input written' "$log" &&
      grep -q '^    context deadline exceeded$' "$log"; then
      echo "fuzz.sh: $target: ignoring Go's fuzztime deadline race (golang/go#75804); no failing input was found" >&2
      continue
    fi
    failed+=("$pkg $target")
  done
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} of $ran fuzz targets failed:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "fuzz.sh: $ran fuzz targets ran for $duration each, no failures"
