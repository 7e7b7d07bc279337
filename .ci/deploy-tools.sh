#!/usr/bin/env bash
# Installs the tools the deploy checks need, when missing, and prints `export PATH=...` for the caller:
#   eval "$(bash .ci/deploy-tools.sh)"
# - helm: not packaged by Debian or npm; built from source with the Go module proxy (cached in $HOME/go/bin).
# - promtool and the prometheus server (test/deploy/prometheus-backlog.test.ts): Debian's `prometheus` package.
# Idempotent: a second run finds both and installs nothing. Everything but the export lines goes to stderr.
set -euo pipefail

HELM_VERSION="v3.16.4"
GOBIN_DIR="${GOBIN:-${GOPATH:-$HOME/go}/bin}"
log() { echo "deploy-tools: $*" >&2; }

path_dirs=()

find_go() {
  if command -v go >/dev/null 2>&1; then command -v go; return 0; fi
  if [ -x /usr/local/go/bin/go ]; then echo /usr/local/go/bin/go; return 0; fi
  return 1
}

# --- helm ---------------------------------------------------------------------------------------
if command -v helm >/dev/null 2>&1; then
  log "helm found at $(command -v helm)"
elif [ -x "$GOBIN_DIR/helm" ]; then
  log "helm found at $GOBIN_DIR/helm (cached build)"
  path_dirs+=("$GOBIN_DIR")
elif GO_BIN="$(find_go)"; then
  log "building helm $HELM_VERSION with $("$GO_BIN" version) (a few minutes on 2 cores)"
  GOBIN="$GOBIN_DIR" "$GO_BIN" install "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2
  path_dirs+=("$GOBIN_DIR")
else
  log "helm is missing and Go is not installed: the chart checks will fail under CI"
fi

# --- promtool and prometheus ---------------------------------------------------------------------
if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
  log "promtool found at $(command -v promtool), prometheus at $(command -v prometheus)"
elif command -v apt-get >/dev/null 2>&1; then
  log "installing Debian's prometheus package for promtool and the prometheus server"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2 || log "apt-get update failed; trying the cached package lists"
  apt-get install -y --no-install-recommends prometheus >&2
else
  log "promtool or prometheus is missing and apt-get is not available: the rule checks will fail under CI"
fi

for dir in "${path_dirs[@]+"${path_dirs[@]}"}"; do
  printf 'export PATH=%q:"$PATH"\n' "$dir"
done
