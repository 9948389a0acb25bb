/**
 * `run`: source -> validate -> batch -> send -> track -> commit, with dead letters and
 * progress. The delivery guarantee: a position is committed only after every element up to
 * it is stored by the service or written as a dead letter; batches are rebuilt identically
 * after a restart and carry keys derived from their source coordinates, so what was sent
 * before a crash is replayed by the service, not stored twice.
 *
 * @since 0.1.0
 */
import { Cause, Chunk, Clock, Data, Duration, Effect, Either, Exit, Fiber, Option, Runtime, Schedule, Stream } from "effect"
import { statusOf } from "../api/errors.js"
import type { TributaryClientService } from "../client/Client.js"
import type { Calls, Cancel } from "../client/transport.js"
import { type Batcher, makeBatcher } from "./batch.js"
import type { CheckpointStore } from "./Checkpoint.js"
import type { DeadLetterError, DeadLetterSink } from "./DeadLetter.js"
import {
  deliverBatch,
  deliverBatchNow,
  type Delivered,
  deliveredBatch,
  deliveredLetter,
  type Delivery,
  DeliveryError,
  type Destination,
  makeDelivery
} from "./deliver.js"
import { byCountThenName, type PipelineEvent, type Progress } from "./events.js"
import { CommitTracker } from "./internal/commitTracker.js"
import { readProblem, readSchemaAnswer, schemaPath } from "./internal/ingestWire.js"
import { Commits } from "./internal/commits.js"
import { type Limiter, makeLimiter } from "./internal/concurrencyLimit.js"
import { OutageWatch } from "./internal/outage.js"
import { deliverInParts, deliverInPartsNow, type HeldBack } from "./internal/parts.js"
import { type Counters, type Gauges, makeCounters, snapshot } from "./internal/progress.js"
import { pullLoop } from "./internal/pullLoop.js"
import { makeScheduler, type Scheduler } from "./internal/scheduler.js"
import { isPartitionedSource, isPartitionEvent, type PartitionedSource, type PartitionEvent, type Source, toPartitioned } from "./Source.js"
import { CheckpointMismatch, prepareRun, type PreparedRun, withTotals } from "./internal/runIdentity.js"
import * as SchemaContract from "./SchemaContract.js"
import * as Typed from "./Typed.js"
import { checkElement, type DatasetSchema } from "./validate.js"
import {
  type Batch,
  type BatchRecord,
  type CheckpointError,
  type Checked,
  type DeadLetter,
  type DeliveredUnit,
  elementPosition,
  type Unit
} from "./vocabulary.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface PipelineConfig<E, R, E2 = never, R2 = never> {
  /** A `Source` (its positions in `checkpoint`) or a `PartitionedSource` (which keeps its own). */
  readonly source: Source<E, R, any> | PartitionedSource<E, R, any>
  readonly destination: Destination
  /**
   * Typed records (`Typed.records`): each record is decoded with the user's schema,
   * transformed, and encoded with the output schema, which must agree with the dataset's
   * schema (checked at start: one error lists every mismatched column).
   */
  readonly records?: Typed.Records<E2, R2> | undefined
  /** The dataset's schema; read from the service when not given. */
  readonly schema?: DatasetSchema | undefined
  /**
   * What to do with records that do not fit the dataset's schema (`SchemaContract`): an object
   * or its text (`"freeze"`, `"columns=discard_value,data_type=freeze"`). Default: new columns
   * evolve the dataset (as the service does), a value of the wrong type makes a dead letter.
   * Typed records (`records`) keep their own, stricter contract: their output schema is checked
   * against the dataset's at start, so giving one here with them is an error.
   */
  readonly schemaContract?: SchemaContract.SchemaContract | string | undefined
  /** Where a `Source`'s positions and cuts live (a `PartitionedSource` brings its own). */
  readonly checkpoint?: CheckpointStore | undefined
  readonly deadLetters: DeadLetterSink
  readonly batch?: {
    readonly max?: number | undefined
    readonly maxBytes?: number | undefined
    readonly linger?: Duration.DurationInput | undefined
  } | undefined
  /**
   * Requests in flight at once: a number is the ceiling of an adaptive limit (it starts at 1,
   * grows while the service keeps up, and backs off on 429/503, timeouts and rising latency);
   * `{ fixed: N }` keeps N. Default 16 (adaptive). Each attempt of a request counts, not a
   * batch's whole life: followed ingestions hold no place (see `maxPending`).
   */
  readonly concurrency?: number | { readonly fixed: number } | undefined
  /**
   * How much may be pending at once between the batcher and the commit: batches sent or
   * waiting, and the bytes of their records (held for their dead letters). The source is not
   * read further while the bound is reached. Default 4096 batches, 64 MB. A keyed batch sent in
   * parts whose free records ended keeps only its held records' share of its place and bytes
   * while they wait, and no more than twice `batches` are under way at once.
   */
  readonly maxPending?: { readonly batches?: number | undefined; readonly bytes?: number | undefined } | undefined
  /**
   * Whether to wait out an outage of the service of any length (a long-running sink), trying
   * again with a backoff capped at 30 s; by default a run stops once the client's retries are
   * spent (`ClientConfig.retry.maxRetries`).
   */
  readonly rideOutOutages?: boolean | undefined
  /**
   * For a dataset with a primary key, when a batch stops holding back the later batches that
   * share a key value with it: `"terminal"` (default) once its ingestion ended, safe with any
   * service; `"accepted"` once the service accepted it, for a service that applies a dataset's
   * accepted ingestions in the order it accepted them (the reference server does): a run of
   * batches that each share a key with the next then costs a request each, not a processing
   * time each.
   */
  readonly keyOrder?: "terminal" | "accepted" | undefined
  /**
   * Stop the run (after committing what was delivered) when more records are dead-lettered
   * than this: a count, or a share of the elements read (checked from the 1,000th element on,
   * and at the end from the 100th; a run that dead-lettered everything it read is over any
   * share below 100%). None by default (the CLI's default is 10%).
   */
  readonly maxDeadLetters?: { readonly count: number } | { readonly ratio: number } | undefined
  /** What to tell the user when the checkpoint belongs to another run (e.g. how to start over). */
  readonly restartHint?: string | undefined
  /**
   * How long a revoked partition's batches in flight may take to finish before they are
   * interrupted (default 30 s); their keys make the next owner's resend harmless.
   */
  readonly drainTimeout?: Duration.DurationInput | undefined
  /**
   * The least time between two writes of committed positions (default 100 ms): a position is
   * written as soon as it waits and no write is under way, then no sooner than this after the
   * last write. A crash replays at most this much.
   */
  readonly commitInterval?: Duration.DurationInput | undefined
  readonly onEvent?: ((event: PipelineEvent) => Effect.Effect<void>) | undefined
  /**
   * Whether `onEvent` is told of every batch (`BatchSent`, `BatchDone`); default yes. Without
   * them (and untraced) a batch's way from its post to its completion costs no step in Effect.
   */
  readonly batchEvents?: boolean | undefined
  /** How often a `Progress` event is emitted (default 1 s). */
  readonly progressInterval?: Duration.DurationInput | undefined
  readonly poll?: { readonly initial: Duration.DurationInput; readonly max: Duration.DurationInput } | undefined
}

