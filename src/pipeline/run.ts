/**
 * `run`: source -> validate -> batch -> send -> track -> commit, with dead letters and
 * progress. The delivery guarantee: a position is committed only after every element up to
 * it is stored by the service or written as a dead letter; batches are rebuilt identically
 * after a restart and carry keys derived from their source coordinates, so what was sent
 * before a crash is replayed by the service, not stored twice.
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Cause, Chunk, Clock, Data, Deferred, Duration, Effect, Exit, Fiber, FiberSet, Option, Schedule, Schema, Stream } from "effect"
import type { TributaryClientService } from "../client/Client.js"
import type { Column } from "../records.js"
import { type Batch, type Batcher, type BatchRecord, lingerCheckMillis, makeBatcher, shouldFlush, type Unit, unitPartition } from "./batch.js"
import type { BatchCut, CheckpointError, CheckpointStore } from "./Checkpoint.js"
import { CommitTracker } from "./commit.js"
import type { DeadLetter, DeadLetterError, DeadLetterSink } from "./DeadLetter.js"
import { type DeliveredUnit, deliveredBatch, deliveredLetter, DeliveryError, type Destination, makeDeliver } from "./deliver.js"
import { emptyProgress, type PipelineEvent, type Progress } from "./events.js"
import {
  type CheckpointWriter,
  isPartitionEvent,
  type PartitionedSource,
  type PartitionEvent,
  type Position,
  type Source,
  withCheckpoint,
  elementPosition
} from "./Source.js"
import * as Typed from "./Typed.js"
import { checkElement, type Checked, type DatasetSchema } from "./validate.js"

/**
 * @since 0.1.0
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
  /** Where a `Source`'s positions and cuts live (a `PartitionedSource` brings its own). */
  readonly checkpoint?: CheckpointStore | undefined
  readonly deadLetters: DeadLetterSink
  readonly batch?: {
    readonly max?: number | undefined
    readonly maxBytes?: number | undefined
    readonly linger?: Duration.DurationInput | undefined
  } | undefined
  /** Batches in flight at once (default 4). */
  readonly concurrency?: number | undefined
  /**
   * How long a revoked partition's batches in flight may take to finish before they are
   * interrupted (default 30 s); their keys make the next owner's resend harmless.
   */
  readonly drainTimeout?: Duration.DurationInput | undefined
  /** How often committed positions are written (default 100 ms); a crash replays at most this much. */
  readonly commitInterval?: Duration.DurationInput | undefined
  readonly onEvent?: ((event: PipelineEvent) => Effect.Effect<void>) | undefined
  /** How often a `Progress` event is emitted (default 1 s). */
  readonly progressInterval?: Duration.DurationInput | undefined
  readonly poll?: { readonly initial: Duration.DurationInput; readonly max: Duration.DurationInput } | undefined
}

/**
 * The schema could not be read from the service.
 *
 * @since 0.1.0
 */
export class SchemaError extends Data.TaggedError("SchemaError")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/** @since 0.1.0 */
export type PipelineError = DeliveryError | CheckpointError | DeadLetterError | SchemaError | Typed.TransformError

/** Defaults: 100 records, 1 MB of body, 500 ms linger. @since 0.1.0 */
export const defaultBatch = { max: 100, maxBytes: 1_000_000, linger: "500 millis" } as const

/**
 * Reads a dataset's columns and primary key from the service (v2 schema endpoint).
 *
 * @since 0.1.0
 */
export const fetchSchema = (client: TributaryClientService, datasetId: string | number): Effect.Effect<DatasetSchema, SchemaError> =>
  client.http.execute(HttpClientRequest.get(`/v2/datasets/${datasetId}/schema`)).pipe(
    Effect.flatMap((response) =>
      Effect.flatMap(response.json, (body: any) => {
        if (response.status !== 200) {
          return Effect.fail(`the service answered ${response.status}: ${body?.errors?.[0]?.message ?? "no reason given"}`)
        }
        const items: ReadonlyArray<{ id: string; dataType: Column["dataType"] }> | undefined = body?.data?.items
        if (!Array.isArray(items)) return Effect.fail("the service answered 200 without the columns")
        return Effect.succeed({
          columns: items.map((c) => ({ id: c.id, dataType: c.dataType })),
          primaryKey: body.data.primaryKey ?? []
        })
      })
    ),
    Effect.mapError((error) =>
      new SchemaError({ reason: `cannot read the schema of dataset ${datasetId}: ${typeof error === "string" ? error : error.message}` })
    )
  )

