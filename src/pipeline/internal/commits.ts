/**
 * Ownership and commits: where each assigned partition's cuts and commits are written, which
 * partitions were given up, and what the committer writes: the highest contiguous delivered
 * position of each partition. The committer (`run`) writes as soon as a position waits and no
 * write is under way, then at most once every `commitInterval`: a fixed interval added half of
 * itself to every message's latency on average, and most of the wait of a quiet stream.
 *
 * A partition given up and not assigned again drops a commit or a cut that was still on its
 * way (the committer had taken it, or its last batch landed after the drain): the new owner
 * sends from the old commit under the same keys. A commit the committer had taken goes to the
 * writer of the assignment that delivered it, never to a later assignment's of the same
 * partition (the source's old writer decides whether it may still write).
 *
 * @since 0.2.0
 * @internal
 */
import { Deferred, Effect, Exit, FiberId } from "effect"
import type { PipelineEvent } from "../events.js"
import type { Assignment, CheckpointWriter } from "../Source.js"
import type { BatchCut, CheckpointError, DeliveredUnit, Frontier, Position } from "../vocabulary.js"
import type { CommitTracker } from "./commitTracker.js"
import { type Counters, noteCommitted } from "./progress.js"

/** A position waiting to be written, with the writer of the assignment that delivered it. */
interface WaitingCommit {
  readonly position: Position
  readonly writer: CheckpointWriter | undefined
}

/**
 * @since 0.2.0
 * @category models
 */
export class Commits {
  private readonly writers = new Map<string, CheckpointWriter>()
  private readonly given = new Set<string>()
  private readonly ownership = new Map<string, () => boolean>()
  private readonly runs = new Map<string, string>()
  /**
   * Positions waiting to be written, the latest of each partition, each with the writer of the
   * assignment that delivered it: a flush under way may reach a partition only after it was
   * revoked and assigned again (it writes one partition after another, and a write may retry for
   * seconds), and an old position written through the new assignment's writer moved the new
   * commit back, past cuts that another member had sent and forgotten since.
   */
  private readonly toCommit = new Map<string, WaitingCommit>()
  /** Opened when a position comes to wait while the committer waits for one. */
  private arrived: Deferred.Deferred<void> | undefined = undefined

  constructor(
    readonly sourceName: string,
    private readonly fallback: CheckpointWriter | undefined,
    /** The run identity of partitions that come without an assignment. */
    private readonly fallbackRun: string | undefined,
    readonly tracker: CommitTracker,
    private readonly counters: Counters,
    private readonly emit: (event: PipelineEvent) => Effect.Effect<void>
  ) {}

  private writerOf(partition: string): CheckpointWriter | undefined {
    const writer = this.writers.get(partition) ?? this.fallback
    if (writer === undefined && !this.given.has(partition)) {
      throw new Error(`source ${this.sourceName} sent partition ${partition} before assigning it`)
    }
    return writer
  }

  /** Partitions handed to the run. */
  assign(assignments: ReadonlyArray<Assignment>): void {
    for (const assignment of assignments) {
      this.given.delete(assignment.partition)
      this.writers.set(assignment.partition, assignment.checkpoint)
      if (assignment.owned !== undefined) this.ownership.set(assignment.partition, assignment.owned)
      if (assignment.run !== undefined) this.runs.set(assignment.partition, assignment.run)
      else this.runs.delete(assignment.partition)
      if (assignment.committed !== undefined) noteCommitted(this.counters, assignment.committed)
    }
  }

  /** The run identity of a partition's batches (part of their keys). */
  runOf(partition: string): string | undefined {
    return this.runs.get(partition) ?? (this.writers.has(partition) ? undefined : this.fallbackRun)
  }

  /** Whether the partition is still the run's (asked before a batch goes out). */
  owned(partition: string): boolean {
    return this.ownership.get(partition)?.() !== false
  }

  /** Boundaries (and frontiers) go to the writers of their partitions, one write per writer. */
  recordCuts(cuts: ReadonlyArray<BatchCut>, frontiers: ReadonlyArray<Frontier> = []): Effect.Effect<void, CheckpointError> {
    if (cuts.length === 0 && frontiers.length === 0) return Effect.void
    const byWriter = new Map<CheckpointWriter, { cuts: Array<BatchCut>; frontiers: Array<Frontier> }>()
    const of = (partition: string) => {
      const writer = this.writerOf(partition)
      if (writer === undefined) return undefined
      let lists = byWriter.get(writer)
      if (lists === undefined) byWriter.set(writer, lists = { cuts: [], frontiers: [] })
      return lists
    }
    for (const cut of cuts) of(cut.partition)?.cuts.push(cut)
    for (const frontier of frontiers) of(frontier.partition)?.frontiers.push(frontier)
    return Effect.forEach(byWriter, ([writer, lists]) =>
      lists.frontiers.length === 0 ? writer.recordCuts(lists.cuts) : writer.recordCuts(lists.cuts, lists.frontiers), { discard: true })
  }

