/**
 * `batch`: group valid records per partition into ingestion-sized batches.
 *
 * A batch closes at `max` records, before it would pass `maxBytes` of request body, or
 * `linger` after its first record. Every boundary is recorded in the checkpoint store before
 * its batch is emitted, and a recorded boundary is honoured when its first record comes round
 * again, whatever the clock says (the timer never closes such a batch early). So after a crash
 * every batch already sent is rebuilt with the same records, under the same idempotency key,
 * even when the records come back at a different pace (stdin, a slow consumer). Boundaries are
 * recorded together, one checkpoint write for up to 128 batches: closed batches wait for that
 * many, for a chunk smaller than a batch (the source is not keeping up) or for the next tick
 * (a quarter of `linger`).
 *
 * A partition whose offsets are dense and fixed (a Kafka partition's: its assignment brings
 * `Blocks`) is batched by blocks of 100 offsets instead: a batch also closes at its block's
 * end, and such a boundary needs no cut written, as it depends on the offsets alone. Only the
 * frontier is recorded, a lead ahead of the reading, so a take writes nothing at all while the
 * reading stays under it. Why: the cut writes of a Kafka sink are commits to the group's
 * coordinator, one at a time with the commits themselves (about 30 ms each under load); a
 * batch waited 34 ms for the write under way and 58 ms for its own (p50, 20k messages/s), and
 * `bench:kafka`'s message-to-commit latency went from 185-233 ms to 95-103 ms at the median
 * without them (a batch sent 19 against 118 ms after its message was produced).
 *
 * Dead letters read while a batch is open travel with that batch, so that a batch and the
 * dead letters inside its span are committed together and commits only ever land between
 * batches.
 *
 * The rules live in `makeBatcher`, plain state without a stream around it; `batch` drives it
 * as a stream combinator, and `run` drives it from its own pull loop.
 *
 * @since 0.1.0
 */
import { type Chunk, Clock, Duration, Effect, Stream } from "effect"
import { dual } from "effect/Function"
import type { CheckpointStore } from "./Checkpoint.js"
import { bodyBytes, byteLength } from "./internal/wireBytes.js"
import {
  type Batch,
  type BatchCut,
  type BatchRecord,
  blockEnd,
  type Blocks,
  blockSize,
  type CheckpointError,
  type Checked,
  comparePositions,
  type DeadLetter,
  type Frontier,
  frontierLead,
  type Position,
  type Unit,
  unitPartition
} from "./vocabulary.js"

export { type Batch, type BatchRecord, type Unit, unitPartition } from "./vocabulary.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface BatchOptions {
  /** At most this many records per batch (the service takes at most 100). */
  readonly max: number
  /** At most this many bytes of request body. */
  readonly maxBytes: number
  /** How long a partial batch may wait for more records. */
  readonly linger: Duration.DurationInput
  /** Where boundaries are recorded before their batches go out. */
  readonly checkpoint: Pick<CheckpointStore, "recordCuts">
  /** Boundaries recorded by an earlier run. */
  readonly recordedCuts: ReadonlyArray<BatchCut>
}

/**
 * Closed batches recorded with one checkpoint write, when they come that fast; as many may
 * wait for the write under way before the pull loop waits too.
 *
 * @since 0.2.0
 * @category utils
 */
export const unitsPerWrite = 128

/** `{"records":[` + `]}`. */
const envelopeBytes = 14

/**
 * The request body of a batch.
 *
 * @since 0.1.0
 * @category utils
 */
export const batchBody = (records: ReadonlyArray<BatchRecord>): string =>
  `{"records":[${records.map((r) => r.json).join(",")}]}`

/**
 * The request body of a batch in UTF-8, as sent: put together from the records' bytes when
 * they were written as bytes (typed records in `run`), else `batchBody` encoded.
 *
 * @since 0.1.0
 * @category utils
 */
export const batchBodyBytes = (records: ReadonlyArray<BatchRecord>): Uint8Array =>
  bodyBytes(records) ?? Buffer.from(batchBody(records))

interface Open {
  readonly records: Array<BatchRecord>
  readonly deadLetters: Array<DeadLetter>
  readonly fromSeq: number
  toSeq: number
  lastPosition: Position
  bytes: number
  readonly startedAt: number
  /** Where a batch recorded by an earlier run ended (it must end there again). */
  readonly recordedLast: CutEnd | undefined
  /** The end of its block, when its partition batches by blocks (`Blocks`); else infinity. */
  readonly blockEnd: number
  /** Its block is below the recorded frontier: it goes whole, as it may have gone before. */
  readonly wholeBlock: boolean
}

