/**
 * The Kafka source's partitions across the group's generations: which partitions this member
 * holds, what each has committed and recorded, and whether a write for a partition is still
 * this member's to make. A synchronous state machine without I/O: `index.ts` feeds it the
 * consumer's callbacks (assigned, rebalancing, fetched batches) and does the writing.
 *
 * A generation starts with each assignment (`assign`, after `revokeAll`): its number is the
 * epoch its writers and `owned` checks carry. kafkajs gives no way to hold a member back from
 * re-joining, and it writes with the generation it holds when a request goes out, which the
 * broker takes for any partition, this member's or not: so a write of an epoch is made only
 * while no newer generation has formed and the broker has not refused one of its writes as
 * fenced, or its consumer stopped (kafkajs answers a stopped consumer's commits as landed
 * without sending them; it restarts after an error it retries, and has left the group). Not
 * even for a partition that came back in the newest generation: a member the group
 * dropped (starved past its session timeout) or whose sync was refused never saw the
 * generations in between, in which another member may have held the partition and committed
 * past the old state. The old state written over that commit made the next owner read an older
 * offset with older cuts and cut that member's batches anew, under other keys: stored twice
 * (`test/cli/sink-paused.test.ts`, `test/connectors/kafka-fencing.test.ts`).
 *
 * @since 0.2.0
 */
import { randomUUID } from "node:crypto"
import { type BatchCut, type Blocks, blockSize, type Frontier, type Position } from "../../src/pipeline/vocabulary.js"
import { decodeCuts, decodeFrontier, decodeRun, encodeCuts, type KafkaResume, partitionName } from "./codec.js"
import { type CommittedOffset, type FetchedBatch, type KafkaMessage, consumerStopped } from "./kafkajs.js"

/**
 * One partition held by this member in one generation.
 *
 * @since 0.2.0
 * @category models
 */
export interface PartitionState {
  readonly name: string
  readonly topic: string
  readonly partition: number
  /** Pending until its committed offset is read and its assignment announced. */
  status: "pending" | "live" | "revoked"
  /** Resolved once the partition is live or revoked: a fetch waits for it. */
  readonly ready: Promise<void>
  readonly open: () => void
  /** The next offset to read, as committed; undefined: nothing committed. */
  committed: number | undefined
  /** The first offset fetched in this assignment (the commit base while nothing is committed). */
  start: number | undefined
  /** Messages below this were committed already (a fetch may start earlier). */
  skipBelow: number
  cuts: Array<BatchCut>
  end: number | undefined
  /**
   * The run identity of the partition's batches (part of their keys), kept in its committed
   * offset's metadata with the cuts; undefined for a partition committed before runs had one.
   */
  run: string | undefined
  /**
   * The frontier of its blocks (`Blocks`) as recorded or asked to be: written with every
   * write of the partition. None: none recorded yet.
   */
  frontier: number | undefined
}

/**
 * A partition of a topic as the consumer names it.
 *
 * @since 0.2.0
 * @category models
 */
export interface TopicPartition {
  readonly topic: string
  readonly partition: number
}

/**
 * Errors that mean a commit belongs to a generation that is over (`CONSUMER_STOPPED`: the
 * consumer had stopped and left the group, so kafkajs never sent it; see `kafkajs.ts`).
 *
 * @since 0.2.0
 * @category defaults
 */
export const fencedTypes: ReadonlySet<string> = new Set([
  "REBALANCE_IN_PROGRESS",
  "ILLEGAL_GENERATION",
  "UNKNOWN_MEMBER_ID",
  "FENCED_INSTANCE_ID",
  consumerStopped
])

/**
 * Batch cuts longer than this do not fit in a committed offset's metadata (4096 by default).
 *
 * @since 0.2.0
 * @category defaults
 */
export const maxMetadataLength = 4000

/**
 * The partitions this member holds, by generation.
 *
 * @since 0.2.0
 * @category models
 */
export class Assignments {
  private readonly held = new Map<string, PartitionState>()
  private joins = 0
  /** The newest epoch the broker refused a write of as fenced: it is over for this member. */
  private fenced = 0

  /** The partition held under `name`, if any. */
  get(name: string): PartitionState | undefined {
    return this.held.get(name)
  }

  /** Every partition held, pending or live. */
  all(): ReadonlyArray<PartitionState> {
    return [...this.held.values()]
  }

  /** Whether `epoch` is the newest generation. */
  isCurrent(epoch: number): boolean {
    return this.joins === epoch
  }

