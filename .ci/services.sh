#!/usr/bin/env bash
# Starts the Redis and PostgreSQL servers the idempotency-store suites need, and prints the two
# `export` lines for the caller:
#   eval "$(bash .ci/services.sh)"
# - installs redis-server / postgresql from Debian's packages when missing (needs root and apt-get);
# - starts both on 127.0.0.1 when they are not answering (no systemd: daemonize / pg_ctlcluster);
# - creates the role `app` (password `app`) and the database `app` when missing.
# Idempotent: a second run finds everything up and changes nothing. Everything but the export lines
# goes to stderr. Ports: REDIS_PORT (default 6379), PostgreSQL's cluster port (default 5432).
set -euo pipefail

REDIS_PORT="${REDIS_PORT:-6379}"
log() { echo "services: $*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# --- packages -------------------------------------------------------------------------------------
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# The docs walk-through of tracing POSTs with curl (test/docs/tracing-walkthrough.test.ts).
command -v curl >/dev/null 2>&1 || missing+=(curl)
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then missing+=(postgresql); fi
# Transaction pooling in front of PostgreSQL (test/scale/exactly-once.test.ts, docs/stores.md).
command -v pgbouncer >/dev/null 2>&1 || missing+=(pgbouncer)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]} from Debian's packages"
  as_root apt-get update >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
fi

# --- Redis ----------------------------------------------------------------------------------------
if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
  log "redis already answering on 127.0.0.1:$REDIS_PORT"
else
  log "starting redis on 127.0.0.1:$REDIS_PORT"
  # No persistence: the stores' data is disposable test data.
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no >&2
  for _ in $(seq 1 50); do
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 || { log "redis did not start"; exit 1; }
fi

# --- PostgreSQL -----------------------------------------------------------------------------------
PGVER="$(ls /usr/lib/postgresql | sort -V | tail -1)"
if ! pg_lsclusters -h 2>/dev/null | awk -v v="$PGVER" '$1 == v && $2 == "main"' | grep -q .; then
  log "creating PostgreSQL $PGVER cluster main"
  as_root pg_createcluster "$PGVER" main >&2
fi
PGPORT="$(pg_lsclusters -h | awk -v v="$PGVER" '$1 == v && $2 == "main" { print $3 }')"
# vitest runs two files at once, and a file of the exactly-once suite alone opens nearly as many
# connections as Debian's default allows (two workers' stores and transaction pools).
PG_MAX_CONNECTIONS=300
PG_RESTART=0
if [ "$(as_root pg_conftool -s "$PGVER" main show max_connections 2>/dev/null)" != "$PG_MAX_CONNECTIONS" ]; then
  log "setting max_connections = $PG_MAX_CONNECTIONS"
  as_root pg_conftool "$PGVER" main set max_connections "$PG_MAX_CONNECTIONS" >&2
  PG_RESTART=1
fi
if pg_lsclusters -h | awk -v v="$PGVER" '$1 == v && $2 == "main" { print $4 }' | grep -q online; then
  if [ "$PG_RESTART" = 1 ]; then
    log "restarting postgresql $PGVER main on port $PGPORT for its new max_connections"
    as_root pg_ctlcluster "$PGVER" main restart >&2
  else
    log "postgresql $PGVER main already online on port $PGPORT"
  fi
else
  log "starting postgresql $PGVER main on port $PGPORT"
  as_root pg_ctlcluster "$PGVER" main start >&2
fi
for _ in $(seq 1 100); do
  as_root su postgres -c "pg_isready -q -h 127.0.0.1 -p $PGPORT" && break
  sleep 0.1
done

psql_admin() { as_root su postgres -c "psql -p $PGPORT -v ON_ERROR_STOP=1 -qtAX $(printf '%q ' "$@")"; }
if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'app'")" != "1" ]; then
  log "creating role app"
  # TCP logins use scram: the role needs a password.
  psql_admin -c "CREATE ROLE app LOGIN PASSWORD 'app'" >&2
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = 'app'")" != "1" ]; then
  log "creating database app"
  psql_admin -c "CREATE DATABASE app OWNER app" >&2
fi

# --- PgBouncer (transaction pooling) -------------------------------------------------------------
# A plain process with its own ini and userlist in PGBOUNCER_DIR, on a free port kept in that folder
# (found again by a second run); every database name maps to the PostgreSQL cluster above.
PGB_DIR="${PGBOUNCER_DIR:-/tmp/durable-worker-pgbouncer}"
PGB_PORT="$(cat "$PGB_DIR/port" 2>/dev/null || true)"
if [ -n "$PGB_PORT" ] && pg_isready -q -h 127.0.0.1 -p "$PGB_PORT" 2>/dev/null; then
  log "pgbouncer already answering on 127.0.0.1:$PGB_PORT"
else
  PGB_PORT="${PGBOUNCER_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
  log "starting pgbouncer (pool_mode transaction) on 127.0.0.1:$PGB_PORT"
  mkdir -p "$PGB_DIR"
  echo '"app" "app"' > "$PGB_DIR/userlist.txt"
  cat > "$PGB_DIR/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$PGPORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $PGB_DIR/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 40
logfile = $PGB_DIR/pgbouncer.log
pidfile = $PGB_DIR/pgbouncer.pid
INI
  echo "$PGB_PORT" > "$PGB_DIR/port"
  # PgBouncer refuses to run as root: as root, it runs as postgres.
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres "$PGB_DIR"; pgbouncer -d -u postgres "$PGB_DIR/pgbouncer.ini" >&2; else pgbouncer -d "$PGB_DIR/pgbouncer.ini" >&2; fi
  for _ in $(seq 1 50); do
    pg_isready -q -h 127.0.0.1 -p "$PGB_PORT" 2>/dev/null && break
    sleep 0.1
  done
  pg_isready -q -h 127.0.0.1 -p "$PGB_PORT" 2>/dev/null || { log "pgbouncer did not start (see $PGB_DIR/pgbouncer.log)"; exit 1; }
fi

echo "export REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
echo "export DATABASE_URL=postgres://app:app@127.0.0.1:$PGPORT/app"
echo "export PGBOUNCER_URL=postgres://app:app@127.0.0.1:$PGB_PORT/app?pool_mode=transaction"
