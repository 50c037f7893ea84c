#!/usr/bin/env bash
# demo.sh — `make demo`: run the sample job in examples/demo through the
# local backend (tether-shim as a child process, no cluster), check that it
# behaved as expected, and explain what happened. Exits 0 when it did.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${TETHER_BIN_DIR:-bin}"
demo=examples/demo
if [ ! -x "$bin/tether" ] || [ ! -x "$bin/tether-shim" ]; then
  echo "demo.sh: $bin/tether or $bin/tether-shim is missing: run 'make build' (or 'make demo')" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmd=("$bin/tether" run --local "$demo/build.sh" "$demo/test.sh" "$demo/deploy.sh" --after "$demo/cleanup.sh")
echo "\$ ${cmd[*]}"
echo
echo "--- the job's output (tether's stdout) ---"
# Copy stdout through character by character, noting when each dot of
# build.sh arrives: they must arrive one by one, not with the end of line.
set +e
"${cmd[@]}" 2>"$work/stderr" | {
  : > "$work/dots"
  while IFS= read -r -d '' -n 1 c; do
    printf '%s' "$c"
    printf '%s' "$c" >> "$work/out"
    [ "$c" = . ] && echo "$EPOCHREALTIME" >> "$work/dots"
  done
}
code=${PIPESTATUS[0]}
set -e
echo "--- tether's progress and per-script summary (its stderr) ---"
cat "$work/stderr"
echo "--- tether exited with code $code ---"
echo

fail=0
check() { # check OK-MESSAGE FAIL-MESSAGE CONDITION...
  local ok=$1 bad=$2; shift 2
  if "$@"; then echo "  ok   $ok"; else echo "  FAIL $bad"; fail=1; fi
}
spread=$(awk 'NR==1{first=$1} {last=$1} END{if (NR<6) print -1; else printf "%d", (last-first)*1000}' "$work/dots")
echo "What happened:"
check "the dots of build.sh arrived one by one over ${spread} ms: partial lines are forwarded at once" \
      "the dots of build.sh arrived together (${spread} ms apart): partial lines were held back" \
      test "$spread" -ge 800
check "test.sh failed, so tether exited with its exit code 3; its fake JSON status line claiming 0 was just output" \
      "tether exited $code, expected 3 (the exit code of test.sh)" \
      test "$code" -eq 3
check "deploy.sh was skipped after the failure, and the after-script cleanup.sh still ran" \
      "the scripts that ran differ from: build.sh, test.sh, cleanup.sh" \
      grep -q '^cleanup: ' "$work/out"
check "stdout is byte for byte $demo/expected-output.txt (carriage returns of the progress bar included)" \
      "stdout differs from $demo/expected-output.txt" \
      cmp -s "$work/out" "$demo/expected-output.txt"
echo
if [ "$fail" -ne 0 ]; then
  echo "demo: FAILED — the job did not behave as expected" >&2
  diff <(cat -A "$demo/expected-output.txt") <(cat -A "$work/out") >&2 || true
  exit 1
fi
echo "demo: OK. Next: 'bin/tether run --help'; the same job runs in a Kubernetes pod with --image IMAGE."
