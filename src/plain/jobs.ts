/**
 * Jobs as Promises: `ingest` (an NDJSON file, a Readable, an iterable of records), `sink`
 * (Kafka topics) and `backfill` (a Postgres table or query).
 *
 * Each is the pipeline's `run` with the settings the CLI gives it: the same sources, the
 * same checkpoint files and defaults, the same dead-letter files, hence the same batches and
 * idempotency keys. A job started here and resumed from `run` or the CLI (or the other way
 * round) continues where it stopped. An aborted job commits what was delivered and rejects
 * with the signal's reason, as Ctrl-C stops the CLI; the sink, which runs until told to stop,
 * drains on abort and resolves.
 *
 * The Kafka and Postgres connectors are loaded when a sink or a backfill starts, so the
 * package's root does not load `kafkajs` or `pg`.
 *
 * @since 0.3.0
 */
import { Effect, Fiber, Redacted, type Schema } from "effect"
import { TributaryClient } from "../client/Client.js"
import * as Checkpoint from "../pipeline/Checkpoint.js"
import * as DeadLetter from "../pipeline/DeadLetter.js"
import type { PipelineEvent, Progress } from "../pipeline/events.js"
import { type PipelineConfig, run } from "../pipeline/run.js"
import * as Typed from "../pipeline/Typed.js"
import type { DeadLetter as Letter } from "../pipeline/vocabulary.js"
import * as Metrics from "../telemetry/metrics.js"
import type { Runner } from "./runtime.js"
import { type Input, sourceOf } from "./sources.js"

/**
 * Typed records without Effect code: records are decoded with `schema` (a failure is a dead
 * letter naming the field), passed through `transform`, and encoded with `output` (default
 * `schema`), whose columns must agree with the dataset's (checked at start).
 *
 * @since 0.3.0
 * @category models
 */
export interface TypedOptions<A = any, B = A> {
  readonly schema?: Schema.Schema<A, any, never> | undefined
  readonly output?: Schema.Schema<B, any, never> | undefined
  /** Sync or async; a throw or a rejection dead-letters that record (code `transform_failed`). */
  readonly transform?: ((record: A) => B | Promise<B>) | undefined
}

/**
 * What every job takes.
 *
 * @since 0.3.0
 * @category models
 */
export interface JobOptions<A = any, B = A> extends TypedOptions<A, B> {
  /** The destination dataset: a v2 number or a UUID. */
  readonly dataset: string | number
  /** The API the records are posted to (default v2). */
  readonly api?: "v1" | "v2" | undefined
  /**
   * Where records that cannot be stored go: an NDJSON file's path, or a function given each
   * group of dead letters (a position is committed only after its letters were handed over,
   * so a function's promise must settle first). Default: as the CLI (`FILE.dead-letters.ndjson`
   * beside a file, `tributary-dead-letters.ndjson` otherwise).
   */
  readonly deadLetters?: string | ((letters: ReadonlyArray<Letter>) => void | Promise<void>) | undefined
  /** Requests in flight at most (adaptive below it; `{ fixed: n }` keeps n). Default 16. */
  readonly concurrency?: PipelineConfig<never, never>["concurrency"]
  readonly maxPending?: PipelineConfig<never, never>["maxPending"]
  readonly keyOrder?: PipelineConfig<never, never>["keyOrder"]
  /** Stop when more records are dead-lettered than this: a count, or `{ ratio }` (default as the CLI). */
  readonly maxDeadLetters?: number | { readonly count: number } | { readonly ratio: number } | undefined
  readonly batch?: { readonly max?: number | undefined; readonly maxBytes?: number | undefined; readonly lingerMillis?: number | undefined } | undefined
  /** Called with the run's counters every `progressIntervalMillis` (default 1000) and at the end. */
  readonly onProgress?: ((progress: Progress) => void) | undefined
  /** Called with every event of the run (batches sent and done, dead letters, commits...). */
  readonly onEvent?: ((event: PipelineEvent) => void) | undefined
  readonly progressIntervalMillis?: number | undefined
  /** Stops the job: what was delivered is committed, and a resume goes on from there. */
  readonly signal?: AbortSignal | undefined
}

/**
 * @since 0.3.0
 * @category models
 */
export interface IngestOptions<A = any, B = A> extends JobOptions<A, B> {
  /** An NDJSON file's path, a Readable (bytes as NDJSON; object mode as records), an AsyncIterable or an array. */
  readonly from: Input
  /**
   * The checkpoint file; `false` for none. Default: as the CLI, `FILE.checkpoint.json` beside
   * a file; none for other inputs.
   */
  readonly checkpoint?: string | false | undefined
  /** Start over: the checkpoint is ignored and replaced (a fresh run, with new keys). */
  readonly restart?: boolean | undefined
  /**
   * The source's name for a stream or an iterable (part of its keys: give the same one to
   * resume). Default `ndjson:stream` or `records`; a file is named by its path.
   */
  readonly name?: string | undefined
}

