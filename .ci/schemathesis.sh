#!/usr/bin/env bash
# Installs Schemathesis (pinned) from PyPI into a virtual environment under $HOME/.cache, for the
# fuzz test of the published OpenAPI documents against the emulator (test/emulator/schemathesis.test.ts),
# and prints the export line for the caller:
#   eval "$(bash .ci/schemathesis.sh)"
# Python 3.9+ is taken from PATH; when missing, Debian's python3 and python3-venv are installed.
# Idempotent: a venv that already runs the pinned version is kept. Everything but the export line
# goes to stderr.
set -euo pipefail

SCHEMATHESIS_VERSION=4.32.5
venv="$HOME/.cache/durable-worker-ci/schemathesis-$SCHEMATHESIS_VERSION"
log() { echo "schemathesis: $*" >&2; }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if [ "$("$venv/bin/st" --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -1)" != "$SCHEMATHESIS_VERSION" ]; then
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    log "installing python3 and python3-venv from Debian's packages"
    as_root apt-get update >&2 || log "apt-get update failed; trying the cached package lists"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv >&2
  fi
  log "installing schemathesis==$SCHEMATHESIS_VERSION into $venv with $(python3 --version)"
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >&2
fi
log "$("$venv/bin/st" --version) at $venv/bin/st"
printf 'export SCHEMATHESIS_BIN=%q\n' "$venv/bin/st"
