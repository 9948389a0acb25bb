/**
 * Writes of cuts made in groups, one write at a time: the cuts recorded while a write runs go
 * together in the next, and each `record` completes once a write holding its cuts is done
 * (the scheduler's splits: one write each cost a whole checkpoint file per batch in parts).
 *
 * One at a time because a write replaces what the store holds for a partition (a Kafka
 * commit's metadata, a checkpoint file): two at once could land in either order, and the
 * older would hide cuts whose batches are already on their way.
 *
 * @since 0.3.0
 * @internal
 */
import { Deferred, Effect, FiberId, FiberSet, type Scope } from "effect"
import type { BatchCut } from "../vocabulary.js"

/**
 * @since 0.3.0
 * @category models
 */
export interface GroupedWrites<E> {
  /** Records the cuts (the writer starts if none is under way) and waits for their write. */
  readonly record: (cuts: ReadonlyArray<BatchCut>) => Effect.Effect<void, E>
}

/**
 * Grouped writes through `writeAll`, on fibers of the scope.
 *
 * @since 0.3.0
 * @category constructors
 */
export const groupedWrites = <E>(
  writeAll: (cuts: ReadonlyArray<BatchCut>) => Effect.Effect<void, E>
): Effect.Effect<GroupedWrites<E>, never, Scope.Scope> =>
  Effect.map(FiberSet.make<void, never>(), (writers) => {
    let waiting: Array<BatchCut> = []
    let done: Deferred.Deferred<void, E> | undefined
    let writing = false
    const drain: Effect.Effect<void> = Effect.suspend(() => {
      if (waiting.length === 0) {
        writing = false
        return Effect.void
      }
      const cuts = waiting
      const written = done!
      waiting = []
      done = undefined
      return Effect.flatMap(Effect.exit(writeAll(cuts)), (exit) => {
        Deferred.unsafeDone(written, exit)
        return drain
      })
    })
    // Nothing is noted until the effect runs; the writer is started where the cuts are noted,
    // so an interruption can never leave cuts noted with no writer to take them.
    const record = (cuts: ReadonlyArray<BatchCut>): Effect.Effect<void, E> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          if (cuts.length === 0) return Effect.void
          for (const cut of cuts) waiting.push(cut)
          const mine = restore(Deferred.await(done ??= Deferred.unsafeMake<void, E>(FiberId.none)))
          if (writing) return mine
          writing = true
          return Effect.zipRight(FiberSet.run(writers, drain), mine)
        })
      )
    return { record }
  })
