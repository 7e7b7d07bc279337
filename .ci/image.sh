#!/usr/bin/env bash
# Builds the container image from the Dockerfile, offline as far as images go (no registry): its
# bases are the local ones of .ci/base-image.sh, selected with build arguments. npm and
# Debian's mirror are still used by the Dockerfile's own steps. Prints `export DW_IMAGE=<name>`
# and `export CONTAINERS_CONF=...` for test/image/container.test.ts, which runs the image;
# everything else goes to stderr.
#   eval "$(bash .ci/image.sh)"
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "image: $*" >&2; }

bash .ci/container-tools.sh
# Runtime and limits that work on CI's machines (see the file); podman and buildah read it.
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/.ci/containers.conf}"
mapfile -t bases < <(bash .ci/base-image.sh)
base_args=()
for base in "${bases[@]}"; do base_args+=(--build-arg "$base"); done
image="${DW_IMAGE_NAME:-localhost/durable-worker:ci}"
# A TLS-intercepting proxy's CA (this machine trusts it through NODE_EXTRA_CA_CERTS) reaches the
# npm steps as a build secret: it is not stored in any layer.
secret_args=()
ca="${NODE_EXTRA_CA_CERTS:-${SSL_CERT_FILE:-}}"
[ -n "$ca" ] && [ -f "$ca" ] && secret_args=(--secret "id=ca-certificates,src=$ca")
started=$SECONDS
log "building $image on ${bases[*]}"
buildah build --pull=never --network=host --layers "${base_args[@]}" "${secret_args[@]}" \
  --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  --tag "$image" --file Dockerfile . >&2
size_bytes="$(podman image inspect --format '{{.Size}}' "$image")"
debian_bytes="$(podman image inspect --format '{{.Size}}' "${bases[1]#*=}")"
log "$image built in $((SECONDS - started)) s: $((size_bytes / 1000000)) MB, of which $((debian_bytes / 1000000)) MB the Debian base"
printf 'export DW_IMAGE=%q\n' "$image"
printf 'export CONTAINERS_CONF=%q\n' "$CONTAINERS_CONF"
