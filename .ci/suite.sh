#!/usr/bin/env bash
# One CI lane on the node first on PATH: the README's two commands, `npm ci` from a clean
# node_modules (no native module is built: the install must compile nothing) and `npm test` (the whole suite).
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
echo "== node $(node --version), npm $(npm --version)"
# Should a dependency ever build a native module, it builds against the running Node's own headers,
# which offline node-gyp cannot download: point it at the ones installed with this Node when it has them.
if [ -z "${npm_config_nodedir:-}" ]; then
  prefix="$(dirname "$(dirname "$(command -v node)")")"
  header="$prefix/include/node/node_version.h"
  if [ -f "$header" ] && [ "v$(awk '/define NODE_(MAJOR|MINOR|PATCH)_VERSION/ { printf "%s%s", sep, $3; sep = "." }' "$header")" = "$(node --version)" ]; then
    export npm_config_nodedir="$prefix"
  fi
fi
# npm ci runs `prepare`, which compiles src/ to dist/ for the bin.
npm ci --no-audit --no-fund
echo "== node $(node --version): npm ci took $((SECONDS - started)) s"
npm test
echo "== node $(node --version): npm ci and npm test passed in $((SECONDS - started)) s"
