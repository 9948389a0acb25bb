/**
 * `commit`: advance each partition's checkpoint to the highest contiguous position whose
 * elements are all delivered (stored, rejected with a dead letter, or dead-lettered).
 *
 * @since 0.1.0
 */
import { Effect, Stream } from "effect"
import { dual } from "effect/Function"
import type { CheckpointStore } from "./Checkpoint.js"
import { CommitTracker } from "./internal/commitTracker.js"
import type { CheckpointError, DeliveredUnit, Position } from "./vocabulary.js"

/**
 * `commit` as a stream stage: takes delivered units in any order, commits each partition's
 * highest contiguous position to `checkpoint` as soon as it advances, and emits the committed
 * positions. One checkpoint write per advance (`run` writes at most every `commitInterval`).
 *
 * @since 0.1.0
 * @category combinators
 */
export const commit: {
  (checkpoint: Pick<CheckpointStore, "commit">): <E, R>(
    self: Stream.Stream<DeliveredUnit, E, R>
  ) => Stream.Stream<Position, E | CheckpointError, R>
  <E, R>(self: Stream.Stream<DeliveredUnit, E, R>, checkpoint: Pick<CheckpointStore, "commit">): Stream.Stream<Position, E | CheckpointError, R>
} = dual(2, <E, R>(self: Stream.Stream<DeliveredUnit, E, R>, checkpoint: Pick<CheckpointStore, "commit">) =>
  Stream.suspend(() => {
    const tracker = new CommitTracker()
    return Stream.mapConcatEffect(self, (unit) => {
      const position = tracker.delivered(unit.partition, unit.fromSeq, unit.toSeq, unit.lastPosition)
      return position === undefined ? Effect.succeed([]) : Effect.as(checkpoint.commit(position), [position])
    })
  }))
