#!/usr/bin/env bash
# build-images.sh [NAME...] — build the images (default: all) without a
# registry into bin/images/NAME.tar, for `make images` and `make e2e`:
#
#   tether-shim, tether  the project's images, exactly as `make release` makes
#                        them (tether's with tether-pool and
#                        tether-stage beside it): static
#                        binaries cross-built for linux/amd64 and
#                        linux/arm64 (bin/images/linux-ARCH/), written by
#                        tools/ociimage as multi-platform OCI archives named
#                        ghcr.io/tether-ci/tether-shim:TAG and
#                        ghcr.io/tether-ci/tether:TAG. No daemon needed.
#   busybox, bash, git,  test images for the e2e suite (localhost/tether/NAME:TAG),
#   gitlab-helper, pause,
#   actions-runner,      (actions-runner: busybox plus a Node.js 20 binary as the
#   actions-job,         runner's externals; actions-job[-alpine]: busybox plus the
#   actions-job-alpine   shared libraries that node loads and bash, the -alpine
#                        one with /etc/alpine-release)
#   action               from images/NAME/Dockerfile (FROM scratch + COPY) as
#                        docker-archive tarballs. This script prepares the build
#                        context under bin/images/ctx/NAME from Debian packages
#                        (busybox-static, bash-static, git; gitlab-helper adds
#                        the test double test/gitlab-runner-helper; action adds
#                        images/action/entrypoint.sh as its ENTRYPOINT) and builds with
#                        podman (its own vfs storage under the cache directory,
#                        so it never disturbs another podman user) or, without
#                        podman, a working docker.
#
# Env: TETHER_IMAGE_TAG (default dev), TETHER_IMAGE_OUT (the output directory
# instead of bin/images; the unit tests use their own), TETHER_CACHE, TETHER_IMAGE_ENGINE
# (podman|docker), VERSION (the binaries' version and the label
# org.opencontainers.image.version), SOURCE_DATE_EPOCH (the OCI images'
# creation time; default: the last commit's time).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

tag="${TETHER_IMAGE_TAG:-dev}"
cache="${TETHER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
version="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
out="${TETHER_IMAGE_OUT:-$root/bin/images}"
all=(tether-shim tether busybox bash git gitlab-helper pause action actions-runner actions-job actions-job-alpine)
# The project's images and the platforms they are built for.
oci_platforms=(linux/amd64 linux/arm64)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")

log() { echo "build-images: $*" >&2; }
die() { log "$*"; exit 1; }

is_static() {
  # A static ELF has no program interpreter (PT_INTERP): ldd says so.
  ! ldd "$1" >/dev/null 2>&1 || ldd "$1" 2>&1 | grep -q 'not a dynamic executable'
}

# busybox_rootfs DIR: /bin/busybox and one symlink per applet, /tmp, /etc.
busybox_rootfs() {
  local dir=$1 bb=/bin/busybox
  [ -x "$bb" ] && is_static "$bb" || die "$bb is missing or not static: apt-get install busybox-static"
  mkdir -p "$dir/bin" "$dir/sbin" "$dir/usr/bin" "$dir/usr/sbin" "$dir/tmp" "$dir/etc" "$dir/root" "$dir/home"
  chmod 1777 "$dir/tmp"
  chmod 0700 "$dir/root"
  cp "$bb" "$dir/bin/busybox"
  chmod 0755 "$dir/bin/busybox"
  local applet
  while read -r applet; do
    [ -n "$applet" ] || continue
    [ -e "$dir/$applet" ] || [ -L "$dir/$applet" ] || ln -s /bin/busybox "$dir/$applet"
  done < <("$bb" --list-full)
  [ -L "$dir/bin/sh" ] || die "busybox has no sh applet"
  cat >"$dir/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
tether:x:65532:65532:tether:/home/tether:/bin/sh
EOF
  cat >"$dir/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
tether:x:65532:
EOF
  mkdir -p "$dir/home/tether"
  chown 65532:65532 "$dir/home/tether"
}