const DetailUuid = Schema.Struct({ data: Schema.Struct({ uuid: Schema.String }) })
const ErrorMessage = Schema.Struct({ errors: Schema.NonEmptyArray(Schema.Struct({ message: Schema.String })) })

/**
 * The destination as the sends name it: v1 paths take only a dataset's UUID, so a v1 run
 * given a dataset number reads the UUID from the dataset's v2 detail once; anything else is
 * sent as given (v2 paths take either form).
 *
 * @since 0.1.0
 */
export const resolveDestination = (
  client: TributaryClientService,
  destination: Destination
): Effect.Effect<Destination, SchemaError> => {
  const id = destination.datasetId
  if (destination.api !== "v1" || !/^[0-9]+$/.test(String(id))) return Effect.succeed(destination)
  return client.http.execute(HttpClientRequest.get(`/v2/datasets/${id}`)).pipe(
    Effect.flatMap((response) =>
      Effect.flatMap(response.json, (body): Effect.Effect<Destination, unknown> =>
        response.status === 200
          ? Effect.map(Schema.decodeUnknown(DetailUuid)(body), (detail) => ({ ...destination, datasetId: detail.data.uuid }))
          : Effect.fail(
            `the service answered ${response.status}: ${
              Option.match(Schema.decodeUnknownOption(ErrorMessage)(body), {
                onNone: () => "no reason given",
                onSome: (e) => e.errors[0].message
              })
            }`
          ))
    ),
    Effect.mapError((error) =>
      new SchemaError({
        reason: `cannot find the v1 id of dataset ${id}: ${typeof error === "string" ? error : (error as Error).message}`
      })
    )
  )
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
 * Runs a pipeline to the end of its source (a finite source) or until interrupted, and
 * answers the final progress.
 *
 * @since 0.1.0
 */
export const run = <E, R, E2 = never, R2 = never>(
  client: TributaryClientService,
  config: PipelineConfig<E, R, E2, R2>
): Effect.Effect<Progress, E | E2 | PipelineError, R | R2> =>
  Effect.gen(function*() {
    const concurrency = config.concurrency ?? 4
    if (!(Number.isInteger(concurrency) && concurrency >= 1)) {
      return yield* Effect.dieMessage(`concurrency must be a whole number of at least 1, got ${concurrency}`)
    }
    if (!("_tag" in config.source) && config.checkpoint === undefined) {
      return yield* Effect.dieMessage(`source ${config.source.name} needs a checkpoint store`)
    }
    const source = asPartitioned(config.source, config.checkpoint!)
    const destination = yield* resolveDestination(client, config.destination)
    const schema = config.schema ?? (yield* fetchSchema(client, config.destination.datasetId))
    if (config.records !== undefined) yield* checkOutputSchema(config.records, schema, config.destination.datasetId)
    const tracker = new CommitTracker()
    // Counters change for every record: one mutable object, copied only for snapshots.
    const progress: { -readonly [K in keyof Progress]: Progress[K] } = emptyProgress(yield* Clock.currentTimeMillis)
    const update = (change: (p: Progress) => Partial<Progress>) => {
      Object.assign(progress, change(progress))
    }
    const emit = config.onEvent ?? (() => Effect.void)
    const snapshot = Effect.map(Clock.currentTimeMillis, (now): Progress => ({
      ...progress,
      oldestUnackedMillis: tracker.oldestPendingMillis(now)
    }))

    // Where each assigned partition's cuts and commits go.
    const writers = new Map<string, CheckpointWriter>()
    // Partitions given up and not assigned again: a commit or cut of one that was still on its
    // way (the committer had taken it, or its last batch landed after the drain) is dropped; the
    // new owner sends from the old commit under the same keys.
    const given = new Set<string>()
    const writerOf = (partition: string): CheckpointWriter | undefined => {
      const writer = writers.get(partition) ?? source.fallback
      if (writer === undefined && !given.has(partition)) {
        throw new Error(`source ${source.name} sent partition ${partition} before assigning it`)
      }
      return writer
    }

    // Positions waiting to be written; the committer writes the latest of each partition.
    const toCommit = new Map<string, Position>()
    const writeCommit = (position: Position): Effect.Effect<void, CheckpointError> => {
      const writer = writerOf(position.partition)
      return writer === undefined ? Effect.void : Effect.zipRight(
        writer.commit(position),
        Effect.zipRight(
          Effect.sync(() => update((p) => ({ committed: { ...p.committed, [position.partition]: position } }))),
          emit({ _tag: "Committed", position })
        )
      )
    }
    // Uninterruptible: the positions are taken out of `toCommit` first, so a committer stopped
    // between two partitions' writes (the run's end interrupts it) dropped the rest, and the
    // final flush no longer had them (seen with a four-partition Postgres source: its last
    // commits lagged, and the next run read those rows again).
    const flushCommits = Effect.uninterruptible(Effect.suspend(() => {
      const positions = [...toCommit.values()]
      toCommit.clear()
      return Effect.forEach(positions, writeCommit, { discard: true })
    }))
    /** Commits what is delivered of one partition now (a revocation). */
    const flushCommit = (partition: string) =>
      Effect.suspend(() => {
        const position = toCommit.get(partition)
        toCommit.delete(partition)
        return position === undefined ? Effect.void : writeCommit(position)
      })

    // Boundaries go to the writers of their partitions, one write per writer.
    const recordCuts = (cuts: ReadonlyArray<BatchCut>) => {
      if (cuts.length === 0) return Effect.void
      const byWriter = new Map<CheckpointWriter, Array<BatchCut>>()
      for (const cut of cuts) {
        const writer = writerOf(cut.partition)
        if (writer === undefined) continue
        const list = byWriter.get(writer)
        if (list === undefined) byWriter.set(writer, [cut])
        else list.push(cut)
      }
      return Effect.forEach(byWriter, ([writer, list]) => writer.recordCuts(list), { discard: true })
    }
    const committer = yield* Effect.forkScoped(
      Effect.repeat(flushCommits, Schedule.spaced(config.commitInterval ?? "100 millis"))
    )
    const reporter = yield* Effect.forkScoped(
      Effect.repeat(
        Effect.flatMap(snapshot, (p) => emit({ _tag: "Progress", progress: p })),
        Schedule.spaced(config.progressInterval ?? "1 second")
      )
    )

    const delivered = (done: DeliveredUnit) =>
      Effect.sync(() => {
        if (given.has(done.partition)) return
        const position = tracker.delivered(done.partition, done.fromSeq, done.toSeq, done.lastPosition)
        if (position !== undefined) toCommit.set(done.partition, position)
      })

    const writeDeadLetters = (letters: ReadonlyArray<DeadLetter>) =>
      letters.length === 0 ? Effect.void : Effect.zipRight(
        config.deadLetters.write(letters),
        Effect.zipRight(
          Effect.sync(() => update((p) => ({ deadLettered: p.deadLettered + letters.length }))),
          Effect.forEach(letters, (letter) => emit({ _tag: "DeadLettered", letter }), { discard: true })
        )
      )

    // Not `ensuring`: an interrupted batch ends the run anyway, and an uninterruptible region
    // per batch costs more than the counter is worth.
    const landed = Effect.sync(() => {
      progress.inFlight--
    })

    // A batch lives long enough to reach the old generation, and a dead old object keeps what
    // it points to alive through every young collection until the next full one: a delivered
    // batch lets go of its records at once, or they would all be copied and promoted
    // (measured: 4% of the pipeline's CPU time).
    const letGo = (b: Batch) =>
      Effect.sync(() => {
        ;(b.records as Array<BatchRecord>).length = 0
      })

    const deliverBatch = makeDeliver({
      exchanges: client.exchanges,
      destination,
      sourceName: source.name,
      poll: config.poll
    })

    // Asked before each batch goes out (see `Assignment.owned`).
    const ownership = new Map<string, () => boolean>()

    // Suspended: a unit's effect is made before it waits for a place among the deliveries.
    const handleBatch = (b: Batch) =>
      Effect.suspend(() => {
        if (ownership.get(b.partition)?.() === false) return Effect.void // revoked: its next owner sends it
        const first = b.records[0]!.position.offset
        const last = b.records[b.records.length - 1]!.position.offset
        const { partition } = b
        progress.inFlight++
        const sending = Effect.zipRight(
          emit({ _tag: "BatchSent", partition, first, last, records: b.records.length, idempotencyKey: null }),
          Effect.tapBoth(deliverBatch(b), { onFailure: () => landed, onSuccess: () => landed })
        )
        return Effect.flatMap(sending, (outcome) => {
          const done = deliveredBatch(b, outcome)
          progress.sent += outcome.sent
          progress.accepted += outcome.accepted
          progress.rejected += outcome.rejected.length
          return writeDeadLetters(done.letters).pipe(
            Effect.zipRight(emit({
              _tag: "BatchDone",
              partition,
              first,
              last,
              ingestionId: outcome.ingestionIds.join(","),
              accepted: outcome.accepted,
              rejected: outcome.rejected.length
            })),
            Effect.zipRight(delivered(done)),
            Effect.zipRight(letGo(b))
          )
        })
      })

    const handleUnit = (unit: Unit): Effect.Effect<void, PipelineError> =>
      unit._tag === "Batch"
        ? handleBatch(unit.batch)
        : Effect.suspend(() => {
          const done = deliveredLetter(unit)
          return Effect.zipRight(writeDeadLetters(done.letters), delivered(done))
        })

    // Numbering, the read clock, validation and the counters in one pass over each chunk.
    // Partition events pass through, in their place among the elements (and through the
    // typed stages, which are the same combinators a hand-made pipeline uses). Typed records
    // are written for `schema` by their encode stage, which `check` then trusts.
    const check = checkElement(schema)
    const elements: Stream.Stream<Typed.Event<unknown>, E | E2 | PipelineError, R | R2> = config.records === undefined
      ? source.events
      : config.records.through(source.events, schema)
    const checked: Stream.Stream<Checked | PartitionEvent, E | E2 | PipelineError, R | R2> = Stream.mapChunks(
      elements,
      (chunk) => {
        const now = Date.now()
        return Chunk.map(chunk, (element) => {
          if (isPartitionEvent(element)) return element
          const result = check(element, tracker.read(elementPosition(element).partition, now))
          progress.read++
          if (result._tag === "Valid") progress.valid++
          else if (result._tag === "Skipped") progress.dropped++
          return result
        })
      }
    )

    const max = config.batch?.max ?? defaultBatch.max
    const linger = config.batch?.linger ?? defaultBatch.linger
    const batcher = makeBatcher({
      max,
      maxBytes: config.batch?.maxBytes ?? defaultBatch.maxBytes,
      linger,
      recordedCuts: []
    })

    const assigned = (event: Extract<PartitionEvent, { _tag: "Assigned" }>) =>
      Effect.zipRight(Effect.sync(() => {
        for (const assignment of event.assignments) {
          given.delete(assignment.partition)
          writers.set(assignment.partition, assignment.checkpoint)
          if (assignment.owned !== undefined) ownership.set(assignment.partition, assignment.owned)
          batcher.assign(assignment.cuts)
          if (assignment.committed !== undefined) {
            update((p) => ({ committed: { ...p.committed, [assignment.partition]: assignment.committed! } }))
          }
        }
      }), emit({ _tag: "Assigned", partitions: event.assignments.map((a) => a.partition) }))

    // Nothing more of the partition is sent; what is in flight lands (or is interrupted after
    // the drain timeout), what landed is committed, and the partition is forgotten.
    const revoked = (partition: string, drain: (partition: string) => Effect.Effect<void>) =>
      Effect.suspend(() => {
        batcher.revoke(partition)
        return drain(partition)
      }).pipe(
        Effect.zipRight(flushCommit(partition)),
        Effect.ensuring(Effect.sync(() => {
          toCommit.delete(partition)
          tracker.forget(partition)
          writers.delete(partition)
          ownership.delete(partition)
          given.add(partition)
        }))
      )

    const delivering = batchAndDeliver(checked, {
      batcher,
      max,
      linger,
      recordCuts,
      concurrency,
      handleUnit,
      drainTimeout: Duration.decode(config.drainTimeout ?? "30 seconds"),
      onPartitionEvent: (event, drain) =>
        event._tag === "Assigned"
          ? assigned(event)
          : Effect.forEach(event.partitions, (partition) => revoked(partition, drain), { discard: true }).pipe(
            Effect.zipRight(emit({ _tag: "Revoked", partitions: event.partitions })),
            Effect.zipRight(event.release)
          )
    })

    yield* delivering.pipe(
      // The committer runs until it is stopped: it ends of itself only when a commit failed,
      // and then the run must stop too, not go on sending what it can no longer commit.
      (delivering) => Effect.raceFirst(delivering, Fiber.join(committer)),
      // What was delivered before a failure or an interruption (Ctrl-C) is still committed,
      // so a restart replays less.
      Effect.onExit((exit) =>
        Exit.isSuccess(exit) ? Effect.void : Effect.ignore(Effect.zipRight(Fiber.interrupt(committer), flushCommits))
      )
    )
    yield* Fiber.interrupt(committer)
    yield* flushCommits
    yield* Fiber.interrupt(reporter)
    const final = yield* snapshot
    yield* emit({ _tag: "Progress", progress: final })
    return final
  }).pipe(Effect.scoped)

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

/**
 * One loop pulls chunks of checked elements, batches them, records the boundaries and starts
 * the deliveries, at most `concurrency` at once; a ticker closes batches that linger while the
 * source is silent. Partition events are handled in their place: what was batched before one
 * goes out first. Ends when every unit is delivered, or with the first failure.
 *
 * A pull loop, not `Stream.runForEach` over a stream built with `batch`: Effect's stream
 * runners kept every record alive past a young-generation collection (the collector then
 * copied and promoted all of them), a pull loop does not.
 */
const batchAndDeliver = <E, R>(
  checked: Stream.Stream<Checked | PartitionEvent, E, R>,
  options: {
    readonly batcher: Batcher
    readonly max: number
    readonly linger: Duration.DurationInput
    readonly recordCuts: (cuts: ReadonlyArray<BatchCut>) => Effect.Effect<void, CheckpointError>
    readonly concurrency: number
    readonly handleUnit: (unit: Unit) => Effect.Effect<void, PipelineError>
    readonly drainTimeout: Duration.Duration
    /** `drain` waits for a partition's deliveries (interrupting them after the drain timeout). */
    readonly onPartitionEvent: (
      event: PartitionEvent,
      drain: (partition: string) => Effect.Effect<void>
    ) => Effect.Effect<void, PipelineError>
  }
): Effect.Effect<void, E | PipelineError, R> =>
  Effect.scoped(Effect.gen(function*() {
    const { batcher, max } = options
    const deliveries = yield* concurrently<PipelineError>(options.concurrency)
    // The loop and the ticker both send what the batcher closed, one at a time.
    const lock = yield* Effect.makeSemaphore(1)
    const flush = lock.withPermits(1)(Effect.suspend(() => {
      const { cuts, units } = batcher.take()
      return units.length === 0 ? Effect.void : Effect.zipRight(
        options.recordCuts(cuts),
        Effect.forEach(units, (unit) => deliveries.start(options.handleUnit(unit), unitPartition(unit)), { discard: true })
      )
    }))
    const drain = (partition: string) => deliveries.drain(partition, options.drainTimeout)
    const ticker = Effect.repeat(
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        batcher.closeLingering(now)
        return flush
      }),
      Schedule.spaced(lingerCheckMillis(options.linger))
    )
    const pull = yield* Stream.toPull(checked)
    const feed = Effect.gen(function*() {
      for (;;) {
        const chunk = yield* Effect.matchEffect(pull, {
          onFailure: Option.match({ onNone: () => Effect.succeedNone, onSome: Effect.fail }),
          onSuccess: Effect.succeedSome
        })
        if (Option.isNone(chunk)) break
        const now = yield* Clock.currentTimeMillis
        const elements = Chunk.toReadonlyArray(chunk.value) // indexed: a Chunk's iterator allocates per element
        for (let i = 0; i < elements.length; i++) {
          const element = elements[i]!
          if (element._tag === "Assigned" || element._tag === "Revoked") {
            yield* flush
            // Under the lock: the ticker must not send a revoked partition's batches meanwhile.
            yield* lock.withPermits(1)(options.onPartitionEvent(element, drain))
          } else {
            batcher.add(element, now)
          }
        }
        if (shouldFlush(batcher, elements.length, max)) yield* flush
      }
      batcher.closeAll()
      yield* flush
      yield* deliveries.finished
    })
    // The ticker ends only when it fails (a boundary could not be recorded).
    yield* Effect.raceFirst(feed, Effect.raceFirst(deliveries.failed, ticker))
    // A failure is recorded before its permit comes back: when all came back, it is seen here.
    yield* Effect.whenEffect(deliveries.failed, deliveries.hasFailed)
  }))

