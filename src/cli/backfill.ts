/**
 * `tributary backfill`: a Postgres table or query into a dataset, effectively once, resumable,
 * in parallel partitions, and shared by several processes through a checkpoint table.
 *
 * @since 0.1.0
 */
import { Console, Effect, Redacted } from "effect"
import * as Postgres from "../../connectors/postgres/index.js"
import { TributaryClient, type TributaryClientService } from "../client/Client.js"
import * as DeadLetter from "../pipeline/DeadLetter.js"
import type { PipelineEvent, Progress } from "../pipeline/events.js"
import { fetchSchema, type PipelineConfig, run, SchemaError, topReasons } from "../pipeline/run.js"
import type { SchemaContract } from "../pipeline/SchemaContract.js"
import { compareSchemas } from "../pipeline/Typed.js"
import { PipelineMetrics } from "../telemetry/index.js"
import type { backfillOptions } from "./options.js"
import { UsageError } from "./errors.js"
import { interruptedExitCode, storedText, summaryJson } from "./ingest.js"
import { commandClient } from "./client.js"
import { describeOutage, endProgress, progressDisplay } from "./progress.js"
import { schemaSummary } from "./schemaContract.js"
import type { Values } from "./spec.js"
import { withTelemetry } from "./telemetry.js"

/**
 * What a backfill reads and where it keeps its state.
 *
 * @since 0.1.0
 * @category models
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
  /** Told of every event too (the metrics read the progress from it). */
  readonly onEvent?: ((event: PipelineEvent) => Effect.Effect<void>) | undefined
  readonly schemaContract?: SchemaContract | undefined
  /** Where its messages go (default: the console); the plain API hands them to its caller. */
  readonly say?: ((line: string) => Effect.Effect<void>) | undefined
  /** Whether the progress display is drawn on stderr (default true; the plain API has none). */
  readonly display?: boolean | undefined
  /** Where dead letters go instead of `deadLetterPath`. */
  readonly deadLetters?: DeadLetter.DeadLetterSink | undefined
  /**
   * Whether the run's events feed the Effect metrics (`PipelineMetrics`, exported over OTLP
   * with `--otlp-endpoint`), labelled with the dataset once it is known (created or bound);
   * the plain API records its own.
   */
  readonly metrics?: boolean | undefined
}

/**
 * A line of progress: rows read, stored and dead-lettered, and rows/s of those done (stored
 * or dead-lettered), with the service's outage when there is one.
 *
 * @since 0.1.0
 * @category utils
 */
export const describeBackfill = (progress: Progress, now: number) => {
  const seconds = Math.max(0.001, (now - progress.startedAt) / 1000)
  return `read ${progress.read}  stored ${progress.accepted}  dead-lettered ${progress.deadLettered}  ` +
    `${Math.round(rowsDone(progress) / seconds)} rows/s${describeOutage(progress, now)}`
}

const rowsDone = (progress: Progress) => progress.accepted + progress.deadLettered

/**
 * The share of a backfill done, by the planner's estimate of the rows to read: rows stored or
 * dead-lettered, not rows read (undefined without an estimate).
 *
 * @since 0.3.0
 * @category utils
 */
export const backfillDone = (remaining: number) => (progress: Progress): number | undefined =>
  remaining > 0 ? Math.min(1, rowsDone(progress) / remaining) : undefined

/**
 * The closing summary of a backfill.
 *
 * @since 0.1.0
 * @category utils
 */
export const summarizeBackfill = (progress: Progress, deadLetters: string) =>
  [
    `read ${progress.read} ${progress.read === 1 ? "row" : "rows"}: ${storedText(progress)}, ` +
    `${progress.rejected} rejected by the service, ${progress.deadLettered} dead-lettered in total`,
    progress.deadLettered > 0 ? `dead letters: ${deadLetters} (most: ${topReasons(progress.deadLetterReasons)})` : "no dead letters",
    ...schemaSummary(progress)
  ].join("\n")

/**
 * Plans (or resumes) the backfill, creates the dataset when asked, and runs the pipeline.
 *
 * @since 0.1.0
 * @category utils
 */
