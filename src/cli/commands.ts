/**
 * The `tributary` commands as data: each command's options (`options.ts`), help groups and
 * examples, and the module that runs it (imported only when it runs). Help, completions and
 * usage errors come from this table alone.
 *
 * @since 0.3.0
 */
import { backfillOptions, demoOptions, ingestOptions, replayOptions, serveOptions, sinkOptions } from "./options.js"
import { command } from "./spec.js"

/**
 * The version `--version` prints (package.json's, checked by a test).
 *
 * @since 0.1.0
 * @category defaults
 */
export const version = "0.1.0"

/**
 * `tributary serve`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const serveCommand = command({
  name: "serve",
  summary: "Start the reference server: the whole API (v1 and v2) on one port",
  description: [
    "Serves the Data Ingestion Service's API for developing and testing jobs without the real service. When ready it prints a line with its URL, the OpenAPI address and, unless --seed is given, an admin API key. Ctrl-C or SIGTERM stops it (exit 0)."
  ],
  options: serveOptions,
  groups: [
    { title: "OPTIONS", keys: ["host", "port", "apiKey", "seed"] },
    { title: "STORAGE", keys: ["databaseUrl", "databaseSchema", "workers", "ingestionLease"] },
    { title: "LIMITS AND FAULTS", keys: ["maxBodyBytes", "requestTimeout", "faults"] },
    { title: "TELEMETRY", keys: ["otlpEndpoint"] }
  ],
  examples: [
    { what: "on http://127.0.0.1:8080 with a key of your choosing", command: "tributary serve --api-key dev-key" },
    { what: "on a free port, with the accounts and keys of a seed file", command: "tributary serve --port 0 --seed examples/seed.json" },
    { what: "a flaky service, to see how a job copes", command: "tributary serve --faults 5xx=0.05,429=0.02,latency=5-20ms,seed=7" },
    { what: "durable, in Postgres", command: "tributary serve --database-url postgres://localhost/tributary" }
  ],
  stoppedExitCode: 0,
  load: () => import("./serve.js")
})

/**
 * `tributary demo`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const demoCommand = command({
  name: "demo",
  summary: "Try it: start a server, create a dataset, ingest a sample, show the outcome",
  description: [
    "Starts the reference server, creates a data source and a dataset with a schema and a primary key, ingests the bundled sample (2,000 orders and a few bad lines on purpose) with the progress display, and prints the outcome. Its checkpoint and dead letters go to a temporary directory, removed at the end unless --work-dir names one to keep."
  ],
  options: demoOptions,
  examples: [
    { what: "the whole product in one command", command: "tributary demo" },
    { what: "leave the server up afterwards, on a free port", command: "tributary demo --port 0 --keep-serving" }
  ],
  stoppedExitCode: 0,
  load: () => import("./demo.js")
})

/**
 * `tributary ingest`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const ingestCommand = command({
  name: "ingest",
  summary: "Send an NDJSON file (or - for standard input) into a dataset, effectively once",
  description: [
    "Each line is a record. Records that fail the dataset's schema, or that the service rejects, go to the dead-letter file with the reason; the checkpoint is written only for lines whose records are stored or dead-lettered, so the same command resumes after a crash without storing anything twice.",
    "Exit codes: 0 when the input was consumed (dead letters are counted, not failures), 1 when the run stopped, 2 for a usage error, 130 when interrupted (what was delivered is committed)."
  ],
  options: ingestOptions,
  groups: [
    { title: "OPTIONS", keys: ["dataset", "apiUrl", "apiKey", "deadLetter", "checkpoint", "restart", "json", "metricsPort", "otlpEndpoint"] },
    { title: "DELIVERY", keys: ["concurrency", "maxPending", "maxPendingBytes", "keyOrder", "retries", "maxDeadLetters", "maxLineBytes"] },
    { title: "BAD DATA", keys: ["schemaContract"] }
  ],
  examples: [
    {
      what: "a file into dataset 2 of a local reference server",
      command: "tributary ingest examples/data/orders.ndjson --dataset 2 --api-url http://127.0.0.1:8080 --api-key dev-key"
    },
    { what: "standard input, the address and key from the environment", command: "gunzip -c events.ndjson.gz | tributary ingest - --dataset 2" },
    { what: "a summary for a script", command: "tributary ingest data.ndjson --dataset 2 --json | jq .stored" }
  ],
  stoppedExitCode: 130,
  load: () => import("./ingest.js")
})

/**
 * `tributary sink`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const sinkCommand = command({
  name: "sink",
  summary: "Move Kafka topics into a dataset, effectively once, until stopped",
  description: [
    "A consumer-group member: processes started with the same --group share the topics' partitions. An offset is committed only after its records are stored or dead-lettered. An outage of the service is ridden out (reported while it lasts). SIGTERM or Ctrl-C, at any moment, stops fetching, delivers what was read, commits and exits 0."
  ],
  options: sinkOptions,
  groups: [
    { title: "OPTIONS", keys: ["brokers", "topics", "group", "dataset", "apiUrl", "apiKey", "deadLetter", "deadLetterTopic", "metricsPort", "otlpEndpoint", "drainTimeout", "sessionTimeout"] },
    { title: "DELIVERY", keys: ["concurrency", "maxPending", "maxPendingBytes", "keyOrder", "maxDeadLetters", "schemaContract"] },
    { title: "KAFKA CONNECTION", keys: ["clientId", "tls", "tlsCa", "saslMechanism", "saslUsername", "saslPassword"] }
  ],
  examples: [
    {
      what: "topic orders into dataset 2; run it twice to share the partitions",
      command: "tributary sink --brokers localhost:9092 --topic orders --group orders-sink --dataset 2"
    },
    { what: "with metrics for Prometheus on port 9464", command: "tributary sink --topic orders --group orders-sink --dataset 2 --metrics-port 9464" }
  ],
  stoppedExitCode: 0,
  load: () => import("./sink.js")
})

/**
 * `tributary backfill`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const backfillCommand = command({
  name: "backfill",
  summary: "Copy a Postgres table or query into a dataset, resumable and effectively once",
  description: [
    "Reads in key order with keyset cursors, in --partitions key ranges at once, and checkpoints each range; the same command resumes after a crash. The table's columns are compared with the dataset's before anything is sent. With --checkpoint-table several processes share one backfill."
  ],
  options: backfillOptions,
  groups: [
    { title: "SOURCE", keys: ["databaseUrl", "table", "query", "key", "partitions", "parallel", "since"] },
    { title: "DESTINATION", keys: ["dataset", "createDataset", "dataSource", "apiUrl", "apiKey"] },
    { title: "STATE AND OUTPUT", keys: ["checkpoint", "checkpointTable", "lease", "deadLetter", "json", "metricsPort", "otlpEndpoint"] },
    { title: "DELIVERY", keys: ["concurrency", "maxPending", "maxPendingBytes", "keyOrder", "retries", "maxDeadLetters", "schemaContract"] }
  ],
  examples: [
    { what: "a table into dataset 2, four key ranges at once", command: "tributary backfill --database-url postgres://localhost/shop --table orders --key id --dataset 2 --partitions 4" },
    {
      what: "a query into a new dataset of data source 1",
      command: "tributary backfill --query 'select id, total from orders' --key id --create-dataset Orders --data-source 1"
    }
  ],
  stoppedExitCode: 130,
  load: () => import("./backfill.js")
})

/**
 * `tributary replay`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const replayCommand = command({
  name: "replay",
  summary: "Send dead letters (a file, or a topic) again after a fix, effectively once; resumable",
  description: [
    "Reads dead letters back, keeps those the filters select, applies the fixes (renames, then sets, then drops) and sends them again under keys of their origin: replaying twice stores nothing twice. Letters that fail again go to a new dead-letter file with their original position."
  ],
  options: replayOptions,
  groups: [
    { title: "INPUT", keys: ["fromTopic", "brokers", "dataset", "apiUrl", "apiKey"] },
    { title: "FILTERS", keys: ["reason", "stage", "field", "partition", "from", "to"] },
    { title: "FIXES", keys: ["set", "rename", "drop", "dryRun"] },
    { title: "STATE AND DELIVERY", keys: ["deadLetter", "checkpoint", "restart", "concurrency", "maxPending", "retries"] }
  ],
  examples: [
    { what: "count what a file's letters would send, by reason", command: "tributary replay orders.ndjson.dead-letters.ndjson --dry-run" },
    {
      what: "rename a column the source got wrong, then send",
      command: "tributary replay orders.ndjson.dead-letters.ndjson --reason unknown_column --rename amt=amount"
    },
    { what: "a dead-letter topic", command: "tributary replay --from-topic orders-dead --brokers localhost:9092 --dataset 2" }
  ],
  stoppedExitCode: 130,
  load: () => import("./replay.js")
})

/**
 * Every command, in the order help lists them.
 *
 * @since 0.3.0
 * @category constructors
 */
export const commands = [serveCommand, demoCommand, ingestCommand, sinkCommand, backfillCommand, replayCommand] as const