/**
 * The schema could not be read from the service.
 *
 * @since 0.1.0
 * @category errors
 */
export class SchemaError extends Data.TaggedError("SchemaError")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/**
 * @since 0.1.0
 * @category errors
 */
export type PipelineError =
  | DeliveryError
  | CheckpointError
  | CheckpointMismatch
  | DeadLetterError
  | DeadLetterLimit
  | SchemaError
  | Typed.TransformError

/**
 * More records were dead-lettered than `maxDeadLetters` allows: the run stopped (after
 * committing what was delivered), with the most frequent reasons.
 *
 * @since 0.2.0
 * @category errors
 */
export class DeadLetterLimit extends Data.TaggedError("DeadLetterLimit")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/**
 * The most frequent dead-letter reasons, by count: `invalid_type amount 812, unknown_column 90`.
 * Reasons as frequent as each other come in the order of their names: the letters of one input
 * are counted in an order that depends on timing (a malformed line's letter and a refused
 * record's reach the counters by different ways), and the same input should read the same.
 *
 * @since 0.2.0
 * @category utils
 */
export const topReasons = (reasons: Readonly<Record<string, number>>, top = 3): string =>
  Object.entries(reasons)
    .sort(byCountThenName)
    .slice(0, top)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(", ")

/** The ceiling of the adaptive concurrency limit. @since 0.2.0 @category defaults */
export const defaultConcurrency = 16

/**
 * 4096 batches, 64 MB of records pending at most. What a run needs pending is its rate times
 * the service's processing time (Little's law): a fast service keeps few pending whatever the
 * bound, a slow one needs many. 512 batches held a run against a service taking 1-2 s an
 * ingestion to 0.22 of its rate without the processing time; 4096 to 0.80 (`bench:tracking`).
 * The bytes are the memory guard.
 *
 * @since 0.2.0
 * @category defaults
 */
export const defaultMaxPending = { batches: 4096, bytes: 64 * 1024 * 1024 } as const

/**
 * Defaults: 100 records, 1 MB of body, 500 ms linger.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultBatch = { max: 100, maxBytes: 1_000_000, linger: "500 millis" } as const

/**
 * Reads a dataset's columns and primary key from the service (v2 schema endpoint).
 *
 * Through the client's `exchanges` (its retries, straight to undici), at the contract's path,
 * the answer decoded with the contract's `DatasetSchemaResponse` (`ingestWire.ts`): the typed client's first call built its group and
 * warmed its whole request path, 25-48 ms of every run's start (`bench:pipeline`, where the
 * run's own work is 4 s), for one read.
 *
 * @since 0.1.0
 * @category utils
 */
export const fetchSchema = (client: TributaryClientService, datasetId: string | number): Effect.Effect<DatasetSchema, SchemaError> =>
  Effect.flatMap(pathId(datasetId), (id) =>
    Effect.matchEffect(client.exchanges({ method: "GET", path: schemaPath(id) }), {
      onFailure: (error) => schemaFailure(datasetId, `the service at ${client.baseUrl} could not be reached (${error.message})`),
      onSuccess: (reply) => {
        if (reply.status !== 200) {
          return schemaFailure(datasetId, `the service answered ${reply.status}: ${readProblem(reply.status, reply.text).message}`)
        }
        return Either.match(readSchemaAnswer(reply.text), {
          onLeft: (error) => schemaFailure(datasetId, clientFailure(error)),
          onRight: (answer) =>
            Effect.succeed<DatasetSchema>({
              columns: answer.data.items.map((column) => ({ id: column.id, dataType: column.dataType })),
              primaryKey: answer.data.primaryKey ?? []
            })
        })
      }
    }))