export const backfill = (client: TributaryClientService, options: BackfillOptions) =>
  Effect.gen(function*() {
    const log = options.say ?? Console.log
    const warn = options.say ?? Console.error
    const source = yield* Postgres.make(options.source)
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
    const schema = { ...(yield* fetchSchema(client, datasetId!)), contract: options.schemaContract }
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
    const display = progressDisplay({ stream: process.stderr, done: backfillDone(source.remaining), describe: describeBackfill })
    const metrics = options.metrics === true ? PipelineMetrics.recorder({ dataset: datasetId!, source: source.name }) : undefined
    const progress = yield* run(client, {
      source,
      destination: { datasetId: datasetId! },
      deadLetters: options.deadLetters ?? (yield* DeadLetter.ndjsonFile(options.deadLetterPath)),
      concurrency: options.concurrency,
      maxPending: options.maxPending,
      keyOrder: options.keyOrder,
      maxDeadLetters: options.maxDeadLetters,
      schema,
      onEvent: (event) =>
        Effect.zipRight(
          Effect.zipRight(metrics?.(event) ?? Effect.void, options.onEvent?.(event) ?? Effect.void),
          options.display === false ? Effect.void : display(event)
        ),
      // Nothing here reads the batches' events: without them a batch costs no step in Effect.
      batchEvents: false,
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

const defaultCheckpoint = "tributary-backfill.checkpoint.json"

/**
 * Runs `tributary backfill`.
 *
 * @since 0.3.0
 * @category running
 */
export const main = (options: Values<typeof backfillOptions>) =>
  Effect.gen(function*() {
    const relation: Postgres.Relation | undefined = options.table !== undefined
      ? options.query !== undefined ? undefined : { _tag: "Table", name: options.table }
      : options.query !== undefined
      ? { _tag: "Query", sql: options.query }
      : undefined
    if (relation === undefined) return yield* new UsageError({ reason: "give either --table or --query" })
    if (options.checkpoint !== undefined && options.checkpointTable !== undefined) {
      return yield* new UsageError({ reason: "give either --checkpoint or --checkpoint-table" })
    }
    if ((options.createDataset !== undefined) !== (options.dataSource !== undefined)) {
      return yield* new UsageError({ reason: "--create-dataset and --data-source go together" })
    }
    if ((options.createDataset !== undefined) === (options.dataset !== undefined)) {
      return yield* new UsageError({ reason: "give either --dataset or --create-dataset with --data-source" })
    }
    const client = yield* TributaryClient
    // prom-client (0.3-0.4 s to load on a busy machine) only when metrics are asked for.
    const metrics = options.metricsPort === undefined
      ? { onEvent: undefined }
      : yield* Effect.flatMap(Effect.promise(() => import("./metrics.js")), (m) => m.metricsFor(options.metricsPort))
    const progress = yield* backfill(client, {
      onEvent: metrics.onEvent,
      metrics: true,
      source: {
        relation,
        key: options.key.split(",").map((k) => k.trim()).filter((k) => k !== ""),
        partitions: options.partitions,
        parallel: options.parallel,
        since: options.since,
        checkpoint: options.checkpointTable !== undefined
          ? { _tag: "Table", table: options.checkpointTable, leaseMillis: options.lease * 1000 }
          : { _tag: "File", path: options.checkpoint ?? defaultCheckpoint }
      },
      datasetId: options.dataset,
      createDataset: options.createDataset !== undefined
        ? { name: options.createDataset, dataSourceId: options.dataSource! }
        : undefined,
      deadLetterPath: options.deadLetter,
      concurrency: options.concurrency,
      maxPending: { batches: options.maxPending, bytes: options.maxPendingBytes },
      keyOrder: options.keyOrder,
      maxDeadLetters: options.maxDeadLetters,
      schemaContract: options.schemaContract
    }).pipe(
      Effect.provide(Postgres.layer({ url: Redacted.make(options.databaseUrl), maxConnections: (options.parallel ?? options.partitions) + 2 })),
      Effect.onInterrupt(() =>
        Effect.zipRight(
          Console.error("tributary: interrupted; what was delivered is committed: run the same command again to resume"),
          Effect.sync(() => (process.exitCode = interruptedExitCode))
        )
      )
    )
    yield* Console.log(
      options.json
        ? summaryJson(progress, { deadLetters: options.deadLetter, checkpoint: options.checkpointTable ?? options.checkpoint ?? defaultCheckpoint })
        : summarizeBackfill(progress, options.deadLetter)
    )
  }).pipe(
    Effect.scoped,
    Effect.provide(commandClient(options)),
    withTelemetry(options.otlpEndpoint)
  )