/**
 * The files an ingest of `input` uses unless told otherwise: the CLI's (`tributary ingest`).
 *
 * @since 0.3.0
 * @category defaults
 */
export const defaultPaths = (input: Input) => ({
  deadLetters: typeof input === "string" ? `${input}.dead-letters.ndjson` : "tributary-dead-letters.ndjson",
  checkpoint: typeof input === "string" ? `${input}.checkpoint.json` : undefined
})

/** The CLI's dead-letter limit of one-shot jobs: 10% of what was read. */
const oneShotLetterLimit = { ratio: 0.1 } as const

const letterLimit = (limit: JobOptions["maxDeadLetters"], fallback: PipelineConfig<never, never>["maxDeadLetters"]) =>
  typeof limit === "number" ? { count: limit } : limit ?? fallback

/** A dead-letter sink for the option: a file, or the caller's function. */
const deadLetterSink = (option: JobOptions["deadLetters"], fallback: string): Effect.Effect<DeadLetter.DeadLetterSink> =>
  typeof option === "function"
    ? Effect.succeed({
      write: (letters) =>
        letters.length === 0 ? Effect.void : Effect.tryPromise({
          try: async () => option(letters),
          catch: (cause) => new DeadLetter.DeadLetterError({ reason: `the dead-letter function failed: ${String(cause)}`, cause })
        })
    })
    : DeadLetter.ndjsonFile(option ?? fallback)

/** The typed part of the run, when a schema is given. */
const typedRecords = (options: TypedOptions): Typed.Records<any, any> | undefined => {
  if (options.schema === undefined) return undefined
  const transform = options.transform
  return Typed.records({
    decode: options.schema,
    transform: transform === undefined ? (records) => records : Typed.mapEffect((value: unknown) =>
      Effect.tryPromise({
        try: async () => transform(value),
        catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause)))
      })),
    encode: (options.output ?? options.schema) as Schema.Schema<any, any, never>
  })
}

/**
 * The settings every job passes to `run` alike. Its events feed the run's metrics (exported
 * when the client has telemetry; an update per progress report and per commit otherwise).
 */
const runSettings = (options: JobOptions, lag?: Parameters<typeof Metrics.recorder>[1]) => {
  const { onEvent, onProgress } = options
  const metrics = Metrics.recorder({ dataset: String(options.dataset) }, lag)
  return {
    destination: { datasetId: options.dataset, api: options.api },
    records: typedRecords(options),
    concurrency: options.concurrency,
    maxPending: options.maxPending,
    keyOrder: options.keyOrder,
    batch: options.batch === undefined ? undefined : {
      max: options.batch.max,
      maxBytes: options.batch.maxBytes,
      linger: options.batch.lingerMillis === undefined ? undefined : `${options.batch.lingerMillis} millis` as const
    },
    progressInterval: `${options.progressIntervalMillis ?? 1000} millis` as const,
    onEvent: (event: PipelineEvent) =>
      Effect.zipRight(
        metrics(event),
        Effect.sync(() => {
          onEvent?.(event)
          if (event._tag === "Progress") onProgress?.(event.progress)
        })
      )
  }
}

/**
 * A job's options as `run` takes them, and its dead-letter sink (`fallback`: the file when
 * none is given): what the writer shares with the jobs.
 *
 * @since 0.3.0
 * @category utils
 */
export const runJobSettings = (options: JobOptions, letterFallback?: PipelineConfig<never, never>["maxDeadLetters"]) => ({
  config: { ...runSettings(options), maxDeadLetters: letterLimit(options.maxDeadLetters, letterFallback) },
  deadLetters: (fallback: string) => deadLetterSink(options.deadLetters, fallback)
})

/**
 * Sends records into a dataset, effectively once, and answers the final counters.
 *
 * @since 0.3.0
 * @category running
 */