const schemaFailure = (datasetId: string | number, reason: string) =>
  Effect.fail(new SchemaError({ reason: `cannot read the schema of dataset ${datasetId}: ${reason}` }))

/**
 * The destination as the sends name it: v1 paths take only a dataset's UUID, so a v1 run
 * given a dataset number reads the UUID from the dataset's v2 detail once; anything else is
 * sent as given (v2 paths take either form).
 *
 * @since 0.1.0
 * @category utils
 */
export const resolveDestination = (
  client: TributaryClientService,
  destination: Destination
): Effect.Effect<Destination, SchemaError> => {
  const id = destination.datasetId
  if (destination.api !== "v1" || !/^[0-9]+$/.test(String(id))) return Effect.succeed(destination)
  return client.v2.v2Datasets.get({ path: { id: Number(id) } }).pipe(
    Effect.map((answer): Destination => ({ ...destination, datasetId: answer.data.uuid })),
    Effect.mapError((error) => new SchemaError({ reason: `cannot find the v1 id of dataset ${id}: ${clientFailure(error)}` }))
  )
}

/** A dataset id as the contract's paths take it: a v2 number, or a UUID (its v1 id). */
const pathId = (datasetId: string | number): Effect.Effect<number | string, SchemaError> => {
  const text = String(datasetId)
  if (/^[0-9]+$/.test(text) && Number.isSafeInteger(Number(text)) && Number(text) > 0) return Effect.succeed(Number(text))
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text)) return Effect.succeed(text.toLowerCase())
  return Effect.fail(new SchemaError({ reason: `dataset id '${text}' is neither a dataset number nor a UUID` }))
}

/** A typed client's failure in one line: the service's status and first message, or what went wrong. */
const clientFailure = (error: { readonly _tag: string; readonly message?: string }): string => {
  const errors = (error as { readonly errors?: ReadonlyArray<{ readonly message?: unknown }> }).errors
  if (Array.isArray(errors)) {
    const message = typeof errors[0]?.message === "string" ? errors[0].message : "no reason given"
    return `the service answered ${(statusOf as Readonly<Record<string, number>>)[error._tag] ?? error._tag}: ${message}`
  }
  if (error._tag === "ParseError") {
    return `the service answered with what the contract does not allow: ${(error.message ?? "").split("\n").slice(0, 3).join(" ")}`
  }
  return error.message ?? error._tag
}

/**
 * The output schema of typed records against the destination's schema: stops with one error
 * that lists every mismatched column (or every field the service cannot store).
 */
const checkOutputSchema = (records: Typed.Records<unknown, unknown>, schema: DatasetSchema, datasetId: string | number) =>
  Effect.flatMap(
    Effect.mapError(records.columns, (error) => new SchemaError({ reason: error.reason })),
    (columns) => {
      const mismatches = Typed.compareSchemas(columns, schema)
      return mismatches.length === 0 ? Effect.void : Effect.fail(
        new SchemaError({
          reason: `the output schema does not match dataset ${datasetId} in ${mismatches.length} column(s): ${mismatches.join("; ")}`
        })
      )
    }
  )

/**
 * The settings of a run, checked: a bad number is a defect of the caller, said at once.
 */
const settingsOf = (config: PipelineConfig<any, any, any, any>) => {
  const concurrency = config.concurrency ?? defaultConcurrency
  const fixed = typeof concurrency === "object"
  const ceiling = fixed ? concurrency.fixed : concurrency
  const bound = {
    batches: config.maxPending?.batches ?? defaultMaxPending.batches,
    bytes: config.maxPending?.bytes ?? defaultMaxPending.bytes,
    // Pulled ahead of the sends: enough to keep every place among the requests busy, no more
    // (each holds its records in memory until it is accepted).
    unsent: Math.max(8, 2 * ceiling)
  }
  const problems = [
    ...(Number.isInteger(ceiling) && ceiling >= 1 ? [] : [`concurrency must be a whole number of at least 1, got ${ceiling}`]),
    ...(Number.isInteger(bound.batches) && bound.batches >= 1
      ? []
      : [`maxPending.batches must be a whole number of at least 1, got ${bound.batches}`]),
    ...(Number.isFinite(bound.bytes) && bound.bytes >= 1 ? [] : [`maxPending.bytes must be at least 1, got ${bound.bytes}`])
  ]
  return { problems, limit: { ceiling, mode: fixed ? "fixed" as const : "adaptive" as const }, bound }
}

/**
 * Runs a pipeline to the end of its source (a finite source) or until interrupted, and
 * answers the final progress.
 *
 * The stages: the source's elements are checked (`validate`), cut into batches (`batch`, cuts
 * recorded before anything is sent), admitted by the scheduler (conflicting batches of a keyed
 * dataset in order, a bound on what is pending), posted under an adaptive limit on requests in
 * flight (`send`), followed to their end by one tracker (`track`), and committed as the
 * contiguous prefix of each partition grows (`commit`).
 *
 * @since 0.1.0
 * @category running
 */
