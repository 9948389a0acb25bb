/**
 * The pull loop: pulls chunks of checked elements, batches them, records the boundaries and
 * hands the closed units on (`dispatch` waits while too much is pending: the loop's
 * back-pressure); a ticker closes batches that linger while the source is silent. Partition
 * events are handled in their place: what was batched before one goes out first.
 *
 * A pull loop, not `Stream.runForEach` over a stream built with `batch`: Effect's stream
 * runners kept every record alive past a young-generation collection (the collector then
 * copied and promoted all of them), a pull loop does not.
 *
 * The boundaries are written behind the loop: one writer at a time records the cuts of the
 * units closed so far, then dispatches those units in order, and goes on while more wait; the
 * loop meanwhile pulls and batches, and waits for the writer only when more closed units wait
 * than `dispatch` has room for (at most `unitsPerWrite`) or while the writer waits for room
 * (the back-pressure, as before), and before a partition event and at the end. A unit is
 * still dispatched only after its cut is recorded. Why: with the loop waiting for each write,
 * `bench:kafka` at 20k messages/s spent 7.3 of 10 s waiting for the cut writes (commits to
 * Kafka, 12-27 ms at the median on the 2-core machine), and a message waited 250-290 ms
 * from its read to its batch's admission (p50); behind the loop, 170-190 ms, and
 * message-to-commit p50 went from 446-487 to 346-357 ms.
 *
 * @since 0.2.0
 * @internal
 */
import { Chunk, Clock, Deferred, Duration, Effect, Exit, Fiber, FiberId, Option, Schedule, Stream } from "effect"
import { type Batcher, lingerCheckMillis, shouldFlush, unitsPerWrite } from "../batch.js"
import type { PartitionEvent } from "../Source.js"
import type { BatchCut, CheckpointError, Checked, Frontier, Unit } from "../vocabulary.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface PullLoopOptions<E> {
  readonly batcher: Batcher
  readonly max: number
  readonly linger: Duration.DurationInput
  /** Records boundaries and frontiers (`Blocks`) before the units they concern go out. */
  readonly recordCuts: (cuts: ReadonlyArray<BatchCut>, frontiers: ReadonlyArray<Frontier>) => Effect.Effect<void, CheckpointError>
  /** Takes a closed unit (a batch waits for room among the pending ones). */
  readonly dispatch: (unit: Unit) => Effect.Effect<void, E>
  readonly onPartitionEvent: (event: PartitionEvent) => Effect.Effect<void, E>
  /** Whether the sends would idle without more units now (`shouldFlush`). */
  readonly hungry?: (() => boolean) | undefined
  /**
   * How many more units `dispatch` would take now without waiting: as many may wait for the
   * write under way before the loop waits too (default `unitsPerWrite`).
   */
  readonly room?: (() => number) | undefined
}

/**
 * Runs the loop to the end of `checked`; every unit is dispatched when it ends.
 *
 * @since 0.2.0
 * @category constructors
 */
