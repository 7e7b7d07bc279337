# syntax=docker/dockerfile:1
#
# durable-worker on Node 24 LTS, as the Helm chart runs it: uid 10001, read-only root filesystem,
# state (SQLite idempotency store, dead letters) in the volume /var/lib/durable-worker, handler
# modules in /app/handlers resolving `durable-worker` from /app/node_modules.
#
#   docker build -t durable-worker:0.1.0 .
#   docker run --rm --read-only -v "$PWD/handlers:/app/handlers:ro" durable-worker:0.1.0 check
#
# Two build arguments select the bases: NODE_IMAGE (node and npm in /usr/local, Debian bookworm) for
# the build stages, DEBIAN_IMAGE (the same Debian) for the runtime, which takes only the node binary
# from NODE_IMAGE: headers, npm and corepack (~90 MB) stay out of the image. CI builds both bases
# offline from Debian's packages and the Node npm package (.ci/base-image.sh).
ARG NODE_IMAGE=docker.io/library/node:24.21.0-bookworm-slim
ARG DEBIAN_IMAGE=docker.io/library/debian:bookworm-slim

# --- build: compile the TypeScript and pack the package as npm publishes it ----------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts: nothing needs building (the SQLite store runs on Node's built-in node:sqlite).
# Behind a TLS-intercepting proxy, pass its CA: --secret id=ca-certificates,src=/path/to/ca.pem
RUN --mount=type=secret,id=ca-certificates,target=/run/secrets/ca-certificates.pem \
    if [ -f /run/secrets/ca-certificates.pem ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca-certificates.pem; fi \
 && npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json README.md LICENSE ./
COPY src ./src
COPY bin ./bin
COPY handlers ./handlers
RUN npm run build \
 && npm pack --ignore-scripts --silent --pack-destination /tmp \
 && mkdir /package \
 && tar -xzf /tmp/durable-worker-*.tgz -C /package --strip-components=1

# --- deps: production dependencies from the lockfile -------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app/node_modules/durable-worker
COPY package.json package-lock.json ./
COPY scripts/image-manifest.mjs /tmp/
# The image keeps everything: the optional peer dependencies (pg, redis, the OpenTelemetry SDK and
# exporters) become dependencies here, at the versions the lockfile pins (scripts/image-manifest.mjs).
# Optional dependencies are left out: other platforms' binaries. The one optional package the image
# needs is esbuild's binary for this platform, which tsx uses to load .ts handlers: it is taken from
# the build stage (same lockfile, same platform).
RUN --mount=type=secret,id=ca-certificates,target=/run/secrets/ca-certificates.pem \
    if [ -f /run/secrets/ca-certificates.pem ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca-certificates.pem; fi \
 && node /tmp/image-manifest.mjs \
 && npm install --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund
COPY --from=build /src/node_modules/@esbuild ./node_modules/@esbuild

# --- runtime -----------------------------------------------------------------------------------
FROM ${DEBIAN_IMAGE}
# tini as PID 1: it forwards SIGTERM to the worker, which drains, and reaps any orphaned process.
# ca-certificates: Debian's CA bundle in /etc/ssl/certs, for `NODE_OPTIONS=--use-openssl-ca` and for a
# derived image that adds a private CA with update-ca-certificates (Node's own store stays the default;
# a private CA can also come in by NODE_EXTRA_CA_CERTS, docs/kubernetes.md).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && groupadd --gid 10001 durable-worker \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin durable-worker \
 && mkdir -p /app/handlers /app/node_modules/.bin /var/lib/durable-worker /app/.cache/node-compile-cache \
 && chown 10001:10001 /var/lib/durable-worker /app/.cache/node-compile-cache \
 && ln -s /var/lib/durable-worker /app/.durable-worker \
 && ln -s ../durable-worker/bin/durable-worker.js /app/node_modules/.bin/durable-worker \
 && printf '{\n  "private": true,\n  "type": "module"\n}\n' > /app/package.json
COPY --from=build /usr/local/bin/node /usr/local/bin/node
COPY --from=deps /app/node_modules/durable-worker/node_modules /app/node_modules/durable-worker/node_modules
COPY --from=build /package /app/node_modules/durable-worker
WORKDIR /app
# /app/.durable-worker (the CLI's default state folder, relative to /app) points into the volume,
# so `run` with its defaults writes there even with a read-only root filesystem.
VOLUME /var/lib/durable-worker
ENV NODE_ENV=production \
    NODE_COMPILE_CACHE=/app/.cache/node-compile-cache \
    PATH=/app/node_modules/.bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 10001:10001
# Node's compile cache, filled at build by a real `run` (scripts/warm-compile-cache.mjs) as the user that
# runs the image (Node keys the cache by user id): a start reuses V8's compiled code, even on a read-only
# root filesystem (the cache is only read then).
COPY scripts/warm-compile-cache.mjs /app/.cache/warm-compile-cache.mjs
RUN node /app/.cache/warm-compile-cache.mjs
EXPOSE 9464
ENTRYPOINT ["/usr/bin/tini", "--", "durable-worker"]
CMD ["--help"]

ARG DEBIAN_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="durable-worker" \
      org.opencontainers.image.description="Workers for the durable event consumers of the Data Platform API" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.base.name="${DEBIAN_IMAGE}"
