/**
 * Writes of cuts made in groups, one write at a time: the cuts noted while a write runs go
 * together in the next. A caller notes its cuts and gets the effect that completes once a
 * write holding them is done, so it can go on with other work meanwhile (the pull loop) or
 * wait at once (`record`, the scheduler's splits).
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
  /**
   * Notes the cuts (the writer starts if none is under way) and answers the effect that
   * completes once a write holding them is done. Noting cannot be interrupted halfway.
   */
  readonly note: (cuts: ReadonlyArray<BatchCut>) => Effect.Effect<Effect.Effect<void, E>>
  /** Notes the cuts and waits for their write. */
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
    const note = (cuts: ReadonlyArray<BatchCut>): Effect.Effect<Effect.Effect<void, E>> =>
      Effect.uninterruptible(Effect.suspend(() => {
        if (cuts.length === 0) return Effect.succeed(Effect.void)
        for (const cut of cuts) waiting.push(cut)
        const mine = Deferred.await(done ??= Deferred.unsafeMake<void, E>(FiberId.none))
        if (writing) return Effect.succeed(mine)
        writing = true
        return Effect.as(FiberSet.run(writers, drain), mine)
      }))
    return { note, record: (cuts) => Effect.flatten(note(cuts)) }
  })