export const run = <E, R, E2 = never, R2 = never>(
  client: TributaryClientService,
  config: PipelineConfig<E, R, E2, R2>
): Effect.Effect<Progress, E | E2 | PipelineError, R | R2> =>
  Effect.gen(function*() {
    const settings = settingsOf(config)
    if (settings.problems.length > 0) return yield* Effect.dieMessage(settings.problems.join("; "))
    if (!isPartitionedSource(config.source) && config.checkpoint === undefined) {
      return yield* Effect.dieMessage(`source ${config.source.name} needs a checkpoint store`)
    }
    const destination = yield* resolveDestination(client, config.destination)
    const contract = yield* contractOfConfig(config)
    const given = config.schema ?? (yield* fetchSchema(client, config.destination.datasetId))
    // One object from here on: typed records are written for it, and `checkElement` knows them by it.
    const schema: DatasetSchema = contract === undefined ? given : { ...given, contract }
    if (config.records !== undefined) yield* checkOutputSchema(config.records, schema, config.destination.datasetId)
    // The run's identity, and the checkpoint's destination and source checked, before anything
    // is sent (and after what could refuse the run at once, so a refused run records nothing).
    const prepared = isPartitionedSource(config.source) ? undefined : yield* prepareRun(
      config.source,
      config.checkpoint!,
      config.destination,
      config.restartHint ?? "start over with a fresh checkpoint",
      client.baseUrl
    )
    const source = toPartitioned(config.source, config.checkpoint, prepared?.loaded)!
    const emit = config.onEvent ?? (() => Effect.void)

    // The state of the run, each piece a module of its own.
    const counters = makeCounters(yield* Clock.currentTimeMillis)
    const commits = new Commits(source.name, source.fallback, source.run, new CommitTracker(), counters, emit)
    const outages = new OutageWatch(config.rideOutOutages ?? false, emit)
    const limiter = yield* makeLimiter(settings.limit)
    const delivery = yield* makeRunDelivery(client, destination, source.name, (partition) => commits.runOf(partition), limiter, outages, config.poll)
    const letters: Letters = {
      sink: config.deadLetters,
      counters,
      emit,
      limit: config.maxDeadLetters,
      stamp: stampLetter(source.name, (partition) => commits.runOf(partition), String(destination.datasetId))
    }
    if (prepared !== undefined) {
      yield* emit(
        prepared.resumed
          ? { _tag: "Resumed", run: prepared.run, committed: prepared.loaded.positions, movedFrom: prepared.movedFrom }
          : { _tag: "Started", run: prepared.run }
      )
    }
    const batchWay: BatchWay = {
      delivery,
      commits,
      counters,
      emit,
      emits: config.onEvent !== undefined && config.batchEvents !== false,
      letters,
      datasetId: String(destination.datasetId),
      traced: client.traced
    }
    const runtime = yield* Effect.runtime<never>()
    const postCalls = delivery.postCalls
    const scheduler: Scheduler<PipelineError> = yield* makeScheduler({
      bound: settings.bound,
      release: config.keyOrder === "accepted" ? "accepted" : "terminal",
      deliver: (batch, accepted, heldBack, succeeded) => deliverAndComplete(batch, accepted, heldBack, succeeded, batchWay),
      // Posts in callback form exist only untraced (a traced client has no `attempts`).
      deliverNow: batchWay.emits || postCalls === undefined
        ? undefined
        : (batch, accepted, heldBack, done, succeeded) =>
          deliverAndCompleteNow(batch, accepted, heldBack, succeeded, batchWay, postCalls, runtime, done),
      recordParts: (cuts) => commits.recordCuts(cuts),
      roomForParts: (cut) => commits.roomForParts(cut),
      owned: (partition) => commits.owned(partition)
    })
    const gauges: Gauges = {
      oldestUnackedMillis: (now) => commits.tracker.oldestPendingMillis(now),
      inFlight: scheduler.admitted,
      pending: delivery.tracker.pending,
      waiting: scheduler.waiting,
      concurrencyLimit: limiter.limit,
      outage: () => outages.current
    }
    const snapshotNow = Effect.map(Clock.currentTimeMillis, (now) => snapshot(counters, gauges, now))

    const committer = yield* Effect.forkScoped(
      Effect.forever(Effect.zipRight(Effect.zipRight(commits.waiting, commits.flush), Effect.sleep(config.commitInterval ?? "100 millis")))
    )
    const reporter = yield* Effect.forkScoped(Effect.repeat(
      Effect.flatMap(snapshotNow, (p) => emit({ _tag: "Progress", progress: p })),
      Schedule.spaced(config.progressInterval ?? "1 second")
    ))
    yield* Effect.forkScoped(watchLimit(limiter, emit))

    const max = config.batch?.max ?? defaultBatch.max
    const linger = config.batch?.linger ?? defaultBatch.linger
    const batcher = makeBatcher({ max, maxBytes: config.batch?.maxBytes ?? defaultBatch.maxBytes, linger, recordedCuts: [] })
    const drainTimeout = Duration.decode(config.drainTimeout ?? "30 seconds")

    const flow: Flow = { batcher, commits, scheduler, letters, emit, drainTimeout }
    const elements: Stream.Stream<Typed.Event<unknown>, E | E2 | PipelineError, R | R2> = config.records === undefined
      ? source.events
      : config.records.through(source.events, schema)
    const delivering = Effect.zipRight(
      pullLoop(checkedElements(elements, schema, commits.tracker, counters, emit), {
        batcher,
        max,
        linger,
        recordCuts: (cuts, frontiers) => commits.recordCuts(cuts, frontiers),
        dispatch: (unit) => dispatch(flow, unit),
        onPartitionEvent: (event) => onPartitionEvent(flow, event),
        hungry: () => scheduler.unsent() < limiter.limit(),
        room: scheduler.room
      }),
      scheduler.finished
    )

    yield* delivering.pipe(
      // The first failed delivery stops the run.
      (delivering) => Effect.raceFirst(delivering, scheduler.failed),
      // The committer runs until it is stopped: it ends of itself only when a commit failed,
      // and then the run must stop too, not go on sending what it can no longer commit.
      (delivering) => Effect.raceFirst(delivering, Fiber.join(committer)),
      // What was delivered before a failure or an interruption (Ctrl-C) is still committed,
      // so a restart replays less.
      Effect.onExit((exit) =>
        Exit.isSuccess(exit) ? Effect.void : Effect.ignore(Effect.zipRight(
          Effect.zipRight(Fiber.interrupt(committer), commits.flush),
          writeTotals(config.checkpoint, prepared, counters)
        ))
      )
    )
    return yield* finish(flow, { committer, reporter, snapshotNow, checkpoint: config.checkpoint, prepared, counters })
  }).pipe(Effect.scoped)

