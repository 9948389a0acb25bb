/**
 * `tributary backfill`: a Postgres table or query into a dataset, effectively once, resumable,
 * in parallel partitions, and shared by several processes through a checkpoint table.
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Config, Console, Effect, Option } from "effect"
import * as Postgres from "../../connectors/postgres/index.js"
import { TributaryClient, type TributaryClientService } from "../client/Client.js"
import * as DeadLetter from "../pipeline/DeadLetter.js"
import type { Progress } from "../pipeline/events.js"
import { fetchSchema, type PipelineConfig, run, SchemaError, topReasons } from "../pipeline/run.js"
import { compareSchemas } from "../pipeline/Typed.js"
import { connectionOptions, interruptedExitCode, storedText } from "./ingest.js"
import {
  concurrencyOption as concurrency,
  maxPendingBytesOption as maxPendingBytes,
  keyOrderOption as keyOrder,
  maxDeadLettersOption,
  maxPendingOption,
  otlpEndpointOption as otlpEndpoint,
  positiveInteger,
  retriesOption as retries,
  withTelemetry
} from "./options.js"
import { endProgress, progressDisplay } from "./progress.js"

/**
 * What a backfill reads and where it keeps its state.
 *
 * @since 0.1.0
 */
export interface BackfillOptions {
  readonly source: Postgres.PostgresSourceOptions
  /** The destination; undefined with `createDataset`. */
  readonly datasetId: string | undefined
  readonly createDataset?: { readonly name: string; readonly dataSourceId: number } | undefined
  readonly deadLetterPath: string
  readonly concurrency?: PipelineConfig<never, never>["concurrency"]
  readonly maxPending?: PipelineConfig<never, never>["maxPending"]
  readonly keyOrder?: PipelineConfig<never, never>["keyOrder"]
  readonly maxDeadLetters?: PipelineConfig<never, never>["maxDeadLetters"]
  /** Where its messages go (default: the console); the plain API hands them to its caller. */
  readonly say?: ((line: string) => Effect.Effect<void>) | undefined
  /** The run's events (default: a progress display on stderr). */
  readonly onEvent?: PipelineConfig<never, never>["onEvent"]
  /** Where dead letters go instead of `deadLetterPath`. */
  readonly deadLetters?: DeadLetter.DeadLetterSink | undefined
}

/**
 * A line of progress with rows/s and the time left by the planner's estimate.
 *
 * @since 0.1.0
 */
export const describeBackfill = (remaining: number) => (progress: Progress, now: number) => {
  const seconds = Math.max(0.001, (now - progress.startedAt) / 1000)
  const perSecond = progress.read / seconds
  const left = Math.max(0, remaining - progress.read)
  const eta = perSecond > 0 && remaining > 0 ? `  ETA ${formatSeconds(left / perSecond)}` : ""
  return `read ${progress.read}  stored ${progress.accepted}  dead-lettered ${progress.deadLettered}  ` +
    `${Math.round(perSecond)} rows/s${eta}`
}

const formatSeconds = (s: number) => {
  const total = Math.round(s)
  const m = Math.floor(total / 60)
  return m === 0 ? `${total}s` : `${m}m${String(total % 60).padStart(2, "0")}s`
}

/**
 * The closing summary of a backfill.
 *
 * @since 0.1.0
 */
export const summarizeBackfill = (progress: Progress, deadLetters: string) =>
  [
    `read ${progress.read} ${progress.read === 1 ? "row" : "rows"}: ${storedText(progress)}, ` +
    `${progress.rejected} rejected by the service, ${progress.deadLettered} dead-lettered in total`,
    progress.deadLettered > 0 ? `dead letters: ${deadLetters} (most: ${topReasons(progress.deadLetterReasons)})` : "no dead letters"
  ].join("\n")

/**
 * Plans (or resumes) the backfill, creates the dataset when asked, and runs the pipeline.
 *
 * @since 0.1.0
 */