export const pullLoop = <E, E2, R>(
  checked: Stream.Stream<Checked | PartitionEvent, E2, R>,
  options: PullLoopOptions<E>
): Effect.Effect<void, E | E2 | CheckpointError, R> =>
  Effect.scoped(Effect.gen(function*() {
    const { batcher, max } = options
    const scope = yield* Effect.scope
    // The first failure of the writer behind the loop (the loop may be waiting for its source).
    const failed = yield* Deferred.make<never, E | CheckpointError>()
    // One take at a time: the closed units' cuts recorded, then the units dispatched in order.
    const lock = yield* Effect.makeSemaphore(1)
    // Whether units are being dispatched: when the loop runs meanwhile, a dispatch waits for room.
    let dispatching = false
    const dispatchAll = (units: ReadonlyArray<Unit>) =>
      Effect.suspend(() => {
        dispatching = true
        return Effect.ensuring(
          Effect.forEach(units, options.dispatch, { discard: true }),
          Effect.sync(() => {
            dispatching = false
          })
        )
      })
    const flush = lock.withPermits(1)(Effect.suspend(() => {
      const { cuts, frontiers, units } = batcher.take()
      if (units.length === 0) return Effect.void
      // Batches closed at their blocks' ends under the recorded frontier go without a write.
      return cuts.length === 0 && frontiers.length === 0
        ? dispatchAll(units)
        : Effect.zipRight(options.recordCuts(cuts, frontiers), dispatchAll(units))
    }))
    // Opened when the writer's take under way ends (made only when the loop waits for that).
    let taken: Deferred.Deferred<void> | undefined
    const takeEnded = Effect.sync(() => {
      if (taken === undefined) return
      Deferred.unsafeDone(taken, Exit.void)
      taken = undefined
    })
    // The writer behind the loop: takes until nothing closed waits.
    const drain: Effect.Effect<void, E | CheckpointError> = Effect.zipRight(
      Effect.zipRight(flush, takeEnded),
      Effect.suspend(() => (batcher.waiting() > 0 ? drain : Effect.void))
    )
    let writer: Fiber.RuntimeFiber<void, E | CheckpointError> | undefined
    const writing = () => writer !== undefined && writer.unsafePoll() === null
    /** Starts the writer, unless it is running (it takes what waits when its write ends). */
    const writeBehind = Effect.suspend(() =>
      writing() || batcher.waiting() === 0 ? Effect.void : Effect.asVoid(Effect.tap(
        // Its end also ends the wait for a take (the loop may wait between its last take and its end).
        Effect.forkIn(Effect.ensuring(Effect.tapErrorCause(drain, (cause) => Deferred.failCause(failed, cause)), takeEnded), scope),
        (fiber) => {
          writer = fiber
        }
      ))
    )
    /** Waits for the writer to end (and fails as it failed). */
    const written = Effect.suspend(() => (writer === undefined ? Effect.void : Fiber.join(writer)))
    /**
     * Waits for the writer's take under way to end, not for the writer to end: waiting for the
     * whole drain held the loop through the takes after it too, long enough (500 ms at the end
     * of a 5M-record run) for the linger timer to cut the batch it was filling short.
     */
    const takeWritten = Effect.suspend(() =>
      writing() ? Deferred.await(taken ??= Deferred.unsafeMake<void>(FiberId.none)) : written
    )
    /** Everything closed so far recorded and dispatched (before a partition event, at the end). */
    const caughtUp = Effect.zipRight(written, flush)
    /**
     * The writer waits for room, or more units wait for it than `dispatch` has room for: the
     * loop waits too (reading ahead only while a write is under way keeps the bound on what is
     * pending).
     */
    const mustWait = (): boolean => {
      const waiting = batcher.waiting()
      return dispatching || (waiting > 0 && waiting >= Math.min(unitsPerWrite, options.room?.() ?? unitsPerWrite))
    }
    const ticker = Effect.repeat(
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        batcher.closeLingering(now)
        return writeBehind
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
            yield* caughtUp
            // Under the lock: the ticker's writer must not send a revoked partition's batches meanwhile.
            yield* lock.withPermits(1)(options.onPartitionEvent(element))
          } else {
            batcher.add(element, now)
          }
        }
        if (shouldFlush(batcher, elements.length, max, options.hungry)) {
          if (mustWait()) yield* takeWritten
          yield* writeBehind
        }
      }
      batcher.closeAll()
      yield* caughtUp
    })
    // The feed is a fiber of its own so that a stop can reach it for sure (`stopFiber`).
    const feeding = yield* Effect.fork(feed)
    // The ticker ends only when it fails (a boundary could not be recorded).
    yield* Effect.ensuring(
      Effect.raceFirst(Effect.raceFirst(Fiber.join(feeding), ticker), Deferred.await(failed)),
      stopFiber(feeding)
    )
  }))

/**
 * Interrupts `fiber` until it has ended, asking again every `stopRetryMillis`.
 *
 * Why not once: Effect 3.22 can lose an interruption. One that reaches a fiber while it runs a
 * scope's finalizer (here: the source stream's, closing the file at its end) is undone when the
 * finalizer restores the fiber refs it had before. The feed then carried on to its end and
 * waited for room that the stopped run would never free: an aborted plain `ingest` hung about
 * one time in fifteen under load (seen with a fiber dump: the feed interruptible, suspended,
 * its interruption gone after `addFinalizer`'s restore). Asked again after the finalizer, it
 * stops.
 */
const stopFiber = <A, E>(fiber: Fiber.RuntimeFiber<A, E>): Effect.Effect<void> =>
  Effect.flatMap(Effect.fiberId, (by) =>
    Effect.suspend(function ask(): Effect.Effect<void> {
      if (fiber.unsafePoll() !== null) return Effect.void
      fiber.unsafeInterruptAsFork(by)
      return Effect.flatMap(endedOrAfter(fiber, stopRetryMillis), ask)
    }))

const stopRetryMillis = 100

/** Resumes when `fiber` ends or after `millis`, whichever is first (no fiber of its own). */
const endedOrAfter = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, millis: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const observer = () => {
      clearTimeout(timer)
      resume(Effect.void)
    }
    const timer = setTimeout(() => {
      fiber.removeObserver(observer)
      resume(Effect.void)
    }, millis)
    fiber.addObserver(observer)
    return Effect.sync(() => {
      clearTimeout(timer)
      fiber.removeObserver(observer)
    })
  })