/** What the flow of a run's units touches once the run is set up. */
interface Flow {
  readonly batcher: Batcher
  readonly commits: Commits
  readonly scheduler: Scheduler<PipelineError>
  readonly letters: Letters
  readonly emit: (event: PipelineEvent) => Effect.Effect<void>
  readonly drainTimeout: Duration.Duration
}

/**
 * A closed unit on its way: a batch is admitted to the scheduler (which sends it when its keys
 * and the bounds let it); a unit of dead letters only is written and marked delivered.
 */
const dispatch = (flow: Flow, unit: Unit): Effect.Effect<void, PipelineError> =>
  unit._tag === "Batch"
    ? flow.scheduler.admit(unit.batch)
    : Effect.suspend(() => {
      const done = deliveredLetter(unit)
      return Effect.zipRight(writeDeadLetters(done.letters, flow.letters), Effect.sync(() => flow.commits.delivered(done)))
    })

/**
 * A partition event in its place among the elements: an assignment brings each partition's
 * committed position and recorded cuts; a revocation sends nothing more of its partitions,
 * lets what is under way land (or interrupts it after the drain timeout), commits what landed,
 * forgets them, and then releases them.
 */
const onPartitionEvent = (flow: Flow, event: PartitionEvent): Effect.Effect<void, PipelineError> => {
  const { batcher, commits, emit, scheduler } = flow
  return event._tag === "Assigned"
    ? Effect.zipRight(
      Effect.sync(() => {
        commits.assign(event.assignments)
        for (const assignment of event.assignments) {
          batcher.assign(assignment.cuts, assignment.blocks === undefined ? undefined : { partition: assignment.partition, ...assignment.blocks })
        }
      }),
      emit({ _tag: "Assigned", partitions: event.assignments.map((a) => a.partition) })
    )
    : Effect.forEach(event.partitions, (partition) =>
      Effect.suspend(() => {
        batcher.revoke(partition)
        return scheduler.drain(partition, flow.drainTimeout)
      }).pipe(
        Effect.zipRight(commits.flushPartition(partition)),
        Effect.ensuring(Effect.sync(() => commits.forget(partition)))
      ), { discard: true }).pipe(
      Effect.zipRight(emit({ _tag: "Revoked", partitions: event.partitions })),
      Effect.zipRight(event.release)
    )
}

/**
 * A run's end, once every unit is delivered: a failure recorded meanwhile fails it; else the
 * last commits and totals are written, the dead-letter share is checked over the whole run,
 * and the final progress is reported and answered.
 */
const finish = (
  flow: Flow,
  end: {
    readonly committer: Fiber.RuntimeFiber<unknown, unknown>
    readonly reporter: Fiber.RuntimeFiber<unknown, unknown>
    readonly snapshotNow: Effect.Effect<Progress>
    readonly checkpoint: CheckpointStore | undefined
    readonly prepared: PreparedRun | undefined
    readonly counters: Counters
  }
): Effect.Effect<Progress, PipelineError> =>
  Effect.gen(function*() {
    const { commits, scheduler } = flow
    // A failure is recorded before its batch's place comes back: when all came back, it is seen here.
    yield* Effect.whenEffect(scheduler.failed, scheduler.hasFailed)
    yield* Fiber.interrupt(end.committer)
    yield* commits.flush
    yield* writeTotals(end.checkpoint, end.prepared, end.counters)
    yield* Fiber.interrupt(end.reporter)
    // A small run is held to the share at its end.
    yield* checkLetterLimit(flow.letters, true)
    const final = yield* end.snapshotNow
    yield* flow.emit({ _tag: "Progress", progress: final })
    return final
  })

/**
 * Numbering, the read clock, validation and the counters in one pass over each chunk.
 * Partition events pass through, in their place among the elements (and through the typed
 * stages, which are the same combinators a hand-made pipeline uses). Typed records are written
 * for `schema` by their encode stage, which `check` then trusts. What the schema's contract
 * changed (a column added, values dropped) is counted as it is seen, and a column's
 * `ColumnAdded` event goes out before the chunk that holds its first record moves on.
 */
