#!/usr/bin/env bash
# release.sh VERSION [DIST] — `make release VERSION=vX.Y.Z`: everything a
# release publishes, in DIST (default dist/), from the working tree:
#
#   tether-VERSION-{linux,darwin}-{amd64,arm64}   the CLI, static (CGO_ENABLED=0)
#   tether-pool-VERSION-{linux,darwin}-{amd64,arm64}
#                                                 the pools' controller, which
#                                                 `tether pool serve|status` runs
#                                                 (beside tether)
#   tether-stage-VERSION-{linux,darwin}-{amd64,arm64}
#                                                 GitLab's run_exec (beside tether):
#                                                 on linux the C build, static,
#                                                 when a C compiler for the
#                                                 architecture is found (arm64:
#                                                 aarch64-linux-gnu-gcc), else
#                                                 the Go build; the log says
#                                                 which (scripts/build-stage.sh)
#   tether-shim-VERSION-linux-{amd64,arm64}       the shim, static
#   tether-shim-VERSION.oci.tar                   ghcr.io/tether-ci/tether-shim:VERSION
#   tether-VERSION.oci.tar                        ghcr.io/tether-ci/tether:VERSION
#                                                 (/tether, and /tether-pool and
#                                                 /tether-stage beside it)
#                                                 (OCI image-layout archives of
#                                                 linux/amd64 + linux/arm64 indexes)
#   tether-gc-X.Y.Z.tgz                           the Helm chart, appVersion VERSION
#                                                 (its image tag defaults to it)
#   tether-gc-{namespaced,cluster}-VERSION.yaml   the plain manifests, image
#                                                 tagged VERSION
#   tether-pool-X.Y.Z.tgz                         the pools' controller's Helm
#                                                 chart, appVersion VERSION
#   tether-pool-VERSION.yaml                      its plain manifests (deploy/pool,
#                                                 kubectl apply -n NS -f), image
#                                                 tagged VERSION
#   SHA256SUMS                                    sha256sum of all of the above
#
# Every binary reports VERSION (`tether version`, `tether-shim --version`)
# and defaults --helper-image to ghcr.io/tether-ci/tether-shim:VERSION. The
# archives are reproducible: their times are the last commit's
# (SOURCE_DATE_EPOCH overrides), so the same tree gives the same files,
# byte for byte, and the same image digests.
# Needs Go and helm (scripts/tools.sh helm installs it); no daemon or registry.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-}"
dist="${2:-dist}"
die() { echo "release: $*" >&2; exit 2; }

# A release version: vMAJOR.MINOR.PATCH[-PRERELEASE], as internal/contract
# (IsRelease) accepts it, without git describe's -N-gHASH or -dirty.
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.]+)?$'
[ -n "$version" ] || die "VERSION is required: make release VERSION=v1.2.3"
[[ "$version" =~ $semver ]] || die "VERSION=$version: want vMAJOR.MINOR.PATCH[-PRERELEASE], e.g. v1.2.3 or v1.3.0-rc.1"
[[ ! "$version" =~ (-[0-9]+-g[0-9a-f]+|-dirty)$ ]] || die "VERSION=$version looks like git describe output, not a release"

export CGO_ENABLED=0 SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
ldflags="-s -w -X github.com/tether-ci/tether/internal/version.Version=$version"
rm -rf "$dist"
mkdir -p "$dist"
log() { echo "release: $*" >&2; }

build() { # build NAME PKG OS ARCH
  local out="$dist/$1-$version-$3-$4"
  GOOS=$3 GOARCH=$4 go build -trimpath -ldflags "$ldflags" -o "$out" "$2"
  log "$out"
}
for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
  build tether ./cmd/tether "${p%/*}" "${p#*/}"
  build tether-pool ./cmd/tether-pool "${p%/*}" "${p#*/}"
  scripts/build-stage.sh build "$dist/tether-stage-$version-${p%/*}-${p#*/}" "${p%/*}" "${p#*/}" "$version"
done
for p in linux/amd64 linux/arm64; do
  build tether-shim ./cmd/shim "${p%/*}" "${p#*/}"
done

revision=$(git rev-parse HEAD 2>/dev/null || true)
for name in tether-shim tether; do
  beside=()
  if [ "$name" = tether ]; then
    # Beside tether in the CLI image: the pools' controller (`tether pool
    # serve` runs it) and GitLab's run_exec.
    for b in tether-pool tether-stage; do
      beside+=(--binary "$b:linux/amd64=$dist/$b-$version-linux-amd64"
        --binary "$b:linux/arm64=$dist/$b-$version-linux-arm64")
    done
  fi
  ref=$(go run ./tools/ociimage --image "$name" --tag "$version" --version "$version" --revision "$revision" \
    --binary "linux/amd64=$dist/$name-$version-linux-amd64" \
    --binary "linux/arm64=$dist/$name-$version-linux-arm64" "${beside[@]}" \
    --out "$dist/$name-$version.oci.tar")
  log "$dist/$name-$version.oci.tar: $ref"
done

helm=$(scripts/tools.sh helm)
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
# A clean helm home: no repositories or plugins of the machine.
for name in tether-gc tether-pool; do
  HELM_CACHE_HOME="$home/cache" HELM_CONFIG_HOME="$home/config" HELM_DATA_HOME="$home/data" \
    "$helm" package "deploy/helm/$name" --version "${version#v}" --app-version "$version" --destination "$dist" >/dev/null
  # helm stamps the archive with the current time: repack it with the
  # release's time, sorted, root-owned, so the chart is reproducible too.
  chart="$dist/$name-${version#v}.tgz"
  mkdir "$home/$name"
  tar -xzf "$chart" -C "$home/$name"
  tar -C "$home/$name" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -c "$name" | gzip -9n >"$chart"
  log "$chart (appVersion $version)"
done

# The plain manifests, one file per variant, with the image tagged VERSION
# (what `kustomize edit set image` would do to the kustomization's newTag).
for variant in namespaced cluster; do
  out="$dist/tether-gc-$variant-$version.yaml"
  {
    echo "# tether gc $version: deploy/$variant (kubectl apply -f)"
    for f in deploy/$variant/rbac.yaml deploy/$variant/cronjob.yaml; do
      echo "---"
      sed "s#image: ghcr.io/tether-ci/tether:dev#image: ghcr.io/tether-ci/tether:$version#" "$f"
    done
  } >"$out"
  grep -q "image: ghcr.io/tether-ci/tether:$version\$" "$out" || die "$out: the CronJob's image was not retagged"
  log "$out"
done

# The pools' controller: one file, namespace-less (kubectl apply -n NS -f).
out="$dist/tether-pool-$version.yaml"
{
  echo "# tether pool serve $version: deploy/pool (kubectl apply -n NS -f)"
  for f in deploy/pool/rbac.yaml deploy/pool/configmap.yaml deploy/pool/deployment.yaml; do
    echo "---"
    sed "s#image: ghcr.io/tether-ci/tether:dev#image: ghcr.io/tether-ci/tether:$version#" "$f"
  done
} >"$out"
grep -q "image: ghcr.io/tether-ci/tether:$version\$" "$out" || die "$out: the Deployment's image was not retagged"
log "$out"

(cd "$dist" && sha256sum -- * >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
log "$dist/SHA256SUMS"