# node20: the Node.js 20 binary the JavaScript-action test images carry
# (TETHER_NODE20, else node on PATH), checked to be version 20.
node20() {
  local n="${TETHER_NODE20:-$(command -v node || true)}"
  [ -n "$n" ] && [ -x "$n" ] || die "no Node.js 20 binary for the JavaScript-action test images: install nodejs 20 (NodeSource's nodejs package) or set TETHER_NODE20 to one"
  case "$("$n" --version 2>/dev/null)" in
    v20.*) ;;
    *) die "$n is Node.js $("$n" --version 2>/dev/null || echo '?'), not 20: install nodejs 20 or set TETHER_NODE20 to a node 20 binary" ;;
  esac
  ! ldd "$n" 2>&1 | grep -q 'not found' || die "$n misses shared libraries (ldd): the test images need a node that loads only glibc and libstdc++"
  readlink -f "$n"
}

# copy_libs ROOTFS BINARY...: the shared libraries the binaries load, and
# the loader, where ldd finds them.
copy_libs() {
  local rootfs=$1 lib
  shift
  for lib in $(for b in "$@"; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
}

# prepare NAME: fill bin/images/ctx/NAME with what images/NAME/Dockerfile copies.
prepare() {
  local name=$1 ctx="$out/ctx/$1"
  rm -rf "$ctx"
  mkdir -p "$ctx"
  case "$name" in
    busybox)
      busybox_rootfs "$ctx/rootfs"
      ;;
    bash)
      local bs=/bin/bash-static
      [ -x "$bs" ] && is_static "$bs" || die "$bs is missing or not static: apt-get install bash-static"
      busybox_rootfs "$ctx/rootfs"
      rm -f "$ctx/rootfs/bin/bash"
      cp "$bs" "$ctx/rootfs/bin/bash"
      chmod 0755 "$ctx/rootfs/bin/bash"
      ;;
    git)
      prepare bash
      mv "$out/ctx/bash/rootfs" "$ctx/rootfs"
      rm -rf "$out/ctx/bash"
      local g=/usr/bin/git remote=/usr/lib/git-core/git-remote-http
      [ -x "$g" ] && [ -x "$remote" ] || die "git is missing: apt-get install git"
      mkdir -p "$ctx/rootfs/usr/lib/git-core"
      rm -f "$ctx/rootfs/usr/bin/git"
      cp "$g" "$ctx/rootfs/usr/bin/git"
      cp "$g" "$ctx/rootfs/usr/lib/git-core/git"
      cp "$remote" "$ctx/rootfs/usr/lib/git-core/git-remote-http"
      ln -s git-remote-http "$ctx/rootfs/usr/lib/git-core/git-remote-https"
      mkdir -p "$ctx/rootfs/usr/share/git-core"
      cp -r /usr/share/git-core/templates "$ctx/rootfs/usr/share/git-core/"
      # The shared libraries both load, and the loader, where ldd finds them.
      local lib
      for lib in $( (ldd "$g"; ldd "$remote") | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u); do
        mkdir -p "$ctx/rootfs$(dirname "$lib")"
        cp -L "$lib" "$ctx/rootfs$lib"
      done
      ;;
    gitlab-helper)
      prepare git
      mv "$out/ctx/git/rootfs" "$ctx/rootfs"
      rm -rf "$out/ctx/git"
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ctx/gitlab-runner-helper" ./test/gitlab-runner-helper
      cp images/gitlab-helper/gitlab-runner-build "$ctx/gitlab-runner-build"
      ;;
    actions-runner)
      # The runner's externals as ARC's runner image has them; node20_alpine
      # is the same (glibc) node, so a job on actions-job-alpine runs it.
      local node ext="$ctx/rootfs/home/runner/externals"
      node=$(node20)
      busybox_rootfs "$ctx/rootfs"
      mkdir -p "$ext/node20/bin" "$ext/node20_alpine/bin"
      cp "$node" "$ext/node20/bin/node"
      chmod 0755 "$ext/node20/bin/node"
      ln -s ../../node20/bin/node "$ext/node20_alpine/bin/node"
      ;;
    actions-job|actions-job-alpine)
      prepare bash
      mv "$out/ctx/bash/rootfs" "$ctx/rootfs"
      rm -rf "$out/ctx/bash"
      copy_libs "$ctx/rootfs" "$(node20)"
      [ "$name" = actions-job ] || echo 3.20.0 >"$ctx/rootfs/etc/alpine-release"
      ;;
    action)
      busybox_rootfs "$ctx/rootfs"
      cp images/action/entrypoint.sh "$ctx/entrypoint.sh"
      ;;
    pause)
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ctx/pause" ./images/pause
      ;;
    *) die "unknown image $name (known: ${all[*]})" ;;
  esac
}