export const ingest = <A, B>(runner: Runner, options: IngestOptions<A, B>): Promise<Progress> =>
  runner.call(
    Effect.gen(function*() {
      const client = yield* TributaryClient
      const source = sourceOf(options.from, options.name)
      const defaults = defaultPaths(options.from)
      const path = options.checkpoint === false ? undefined : options.checkpoint ?? defaults.checkpoint
      const checkpoint = path === undefined ? yield* Checkpoint.memory() : yield* Checkpoint.file(path, { restart: options.restart })
      return yield* run(client, {
        ...runSettings(options),
        source,
        checkpoint,
        deadLetters: yield* deadLetterSink(options.deadLetters, defaults.deadLetters),
        maxDeadLetters: letterLimit(options.maxDeadLetters, oneShotLetterLimit),
        restartHint: "ingest again with restart: true to start over (or give another checkpoint)"
      })
    }),
    options.signal
  )

/**
 * @since 0.3.0
 * @category models
 */
export interface SinkOptions<A = any, B = A> extends Omit<JobOptions<A, B>, "deadLetters"> {
  /** `HOST:PORT` of the brokers, as a list or comma-separated. */
  readonly brokers: string | ReadonlyArray<string>
  readonly topics: string | ReadonlyArray<string>
  /** The consumer group: processes with the same group share the partitions. */
  readonly group: string
  /** A file's path, a function, or `{ topic }` for a Kafka topic (default `tributary-dead-letters.ndjson`). */
  readonly deadLetters?: JobOptions["deadLetters"] | { readonly topic: string }
  readonly fromBeginning?: boolean | undefined
  readonly clientId?: string | undefined
  readonly tls?: boolean | { readonly ca: string } | undefined
  readonly sasl?: { readonly mechanism: "plain" | "scram-sha-256" | "scram-sha-512"; readonly username: string; readonly password: string } | undefined
  readonly sessionTimeoutMillis?: number | undefined
  /** How long stopping may wait for batches in flight (default 30 s); their keys make a resend harmless. */
  readonly drainTimeoutMillis?: number | undefined
}