export const backfill = (client: TributaryClientService, options: BackfillOptions) =>
  Effect.gen(function*() {
    const source = yield* Postgres.make(options.source)
    const log = options.say ?? Console.log
    const warn = options.say ?? Console.error
    let datasetId = options.datasetId
    const bound = source.plan.destination
    const generation = `backfill ${source.plan.run === undefined ? "" : `run ${source.plan.run.slice(0, 8)} `}(generation ${source.plan.generation})`
    const refuse = (boundTo: string) =>
      Effect.fail(
        new Postgres.PostgresError({
          reason: `the checkpoint belongs to ${generation} into dataset ${boundTo}, not into dataset ${datasetId}: ` +
            `finish it with --dataset ${boundTo}, or give another --checkpoint (or --checkpoint-table) to backfill into ${datasetId}`
        })
      )
    if (bound !== undefined) {
      if (options.createDataset !== undefined) {
        // The dataset the interrupted (or finished) run created: the same command goes on into it.
        datasetId = bound
        const finished = yield* Effect.either(source.ensureFinished)
        yield* log(
          finished._tag === "Right"
            ? `${generation} into dataset ${bound}, which it created, is finished: nothing new to send`
            : `resuming ${generation} into dataset ${bound}, which it created`
        )
      } else if (datasetId !== bound) {
        return yield* refuse(bound)
      } else if (source.remaining > 0 || source.plan.partitions.length > 0) {
        yield* warn(`tributary: resuming ${generation} into dataset ${bound}`)
      }
    } else if (options.createDataset !== undefined) {
      const created = yield* client.v2.v2Datasets.create({
        payload: {
          name: options.createDataset.name,
          dataSourceId: options.createDataset.dataSourceId,
          schema: source.schema.columns,
          primaryKey: source.schema.primaryKey
        },
        headers: {}
      }).pipe(Effect.mapError((error) => new Postgres.PostgresError({ reason: `cannot create the dataset: ${reasonOf(error)}`, cause: error })))
      // Recorded at once: killed from here on, the same command resumes into this dataset.
      const boundTo = yield* source.bind(String(created.data.id))
      if (boundTo === String(created.data.id)) {
        datasetId = boundTo
        yield* log(`created dataset ${datasetId}`)
      } else {
        // Another process sharing the checkpoint table created (and bound) its dataset first:
        // this one goes into it, and the dataset it made, still empty, is removed.
        datasetId = boundTo
        yield* client.v2.v2Datasets.delete({ path: { id: created.data.id } }).pipe(
          Effect.catchAll(() => warn(`tributary: cannot remove dataset ${created.data.id} (created by this process, left empty)`))
        )
        yield* log(`resuming ${generation} into dataset ${boundTo}, which another process of it created`)
      }
    }
    // The table's columns against the dataset's, at once: one message naming every mismatch.
    const schema = yield* fetchSchema(client, datasetId!)
    const mismatches = compareSchemas(
      source.schema.columns.map((column) => ({ ...column, nullable: !source.schema.primaryKey.includes(column.id) })),
      schema,
      "the source"
    )
    if (mismatches.length > 0) {
      return yield* Effect.fail(
        new SchemaError({
          reason: `the source's columns do not match dataset ${datasetId} in ${mismatches.length} column(s): ${mismatches.join("; ")}`
        })
      )
    }
    // Recorded before the first batch (and only for a dataset the columns match): a resume
    // finds its dataset, and no other.
    if (bound === undefined && options.createDataset === undefined) {
      // Another process sharing the checkpoint table may have bound it to another dataset first.
      const boundTo = yield* source.bind(datasetId!)
      if (boundTo !== datasetId) return yield* refuse(boundTo)
    }
    const progress = yield* run(client, {
      source,
      destination: { datasetId: datasetId! },
      deadLetters: options.deadLetters ?? (yield* DeadLetter.ndjsonFile(options.deadLetterPath)),
      concurrency: options.concurrency,
      maxPending: options.maxPending,
      keyOrder: options.keyOrder,
      maxDeadLetters: options.maxDeadLetters,
      schema,
      onEvent: options.onEvent ?? progressDisplay({ stream: process.stderr, total: source.remaining, describe: describeBackfill(source.remaining) }),
      progressInterval: process.stderr.isTTY ? "200 millis" : "1 second"
    }).pipe(Effect.ensuring(Effect.zipRight(endProgress(process.stderr), source.release)))
    yield* source.ensureFinished
    return progress
  })

/** The message of a client failure: a transport error's, or the service's first error's. */
const reasonOf = (error: object): string =>
  "errors" in error && Array.isArray(error.errors) && typeof error.errors[0]?.message === "string"
    ? error.errors[0].message
    : "message" in error && typeof error.message === "string"
    ? error.message
    : String(error)

const databaseUrl = Options.redacted("database-url").pipe(
  Options.withFallbackConfig(Config.redacted("TRIBUTARY_DATABASE_URL")),
  Options.withDescription("Postgres connection string, TLS settings included (or TRIBUTARY_DATABASE_URL)")
)
const table = Options.text("table").pipe(Options.optional, Options.withDescription("Table to read ([schema.]table)"))
const query = Options.text("query").pipe(Options.optional, Options.withDescription("Query to read (instead of --table)"))
const key = Options.text("key").pipe(Options.withDescription("Key column(s), COL[,COL]: unique, never NULL; the read order"))
const dataset = Options.text("dataset").pipe(Options.optional, Options.withDescription("Id of the destination dataset"))
const partitions = positiveInteger("partitions").pipe(Options.withDefault(1), Options.withDescription("Key ranges read in parallel"))
const parallel = positiveInteger("parallel").pipe(
  Options.optional,
  Options.withDescription("Partitions this process reads at once (default: all; with --checkpoint-table, share them with other processes)")
)
const checkpoint = Options.text("checkpoint").pipe(Options.optional, Options.withDescription("Checkpoint file (default: tributary-backfill.checkpoint.json)"))
const checkpointTable = Options.text("checkpoint-table").pipe(
  Options.optional,
  Options.withDescription("Keep the checkpoint in this Postgres table instead: several processes then share one backfill")
)
const deadLetter = Options.text("dead-letter").pipe(
  Options.withDefault("tributary-backfill.dead-letters.ndjson"),
  Options.withDescription("Where rows that cannot be stored go, one JSON object per line")
)
const since = Options.text("since-column").pipe(
  Options.optional,
  Options.withDescription("A column that grows when a row changes: each later run sends only the rows changed since the last")
)
const createDataset = Options.text("create-dataset").pipe(Options.optional, Options.withDescription("Create a dataset of this name with the result's columns"))
const dataSource = Options.integer("data-source").pipe(Options.optional, Options.withDescription("Data source of the dataset --create-dataset makes"))
const lease = positiveInteger("lease-seconds").pipe(
  Options.withDefault(15),
  Options.withDescription("With --checkpoint-table: a crashed process's partitions are taken over after this long")
)

