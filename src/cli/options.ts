/**
 * The options of the `tributary` commands as data: each option's name, meaning, default,
 * environment variable and check. The commands (`commands.ts`) and the modules that run them
 * read these; the modules only their types, so that the table and the commands do not import
 * each other.
 *
 * The defaults are written out here rather than imported from the library (importing
 * `pipeline/run.js` loads Effect, which the front door must not); `test/cli/front.test.ts`
 * holds each one equal to the library's constant.
 *
 * @since 0.3.0
 */
import { existsSync } from "node:fs"
import { readContract } from "../pipeline/internal/contractText.js"
import type { SchemaContract } from "../pipeline/SchemaContract.js"
import {
  choice,
  type Decoded,
  fail,
  flag,
  integer,
  map,
  ok,
  optional,
  positional,
  repeated,
  secret,
  text,
  withDefault,
  withEnv
} from "./spec.js"

// -- shared shapes ----------------------------------------------------------------------

/**
 * A service address: http or https with a host. `127.0.0.1:8080` (no scheme) is the usual
 * slip, so the message offers the fix.
 *
 * @since 0.3.0
 * @category utils
 */
export const parseApiUrl = (name: string, value: string) => {
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {
    url = undefined
  }
  if (url !== undefined && (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "") {
    return ok(value.replace(/\/+$/, ""))
  }
  const hint = /^[^/:]+:[0-9]+/.test(value) || !value.includes("://") ? `; did you mean http://${value}?` : ""
  return fail(`--${name} must be an http:// or https:// address such as http://127.0.0.1:8080, got '${value}'${hint}`)
}

/**
 * `30s`, `500ms`, `2m`, or spelled out (`30 seconds`, `500 millis`), in milliseconds.
 *
 * @since 0.3.0
 * @category utils
 */
export const parseMillis = (value: string): number | undefined => {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|millis|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)$/i.exec(value.trim())
  if (match === null) return undefined
  const unit = match[2]!.toLowerCase()
  const factor = unit === "ms" || unit.startsWith("milli") ? 1 : unit.startsWith("s") ? 1000 : 60_000
  return Number(match[1]) * factor
}

const duration = (name: string, fallback: string, description: string, min = 1) =>
  withDefault(
    map(text(name, "DURATION", description), (value) => {
      const millis = parseMillis(value)
      return millis !== undefined && millis >= min
        ? ok(millis)
        : fail(`--${name} must be a duration such as 30s, 500ms or 2m${min > 1 ? ` of at least ${min} ms` : ""}, got '${value}'`)
    }),
    parseMillis(fallback)!,
    fallback
  )

/** `64mb`, `512kb`, bytes. */
const parseSize = (value: string) => {
  const match = /^([0-9]+)\s*(b|kb|mb|gb)?$/i.exec(value.trim())
  const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(match?.[2] ?? "b").toLowerCase() as "b"]
  const bytes = match === null ? NaN : Number(match[1]) * unit
  return Number.isFinite(bytes) && bytes >= 1 ? bytes : undefined
}

/** The client commands' connection. */
const connection = {
  apiUrl: map(withEnv(text("api-url", "URL", "The service's address"), "TRIBUTARY_API_URL"), (value) => parseApiUrl("api-url", value)),
  apiKey: secret(withEnv(text("api-key", "KEY", "API key"), "TRIBUTARY_API_KEY"))
}

/**
 * The defaults of the delivery options, as the library has them.
 *
 * @since 0.1.0
 * @category defaults
 */
export const deliveryDefaults = { concurrency: 16, maxPending: 4096, maxPendingBytes: "64mb", retries: 8, maxLineBytes: 1024 * 1024 }