/** Resolves when `signal` aborts (never without one). */
const aborted = (signal: AbortSignal | undefined) =>
  Effect.async<void>((resume) => {
    if (signal === undefined) return
    const onAbort = () => resume(Effect.void)
    if (signal.aborted) return onAbort()
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

/**
 * A long-running Kafka consumer-group member moving topics into a dataset until `signal`
 * aborts: it then stops fetching, delivers what was read, commits, and resolves with the
 * final counters (within `drainTimeoutMillis`). It waits out outages of the service, as the
 * CLI's `sink` does.
 *
 * @since 0.3.0
 * @category running
 */
export const sink = <A, B>(runner: Runner, options: SinkOptions<A, B>): Promise<Progress> =>
  runner.call(
    Effect.gen(function*() {
      const Kafka = yield* Effect.promise(() => import("../../connectors/kafka/index.js"))
      const client = yield* TributaryClient
      const list = (value: string | ReadonlyArray<string>) =>
        (typeof value === "string" ? value.split(",") : value).map((item) => item.trim()).filter((item) => item !== "")
      const kafka = yield* Kafka.makeClient({
        brokers: list(options.brokers),
        clientId: options.clientId,
        tls: options.tls,
        sasl: options.sasl === undefined ? undefined : { ...options.sasl, password: Redacted.make(options.sasl.password) }
      })
      const source = yield* Kafka.make({
        groupId: options.group,
        topics: list(options.topics),
        fromBeginning: options.fromBeginning,
        sessionTimeoutMillis: options.sessionTimeoutMillis
      }).pipe(Effect.provideService(Kafka.KafkaClient, kafka))
      const letters = options.deadLetters
      const deadLetters = typeof letters === "object" && letters !== null
        ? yield* Kafka.deadLetterTopic(letters.topic).pipe(Effect.provideService(Kafka.KafkaClient, kafka))
        : yield* deadLetterSink(letters, "tributary-dead-letters.ndjson")
      const running = yield* Effect.fork(run(client, {
        ...runSettings({ ...options, deadLetters: undefined }, () =>
          Effect.runSync(source.partitions).flatMap((p) =>
            p.committed === undefined || p.end === undefined ? [] : [{ partition: p.partition, lag: Math.max(0, p.end - p.committed) }]
          )),
        source,
        deadLetters,
        maxDeadLetters: letterLimit(options.maxDeadLetters, undefined),
        // As the CLI's sink: every pending batch keeps its cut in the committed offset's metadata.
        maxPending: options.maxPending ?? { batches: 256 },
        rideOutOutages: true,
        drainTimeout: `${options.drainTimeoutMillis ?? 30_000} millis`
      }))
      const drain = Effect.zipRight(
        source.stop,
        Fiber.join(running).pipe(
          Effect.timeoutFail({
            duration: `${options.drainTimeoutMillis ?? 30_000} millis`,
            onTimeout: () => ({ _tag: "DrainTimeout", message: "the sink did not finish its batches in flight within the drain timeout" })
          }),
          Effect.tapError(() => Fiber.interrupt(running))
        )
      )
      return yield* Effect.raceFirst(Fiber.join(running), Effect.zipRight(aborted(options.signal), drain))
    }).pipe(Effect.scoped)
  )

/**
 * @since 0.3.0
 * @category models
 */
export interface BackfillOptions<A = any, B = A> extends Omit<JobOptions<A, B>, "dataset" | keyof TypedOptions> {
  /** `postgres://user:password@host:port/database` (TLS settings in it are passed to `pg`). */
  readonly databaseUrl: string
  /** A table (`[schema.]table`), or `query`. */
  readonly table?: string | undefined
  readonly query?: string | undefined
  /** The key column(s): unique, never null; the read order. */
  readonly key: string | ReadonlyArray<string>
  /** The destination dataset, or `createDataset`. */
  readonly dataset?: string | number | undefined
  /** Create a dataset with the result's columns (its id is kept in the checkpoint: a resume goes on into it). */
  readonly createDataset?: { readonly name: string; readonly dataSourceId: number } | undefined
  /** Key ranges read in parallel (default 1). */
  readonly partitions?: number | undefined
  /** Partitions this process reads at once (default all). */
  readonly parallel?: number | undefined
  /** A column that grows when a row changes: each later run sends only the rows changed since. */
  readonly since?: string | undefined
  /**
   * A checkpoint file (default `tributary-backfill.checkpoint.json`, as the CLI), or
   * `{ table }`: a Postgres table several processes share the backfill through.
   */
  readonly checkpoint?: string | { readonly table: string; readonly leaseSeconds?: number | undefined } | undefined
  /** What the backfill says (resuming, a dataset created); default: nothing. */
  readonly onMessage?: ((line: string) => void) | undefined
}

/**
 * A Postgres table or query into a dataset, resumable and effectively once: the CLI's
 * `backfill`, with the same checkpoint (file or table) and the same dataset binding.
 *
 * @since 0.3.0
 * @category running
 */
export const backfill = (runner: Runner, options: BackfillOptions): Promise<Progress> =>
  runner.call(
    Effect.gen(function*() {
      const [Postgres, Backfill] = yield* Effect.promise(() => Promise.all([import("../../connectors/postgres/index.js"), import("../cli/backfill.js")]))
      const client = yield* TributaryClient
      const relation = options.table !== undefined && options.query === undefined
        ? { _tag: "Table" as const, name: options.table }
        : options.query !== undefined && options.table === undefined
        ? { _tag: "Query" as const, sql: options.query }
        : undefined
      if (relation === undefined) return yield* Effect.dieMessage("backfill needs either table or query")
      if ((options.dataset === undefined) === (options.createDataset === undefined)) {
        return yield* Effect.dieMessage("backfill needs either dataset or createDataset")
      }
      const checkpoint = options.checkpoint
      const deadLetterPath = typeof options.deadLetters === "string" ? options.deadLetters : "tributary-backfill.dead-letters.ndjson"
      const onMessage = options.onMessage
      const settings = runSettings({ ...options, dataset: options.dataset ?? "" })
      return yield* Backfill.backfill(client, {
        source: {
          relation,
          key: typeof options.key === "string" ? options.key.split(",").map((k) => k.trim()).filter((k) => k !== "") : options.key,
          partitions: options.partitions ?? 1,
          parallel: options.parallel,
          since: options.since,
          checkpoint: typeof checkpoint === "object"
            ? { _tag: "Table", table: checkpoint.table, leaseMillis: (checkpoint.leaseSeconds ?? 15) * 1000 }
            : { _tag: "File", path: checkpoint ?? "tributary-backfill.checkpoint.json" }
        },
        datasetId: options.dataset === undefined ? undefined : String(options.dataset),
        createDataset: options.createDataset,
        deadLetterPath,
        deadLetters: typeof options.deadLetters === "function" ? yield* deadLetterSink(options.deadLetters, deadLetterPath) : undefined,
        concurrency: options.concurrency,
        maxPending: options.maxPending,
        keyOrder: options.keyOrder,
        maxDeadLetters: letterLimit(options.maxDeadLetters, oneShotLetterLimit),
        say: (line) => Effect.sync(() => onMessage?.(line)),
        display: false,
        onEvent: settings.onEvent
      }).pipe(
        Effect.provide(Postgres.layer({ url: Redacted.make(options.databaseUrl), maxConnections: (options.parallel ?? options.partitions ?? 1) + 2 }))
      )
    }),
    options.signal
  )
