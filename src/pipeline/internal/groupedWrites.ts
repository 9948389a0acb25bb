/**
 * Writes made in groups, one write at a time: what is asked while a write runs goes together
 * in the next, and each `record` completes once a write that started after it was asked is
 * done. Used for the scheduler's splits (one write each cost a whole checkpoint file per batch
 * in parts) and for each Kafka assignment's commits and cuts.
 *
 * One at a time because a write replaces what the store holds for a partition (a Kafka
 * commit's metadata, a checkpoint file): two at once could land in either order, and the
 * older would hide cuts whose batches are already on their way. (Kafka's client retries a
 * failed commit with the payload it was given: of two commits under way when the group's
 * coordinator moved, the older could land last.)
 *
 * @since 0.3.0
 * @internal
 */
import { Deferred, Effect, FiberId, FiberSet, type Scope } from "effect"

/**
 * @since 0.3.0
 * @category models
 */
export interface GroupedWrites<A, E> {
  /** Notes the items (the writer starts if none is under way) and waits for their write. */
  readonly record: (items: ReadonlyArray<A>) => Effect.Effect<void, E>
}

/**
 * Grouped writes through `writeAll`, on fibers of `writers` (whose scope ends them).
 *
 * @since 0.3.0
 * @category constructors
 */
export const groupedWritesIn = <A, E>(
  writers: FiberSet.FiberSet<void, never>,
  writeAll: (items: ReadonlyArray<A>) => Effect.Effect<void, E>
): GroupedWrites<A, E> => {
  let waiting: Array<A> = []
  let done: Deferred.Deferred<void, E> | undefined
  let writing = false
  const drain: Effect.Effect<void> = Effect.suspend(() => {
    if (waiting.length === 0) {
      writing = false
      return Effect.void
    }
    const items = waiting
    const written = done!
    waiting = []
    done = undefined
    return Effect.flatMap(Effect.exit(writeAll(items)), (exit) => {
      Deferred.unsafeDone(written, exit)
      return drain
    })
  })
  // Nothing is noted until the effect runs; the writer is started where the items are noted,
  // so an interruption can never leave items noted with no writer to take them.
  const record = (items: ReadonlyArray<A>): Effect.Effect<void, E> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        if (items.length === 0) return Effect.void
        for (const item of items) waiting.push(item)
        const mine = restore(Deferred.await(done ??= Deferred.unsafeMake<void, E>(FiberId.none)))
        if (writing) return mine
        writing = true
        return Effect.zipRight(FiberSet.run(writers, drain), mine)
      })
    )
  return { record }
}

/**
 * Grouped writes through `writeAll`, on fibers of the scope.
 *
 * @since 0.3.0
 * @category constructors
 */
export const groupedWrites = <A, E>(
  writeAll: (items: ReadonlyArray<A>) => Effect.Effect<void, E>
): Effect.Effect<GroupedWrites<A, E>, never, Scope.Scope> =>
  Effect.map(FiberSet.make<void, never>(), (writers) => groupedWritesIn(writers, writeAll))
