#!/usr/bin/env bash
# kube-build.sh — build the Kubernetes node binaries (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl) from the Go
# module k8s.io/kubernetes into a cache outside the repository, keyed by
# version, and print the directory. A warm cache skips the build.
#
#   scripts/kube-build.sh            # build if needed, print the bin dir
#   KUBE_VERSION=v1.34.4 TETHER_CACHE=/somewhere scripts/kube-build.sh
#
# k8s.io/kubernetes replaces its staging modules (k8s.io/api, ...) with
# ./staging paths, so `go install` cannot build it. We make a throwaway
# module that requires k8s.io/kubernetes and replaces every staging module
# with its published v0.MINOR.PATCH, then `go build` the commands from it.
set -euo pipefail

version="${KUBE_VERSION:-v1.34.4}"
cache="${TETHER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
dest="$cache/kube/$version"
cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

log() { echo "kube-build: $*" >&2; }

complete() {
  [ -f "$dest/.complete" ] || return 1
  local c
  for c in "${cmds[@]}"; do [ -x "$dest/$c" ] || return 1; done
}

if complete; then
  echo "$dest"
  exit 0
fi

mkdir -p "$cache/kube"
# One build at a time (two e2e runs starting together must not race).
exec 9>"$cache/kube/.build.lock"
flock 9
if complete; then
  echo "$dest"
  exit 0
fi

command -v go >/dev/null || { log "go is not on PATH (install Go or add /usr/local/go/bin to PATH)"; exit 1; }

start=$(date +%s)
mod="${version#v}"                      # 1.34.4
major="${mod%%.*}"                      # 1
rest="${mod#*.}"; minor="${rest%%.*}"   # 34
staging="v0.${mod#*.}"                  # v0.34.4

work=$(mktemp -d "$cache/kube/.build-$version.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "building Kubernetes $version in $work (cold: ~4-6 min on 2 cores)"

export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off
# Where k8s.io/kubernetes' own go.mod lands, to read its staging replaces.
kgomod=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[ -f "$kgomod" ] || { log "could not download k8s.io/kubernetes@$version (is the Go module proxy reachable?)"; exit 1; }
goline=$(grep -m1 '^go ' "$kgomod")

{
  echo "module tether.local/kubebuild"
  echo
  echo "$goline"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  # every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x v0.N.P"
  sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#replace \1 => \1 '"$staging"'#p' "$kgomod"
} >"$work/go.mod"
if ! grep -q '^replace ' "$work/go.mod"; then
  log "found no staging replaces in $kgomod; the module layout changed"
  exit 1
fi

{
  echo "//go:build tools"
  echo
  echo "package tools"
  echo
  echo "import ("
  for c in "${cmds[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done
  echo ")"
} >"$work/tools.go"

(cd "$work" && go mod tidy >&2)

pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
pkgs=()
for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
mkdir -p "$work/out"
(cd "$work" && go build -trimpath -ldflags "$ldflags" -o "$work/out/" "${pkgs[@]}" >&2)

for c in "${cmds[@]}"; do
  [ -x "$work/out/$c" ] || { log "build produced no $c"; exit 1; }
done
"$work/out/kube-apiserver" --version >&2

rm -rf "$dest"
mkdir -p "$dest"
mv "$work/out/"* "$dest/"
touch "$dest/.complete"
log "built $version in $(( $(date +%s) - start ))s into $dest"
echo "$dest"
