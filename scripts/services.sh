#!/usr/bin/env bash
# Real services for the test suite: the machine's Postgres and a local single-node Kafka.
#
#   bash scripts/services.sh start   # Postgres up + test database, Kafka jars fetched, broker up;
#                                    # writes .services/env
#   bash scripts/services.sh stop    # stops Kafka (Postgres belongs to the machine and keeps running)
#   bash scripts/services.sh status  # exit 0 when both are up
#   bash scripts/services.sh env     # export lines, e.g. eval "$(bash scripts/services.sh env)"
#
# .services/env holds KAFKA_BROKERS, KAFKA_SASL_BROKERS and KAFKA_TLS_BROKERS (the same broker's
# SASL/PLAIN and TLS listeners), KAFKA_TLS_CA (the certificate to trust for the latter) and
# DATABASE_URL as KEY=value lines (dotenv and bash friendly).
# Ports and names: see the Env lines of scripts/kafka.sh and scripts/postgres.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPTS="$ROOT/scripts"
ENV_FILE="$ROOT/.services/env"

env_lines() {
  echo "KAFKA_BROKERS=127.0.0.1:${KAFKA_PORT:-19092}"
  echo "KAFKA_SASL_BROKERS=127.0.0.1:${KAFKA_SASL_PORT:-19094}"
  echo "KAFKA_TLS_BROKERS=127.0.0.1:${KAFKA_TLS_PORT:-19095}"
  echo "KAFKA_TLS_CA=$ROOT/.services/kafka/tls/ca.pem"
  echo "DATABASE_URL=$(bash "$SCRIPTS/postgres.sh" url)"
}

case "${1:-}" in
  start)
    bash "$SCRIPTS/postgres.sh" start
    bash "$SCRIPTS/kafka.sh" fetch
    bash "$SCRIPTS/kafka.sh" start
    mkdir -p "$(dirname "$ENV_FILE")"
    env_lines > "$ENV_FILE"
    echo "services: ready; environment in ${ENV_FILE#"$ROOT"/}" >&2
    ;;
  stop)
    bash "$SCRIPTS/kafka.sh" stop
    ;;
  status)
    rc=0
    bash "$SCRIPTS/postgres.sh" status || rc=$?
    bash "$SCRIPTS/kafka.sh" status || rc=$?
    exit "$rc"
    ;;
  env)
    env_lines | sed 's/^/export /'
    ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