/**
 * Runs effects at most `concurrency` at once, finishing in any order, and knows which
 * partition each belongs to (to drain a revoked one). The caller races its work against
 * `failed`: the first failure stops it, and the scope's end interrupts the rest. A fiber per
 * effect behind a semaphore: `Stream.mapEffect` with concurrency cost ten times as much.
 */
const concurrently = <E>(concurrency: number) =>
  Effect.gen(function*() {
    const running = yield* FiberSet.make<void, E>()
    const permits = yield* Effect.makeSemaphore(concurrency)
    // Recorded before the effect's permit is given back, so no failure can go unseen.
    const failed = yield* Deferred.make<never, E>()
    const release = permits.release(1)
    const byPartition = new Map<string, Set<Fiber.RuntimeFiber<void, E>>>()
    return {
      /** Waits for a free place, then starts `effect`. */
      start: <R>(effect: Effect.Effect<void, E, R>, partition: string): Effect.Effect<void, never, R> =>
        Effect.zipRight(
          permits.take(1),
          Effect.flatMap(
            FiberSet.run(
              running,
              Effect.onExit(effect, (exit) =>
                Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
                  ? Effect.zipRight(Deferred.failCause(failed, exit.cause), release)
                  : release)
            ),
            (fiber) =>
              Effect.sync(() => {
                let fibers = byPartition.get(partition)
                if (fibers === undefined) byPartition.set(partition, fibers = new Set())
                fibers.add(fiber)
                fiber.addObserver(() => fibers.delete(fiber))
              })
          )
        ),
      /** Waits for the partition's effects; those still running after `timeout` are interrupted. */
      drain: (partition: string, timeout: Duration.Duration): Effect.Effect<void> =>
        Effect.suspend(() => {
          const fibers = [...(byPartition.get(partition) ?? [])]
          byPartition.delete(partition)
          if (fibers.length === 0) return Effect.void
          return Fiber.awaitAll(fibers).pipe(
            Effect.timeout(timeout),
            Effect.catchAll(() => Fiber.interruptAll(fibers))
          )
        }),
      /** Every permit back: every effect finished. */
      finished: permits.take(concurrency),
      /** Fails with the first failure. */
      failed: Deferred.await(failed),
      hasFailed: Deferred.isDone(failed)
    }
  })

/**
 * A `Source` with its checkpoint store as a `PartitionedSource`; a `PartitionedSource` as it is.
 */
const asPartitioned = <E, R>(
  source: Source<E, R, any> | PartitionedSource<E, R, any>,
  checkpoint: CheckpointStore
): PartitionedSource<E | CheckpointError, R> => ("_tag" in source ? source : withCheckpoint(source, checkpoint))

/** Re-exported for callers that match on it. @since 0.1.0 */
export { DeliveryError }
/** @since 0.1.0 */
export const lingerDefault = Duration.decode(defaultBatch.linger)