const maxDeadLetters = maxDeadLettersOption("10%")
const maxPending = maxPendingOption()

/** A usage problem found past option parsing: said on stderr, exit 2 (as @effect/cli's own). */
const usage = (message: string) =>
  Effect.zipRight(Console.error(`tributary backfill: ${message}`), Effect.fail(ValidationError.invalidValue(HelpDoc.p(message))))

/** @since 0.1.0 */
export const backfillCommand = Command.make(
  "backfill",
  {
    databaseUrl,
    table,
    query,
    key,
    dataset,
    partitions,
    parallel,
    checkpoint,
    checkpointTable,
    deadLetter,
    since,
    concurrency,
    maxPending,
    maxPendingBytes,
    keyOrder,
    maxDeadLetters,
    retries,
    createDataset,
    dataSource,
    lease,
    otlpEndpoint,
    ...connectionOptions
  },
  (options) =>
    Effect.gen(function*() {
      const relation: Postgres.Relation | undefined = Option.isSome(options.table)
        ? Option.isSome(options.query) ? undefined : { _tag: "Table", name: options.table.value }
        : Option.isSome(options.query)
        ? { _tag: "Query", sql: options.query.value }
        : undefined
      if (relation === undefined) return yield* usage("give either --table or --query")
      if (Option.isSome(options.checkpoint) && Option.isSome(options.checkpointTable)) {
        return yield* usage("give either --checkpoint or --checkpoint-table")
      }
      if (Option.isSome(options.createDataset) !== Option.isSome(options.dataSource)) {
        return yield* usage("--create-dataset and --data-source go together")
      }
      if (Option.isSome(options.createDataset) === Option.isSome(options.dataset)) {
        return yield* usage("give either --dataset or --create-dataset with --data-source")
      }
      const client = yield* TributaryClient
      const progress = yield* backfill(client, {
        source: {
          relation,
          key: options.key.split(",").map((k) => k.trim()).filter((k) => k !== ""),
          partitions: options.partitions,
          parallel: Option.getOrUndefined(options.parallel),
          since: Option.getOrUndefined(options.since),
          checkpoint: Option.isSome(options.checkpointTable)
            ? { _tag: "Table", table: options.checkpointTable.value, leaseMillis: options.lease * 1000 }
            : { _tag: "File", path: Option.getOrElse(options.checkpoint, () => "tributary-backfill.checkpoint.json") }
        },
        datasetId: Option.getOrUndefined(options.dataset),
        createDataset: Option.isSome(options.createDataset)
          ? { name: options.createDataset.value, dataSourceId: Option.getOrThrow(options.dataSource) }
          : undefined,
        deadLetterPath: options.deadLetter,
        concurrency: options.concurrency,
        maxPending: { batches: options.maxPending, bytes: options.maxPendingBytes },
        keyOrder: options.keyOrder,
        maxDeadLetters: options.maxDeadLetters
      }).pipe(
        Effect.provide(Postgres.layer({ url: options.databaseUrl, maxConnections: (Option.getOrUndefined(options.parallel) ?? options.partitions) + 2 })),
        Effect.onInterrupt(() =>
          Effect.zipRight(
            Console.error("tributary: interrupted; what was delivered is committed: run the same command again to resume"),
            Effect.sync(() => (process.exitCode = interruptedExitCode))
          )
        )
      )
      yield* Console.log(summarizeBackfill(progress, options.deadLetter))
    }).pipe(
      Effect.provide(TributaryClient.layer({
        baseUrl: options.apiUrl,
        apiKey: options.apiKey,
        retry: { maxRetries: options.retries },
        traceRequests: Option.isSome(options.otlpEndpoint)
      })),
      withTelemetry(options.otlpEndpoint)
    )
).pipe(Command.withDescription("Backfill a Postgres table or query into a dataset, resumable and effectively once"))