const concurrency = withDefault(
  map(
    text(
      "concurrency",
      "N|fixed:N",
      "Requests in flight at once: N is the ceiling of an adaptive limit (starts at 1, grows while the service keeps up, backs off on 429/503, timeouts and rising latency); fixed:N keeps N"
    ),
    (value): Decoded<number | { readonly fixed: number }> => {
      const match = /^(fixed:)?([0-9]+)$/.exec(value.trim())
      const n = match === null ? NaN : Number(match[2])
      if (!(Number.isInteger(n) && n >= 1)) {
        return fail(`--concurrency must be a whole number of at least 1 (an adaptive ceiling) or fixed:N, got '${value}'`)
      }
      return ok(match![1] === undefined ? n : { fixed: n })
    }
  ),
  deliveryDefaults.concurrency as number | { readonly fixed: number },
  String(deliveryDefaults.concurrency)
)

const maxPending = (fallback: number) =>
  withDefault(
    integer(
      "max-pending",
      "N",
      "Batches pending at once (sent and followed to their end, or held back behind an earlier batch of the same keys; a batch whose other records ended keeps only its held records' share of a place, and at most twice N are under way); the source is read no further while this many are pending",
      1
    ),
    fallback
  )

const maxPendingBytes = withDefault(
  map(text("max-pending-bytes", "SIZE", "Bytes of records pending batches may hold, for their dead letters (64mb, 512kb or bytes)"), (value) => {
    const bytes = parseSize(value)
    return bytes === undefined ? fail(`--max-pending-bytes must be a size such as 64mb, 512kb or 1048576, got '${value}'`) : ok(bytes)
  }),
  64 * 1024 ** 2,
  deliveryDefaults.maxPendingBytes
)

const retries = withDefault(
  integer(
    "retries",
    "N",
    "Retries of a failing request (transport errors, 408, 429, 5xx; backoff from 100 ms to 10 s), reported on stderr (the first five of any 5 s one by one, the rest counted by cause), before the run stops with exit 1",
    0
  ),
  deliveryDefaults.retries
)

const keyOrder = withDefault(
  choice(
    "key-order",
    ["terminal", "accepted"],
    "For a dataset with a primary key, a batch sharing a key value with an earlier batch waits until that one's ingestion is terminal (safe with any service) or accepted (for a service that applies a dataset's ingestions in the order it accepted them, as tributary serve does; much faster when neighbouring batches share keys)"
  ),
  "terminal" as "terminal" | "accepted"
)

const maxDeadLetters = (fallback: string) =>
  withDefault(
    map(
      text(
        "max-dead-letters",
        "N|P%",
        "Stop with exit 1 (after committing what was delivered) once more records than this are dead-lettered: a count, or a share of the records read, checked from the 1,000th record on and at the end from the 100th; 100% never stops"
      ),
      (value): Decoded<{ readonly count: number } | { readonly ratio: number }> => {
        const percent = /^([0-9]+(?:\.[0-9]+)?)%$/.exec(value.trim())
        if (percent !== null && Number(percent[1]) <= 100) return ok({ ratio: Number(percent[1]) / 100 })
        if (/^[0-9]+$/.test(value.trim())) return ok({ count: Number(value.trim()) })
        return fail(`--max-dead-letters must be a count (500) or a share of the records read (10%), got '${value}'`)
      }
    ),
    fallback.endsWith("%") ? { ratio: Number(fallback.slice(0, -1)) / 100 } : { count: Number(fallback) },
    fallback
  )

const restart = flag(
  "restart",
  "Start over: ignore the checkpoint and begin a fresh run (its records are stored again even if an earlier run sent them); the checkpoint is replaced"
)

const schemaContract = withDefault(
  map(
    text(
      "schema-contract",
      "CONTRACT",
      "What to do with records that do not fit the dataset's schema: evolve (new columns are sent and the dataset gains them, up to 100; a value of the wrong type is a dead letter), freeze (both are dead letters), discard_value (new keys and wrong values are dropped, the rest sent), or columns=evolve|freeze|discard_value,data_type=freeze|discard_value. A missing primary-key value is always a dead letter"
    ),
    (value): Decoded<SchemaContract> => {
      const read = readContract(value)
      return "problem" in read ? fail(`--schema-contract: ${read.problem}`) : ok(read)
    }
  ),
  { columns: "evolve", dataType: "freeze" } as SchemaContract,
  "evolve"
)