/** A partition that batches by blocks: the frontiers it was assigned with, and the one asked since. */
interface BlockState {
  readonly whole: number
  /** The frontier recorded, or asked to be recorded by a take whose units wait for that write. */
  recorded: number
}

/** The last record of a recorded batch: an offset, and a child index for a `flatMap`'s children. */
interface CutEnd {
  readonly offset: number
  readonly child?: { readonly index: number } | undefined
  readonly held?: ReadonlyArray<number> | undefined
}

const cutStart = (partition: string, offset: number, child: number | undefined) =>
  child === undefined ? `${partition}\u0000${offset}` : `${partition}\u0000${offset}\u0000${child}`

/**
 * The batching logic without a stream around it: `add` takes checked elements, the units
 * they close wait until `take` hands them out with the boundaries to record first. Driven by
 * the `batch` combinator, and by `run`'s own loop.
 *
 * @since 0.1.0
 * @category models
 */
export interface Batcher {
  /** Takes one element; the units it closes (by size, count or a recorded cut) wait. */
  readonly add: (checked: Checked, now: number) => void
  /** Closes the open batches that have waited `linger` (never one with a recorded boundary). */
  readonly closeLingering: (now: number) => void
  /** Closes every open batch (the input ended). */
  readonly closeAll: () => void
  /** Closed units waiting to go out. */
  readonly waiting: () => number
  /**
   * The waiting units, and what to record before they go out: the boundaries among them, and
   * the frontiers of partitions that batch by blocks past the one recorded.
   */
  readonly take: () => Taken
  /**
   * Cuts recorded for a partition that was just assigned: honoured as those given at the
   * start; with `blocks`, the partition batches by blocks of offsets.
   */
  readonly assign: (cuts: ReadonlyArray<BatchCut>, blocks?: { readonly partition: string } & Blocks) => void
  /**
   * Forgets a revoked partition: its open batch and the units waiting to go out (none of them
   * recorded or sent; the partition's next owner reads them again) and its recorded cuts.
   */
  readonly revoke: (partition: string) => void
}

/**
 * What a take hands out: the units, and what must be recorded before any of them goes.
 *
 * @since 0.3.0
 * @category models
 */