const checkedElements = <E, R>(
  elements: Stream.Stream<Typed.Event<unknown>, E, R>,
  schema: DatasetSchema,
  tracker: CommitTracker,
  counters: Counters,
  emit: (event: PipelineEvent) => Effect.Effect<void>
): Stream.Stream<Checked | PartitionEvent, E, R> => {
  let added: Array<PipelineEvent> = []
  const check = checkElement(schema, {
    columnAdded: (column, position) => {
      counters.columnsAdded = [...counters.columnsAdded, column]
      added.push({ _tag: "ColumnAdded", column, position })
    },
    discarded: (discarded) => {
      counters.valuesDiscarded += discarded.length
      const reasons = counters.discardedReasons as Record<string, number>
      for (const { code, field } of discarded) reasons[`${code} ${field}`] = (reasons[`${code} ${field}`] ?? 0) + 1
    }
  })
  const checked = Stream.mapChunks(elements, (chunk) => {
    const now = Date.now()
    return Chunk.map(chunk, (element) => {
      if (isPartitionEvent(element)) return element
      const result = check(element, tracker.read(elementPosition(element).partition, now))
      counters.read++
      if (result._tag === "Valid") counters.valid++
      else if (result._tag === "Skipped") counters.dropped++
      return result
    })
  })
  return Stream.mapChunksEffect(checked, (chunk) => {
    if (added.length === 0) return Effect.succeed(chunk)
    const events = added
    added = []
    return Effect.as(Effect.forEach(events, emit, { discard: true }), chunk)
  })
}

/**
 * The contract a run checks records under: the one given (its text read), none for typed
 * records (their output schema is theirs; one given with them is refused), or undefined to
 * keep the schema's own (`DatasetSchema.contract`, the default).
 */
const contractOfConfig = (
  config: PipelineConfig<any, any, any, any>
): Effect.Effect<SchemaContract.SchemaContract | undefined, SchemaError> => {
  const given = config.schemaContract
  if (config.records !== undefined) {
    return given === undefined
      // As before contracts: a schema given with `allowNewColumns` lets typed records add columns.
      ? Effect.succeed(
        config.schema?.allowNewColumns === true
          ? { ...SchemaContract.frozenContract, columns: "evolve" as const }
          : SchemaContract.frozenContract
      )
      : Effect.fail(new SchemaError({
        reason: "a typed job's output schema is its schema contract (checked against the dataset's at start): " +
          "leave schemaContract out, or change the output schema"
      }))
  }
  if (given === undefined) return Effect.succeed(undefined)
  if (typeof given !== "string") return Effect.succeed(given)
  return Either.match(SchemaContract.parse(given), {
    onLeft: (problem) => Effect.fail(new SchemaError({ reason: `schema contract: ${problem}` })),
    onRight: Effect.succeed
  })
}

/**
 * The run's delivery: posts go through the adaptive limit, one attempt at a time, under the
 * client's retries and the outage watch; polls go under the retries and the watch only (they
 * are few, and must not wait behind posts). Untraced, all of it in callback form.
 */
const makeRunDelivery = (
  client: TributaryClientService,
  destination: Destination,
  sourceName: string,
  runOf: (partition: string) => string | undefined,
  limiter: Limiter,
  outages: OutageWatch,
  poll: PipelineConfig<any, any>["poll"]
) =>
  makeDelivery({
    destination,
    sourceName,
    runOf,
    poll,
    traced: client.traced,
    exchanges: outages.watch(client.exchanges),
    ...Option.match(client.attempts, {
      // Traced requests retry inside the platform client: the limit then times whole sequences.
      onNone: () => ({ postExchanges: outages.watch(limiter.wrap(client.exchanges)) }),
      onSome: (attempts) => ({
        calls: outages.watchCalls(client.retrying(attempts)),
        postCalls: outages.watchCalls(client.retrying(limiter.wrapCalls(attempts)))
      })
    })
  })

/** Announces the adaptive limit when it moves (checked each 250 ms). */
const watchLimit = (limiter: Limiter, emit: (event: PipelineEvent) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    let last = limiter.limit()
    for (;;) {
      yield* Effect.sleep("250 millis")
      const now = limiter.limit()
      if (now !== last) {
        last = now
        yield* emit({ _tag: "LimitChanged", limit: now })
      }
    }
  })

/** Where a run's dead letters go, and what it counts of them. */
interface Letters {
  readonly sink: DeadLetterSink
  readonly counters: Counters
  readonly emit: (event: PipelineEvent) => Effect.Effect<void>
  readonly limit: PipelineConfig<never, never>["maxDeadLetters"]
  readonly stamp: (letter: DeadLetter) => DeadLetter
}

/**
 * A letter with what a replay needs to send it again under keys of its own origin: the
 * source's name, the run's identity and the dataset (a letter a stage stamped keeps its own).
 */
const stampLetter = (source: string, runOf: (partition: string) => string | undefined, dataset: string) => (letter: DeadLetter): DeadLetter =>
  letter.source !== undefined
    ? letter
    : { ...letter, source, run: runOf(letter.position.partition), dataset }

/** The reason a dead letter is counted under: its code, and the field when there is one. */
const reasonOf = (letter: DeadLetter) => (letter.reason.field === null ? letter.reason.code : `${letter.reason.code} ${letter.reason.field}`)