/** A filter or fix given any number of times (none: no filter, no fix). */
const many = <A>(spec: Parameters<typeof repeated<A>>[0]) => withDefault(repeated(spec), [] as ReadonlyArray<A>, "none")

const otlpEndpoint = optional(
  withEnv(
    text("otlp-endpoint", "URL", "Export traces and metrics over OTLP/HTTP to this address, e.g. http://localhost:4318"),
    "OTEL_EXPORTER_OTLP_ENDPOINT"
  ),
  "none"
)

const json = flag("json", "Print the summary as one JSON object on stdout (the progress display stays on stderr)")

const metricsPort = optional(
  integer("metrics-port", "PORT", "Serve Prometheus metrics, /health and /ready on this port while running (0 picks one; the address is printed)", 0),
  "none"
)

const dataset = text("dataset", "ID", "The destination dataset (its number, or its UUID)")

const port = (fallback: number, description: string) =>
  withDefault(integer("port", "PORT", description, 0), fallback)

/** What `ingest` and `backfill` (runs that end) share: output, telemetry and delivery. */
const oneShotRun = {
  json,
  metricsPort,
  otlpEndpoint,
  concurrency,
  maxPending: maxPending(deliveryDefaults.maxPending),
  maxPendingBytes,
  keyOrder,
  retries,
  maxDeadLetters: maxDeadLetters("10%"),
  schemaContract
}

// -- the commands ----------------------------------------------------------------------------

