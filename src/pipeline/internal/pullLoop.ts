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
 * @since 0.2.0
 * @internal
 */
import { Chunk, Clock, Duration, Effect, Option, Schedule, Stream } from "effect"
import { type Batcher, lingerCheckMillis, shouldFlush } from "../batch.js"
import type { PartitionEvent } from "../Source.js"
import type { BatchCut, CheckpointError, Checked, Unit } from "../vocabulary.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface PullLoopOptions<E> {
  readonly batcher: Batcher
  readonly max: number
  readonly linger: Duration.DurationInput
  readonly recordCuts: (cuts: ReadonlyArray<BatchCut>) => Effect.Effect<void, CheckpointError>
  /** Takes a closed unit (a batch waits for room among the pending ones). */
  readonly dispatch: (unit: Unit) => Effect.Effect<void, E>
  readonly onPartitionEvent: (event: PartitionEvent) => Effect.Effect<void, E>
  /** Whether the sends would idle without more units now (`shouldFlush`). */
  readonly hungry?: (() => boolean) | undefined
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
    // The loop and the ticker both send what the batcher closed, one at a time.
    const lock = yield* Effect.makeSemaphore(1)
    const flush = lock.withPermits(1)(Effect.suspend(() => {
      const { cuts, units } = batcher.take()
      return units.length === 0 ? Effect.void : Effect.zipRight(
        options.recordCuts(cuts),
        Effect.forEach(units, options.dispatch, { discard: true })
      )
    }))
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
            yield* lock.withPermits(1)(options.onPartitionEvent(element))
          } else {
            batcher.add(element, now)
          }
        }
        if (shouldFlush(batcher, elements.length, max, options.hungry)) yield* flush
      }
      batcher.closeAll()
      yield* flush
    })
    // The ticker ends only when it fails (a boundary could not be recorded).
    yield* Effect.raceFirst(feed, ticker)
  }))