  /**
   * A write of generation `epoch` is still this member's to make: no newer generation has
   * formed, and the broker has not refused one of its writes as fenced.
   */
  mayWrite(epoch: number): boolean {
    return this.joins === epoch && this.fenced < epoch
  }

  /**
   * The consumer stopped and left the group (kafkajs restarts it after an error it retries):
   * the newest generation is over for this member, as if fenced; it joins again as a new one.
   */
  leftGroup(): void {
    this.fenced = Math.max(this.fenced, this.joins)
  }

  /** Whether the run may still send for `state` (asked before each batch goes out). */
  owned(state: PartitionState, epoch: number): boolean {
    return state.status === "live" && this.mayWrite(epoch)
  }

  /**
   * Gives up every partition held: each is marked revoked (a fetch waiting for it gives up)
   * and forgotten. Answers those given up (none: nothing to announce).
   */
  revokeAll(): ReadonlyArray<PartitionState> {
    const live = [...this.held.values()].filter((s) => s.status !== "revoked")
    for (const s of live) {
      s.status = "revoked"
      s.open()
      this.held.delete(s.name)
    }
    return live
  }

  /** A new generation holding `partitions`, all pending: its epoch and their states. */
  assign(partitions: ReadonlyArray<TopicPartition>): { readonly epoch: number; readonly fresh: ReadonlyArray<PartitionState> } {
    this.joins++
    const fresh = partitions.map(({ partition, topic }) => pending(topic, partition))
    for (const s of fresh) this.held.set(s.name, s)
    return { epoch: this.joins, fresh }
  }

  /**
   * Whether a failed write of generation `epoch` is left to the next owner: a newer generation
   * has formed, or the broker refused the write as fenced. A fenced refusal ends the epoch at
   * once, though kafkajs may not know yet (a member the group dropped learns it at its next
   * heartbeat): nothing more is sent or written for it, and what it recorded and sent is the
   * next owner's to send again, from the last commit that landed.
   */
  leftToNextOwner(epoch: number, errorType: string | undefined): boolean {
    if (errorType !== undefined && fencedTypes.has(errorType)) this.fenced = Math.max(this.fenced, epoch)
    return !this.mayWrite(epoch)
  }
}

const pending = (topic: string, partition: number): PartitionState => {
  let open!: () => void
  const ready = new Promise<void>((resolve) => (open = resolve))
  return {
    name: partitionName(topic, partition),
    topic,
    partition,
    status: "pending",
    ready,
    open,
    committed: undefined,
    start: undefined,
    skipBelow: 0,
    cuts: [],
    end: undefined,
    run: randomUUID(),
    frontier: undefined
  }
}

/**
 * Takes the group's committed offset of a partition (none, or -1: nothing committed) with the
 * cuts recorded in its metadata.
 *
 * @since 0.2.0
 * @category utils
 */
export const loadCommitted = (state: PartitionState, found: CommittedOffset | undefined): void => {
  // Nothing of ours committed: the fresh run identity the state was made with stands.
  if (found === undefined || found.offset < 0) return
  state.committed = found.offset
  state.skipBelow = found.offset
  state.cuts = [...decodeCuts(found.metadata, found.offset, state.name)]
  state.frontier = decodeFrontier(found.metadata, found.offset)
  const run = decodeRun(found.metadata)
  if (run._tag === "Run") state.run = run.run
  else if (run._tag === "Legacy") state.run = undefined
}

/**
 * The position the run resumes a partition after: the last committed offset (none: nothing
 * committed).
 *
 * @since 0.2.0
 * @category utils
 */
export const committedPosition = (state: PartitionState): Position<KafkaResume> | undefined =>
  state.committed === undefined ? undefined : {
    partition: state.name,
    offset: state.committed - 1,
    resume: { topic: state.topic, partition: state.partition }
  }

/**
 * The offset cuts are written against: the committed offset, else the first offset fetched in
 * this assignment, else the first cut (none: nothing to write yet).
 *
 * @since 0.2.0
 * @category utils
 */
export const commitBase = (state: PartitionState): number | undefined =>
  state.committed ?? state.start ?? (state.cuts.length === 0 ? undefined : Math.min(...state.cuts.map((c) => c.first)))

/**
 * How a partition batches once assigned: by blocks of offsets, those up to the frontier its
 * metadata holds going only whole, but no further than the blocks wholly in the log when it
 * was assigned (`end`: its high watermark then). A block that went whole before was in the log
 * then; one past it is not there yet, and would wait for records a linger must not close early.
 *
 * @since 0.3.0
 * @category utils
 */