/**
 * The options of `tributary serve`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const serveOptions = {
    host: withDefault(text("host", "HOST", "Address to listen on (0.0.0.0 for every interface)"), "127.0.0.1"),
    port: port(8080, "Port to listen on; 0 picks a free one (the printed URL shows it)"),
    apiKey: optional(text("api-key", "KEY", "Make KEY an admin key of the default organization"), "a generated key, printed"),
    seed: optional(
      map(text("seed", "FILE", "JSON seed file with organizations, accounts, users and keys (examples/seed.json shows the shape)"), (file) =>
        existsSync(file) ? ok(file) : fail(`--seed: no file at '${file}'`)),
      "one organization with one admin key"
    ),
    maxBodyBytes: withDefault(integer("max-body-bytes", "BYTES", "Request bodies over this many bytes are answered 413", 1), 10 * 1024 * 1024, "10485760 (10 MiB)"),
    faults: optional(
      text(
        "faults",
        "SPEC",
        "Inject faults into API requests, e.g. 5xx=0.05,429=0.02,retry-after=1,latency=5-20ms,drop=0.01,max-body=1mb,seed=7,after=10 (README, 'Faults')"
      ),
      "none"
    ),
    databaseUrl: secret(optional(
      withEnv(
        text(
          "database-url",
          "URL",
          "Keep everything in this Postgres database (postgres://user:password@host:port/db) instead of in memory: durable, and shared by every server started with the same URL"
        ),
        "TRIBUTARY_DATABASE_URL"
      ),
      "in memory"
    )),
    databaseSchema: withDefault(
      withEnv(text("database-schema", "NAME", "The Postgres schema that holds the tables (created if missing)"), "TRIBUTARY_DATABASE_SCHEMA"),
      "tributary"
    ),
    workers: optional(
      integer(
        "workers",
        "N",
        "Ingestion workers in this process; 0 with --database-url: this server accepts ingestions and the other servers on the database process them",
        0
      ),
      "1 in memory, 4 with --database-url"
    ),
    ingestionLease: duration(
      "ingestion-lease",
      "30s",
      "How long a worker holds an ingestion it took: if its server dies, another server finishes the ingestion after this",
      100
    ),
    requestTimeout: duration("request-timeout", "60s", "Time to receive a whole request, headers and body; a client slower than this is answered 408", 100),
    otlpEndpoint
  }

/**
 * The options of `tributary demo`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const demoOptions = {
    port: port(8080, "Port of the embedded server; 0 picks a free one"),
    keepServing: flag("keep-serving", "Keep the server running after the ingest, to explore it (Ctrl-C stops it)"),
    file: optional(
      map(text("file", "FILE", "NDJSON file to ingest instead of the bundled sample"), (file) =>
        existsSync(file) ? ok(file) : fail(`--file: no file at '${file}'`)),
      "the bundled examples/data/orders.ndjson"
    ),
    workDir: optional(text("work-dir", "DIR", "Keep the checkpoint and dead letters in DIR"), "a temporary directory, removed at the end")
  }

/**
 * The options of `tributary ingest`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const ingestOptions = {
    input: positional("FILE|-", "NDJSON file to send, or - for standard input"),
    dataset,
    ...connection,
    deadLetter: optional(text("dead-letter", "FILE", "Where refused records go, one JSON object per line"), "FILE.dead-letters.ndjson; for stdin tributary-dead-letters.ndjson in the current directory"),
    checkpoint: optional(text("checkpoint", "FILE", "Checkpoint file to resume from"), "FILE.checkpoint.json; none for stdin"),
    restart,
    ...oneShotRun,
    maxLineBytes: withDefault(integer("max-line-bytes", "BYTES", "Longer lines are dead-lettered", 1), deliveryDefaults.maxLineBytes, "1048576 (1 MiB)")
  }

/**
 * The options of `tributary sink`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const sinkOptions = {
    brokers: withEnv(text("brokers", "HOST:PORT,...", "Kafka brokers"), "TRIBUTARY_KAFKA_BROKERS"),
    topics: repeated(text("topic", "TOPIC", "Topic to consume")),
    group: text("group", "ID", "Consumer group id: processes with the same group share the partitions"),
    dataset,
    ...connection,
    deadLetter: optional(text("dead-letter", "FILE", "File for dead letters, one JSON object per line"), "tributary-dead-letters.ndjson in the current directory"),
    deadLetterTopic: optional(text("dead-letter-topic", "TOPIC", "Kafka topic for dead letters, instead of a file"), "none"),
    metricsPort,
    otlpEndpoint,
    drainTimeout: duration("drain-timeout", "30s", "How long stopping (or a rebalance) may wait for batches in flight"),
    sessionTimeout: duration("session-timeout", "10s", "The group gives a silent member's partitions to others after this long"),
    concurrency,
    maxPending: maxPending(256),
    maxPendingBytes,
    keyOrder,
    maxDeadLetters: maxDeadLetters("100%"),
    schemaContract,
    clientId: withDefault(text("client-id", "ID", "Kafka client id"), "tributary"),
    tls: withEnv(flag("tls", "Connect with TLS"), "TRIBUTARY_KAFKA_TLS"),
    tlsCa: optional(
      map(text("tls-ca", "FILE", "PEM file of the authorities to trust (implies --tls)"), (file) =>
        existsSync(file) ? ok(file) : fail(`--tls-ca: no file at '${file}'`)),
      "the system's"
    ),
    saslMechanism: optional(withEnv(choice("sasl-mechanism", ["plain", "scram-sha-256", "scram-sha-512"], "SASL mechanism"), "TRIBUTARY_KAFKA_SASL_MECHANISM"), "none"),
    saslUsername: optional(withEnv(text("sasl-username", "USER", "SASL user"), "TRIBUTARY_KAFKA_SASL_USERNAME")),
    saslPassword: secret(optional(withEnv(text("sasl-password", "PASSWORD", "SASL password (never logged)"), "TRIBUTARY_KAFKA_SASL_PASSWORD")))
  }

/**
 * The options of `tributary backfill`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const backfillOptions = {
    databaseUrl: secret(withEnv(text("database-url", "URL", "Postgres connection string, TLS settings included"), "TRIBUTARY_DATABASE_URL")),
    table: optional(text("table", "[SCHEMA.]TABLE", "Table to read"), "give --table or --query"),
    query: optional(text("query", "SQL", "Query to read, instead of --table")),
    key: text("key", "COL[,COL]", "Key column(s): unique, never NULL; the read order"),
    dataset: optional(dataset, "give --dataset or --create-dataset"),
    createDataset: optional(text("create-dataset", "NAME", "Create a dataset of this name with the result's columns (with --data-source)")),
    dataSource: optional(integer("data-source", "ID", "Data source of the dataset --create-dataset makes")),
    ...connection,
    partitions: withDefault(integer("partitions", "N", "Key ranges read in parallel", 1), 1),
    parallel: optional(
      integer("parallel", "N", "Partitions this process reads at once (with --checkpoint-table, share them with other processes)", 1),
      "all"
    ),
    checkpoint: optional(text("checkpoint", "FILE", "Checkpoint file"), "tributary-backfill.checkpoint.json in the current directory"),
    checkpointTable: optional(text("checkpoint-table", "TABLE", "Keep the checkpoint in this Postgres table instead: several processes then share one backfill")),
    lease: withDefault(integer("lease-seconds", "N", "With --checkpoint-table: a crashed process's partitions are taken over after this long", 1), 15),
    deadLetter: withDefault(text("dead-letter", "FILE", "Where rows that cannot be stored go, one JSON object per line"), "tributary-backfill.dead-letters.ndjson"),
    since: optional(text("since-column", "COL", "A column that grows when a row changes: each later run sends only the rows changed since the last")),
    ...oneShotRun
  }

/**
 * The options of `tributary replay`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const replayOptions = {
  input: optional(positional("FILE", "Dead-letter file to replay"), "none: give --from-topic instead"),
  fromTopic: optional(text("from-topic", "TOPIC", "Dead-letter topic to replay, read to its end (with --brokers)")),
  brokers: optional(withEnv(text("brokers", "HOST:PORT,...", "Kafka brokers for --from-topic"), "TRIBUTARY_KAFKA_BROKERS")),
  dataset: optional(dataset, "the one the letters name"),
  ...connection,
  reason: many(text("reason", "CODE", "Only letters with this reason: a code (invalid_type) or a code and field (\"invalid_type amount\"); repeat or comma-separate")),
  stage: many(text("stage", "STAGE", "Only letters stopped at this stage: source, decode, transform, encode, validate, send, service")),
  field: many(text("field", "FIELD", "Only letters whose reason names this field")),
  partition: many(text("partition", "P", "Only letters from this original partition (0 for a file, TOPIC:N for a Kafka partition)")),
  from: optional(integer("from", "N", "Only letters at this original offset (line, Kafka offset, row) or after", 0)),
  to: optional(integer("to", "N", "Only letters at this original offset or before", 0)),
  set: many(map(text("set", "COL=VALUE", "Fix: set a column in every record (JSON when it parses: 12, null, \"12\"; text otherwise)"), (value) =>
    value.indexOf("=") > 0 ? ok(value) : fail(`--set must look like column=value, got '${value}'`))),
  rename: many(map(text("rename", "OLD=NEW", "Fix: rename a column"), (value) => {
    const at = value.indexOf("=")
    return at > 0 && at < value.length - 1 ? ok(value) : fail(`--rename must look like old=new, got '${value}'`)
  })),
  drop: many(text("drop", "COL", "Fix: drop this column")),
  dryRun: flag("dry-run", "Send nothing: count what would be sent, by reason"),
  deadLetter: optional(text("dead-letter", "FILE", "Where letters that fail again go (never the file being read)"), "FILE.replay-dead-letters.ndjson"),
  checkpoint: optional(text("checkpoint", "FILE", "The replay's checkpoint, to resume it after a crash"), "FILE.replay.checkpoint.json"),
  restart,
  concurrency,
  maxPending: maxPending(deliveryDefaults.maxPending),
  retries
}
