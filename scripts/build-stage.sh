#!/usr/bin/env bash
# build-stage.sh — tether-stage, GitLab's run_exec, in one place for `make
# build`, `make install`, `make lint`, scripts/release.sh,
# scripts/build-images.sh and the tests:
#
#   build-stage.sh build OUT GOOS GOARCH VERSION
#       tether-stage for GOOS/GOARCH at OUT, reporting VERSION: the C build
#       (integration/gitlab/stage/native, static: a stage process starts in
#       ~2 ms, a Go one in ~9) on linux when a C compiler for GOARCH is found
#       (cc or gcc on that architecture, x86_64-linux-gnu-gcc /
#       aarch64-linux-gnu-gcc for either), else the Go build
#       (cmd/tether-stage, the reference: the same behaviour). It says which
#       on stderr.
#   build-stage.sh lint
#       compiles the C source with -std=c11 -Wall -Wextra -Werror -pedantic
#       (and -fanalyzer): no output when it is clean.
#
# Environment:
#   TETHER_STAGE_BUILD=c   the C build or fail (CI=true implies it for
#                          linux/amd64 and lint)
#   TETHER_STAGE_BUILD=go  the Go build
#   CC                     the C compiler for this machine's architecture
#   STAGE_CFLAGS           in place of "-O2 -static -s" (the tests' sanitizer
#                          build)
set -euo pipefail
cd "$(dirname "$0")/.."
src=integration/gitlab/stage/native
die() { echo "build-stage: $*" >&2; exit 2; }

host_arch() {
  case "$(uname -m)" in
    x86_64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) uname -m ;;
  esac
}

# compiler GOARCH: the C compiler for linux/GOARCH, none when there is none.
compiler() {
  local arch=$1 triple c
  case "$arch" in
    amd64) triple=x86_64-linux-gnu-gcc ;;
    arm64) triple=aarch64-linux-gnu-gcc ;;
    *) return 1 ;;
  esac
  if [ "$arch" = "$(host_arch)" ]; then
    for c in ${CC:-} cc gcc; do
      command -v "$c" >/dev/null 2>&1 && { echo "$c"; return 0; }
    done
  fi
  command -v "$triple" >/dev/null 2>&1 && { echo "$triple"; return 0; }
  return 1
}

# want_c GOOS GOARCH: whether the C build is required.
want_c() {
  [ "${TETHER_STAGE_BUILD:-}" = c ] && return 0
  [ "${CI:-}" = true ] && [ -z "${TETHER_STAGE_BUILD:-}" ] && [ "$1/$2" = "linux/$(host_arch)" ] && return 0
  return 1
}

build() {
  local out=$1 goos=$2 goarch=$3 version=$4 cc quoted
  [[ "$version" != *$'\n'* ]] || die "version $version: one line"
  # A C string literal: \ and " escaped.
  quoted=${version//\\/\\\\}
  quoted=${quoted//\"/\\\"}
  if [ "${TETHER_STAGE_BUILD:-}" != go ] && [ "$goos" = linux ] && cc=$(compiler "$goarch"); then
    # shellcheck disable=SC2086 # STAGE_CFLAGS is a list of flags
    if "$cc" -std=c11 ${STAGE_CFLAGS:--O2 -static -s} -DTETHER_VERSION="\"$quoted\"" -o "$out" "$src"/*.c; then
      echo "build-stage: $out: the C build ($cc) for $goos/$goarch" >&2
      return 0
    fi
    want_c "$goos" "$goarch" && die "$out: the C build ($cc) failed"
    echo "build-stage: $out: the C build ($cc) failed: the Go build instead" >&2
  elif want_c "$goos" "$goarch"; then
    die "$out: no C compiler for $goos/$goarch (TETHER_STAGE_BUILD=${TETHER_STAGE_BUILD:-}, CI=${CI:-}): apt-get install gcc libc6-dev"
  fi
  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath \
    -ldflags "-s -w -X github.com/tether-ci/tether/internal/version.Version=$version" -o "$out" ./cmd/tether-stage
  echo "build-stage: $out: the Go build for $goos/$goarch" >&2
}

lint() {
  local cc f analyzer=()
  if ! cc=$(compiler "$(host_arch)"); then
    want_c linux "$(host_arch)" && die "lint: no C compiler: apt-get install gcc libc6-dev"
    echo "build-stage: lint: no C compiler, the C tether-stage is not checked" >&2
    return 0
  fi
  "$cc" -fanalyzer -E -x c /dev/null -o /dev/null 2>/dev/null && analyzer=(-fanalyzer)
  for f in "$src"/*.c; do
    "$cc" -std=c11 -Wall -Wextra -Werror -pedantic "${analyzer[@]}" -O2 -c -o /dev/null "$f"
  done
}

case "${1:-}" in
  build) [ $# = 5 ] || die "usage: build-stage.sh build OUT GOOS GOARCH VERSION"; build "$2" "$3" "$4" "$5" ;;
  lint) lint ;;
  *) die "usage: build-stage.sh build OUT GOOS GOARCH VERSION | lint" ;;
esac
