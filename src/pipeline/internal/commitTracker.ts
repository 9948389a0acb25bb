/**
 * Which element numbers of each partition are delivered, and the highest contiguous position
 * that may be committed. Not an Effect service: it is owned by one run (or one `commit` stage)
 * and only touched from its fibers.
 *
 * @since 0.2.0
 * @internal
 */
import { isCommitPoint, type Position } from "../vocabulary.js"

interface PartitionState {
  /** The lowest element number not yet delivered. */
  next: number
  /** Delivered ranges above `next`, by their first element number. */
  readonly done: Map<number, { readonly toSeq: number; readonly lastPosition: Position }>
  /** How many elements were read. */
  read: number
  /**
   * When elements were read, for the oldest un-acknowledged age: from `seq` on, up to the
   * next mark, at `at`. One mark per clock reading, not per element.
   */
  readonly marks: Array<{ readonly seq: number; readonly at: number }>
}

/** Keeps the marks from the one that covers the first pending element on. */
const dropDeliveredMarks = (state: PartitionState) => {
  while (state.marks.length > 1 && state.marks[1]!.seq <= state.next) state.marks.shift()
}

/**
 * @since 0.2.0
 * @category models
 */
export class CommitTracker {
  private readonly partitions = new Map<string, PartitionState>()

  private state(partition: string): PartitionState {
    let state = this.partitions.get(partition)
    if (state === undefined) {
      state = { next: 0, done: new Map(), read: 0, marks: [] }
      this.partitions.set(partition, state)
    }
    return state
  }

  /**
   * Notes that the next element of `partition` was read at `now`, and answers its number:
   * elements are numbered densely from 0 per partition, in reading order.
   */
  read(partition: string, now: number): number {
    const state = this.state(partition)
    const seq = state.read++
    if (state.marks[state.marks.length - 1]?.at !== now) {
      state.marks.push({ seq, at: now })
      dropDeliveredMarks(state)
    }
    return seq
  }

  /**
   * Marks elements `fromSeq..toSeq` delivered. Returns the position to commit when the
   * contiguous prefix grew to a commit point (see `isCommitPoint`), or undefined.
   */
  delivered(partition: string, fromSeq: number, toSeq: number, lastPosition: Position): Position | undefined {
    const state = this.state(partition)
    state.done.set(fromSeq, { toSeq, lastPosition })
    let committable: Position | undefined
    for (let range = state.done.get(state.next); range !== undefined; range = state.done.get(state.next)) {
      state.done.delete(state.next)
      state.next = range.toSeq + 1
      // A parent's position is committed with its last child, never before.
      if (isCommitPoint(range.lastPosition)) committable = range.lastPosition
    }
    dropDeliveredMarks(state)
    return committable
  }

  /** Forgets a revoked partition: if it is assigned again, its elements are numbered from 0. */
  forget(partition: string): void {
    this.partitions.delete(partition)
  }

  /** Milliseconds since the oldest pending element was read (0 when none is pending). */
  oldestPendingMillis(now: number): number {
    let oldest = now
    for (const state of this.partitions.values()) {
      const readAt = state.marks[0]?.at
      if (state.next < state.read && readAt !== undefined && readAt < oldest) oldest = readAt
    }
    return now - oldest
  }
}