export const blocksOf = (state: PartitionState, end: number | undefined): Blocks => {
  const recorded = state.frontier ?? 0
  const inLog = end === undefined ? 0 : Math.floor(end / blockSize) * blockSize
  return { whole: Math.min(recorded, inLog), recorded }
}

/**
 * Notes cuts recorded by the run against the partitions they belong to; answers the
 * partitions touched (cuts of partitions not held are ignored).
 *
 * @since 0.2.0
 * @category utils
 */
export const addCuts = (
  byName: ReadonlyMap<string, PartitionState>,
  cuts: ReadonlyArray<BatchCut>,
  frontiers: ReadonlyArray<Frontier> = []
): ReadonlyArray<PartitionState> => {
  const touched = new Set<PartitionState>()
  for (const frontier of frontiers) {
    const s = byName.get(frontier.partition)
    if (s === undefined) continue
    s.frontier = Math.max(s.frontier ?? frontier.offset, frontier.offset)
    touched.add(s)
  }
  for (const cut of cuts) {
    const s = byName.get(cut.partition)
    if (s === undefined) continue
    // A batch that goes in parts records its cut again, with the split: it replaces the first.
    const at = cut.held === undefined ? -1 : s.cuts.findIndex((c) => c.first === cut.first && c.firstChild === cut.firstChild)
    if (at === -1) s.cuts.push(cut)
    else s.cuts[at] = cut
    touched.add(s)
  }
  return [...touched]
}

/**
 * Notes a commit of `position`: the next offset to read is the one after it, and the cuts it
 * has passed are forgotten.
 *
 * @since 0.2.0
 * @category utils
 */
export const commitAt = (state: PartitionState, position: Position): void => {
  state.committed = position.offset + 1
  state.cuts = state.cuts.filter((cut) => cut.last > position.offset)
}

/**
 * What to write to the group for `partitions`: each one's commit base with its cuts as
 * metadata (a partition with no base yet writes nothing).
 *
 * @since 0.2.0
 * @category utils
 */
export const offsetsToWrite = (partitions: ReadonlyArray<PartitionState>): Array<CommittedOffset & { readonly metadata: string }> =>
  partitions.flatMap((s) => {
    const base = commitBase(s)
    return base === undefined ? [] : [{ topic: s.topic, partition: s.partition, offset: base, metadata: encodeCuts(s.cuts, base, s.run, s.frontier) }]
  })

/**
 * Whether a batch's split may go into the partition's metadata: splits take room only while
 * the metadata, with it, stays within half of what fits, so the cuts of batches that go whole
 * always have the other half (a split adds about three characters per held record).
 *
 * @since 0.3.0
 * @category utils
 */
export const roomForParts = (state: PartitionState | undefined, cut: BatchCut): boolean => {
  if (state === undefined) return false
  const base = commitBase(state) ?? cut.first
  const others = state.cuts.filter((c) => c.first !== cut.first || c.firstChild !== cut.firstChild)
  return encodeCuts([...others, cut], Math.min(base, cut.first), state.run, state.frontier).length <= maxMetadataLength / 2
}

/**
 * Why `offsets` cannot be written (a partition's cuts are too long for the metadata), or
 * undefined when they can.
 *
 * @since 0.2.0
 * @category utils
 */
export const oversizedMetadata = (offsets: ReadonlyArray<CommittedOffset & { readonly metadata: string }>): string | undefined => {
  for (const { metadata, partition, topic } of offsets) {
    if (metadata.length > maxMetadataLength) {
      return `topic ${topic} partition ${partition}: ${metadata.length} characters of batch cuts do not fit in the ` +
        `committed offset's metadata (4096 by default); lower the concurrency`
    }
  }
  return undefined
}

/**
 * The messages of a fetched batch that are new to a partition: those below `skipBelow` were
 * committed already. Notes the partition's end, the first offset fetched, and that everything
 * up to the batch's last message has been taken. (The source makes their elements when the
 * pipeline takes them.)
 *
 * @since 0.2.0
 * @category utils
 */
export const takeFetched = (state: PartitionState, batch: FetchedBatch): Array<KafkaMessage> => {
  state.end = batch.highWatermark
  const taken: Array<KafkaMessage> = []
  for (const m of batch.messages) {
    if (m.offset < state.skipBelow) continue
    state.start ??= m.offset
    taken.push(m)
  }
  state.skipBelow = batch.messages[batch.messages.length - 1]!.offset + 1
  return taken
}