const checkLetterLimit = (letters: Letters, atEnd: boolean): Effect.Effect<void, DeadLetterLimit> => {
  const { counters, limit } = letters
  if (limit === undefined || counters.deadLettered === 0) return Effect.void
  // A share says little of a few records: it is held from the 1,000th on, and at the end from
  // the 100th; a run that dead-lettered every record it read is over it at any size.
  const over = "count" in limit
    ? counters.deadLettered > limit.count
    : (counters.read >= 1000 || (atEnd && counters.read >= 100)) && counters.deadLettered > limit.ratio * counters.read ||
      atEnd && limit.ratio < 1 && counters.deadLettered === counters.read
  if (!over) return Effect.void
  const allowed = "count" in limit ? `${limit.count}` : `${Math.round(limit.ratio * 1000) / 10}% of the ${counters.read} read`
  return Effect.fail(
    new DeadLetterLimit({
      reason: `${counters.deadLettered} dead letters, more than the ${allowed} allowed (most: ${topReasons(counters.deadLetterReasons)}); ` +
        "what was delivered is committed"
    })
  )
}

const writeDeadLetters = (batch: ReadonlyArray<DeadLetter>, letters: Letters): Effect.Effect<void, DeadLetterError | DeadLetterLimit> =>
  batch.length === 0 ? Effect.void : Effect.zipRight(
    letters.sink.write(batch.map(letters.stamp)),
    Effect.suspend(() => {
      const { counters } = letters
      counters.deadLettered += batch.length
      const reasons = counters.deadLetterReasons as Record<string, number>
      for (const letter of batch) {
        const reason = reasonOf(letter)
        reasons[reason] = (reasons[reason] ?? 0) + 1
      }
      return Effect.zipRight(
        Effect.forEach(batch, (letter) => letters.emit({ _tag: "DeadLettered", letter }), { discard: true }),
        checkLetterLimit(letters, false)
      )
    })
  )

/** Adds this run's figures to its record (a run with an identity whose store keeps it). */
const writeTotals = (checkpoint: CheckpointStore | undefined, prepared: PreparedRun | undefined, counters: Counters) =>
  prepared?.run === undefined || checkpoint?.writeRun === undefined
    ? Effect.void
    : checkpoint.writeRun(withTotals(prepared.run, { read: counters.read, stored: counters.accepted, deadLettered: counters.deadLettered }))

/** What a batch's way from its post to its completion needs of the run. */
interface BatchWay {
  readonly delivery: Delivery
  readonly commits: Commits
  readonly counters: Counters
  readonly emit: (event: PipelineEvent) => Effect.Effect<void>
  /** Whether anyone listens to the batches' events (none: they are not made). */
  readonly emits: boolean
  readonly letters: Letters
  readonly datasetId: string
  readonly traced: boolean
}

/** A delivered batch's figures added to the run's. */
const counted = (counters: Counters, outcome: Delivered): void => {
  counters.sent += outcome.sent
  counters.accepted += outcome.accepted
  counters.replayed += outcome.replayed
  counters.rejected += outcome.rejected.length
}

/**
 * `deliverAndComplete` in callback form, for an untraced run that is not told of batches: the
 * common case, a batch with nothing to write, completes without a step in Effect; dead letters
 * are written on a fiber of their own.
 */
const deliverAndCompleteNow = (
  batch: Batch,
  accepted: () => void,
  heldBack: HeldBack | undefined,
  succeeded: () => void,
  run: BatchWay,
  postCalls: Calls,
  runtime: Runtime.Runtime<never>,
  done: (failure: Cause.Cause<PipelineError> | undefined) => void
): Cancel => {
  if (!run.commits.owned(batch.partition)) {
    done(undefined)
    return () => {}
  }
  const delivered = (outcome: Delivered | undefined | DeliveryError) => {
    if (outcome instanceof DeliveryError) return done(Cause.fail(outcome))
    // The held records were not sent: the partition was taken away meanwhile.
    if (outcome === undefined) return done(undefined)
    const unit = deliveredBatch(batch, outcome)
    counted(run.counters, outcome)
    if (unit.letters.length === 0) {
      completed(run, batch, unit)
      return done(undefined)
    }
    const interrupt = Runtime.runCallback(runtime)(
      Effect.zipRight(writeDeadLetters(unit.letters, run.letters), Effect.sync(() => completed(run, batch, unit))),
      { onExit: (exit) => done(Exit.isSuccess(exit) ? undefined : exit.cause) }
    )
    cancel = () => interrupt()
  }
  let cancel = heldBack === undefined
    ? deliverBatchNow(run.delivery, postCalls, batch, accepted, delivered, succeeded)
    : deliverInPartsNow(run.delivery, postCalls, undefined, batch, heldBack, accepted, delivered)
  return () => cancel()
}

/**
 * One batch from its post to its commit: sent unless its partition was taken away meanwhile
 * (its next owner sends it), followed to its end, its dead letters written, its elements
 * marked delivered.
 */
