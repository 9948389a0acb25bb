#!/usr/bin/env bash
# The machine's Postgres for tests: make sure it answers on 127.0.0.1 and holds the test database.
#
#   bash scripts/postgres.sh start    # start the local cluster if needed, create the database
#   bash scripts/postgres.sh status   # exit 0 when Postgres answers and the database exists
#   bash scripts/postgres.sh url      # print the connection string
#
# Postgres is a machine service (Debian cluster, trust auth for 127.0.0.1): this script starts it
# when it is down but never stops it. The role is `postgres`, the superuser every Debian cluster
# has; trust auth over TCP means no password.
# Env: POSTGRES_PORT (default 5432), POSTGRES_USER (default postgres),
#      POSTGRES_DB (default tributary_test), POSTGRES_CLUSTER (Debian cluster to start, default
#      main), POSTGRES_START_TIMEOUT (seconds, default 30).
set -euo pipefail

HOST=127.0.0.1
PORT=${POSTGRES_PORT:-5432}
USER_NAME=${POSTGRES_USER:-postgres}
DB=${POSTGRES_DB:-tributary_test}
CLUSTER=${POSTGRES_CLUSTER:-main}
TIMEOUT=${POSTGRES_START_TIMEOUT:-30}

log() { echo "postgres: $*" >&2; }

url() { echo "postgres://$USER_NAME@$HOST:$PORT/$DB"; }

ready() { pg_isready -q -h "$HOST" -p "$PORT"; }

psql_admin() { psql -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PORT" -U "$USER_NAME" -d postgres "$@"; }

db_exists() {
  [ "$(psql_admin -At -c "select 1 from pg_database where datname = '$DB'")" = 1 ]
}

start_cluster() {
  command -v pg_ctlcluster > /dev/null || { log "nothing on $HOST:$PORT and no pg_ctlcluster to start it"; exit 1; }
  # Newest installed major version; Debian keeps one folder per version in /etc/postgresql.
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  log "starting cluster $version/$CLUSTER"
  pg_ctlcluster --skip-systemctl-redirect "$version" "$CLUSTER" start
  local deadline=$((SECONDS + TIMEOUT))
  until ready; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "not ready on $HOST:$PORT after ${TIMEOUT}s"
      pg_isready -h "$HOST" -p "$PORT" >&2 || true
      exit 1
    fi
    sleep 0.25
  done
}

start() {
  ready || start_cluster
  if ! psql_admin -c 'select 1' > /dev/null; then
    log "role $USER_NAME cannot connect to $HOST:$PORT without a password (trust auth expected); set POSTGRES_USER"
    exit 1
  fi
  if ! db_exists; then
    psql_admin -c "create database \"$DB\"" > /dev/null
    log "created database $DB"
  fi
  log "ready at $(url)"
}

status() {
  if ready && db_exists 2> /dev/null; then
    echo "postgres: ready at $(url)"
    return 0
  fi
  if ready; then echo "postgres: running, database $DB missing"; else echo "postgres: not answering on $HOST:$PORT"; fi
  return 3
}

case "${1:-}" in
  start) start ;;
  status) status ;;
  url) url ;;
  *) echo "usage: $0 start|status|url" >&2; exit 2 ;;
esac
