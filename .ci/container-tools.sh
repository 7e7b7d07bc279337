#!/usr/bin/env bash
# Installs what the container image build and run need, from Debian's packages, when missing:
# buildah (builds the Dockerfile), podman (runs the image), runc (the runtime .ci/containers.conf
# names), mmdebstrap (the base root filesystem, made offline: no image registry is needed).
# Idempotent; output goes to stderr.
set -euo pipefail

missing=()
for tool in buildah podman runc mmdebstrap; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
echo "container-tools: installing ${missing[*]} from Debian's packages" >&2
as_root apt-get update >&2 || echo "container-tools: apt-get update failed; trying the cached package lists" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
