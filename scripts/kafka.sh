#!/usr/bin/env bash
# Single-node Apache Kafka (KRaft, broker+controller in one JVM) for tests, run from its jars.
#
#   bash scripts/kafka.sh fetch    # jars from Maven Central into scripts/kafka/target/ (cached in ~/.m2)
#   bash scripts/kafka.sh start    # start on 127.0.0.1:$KAFKA_PORT, wait until it serves
#   bash scripts/kafka.sh stop     # SIGTERM the broker we started, SIGKILL after 30 s
#   bash scripts/kafka.sh status   # exit 0 when our broker is running and serving, 3 otherwise
#
# Measured on a 2-vCPU / 24 GiB machine, OpenJDK 17, Maven 3.8.7, Kafka 4.1.1 (46 jars, 43 MB):
#   fetch, empty Maven repository (plugins and jars downloaded): 24.2 s
#   fetch, Maven plugins cached, Kafka jars not yet in ~/.m2:     9.6 s
#   fetch, jars in ~/.m2, libs folder missing:                    4.8 s
#   fetch, libs folder complete (skipped):                        0.02 s
#   start (storage format + JVM + PLAINTEXT port open):           6-8 s (10 s with a test run beside it)
#   stop (SIGTERM, controlled shutdown):                          2.0 s
#
# Env: KAFKA_PORT (PLAINTEXT, default 19092), KAFKA_CONTROLLER_PORT (default 19093),
#      KAFKA_SASL_PORT (SASL_PLAINTEXT with PLAIN, default 19094; test user "tributary",
#      password "tributary-secret": tests of the sink's SASL settings connect there),
#      KAFKA_TLS_PORT (SSL, default 19095; a self-signed certificate for 127.0.0.1 made at every
#      start with openssl, in .services/kafka/tls/ca.pem: tests of the TLS settings trust it),
#      KAFKA_START_TIMEOUT (seconds, default 90), JAVA (default java), MVN (default mvn).
# The run dir is .services/kafka (git-ignored): server.properties, broker.log, broker.pid, data/.
# The data dir is formatted afresh on every start: the broker holds nothing worth keeping.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
POM="$ROOT/scripts/kafka/pom.xml"
# The pom is the one place that names the Kafka version (first <kafka.version> = default profile).
KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM" | head -n 1)
LIBS="$ROOT/scripts/kafka/target/kafka-$KAFKA_VERSION/libs"
FETCHED_MARK="$LIBS/.fetched"
RUN_DIR="$ROOT/.services/kafka"
LOCK_FILE="$ROOT/.services/kafka.lock"
PID_FILE="$RUN_DIR/broker.pid"
LOG_FILE="$RUN_DIR/broker.log"
PORT=${KAFKA_PORT:-19092}
CPORT=${KAFKA_CONTROLLER_PORT:-19093}
SASL_PORT=${KAFKA_SASL_PORT:-19094}
TLS_PORT=${KAFKA_TLS_PORT:-19095}
TIMEOUT=${KAFKA_START_TIMEOUT:-90}
JAVA=${JAVA:-java}
MVN=${MVN:-mvn}
# Any URL-safe base64 of 16 bytes; fixed, since every start formats a fresh data dir.
CLUSTER_ID=MkU3OEVBNTcwNTJENDM2Qg
# Small heap, serial GC and C1-only JIT: quick start-up and little CPU on small CI machines.
JVM_OPTS=(-Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError
          -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true
          "-Dlog4j2.configurationFile=$RUN_DIR/log4j2.properties")