const deliverAndComplete = (
  batch: Batch,
  accepted: () => void,
  heldBack: HeldBack | undefined,
  succeeded: () => void,
  run: BatchWay
): Effect.Effect<void, PipelineError> =>
  Effect.suspend(() => {
    const { partition, records } = batch
    if (!run.commits.owned(partition)) return Effect.void
    const first = records[0]!.position.offset
    const last = records[records.length - 1]!.position.offset
    const count = records.length
    const delivering = heldBack === undefined
      ? deliverBatch(run.delivery, batch, accepted, succeeded)
      : deliverInParts(run.delivery, batch, heldBack, accepted)
    return (run.emits ? Effect.zipRight(emit(run, { _tag: "BatchSent", partition, first, last, records: count, idempotencyKey: null }), delivering) : delivering).pipe(
      Effect.flatMap((outcome) => {
        // The held records were not sent: the partition was taken away meanwhile.
        if (outcome === undefined) return Effect.void
        const done = deliveredBatch(batch, outcome)
        counted(run.counters, outcome)
        // The common case, nothing to write, trace or tell: the batch is marked delivered in
        // this step. Each `zipRight` of nothing costs the runtime steps; with the events nobody
        // listens to, 10 of a batch's 208 steps on `bench:pipeline`.
        if (done.letters.length === 0 && !run.traced && !run.emits) {
          completed(run, batch, done)
          return Effect.void
        }
        return writeDeadLetters(done.letters, run.letters).pipe(
          Effect.zipRight(!run.traced ? Effect.void : Effect.annotateCurrentSpan({
            "tributary.ingestion_ids": outcome.ingestionIds.join(","),
            "tributary.accepted": outcome.accepted,
            "tributary.rejected": outcome.rejected.length,
            "tributary.replayed": outcome.replayed,
            "tributary.dead_lettered": done.letters.length,
            "tributary.outcome": done.letters.length === 0 ? "stored" : outcome.accepted === 0 ? "dead_lettered" : "partly_dead_lettered"
          })),
          Effect.zipRight(run.traced ? deadLetterEvents(done.letters) : Effect.void),
          Effect.zipRight(emit(run, {
            _tag: "BatchDone",
            partition,
            first,
            last,
            ingestionId: outcome.ingestionIds.join(","),
            accepted: outcome.accepted,
            rejected: outcome.rejected.length
          })),
          Effect.zipRight(Effect.sync(() => completed(run, batch, done)))
        )
      }),
      // One span per batch, from its send to its commit's turn, its requests as its children;
      // only when the client traces (tracing off costs nothing, not even a span object).
      (delivering) => run.traced ? withBatchSpan(delivering, run.datasetId, run.commits.sourceName, partition, first, last, count) : delivering
    )
  })

/** A delivered batch: its elements marked delivered (committed once contiguous). */
const completed = (run: { readonly commits: Commits }, batch: Batch, done: DeliveredUnit): void => {
  run.commits.delivered(done)
  // A batch lives long enough to reach the old generation, and a dead old object keeps what it
  // points to alive through every young collection until the next full one: a delivered batch
  // lets go of its records at once, or they would all be copied and promoted (measured: 4% of
  // the pipeline's CPU time).
  ;(batch.records as Array<BatchRecord>).length = 0
}

/** A batch's span, named by its coordinates (its outcome is added when it is done). */
const withBatchSpan = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  dataset: string,
  source: string,
  partition: string,
  first: number,
  last: number,
  records: number
) =>
  Effect.withSpan(effect, "tributary.batch", {
    kind: "producer",
    attributes: {
      "tributary.dataset": dataset,
      "tributary.source": source,
      "tributary.partition": partition,
      "tributary.first": first,
      "tributary.last": last,
      "tributary.records": records
    }
  })

/** Each dead letter of a batch as an event of the batch's span (none when nothing traces). */
const deadLetterEvents = (letters: ReadonlyArray<DeadLetter>): Effect.Effect<void> =>
  letters.length === 0 ? Effect.void : Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
    Effect.sync(() => {
      if (span._tag === "None") return
      const now = BigInt(Date.now()) * 1_000_000n
      for (const letter of letters) {
        span.value.event("dead_letter", now, {
          "tributary.partition": letter.position.partition,
          "tributary.offset": letter.position.offset,
          "tributary.reason.code": letter.reason.code,
          "tributary.reason.field": letter.reason.field ?? "",
          "tributary.reason.message": letter.reason.message,
          "tributary.stage": letter.stage
        })
      }
    }))

const emit = (run: { readonly emit: (event: PipelineEvent) => Effect.Effect<void> }, event: PipelineEvent) => run.emit(event)

/**
 * The run as a stream of its events: the stream ends when the run ends and fails with the
 * run's failure. The run waits for a slow consumer once `bufferSize` events (default 1024)
 * are waiting, so every event is seen; `config.onEvent` is still called first.
 *
 * ```ts
 * events(client, config).pipe(
 *   Stream.filter((event) => event._tag === "Progress"),
 *   Stream.runForEach((event) => Console.log(`${event.progress.accepted} stored`))
 * )
 * ```
 *
 * @since 0.1.0
 * @category running
 */
export const events = <E, R, E2 = never, R2 = never>(
  client: TributaryClientService,
  config: PipelineConfig<E, R, E2, R2>,
  options: { readonly bufferSize?: number | undefined } = {}
): Stream.Stream<PipelineEvent, E | E2 | PipelineError, R | R2> =>
  Stream.asyncScoped<PipelineEvent, E | E2 | PipelineError, R | R2>((emit) =>
    Effect.forkScoped(
      run(client, {
        ...config,
        onEvent: (event) =>
          // Ignored when the stream has ended (its consumer stopped): the run is being stopped too.
          Effect.zipRight(config.onEvent?.(event) ?? Effect.void, Effect.ignore(Effect.tryPromise(() => emit.single(event))))
      }).pipe(
        Effect.matchCauseEffect({
          onFailure: (cause) => Effect.promise(() => emit.halt(cause)),
          onSuccess: () => Effect.promise(() => emit.end())
        })
      )
    ), options.bufferSize ?? 1024)