export interface Taken {
  readonly units: ReadonlyArray<Unit>
  readonly cuts: ReadonlyArray<BatchCut>
  readonly frontiers: ReadonlyArray<Frontier>
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const makeBatcher = (options: Omit<BatchOptions, "checkpoint">): Batcher => {
  const lingerMillis = Duration.toMillis(options.linger)
  const recordedCuts = new Map<string, CutEnd>()
  const assign = (cuts: ReadonlyArray<BatchCut>, given?: { readonly partition: string } & Blocks) => {
    if (given !== undefined) blocks.set(given.partition, { whole: given.whole, recorded: Math.max(given.whole, given.recorded) })
    for (const cut of cuts) {
      const end: CutEnd = cut.lastChild === undefined ? { offset: cut.last } : { offset: cut.last, child: { index: cut.lastChild } }
      recordedCuts.set(cutStart(cut.partition, cut.first, cut.firstChild), cut.held === undefined ? end : { ...end, held: cut.held })
    }
  }
  assign(options.recordedCuts)
  const blocks = new Map<string, BlockState>()
  const open = new Map<string, Open>()

  const close = (partition: string, state: Open, closedBy: Batch["closedBy"]): Unit => {
    open.delete(partition)
    const batch: Batch = {
      partition,
      records: state.records,
      deadLetters: state.deadLetters,
      fromSeq: state.fromSeq,
      toSeq: state.toSeq,
      lastPosition: state.lastPosition,
      closedBy,
      bytes: state.bytes
    }
    const held = closedBy === "recorded" ? state.recordedLast?.held : undefined
    return { _tag: "Batch", batch: held === undefined ? batch : Object.assign(batch, { held }) }
  }

  let waiting: Array<Unit> = []

  const add = (checked: Checked, now: number): void => {
    if (checked._tag === "Dead") {
      const position = checked.letter.position
      const state = openAt(position)
      if (state === undefined) {
        waiting.push({ _tag: "Dead", seq: checked.seq, letter: checked.letter })
        return
      }
      state.deadLetters.push(checked.letter)
      state.toSeq = checked.seq
      state.lastPosition = position
      closeAtBlockEnd(state, position)
      return
    }
    if (checked._tag === "Skipped") {
      // Like a dead letter without a letter: it travels with an open batch, or alone.
      const state = openAt(checked.position)
      if (state === undefined) {
        waiting.push(checked)
        return
      }
      state.toSeq = checked.seq
      state.lastPosition = checked.position
      closeAtBlockEnd(state, checked.position)
      return
    }
    const position = checked.position
    const { partition, offset } = position
    let state = open.get(partition)
    const recordBytes = byteLength(checked) + 1 // UTF-8 bytes, as sent; +1 for the comma
    if (state !== undefined) {
      const pastRecordedCut = state.recordedLast !== undefined && comparePositions(position, state.recordedLast) > 0
      const pastBlock = offset >= state.blockEnd
      const overSize = state.bytes + recordBytes > options.maxBytes && !state.wholeBlock
      if (pastRecordedCut || pastBlock || overSize) {
        waiting.push(close(partition, state, pastRecordedCut ? "recorded" : pastBlock ? blockClosed(state) : "bytes"))
        state = undefined
      }
    }
    if (state === undefined) {
      const recordedLast = recordedCuts.get(cutStart(partition, offset, position.child?.index))
      // A recorded cut wins over the block (one recorded by an older build may span two).
      const block = recordedLast === undefined && blocks.size > 0 ? blocks.get(partition) : undefined
      const end = block === undefined ? Infinity : blockEnd(offset)
      state = {
        records: [],
        deadLetters: [],
        fromSeq: checked.seq,
        toSeq: checked.seq,
        lastPosition: checked.position,
        bytes: envelopeBytes,
        startedAt: now,
        recordedLast,
        blockEnd: end,
        wholeBlock: block !== undefined && end <= block.whole
      }
      open.set(partition, state)
    }
    state.records.push(checked) // a checked record is a BatchRecord: no copy per record
    state.bytes += recordBytes
    state.toSeq = checked.seq
    state.lastPosition = checked.position
    if (state.recordedLast !== undefined && comparePositions(position, state.recordedLast) >= 0) {
      waiting.push(close(partition, state, "recorded"))
    } else if (offset === state.blockEnd - 1 && position.child === undefined) {
      waiting.push(close(partition, state, blockClosed(state)))
    } else if (state.records.length >= options.max) {
      waiting.push(close(partition, state, "count"))
    }
  }

  /**
   * The open batch of the position's partition, closed first when the position is past its
   * block (the element then goes alone, or with the next batch).
   */
  const openAt = (position: Position): Open | undefined => {
    const state = open.get(position.partition)
    if (state === undefined || position.offset < state.blockEnd) return state
    waiting.push(close(position.partition, state, blockClosed(state)))
    return undefined
  }

  /** Closes a batch whose block's last offset was just read (a child may have siblings after it). */
  const closeAtBlockEnd = (state: Open, position: Position) => {
    if (position.offset === state.blockEnd - 1 && position.child === undefined) {
      waiting.push(close(position.partition, state, blockClosed(state)))
    }
  }

  const blockClosed = (state: Open): Batch["closedBy"] => (state.wholeBlock ? "recorded" : "block")

  // A batch with a recorded boundary was sent before: it must close where it did then; so may a
  // block below the recorded frontier.
  const lingers = (state: Open) => state.recordedLast === undefined && !state.wholeBlock

  /**
   * The frontiers to record before `units` go: for each partition with a block past the
   * frontier recorded (or asked), one `frontierLead` past the blocks read so far.
   */
  const frontiersFor = (units: ReadonlyArray<Unit>): ReadonlyArray<Frontier> => {
    let asked: Map<string, number> | undefined
    for (const unit of units) {
      if (unit._tag !== "Batch" || unit.batch.closedBy !== "block") continue
      const batch = unit.batch
      const state = blocks.get(batch.partition)
      if (state === undefined) continue
      // A partition's batches come in order: once one is past the frontier, so are the later ones.
      const end = blockEnd(batch.records[0]!.position.offset)
      if (end > state.recorded) (asked ??= new Map()).set(batch.partition, end - 1) // its block was read whole
    }
    if (asked === undefined) return []
    const frontiers: Array<Frontier> = []
    for (const [partition, last] of asked) {
      const state = blocks.get(partition)!
      const read = Math.max(last, open.get(partition)?.lastPosition.offset ?? -1)
      const offset = Math.floor((read + 1) / blockSize) * blockSize + frontierLead
      state.recorded = offset
      frontiers.push({ partition, offset })
    }
    return frontiers
  }

  return {
    add,
    closeLingering: (now) => {
      for (const [partition, state] of [...open]) {
        if (lingers(state) && now - state.startedAt >= lingerMillis) waiting.push(close(partition, state, "linger"))
      }
    },
    closeAll: () => {
      for (const [partition, state] of [...open]) waiting.push(close(partition, state, "end"))
    },
    waiting: () => waiting.length,
    take: () => {
      const units = waiting
      waiting = []
      return { units, cuts: units.flatMap(cutOf), frontiers: blocks.size === 0 ? [] : frontiersFor(units) }
    },
    assign,
    revoke: (partition) => {
      open.delete(partition)
      blocks.delete(partition)
      waiting = waiting.filter((unit) => unitPartition(unit) !== partition)
      const prefix = `${partition}\u0000`
      for (const key of [...recordedCuts.keys()]) if (key.startsWith(prefix)) recordedCuts.delete(key)
    }
  }
}

/** A batch closed at its block's end, or as recorded, needs no cut written. */
const cutOf = (unit: Unit): ReadonlyArray<BatchCut> =>
  unit._tag === "Batch" && unit.batch.closedBy !== "recorded" && unit.batch.closedBy !== "block" ? [batchCut(unit.batch)] : []

/**
 * A batch's boundary: the positions of its first and last records (with their child indexes
 * when they are children of a `flatMap`).
 *
 * @since 0.1.0
 * @category utils
 */
export const batchCut = (batch: Pick<Batch, "partition" | "records">): BatchCut => {
  const first = batch.records[0]!.position
  const last = batch.records[batch.records.length - 1]!.position
  const cut: BatchCut = { partition: batch.partition, first: first.offset, last: last.offset }
  return first.child === undefined && last.child === undefined
    ? cut
    : Object.assign(cut, { firstChild: first.child?.index, lastChild: last.child?.index }) // not a spread: "Spreads" in docs/decisions.md
}

/**
 * Whether closed units should go out now rather than wait for more: when many wait, when a
 * chunk smaller than a batch came in (the source is not keeping up, so nothing should wait),
 * or when the sends are `hungry` (fewer batches wait to be accepted than requests may be in
 * flight: a unit held back would leave a place idle).
 *
 * Why the last: a Kafka source hands over chunks of hundreds of messages, so neither of the
 * first two held; units went out only when the linger ticker flushed (every 125 ms), and
 * `bench:kafka` at 20k messages/s measured 175 ms from a message's read to its batch's send
 * (p50). Holding units is worth it only while the sends are busy: it groups the cut writes.
 *
 * @since 0.1.0
 * @category utils
 */
export const shouldFlush = (batcher: Batcher, chunkLength: number, max: number, hungry?: () => boolean): boolean => {
  const waiting = batcher.waiting()
  return waiting >= unitsPerWrite || chunkLength < max || (waiting > 0 && hungry !== undefined && hungry())
}

/**
 * How often open batches are checked for lingering: a quarter of `linger`.
 *
 * @since 0.1.0
 * @category utils
 */
export const lingerCheckMillis = (linger: Duration.DurationInput): number =>
  Math.max(1, Math.floor(Duration.toMillis(linger) / 4))

type Input =
  | { readonly _tag: "Elements"; readonly chunk: Chunk.Chunk<Checked> }
  | { readonly _tag: "Tick" }
  | { readonly _tag: "End" }

/**
 * Groups checked elements into batches and lone dead letters.
 *
 * @since 0.1.0
 * @category combinators
 */
export const batch: {
  (options: BatchOptions): <E, R>(self: Stream.Stream<Checked, E, R>) => Stream.Stream<Unit, E | CheckpointError, R>
  <E, R>(self: Stream.Stream<Checked, E, R>, options: BatchOptions): Stream.Stream<Unit, E | CheckpointError, R>
} = dual(2, <E, R>(self: Stream.Stream<Checked, E, R>, options: BatchOptions) => {
  const batcher = makeBatcher(options)

  /** Records the waiting units' new boundaries, then emits the units. */
  const flush = Effect.suspend(() => {
    const { cuts, units } = batcher.take()
    return Effect.as(options.checkpoint.recordCuts(cuts), units)
  })
  const nothing = Effect.succeed<ReadonlyArray<Unit>>([])

  // Whole chunks go through the merge: one step per chunk, not per record.
  const inputs: Stream.Stream<Input, E, R> = Stream.merge(
    Stream.concat(
      Stream.map(Stream.chunks(self), (chunk): Input => ({ _tag: "Elements", chunk })),
      Stream.succeed<Input>({ _tag: "End" })
    ),
    Stream.map(Stream.tick(Duration.millis(lingerCheckMillis(options.linger))), (): Input => ({ _tag: "Tick" })),
    { haltStrategy: "left" }
  )

  return Stream.mapConcatEffect(inputs, (input) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      switch (input._tag) {
        case "Elements": {
          for (const checked of input.chunk) batcher.add(checked, now)
          return shouldFlush(batcher, input.chunk.length, options.max) ? flush : nothing
        }
        case "Tick":
          batcher.closeLingering(now)
          return flush
        case "End":
          batcher.closeAll()
          return flush
      }
    }))
})
