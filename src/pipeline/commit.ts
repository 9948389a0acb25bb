/**
 * `commit`: advance each partition's checkpoint to the highest contiguous position whose
 * elements are all delivered (stored, rejected with a dead letter, or dead-lettered).
 *
 * @since 0.1.0
 */
import type { Position } from "./Source.js"

interface PartitionState {
  /** The lowest element number not yet delivered. */
  next: number
  /** Delivered ranges above `next`, by their first element number. */
  readonly done: Map<number, { readonly toSeq: number; readonly lastPosition: Position }>
  /** When each element still pending was read, for the oldest un-acknowledged age. */
  readonly readAt: Map<number, number>
}

/**
 * Tracks which element numbers of each partition are delivered. Not an Effect service:
 * it is owned by one run and only touched from its fibers.
 *
 * @since 0.1.0
 */
export class CommitTracker {
  private readonly partitions = new Map<string, PartitionState>()

  private state(partition: string): PartitionState {
    let state = this.partitions.get(partition)
    if (state === undefined) {
      state = { next: 0, done: new Map(), readAt: new Map() }
      this.partitions.set(partition, state)
    }
    return state
  }

  /** Notes that element `seq` of `partition` was read at `now`. */
  read(partition: string, seq: number, now: number): void {
    this.state(partition).readAt.set(seq, now)
  }

  /**
   * Marks elements `fromSeq..toSeq` delivered. Returns the position to commit when the
   * contiguous prefix grew, or undefined.
   */
  delivered(partition: string, fromSeq: number, toSeq: number, lastPosition: Position): Position | undefined {
    const state = this.state(partition)
    state.done.set(fromSeq, { toSeq, lastPosition })
    let committable: Position | undefined
    for (let range = state.done.get(state.next); range !== undefined; range = state.done.get(state.next)) {
      state.done.delete(state.next)
      for (let seq = state.next; seq <= range.toSeq; seq++) state.readAt.delete(seq)
      state.next = range.toSeq + 1
      committable = range.lastPosition
    }
    return committable
  }

  /** Milliseconds since the oldest pending element was read (0 when none is pending). */
  oldestPendingMillis(now: number): number {
    let oldest = now
    for (const state of this.partitions.values()) {
      const readAt = state.readAt.get(state.next)
      if (readAt !== undefined && readAt < oldest) oldest = readAt
    }
    return now - oldest
  }
}