# oci_image NAME: cross-build cmd/NAME's binary (and the tether image's
# tether-pool and tether-stage beside it, tether-stage the C build where
# scripts/build-stage.sh finds a compiler) for each platform and write the
# multi-platform OCI archive bin/images/NAME.tar.
oci_image() {
  local name=$1 pkg p os arch b bins=() beside=()
  case "$name" in
    tether-shim) pkg=./cmd/shim ;;
    tether) pkg=./cmd/tether beside=(tether-pool tether-stage) ;;
  esac
  for p in "${oci_platforms[@]}"; do
    os=${p%/*} arch=${p#*/}
    mkdir -p "$out/$os-$arch"
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
      -ldflags "-s -w -X github.com/tether-ci/tether/internal/version.Version=$version" \
      -o "$out/$os-$arch/$name" "$pkg"
    bins+=(--binary "$p=$out/$os-$arch/$name")
    for b in "${beside[@]}"; do
      if [ "$b" = tether-stage ]; then
        # The C build where a C compiler for the platform is found.
        scripts/build-stage.sh build "$out/$os-$arch/$b" "$os" "$arch" "$version"
      else
        CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
          -ldflags "-s -w -X github.com/tether-ci/tether/internal/version.Version=$version" \
          -o "$out/$os-$arch/$b" "./cmd/$b"
      fi
      bins+=(--binary "$b:$p=$out/$os-$arch/$b")
    done
  done
  go run ./tools/ociimage --image "$name" --tag "$tag" --version "$version" \
    --revision "$(git rev-parse HEAD 2>/dev/null || true)" --created "$created" \
    "${bins[@]}" --out "$out/$name.tar" >/dev/null
}

created="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
needs_engine=0
for name in "${names[@]}"; do
  case "$name" in tether-shim|tether) ;; *) needs_engine=1 ;; esac
done

engine="${TETHER_IMAGE_ENGINE:-}"
if [ "$needs_engine" = 0 ]; then
  engine=none
elif [ -z "$engine" ]; then
  if command -v podman >/dev/null; then engine=podman
  elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=docker
  else die "neither podman nor a working docker found: apt-get install podman"
  fi
fi

eng=()
case "$engine" in
  podman)
    store="$cache/podman-build"
    mkdir -p "$store/root" "$store/runroot" "$store/tmp"
    # Own storage (vfs works as root everywhere), no systemd, no journald.
    eng=(podman --root "$store/root" --runroot "$store/runroot" --storage-driver vfs
         --cgroup-manager cgroupfs --events-backend file --tmpdir "$store/tmp")
    export TMPDIR="$store/tmp"
    ;;
  docker) eng=(docker) ;;
  none) ;;
  *) die "unknown engine $engine (podman or docker)" ;;
esac

mkdir -p "$out"
for name in "${names[@]}"; do
  case "$name" in
    tether-shim|tether)
      start=$(date +%s%N)
      oci_image "$name"
      log "$name:$tag (${oci_platforms[*]}) -> ${out#"$root"/}/$name.tar ($(du -h "$out/$name.tar" | cut -f1), $(( ($(date +%s%N) - start) / 1000000 )) ms)"
      continue
      ;;
  esac
  [ -f "images/$name/Dockerfile" ] || die "images/$name/Dockerfile is missing"
  ref="localhost/tether/$name:$tag"
  # The node's containerd names the sandbox image with the dev tag.
  [ "$name" != pause ] || ref="localhost/tether/pause:dev"
  start=$(date +%s%N)
  prepare "$name"
  buildflags=()
  [ "$engine" = podman ] && buildflags=(--timestamp 0 --layers=false)
  "${eng[@]}" build -q "${buildflags[@]}" \
    --build-arg "VERSION=$version" \
    -t "$ref" -f "images/$name/Dockerfile" "$out/ctx/$name" >/dev/null
  rm -f "$out/$name.tar"
  if [ "$engine" = podman ]; then
    "${eng[@]}" save -q --format docker-archive -o "$out/$name.tar" "$ref"
  else
    docker save -o "$out/$name.tar" "$ref"
  fi
  log "$ref -> ${out#"$root"/}/$name.tar ($(du -h "$out/$name.tar" | cut -f1), $(( ($(date +%s%N) - start) / 1000000 )) ms)"
done
# Drop dangling layers of earlier builds so the cache does not grow forever.
if [ "$engine" = podman ]; then "${eng[@]}" image prune -f >/dev/null 2>&1 || true; fi