log() { echo "kafka: $*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pom_hash() { sha256sum "$POM" | cut -d' ' -f1; }

# A pid counts as ours only while it is a live java running kafka.Kafka with our run dir.
our_pid() {
  local pid
  [ -f "$PID_FILE" ] || return 1
  pid=$(cat "$PID_FILE")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "kafka.Kafka $RUN_DIR/server.properties" || return 1
  echo "$pid"
}

# The PLAINTEXT port our running broker was started with.
broker_port() { sed -n 's/^advertised.listeners=PLAINTEXT:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$RUN_DIR/server.properties"; }

fetch() {
  if [ -f "$FETCHED_MARK" ] && [ "$(cat "$FETCHED_MARK")" = "$(pom_hash)" ]; then
    log "jars for Kafka $KAFKA_VERSION already in ${LIBS#"$ROOT"/}"
    return 0
  fi
  command -v "$MVN" > /dev/null || { log "mvn not found (install Maven, e.g. apt-get install maven)"; exit 1; }
  log "fetching Kafka $KAFKA_VERSION jars with Maven"
  # copy-dependencies never deletes stale jars: start from an empty folder.
  rm -rf "$LIBS"
  # Quiet Maven still prints bare colour codes; show its output only when it fails.
  local out
  if ! out=$("$MVN" -B -q -f "$POM" dependency:copy-dependencies 2>&1); then
    echo "$out" >&2
    log "Maven could not fetch the jars"
    exit 1
  fi
  local jar
  for jar in "kafka_2.13-$KAFKA_VERSION" "kafka-clients-$KAFKA_VERSION" "kafka-server-$KAFKA_VERSION" \
             log4j-slf4j-impl- slf4j-api-; do
    ls "$LIBS" | grep -q "^$jar" || { log "fetched jars lack $jar*.jar"; exit 1; }
  done
  # Exactly one SLF4J binding, or the broker logs through the wrong backend (or not at all).
  if ls "$LIBS" | grep -Eq 'slf4j-(reload4j|log4j12|simple|nop|jdk14)|logback-classic|log4j-slf4j2-impl'; then
    log "more than one SLF4J binding in ${LIBS#"$ROOT"/}"; exit 1
  fi
  pom_hash > "$FETCHED_MARK"
  log "$(ls "$LIBS" | grep -c '\.jar$') jars in ${LIBS#"$ROOT"/}"
}

# A self-signed certificate for 127.0.0.1; the broker's PEM keystore is its key and the certificate.
write_certificate() {
  mkdir -p "$RUN_DIR/tls"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$RUN_DIR/tls/key.pem" -out "$RUN_DIR/tls/ca.pem" 2> /dev/null
  cat "$RUN_DIR/tls/key.pem" "$RUN_DIR/tls/ca.pem" > "$RUN_DIR/tls/keystore.pem"
}

write_config() {
  cat > "$RUN_DIR/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:${CPORT}
listeners=PLAINTEXT://127.0.0.1:${PORT},CONTROLLER://127.0.0.1:${CPORT},SASL_PLAINTEXT://127.0.0.1:${SASL_PORT},SSL://127.0.0.1:${TLS_PORT}
advertised.listeners=PLAINTEXT://127.0.0.1:${PORT},SASL_PLAINTEXT://127.0.0.1:${SASL_PORT},SSL://127.0.0.1:${TLS_PORT}
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL
# A second listener that needs SASL/PLAIN, for the tests of clients' SASL settings.
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_tributary="tributary-secret";
# And one with TLS (server certificate only), for the tests of clients' TLS settings.
listener.name.ssl.ssl.keystore.type=PEM
listener.name.ssl.ssl.keystore.location=${RUN_DIR}/tls/keystore.pem
log.dirs=${RUN_DIR}/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
# One partition for internal topics: the default 50 make the first group join slow.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
group.initial.rebalance.delay.ms=0
# Lets tests use short consumer session timeouts (broker default minimum: 6 s).
group.min.session.timeout.ms=1000
num.network.threads=2
background.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
# The default 128 MiB dedupe buffer is allocated on the heap at start-up.
log.cleaner.dedupe.buffer.size=2097152
PROPS
  # Everything at WARN, except the "Kafka Server started" line.
  cat > "$RUN_DIR/log4j2.properties" <<'L4J2'
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = OUT
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = info
L4J2
}

fail_start() {
  log "$1; last lines of ${LOG_FILE#"$ROOT"/}:"
  tail -n 60 "$LOG_FILE" >&2 || true
  exit 1
}

# Kafka opens a fixed-port listener only once the broker has caught up and is unfenced,
# so an accepted TCP connection on the PLAINTEXT port means "serving".
wait_ready() {
  local pid=$1 deadline=$((SECONDS + TIMEOUT))
  until port_open "$PORT"; do
    kill -0 "$pid" 2> /dev/null || fail_start "broker exited during start-up"
    if [ "$SECONDS" -ge "$deadline" ]; then
      stop
      fail_start "broker not serving on 127.0.0.1:$PORT after ${TIMEOUT}s"
    fi
    sleep 0.25
  done
}

start() {
  local pid
  if pid=$(our_pid); then
    if [ "$(broker_port)" != "$PORT" ]; then
      log "our broker (pid $pid) serves port $(broker_port), not KAFKA_PORT=$PORT; stop it first"
      exit 1
    fi
    if port_open "$PORT"; then
      log "already running (pid $pid) on 127.0.0.1:$PORT"
      return 0
    fi
    log "pid $pid is starting; waiting for 127.0.0.1:$PORT"
    wait_ready "$pid"
    log "serving on 127.0.0.1:$PORT (pid $pid)"
    return 0
  fi
  if port_open "$PORT" || port_open "$CPORT" || port_open "$SASL_PORT" || port_open "$TLS_PORT"; then
    log "port $PORT, $CPORT, $SASL_PORT or $TLS_PORT is taken by another process; set KAFKA_PORT / KAFKA_CONTROLLER_PORT / KAFKA_SASL_PORT / KAFKA_TLS_PORT"
    exit 1
  fi
  [ -f "$FETCHED_MARK" ] || fetch
  command -v "$JAVA" > /dev/null || { log "java not found (Kafka $KAFKA_VERSION needs Java 17+)"; exit 1; }

  local started=$SECONDS
  rm -rf "$RUN_DIR"
  mkdir -p "$RUN_DIR/data"
  write_certificate
  write_config
  if ! "$JAVA" -Xmx256m "-Dlog4j2.configurationFile=$RUN_DIR/log4j2.properties" -cp "$LIBS/*" \
      kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$RUN_DIR/server.properties" \
      > "$RUN_DIR/format.log" 2>&1; then
    log "storage format failed:"
    cat "$RUN_DIR/format.log" >&2
    exit 1
  fi
  # Own session and no inherited stdio: the broker outlives this script and never holds
  # the caller's pipes open (vitest's globalSetup and CI wait on those).
  # It must not inherit the lock's descriptor either, or it would hold the lock for its lifetime.
  setsid "$JAVA" "${JVM_OPTS[@]}" -cp "$LIBS/*" kafka.Kafka "$RUN_DIR/server.properties" \
    > "$LOG_FILE" 2>&1 < /dev/null 9>&- &
  pid=$!
  echo "$pid" > "$PID_FILE"
  wait_ready "$pid"
  log "Kafka $KAFKA_VERSION serving on 127.0.0.1:$PORT (pid $pid, started in $((SECONDS - started))s)"
}

stop() {
  local pid
  if ! pid=$(our_pid); then
    rm -f "$PID_FILE"
    log "not running"
    return 0
  fi
  kill -TERM "$pid" 2> /dev/null || true
  local i
  for i in $(seq 1 120); do
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2> /dev/null; then
    log "pid $pid still alive after 30s; sending SIGKILL"
    kill -KILL "$pid" 2> /dev/null || true
  fi
  rm -f "$PID_FILE"
  log "stopped (pid $pid)"
}

status() {
  local pid port
  if ! pid=$(our_pid); then
    echo "kafka: not running"
    return 3
  fi
  port=$(broker_port)
  if ! port_open "$port"; then
    echo "kafka: starting (pid $pid), 127.0.0.1:$port not open yet"
    return 3
  fi
  echo "kafka: running (pid $pid) on 127.0.0.1:$port"
  [ "$port" = "$PORT" ] || { echo "kafka: KAFKA_PORT=$PORT differs from the running broker's port"; return 3; }
}

# Two test runs in one checkout may start or stop at the same moment: serialise them.
locked() {
  mkdir -p "$(dirname "$LOCK_FILE")"
  exec 9> "$LOCK_FILE"
  flock -w $((TIMEOUT + 60)) 9 || { log "timed out waiting for ${LOCK_FILE#"$ROOT"/}"; exit 1; }
  "$@"
}

case "${1:-}" in
  fetch) locked fetch ;;
  start) locked start ;;
  stop) locked stop ;;
  status) status ;;
  *) echo "usage: $0 fetch|start|stop|status" >&2; exit 2 ;;
esac
