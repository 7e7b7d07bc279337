#!/usr/bin/env bash
# Installs Chromium from Debian's packages for the console's browser tests (test/console/), driven
# by playwright-core pointed at it (never a browser downloaded by a driver), and prints the export
# line for the caller:
#   eval "$(bash .ci/browser.sh)"
# Idempotent: an installed chromium is kept. Everything but the export line goes to stderr.
set -euo pipefail

log() { echo "browser: $*" >&2; }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v chromium >/dev/null 2>&1; then
  log "installing chromium from Debian's packages"
  as_root apt-get update >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2
fi
CHROMIUM="$(command -v chromium)"
log "$("$CHROMIUM" --version 2>/dev/null || echo 'chromium (version unknown)') at $CHROMIUM"
echo "export CHROMIUM_PATH=$CHROMIUM"
