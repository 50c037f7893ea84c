#!/usr/bin/env bash
# tools.sh NAME — install a pinned developer tool into a cache outside the
# repository (once) and print its path. Used by the Makefile and .ci/run.
set -euo pipefail
cache="${TETHER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}/tools"
mkdir -p "$cache"
case "${1:?usage: tools.sh staticcheck|helm|crane}" in
  staticcheck) pkg=honnef.co/go/tools/cmd/staticcheck; ver=v0.8.2 ;;
  helm) pkg=helm.sh/helm/v3/cmd/helm; ver=v3.16.4 ;;
  crane) pkg=github.com/google/go-containerregistry/cmd/crane; ver=v0.20.2 ;;
  *) echo "tools.sh: unknown tool $1" >&2; exit 2 ;;
esac
bin="$cache/$1-$ver"
if [ ! -x "$bin" ]; then
  echo "tools.sh: installing $pkg@$ver into $cache" >&2
  tmp=$(mktemp -d)
  GOBIN="$tmp" CGO_ENABLED=0 go install "$pkg@$ver" >&2
  mv "$tmp/$(basename "$pkg")" "$bin"
  rm -rf "$tmp"
fi
echo "$bin"