  /** Whether a batch's cut with its split may be recorded (the writer has room for it). */
  roomForParts(cut: BatchCut): boolean {
    const writer = this.writerOf(cut.partition)
    return writer !== undefined && (writer.roomForParts?.(cut) ?? true)
  }

  /** A unit is delivered: its partition's commit may move. */
  delivered(done: DeliveredUnit): void {
    if (this.given.has(done.partition)) return
    const position = this.tracker.delivered(done.partition, done.fromSeq, done.toSeq, done.lastPosition)
    if (position === undefined) return
    this.toCommit.set(done.partition, { position, writer: this.writerOf(done.partition) })
    const arrived = this.arrived
    if (arrived !== undefined) {
      this.arrived = undefined
      Deferred.unsafeDone(arrived, Exit.void)
    }
  }

  /** Waits until a position waits to be written. */
  readonly waiting: Effect.Effect<void> = Effect.suspend(() =>
    this.toCommit.size > 0 ? Effect.void : Deferred.await(this.arrived ??= Deferred.unsafeMake<void>(FiberId.none))
  )

  private write({ position, writer }: WaitingCommit): Effect.Effect<void, CheckpointError> {
    if (writer === undefined) return Effect.void
    return Effect.zipRight(writer.commit(position), this.told(position))
  }

  /** A written commit counted and told. */
  private told(position: Position): Effect.Effect<void> {
    return Effect.suspend(() => {
      noteCommitted(this.counters, position)
      return this.emit({ _tag: "Committed", position })
    })
  }

  /** Several partitions' commits through one writer, in one write. */
  private writeAll(writer: CheckpointWriter, commits: ReadonlyArray<WaitingCommit>): Effect.Effect<void, CheckpointError> {
    return Effect.zipRight(
      writer.commitAll!(commits.map((commit) => commit.position)),
      Effect.forEach(commits, ({ position }) => this.told(position), { discard: true })
    )
  }

  /**
   * Writes every waiting commit. Uninterruptible: the positions are taken out first, so a
   * committer stopped between two partitions' writes (the run's end interrupts it) dropped the
   * rest, and the final flush no longer had them (seen with a four-partition Postgres source:
   * its last commits lagged, and the next run read those rows again).
   */
  readonly flush: Effect.Effect<void, CheckpointError> = Effect.uninterruptible(Effect.suspend(() => {
    // Writers apart go at once; one writer's commits in one write where it can (`commitAll`),
    // else one after the other: a store shared by several partitions may read, change and write
    // one record, and must see one commit at a time. Kafka's writers (one per assignment) each
    // wait for the broker (12 ms at p50 on `bench:kafka`): four partitions written in turn held
    // a commit 70 ms after its ingestion ended (p50), together 30 ms.
    const byWriter = new Map<CheckpointWriter | undefined, Array<WaitingCommit>>()
    for (const commit of this.toCommit.values()) {
      const list = byWriter.get(commit.writer)
      if (list === undefined) byWriter.set(commit.writer, [commit])
      else list.push(commit)
    }
    this.toCommit.clear()
    return Effect.forEach(
      byWriter.values(),
      (commits) =>
        commits.length > 1 && commits[0]!.writer?.commitAll !== undefined
          ? this.writeAll(commits[0]!.writer, commits)
          : Effect.forEach(commits, (commit) => this.write(commit), { discard: true }),
      { discard: true, concurrency: "unbounded" }
    )
  }))

  /** Commits what is delivered of one partition now (a revocation). */
  flushPartition(partition: string): Effect.Effect<void, CheckpointError> {
    return Effect.suspend(() => {
      const commit = this.toCommit.get(partition)
      this.toCommit.delete(partition)
      return commit === undefined ? Effect.void : this.write(commit)
    })
  }

  /** Forgets a revoked partition once it is drained and committed. */
  forget(partition: string): void {
    this.toCommit.delete(partition)
    this.tracker.forget(partition)
    this.writers.delete(partition)
    this.ownership.delete(partition)
    this.runs.delete(partition)
    this.given.add(partition)
  }
}
