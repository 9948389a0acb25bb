/**
 * The pipeline's vocabulary: the data every stage speaks. Positions, what a source emits,
 * dead letters, batches and their cuts, checked elements and delivery outcomes, each defined
 * once here. This module imports no other module of the pipeline, so any of them (sources,
 * checkpoints, stages, the run's internal modules, connectors) can use it without a cycle.
 * The modules that first defined these types re-export them.
 *
 * @since 0.2.0
 */
import { Data } from "effect"
import type { Column } from "../records.js"

// Positions

/**
 * Where an element sits in its source. `offset` grows within a partition (a line number,
 * a Kafka offset, a row ordinal); `resume` is what the source needs to start right after
 * it (a byte offset, a key value), typed by each source.
 *
 * @since 0.1.0
 * @category models
 */
export interface Position<Resume = unknown> {
  readonly partition: string
  readonly offset: number
  readonly resume?: Resume | undefined
  /**
   * Set on the records a one-to-many transform made of one source record (`Typed.flatMap`):
   * this is child `index` of `of`. Children share their parent's offset; the parent's position
   * is committed only with its last child.
   */
  readonly child?: { readonly index: number; readonly of: number } | undefined
}

/**
 * Whether a position may be committed: any position but that of a child other than the last.
 *
 * @since 0.1.0
 * @category guards
 */
export const isCommitPoint = (position: Position): boolean =>
  position.child === undefined || position.child.index === position.child.of - 1

/**
 * Orders two positions of one partition: by offset, then by child index.
 *
 * @since 0.1.0
 * @category utils
 */
export const comparePositions = (
  a: { readonly offset: number; readonly child?: { readonly index: number } | undefined },
  b: { readonly offset: number; readonly child?: { readonly index: number } | undefined }
): number =>
  a.offset !== b.offset ? a.offset - b.offset : (a.child?.index ?? -1) - (b.child?.index ?? -1)

/**
 * A problem with an element or a record: a stable `code`, the `field` it concerns (or
 * null) and a message for people.
 *
 * @since 0.1.0
 * @category models
 */
export interface Problem {
  readonly code: string
  readonly field: string | null
  readonly message: string
}

// Elements

/**
 * What a source emits: a parsed record, or an element it could not turn into one
 * (malformed JSON, a non-object line, invalid UTF-8, an over-long line). Both carry their
 * position: a malformed element is dead-lettered and its position committed like any other.
 *
 * @since 0.1.0
 * @category models
 */
export type SourceElement<Resume = unknown> = RecordElement<unknown, Resume> | MalformedElement<Resume>

/**
 * A record, its value of type `A` (`unknown` as a source reads it, the schema's `Type` once
 * `Typed.decode` has checked it).
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordElement<A = unknown, Resume = unknown> {
  readonly _tag: "Record"
  readonly position: Position<Resume>
  readonly value: A
  /** The record's JSON text when the source already has it (saves a stringify). */
  readonly json?: string | undefined
  /**
   * The types the source gave `value` itself (a database's column types): when the dataset
   * has each of these columns with a type that takes them, and its primary key among the
   * columns never null, the record fits by construction and is not checked value by value
   * (`checkElement`). It holds for `value` as the source made it: a stage that changes the
   * value makes a new element without it (as it does without `json`).
   */
  readonly typedBy?: ValueTypes | undefined
}

/**
 * What a source guarantees of every record it types (`RecordElement.typedBy`): the record
 * holds exactly `columns`, each value of its column's type or null, and never null in
 * `notNull`. One object for all of a source's records, so that checking compares it once.
 *
 * @since 0.3.0
 * @category models
 */
export interface ValueTypes {
  readonly columns: ReadonlyArray<Column>
  readonly notNull: ReadonlyArray<string>
}

/**
 * An element the source could not turn into a record.
 *
 * @since 0.1.0
 * @category models
 */
export interface MalformedElement<Resume = unknown> {
  readonly _tag: "Malformed"
  readonly position: Position<Resume>
  readonly problem: Problem
  /** The raw element as read, whole (a dead letter keeps it for a replay). */
  readonly raw: string
}

/**
 * What a source's elements become on their way through typed stages (`Typed`): records of
 * type `A`, malformed elements, records a stage turned into dead letters (a decode or a
 * transform failed), and records a stage dropped on purpose (`Typed.filter`, a `flatMap`
 * to nothing). Every one of them is counted and committed like a record; only records are sent.
 *
 * @since 0.1.0
 * @category models
 */
export type Element<A = unknown, Resume = unknown> =
  | RecordElement<A, Resume>
  | MalformedElement<Resume>
  | { readonly _tag: "Dead"; readonly letter: DeadLetter }
  | { readonly _tag: "Dropped"; readonly position: Position<Resume> }

/**
 * The position of any element.
 *
 * @since 0.1.0
 * @category utils
 */
export const elementPosition = (element: Element): Position => element._tag === "Dead" ? element.letter.position : element.position

// Dead letters

/**
 * A record (or an element) that cannot be delivered, with the reason and its position.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeadLetter {
  readonly position: Position
  readonly reason: Problem
  /**
   * Where it was stopped: read by the source, decoded with the user's schema, failed in a
   * transform, encoded with the output schema, checked against the dataset's schema, refused
   * by the service.
   */
  readonly stage: "source" | "decode" | "transform" | "encode" | "validate" | "send" | "service"
  /** The record, when there was one. */
  readonly record?: unknown
  /** The raw element, when it could not be parsed: the text as read, whole. */
  readonly raw?: string
  /**
   * What a replay needs besides (`run` adds them as it writes a letter): the name of the
   * source it was read from (the one in its idempotency keys), the identity of the run that
   * read it (none before runs had one), and the dataset it was on its way to.
   */
  readonly source?: string | undefined
  readonly run?: string | undefined
  readonly dataset?: string | undefined
}

// Checkpoints

/**
 * A batch boundary: the batch of `partition` that starts at offset `first` ends at `last`.
 *
 * @since 0.1.0
 * @category models
 */
export interface BatchCut {
  readonly partition: string
  readonly first: number
  readonly last: number
  /** The child indexes of the first and last records, when they are children of a `flatMap`. */
  readonly firstChild?: number | undefined
  readonly lastChild?: number | undefined
  /**
   * The batch went in two parts (`internal/parts.ts`): the offsets of the records of its
   * second part, those that waited for an earlier batch holding their keys. Recorded before
   * the first part is sent, so after a restart the batch goes in the same parts, under the
   * same idempotency keys.
   */
  readonly held?: ReadonlyArray<number> | undefined
}

/**
 * Batches by blocks of offsets, for a source whose offsets are dense and fixed (a Kafka
 * partition's): a batch holds the valid records whose offsets fall in one block of
 * `blockSize` (`[100k, 100k + 100)`). Such a boundary depends on the offsets alone, not on
 * which records were valid, on timing or on the configuration, so no cut is written before
 * the batch goes: after a crash or a rebalance the next owner closes the same blocks. What
 * timing decides (a block the linger closed early, one `maxBytes` closed, a split into parts)
 * is still recorded first.
 *
 * One thing more must be recorded: a block that went whole must never be cut afresh after a
 * restart (a split's parts, or a block closed early, carry other keys and would be applied
 * again behind a later batch of the same keys). So the store keeps a frontier ahead of the
 * reading, `frontierLead` offsets past what was read when it is written: every block that
 * went whole ends at or below it. After a restart the blocks below the frontier go only
 * whole, as if recorded, and those are only blocks already in the log when the partition was
 * assigned (the frontier is capped by the log's end then), so none of them waits for records
 * that do not exist yet.
 *
 * @since 0.3.0
 * @category models
 */
export interface Blocks {
  /** Blocks ending at or below this offset may have gone whole before: they go only whole. */
  readonly whole: number
  /** The frontier the store holds: a block ending at or below it goes without a write. */
  readonly recorded: number
}

/**
 * A partition's frontier to record before batches of blocks past the one recorded go (see
 * `Blocks`).
 *
 * @since 0.3.0
 * @category models
 */
export interface Frontier {
  readonly partition: string
  readonly offset: number
}

/**
 * The size of a block of offsets: the service's most records a batch.
 *
 * @since 0.3.0
 * @category defaults
 */
export const blockSize = 100

/**
 * How far past what was read a frontier is written: a hundred blocks, so that a partition
 * read at 5,000 messages a second writes one every two seconds, carried by its commits.
 *
 * @since 0.3.0
 * @category defaults
 */
export const frontierLead = 100 * blockSize

/**
 * The end of the block holding `offset` (the first offset past it).
 *
 * @since 0.3.0
 * @category utils
 */
export const blockEnd = (offset: number): number => (Math.floor(offset / blockSize) + 1) * blockSize

/**
 * Recorded cuts with `added` recorded too: a new cut replaces one recorded with the same start
 * (partition, first offset, first child). One pass each, with no key made per cut: a
 * checkpoint can hold a thousand cuts, and building a text key for each of them on every
 * write was a tenth of a keyed run's CPU (`bench:tracking`, a thousand batches pending).
 *
 * @since 0.1.0
 * @category utils
 */
export const mergeCuts = (cuts: ReadonlyArray<BatchCut>, added: ReadonlyArray<BatchCut>): ReadonlyArray<BatchCut> => {
  if (added.length === 0) return cuts
  const starts = new Map<string, Set<number>>()
  for (const cut of added) {
    const firsts = starts.get(cut.partition)
    if (firsts === undefined) starts.set(cut.partition, new Set([cut.first]))
    else firsts.add(cut.first)
  }
  const replaced = (c: BatchCut) =>
    starts.get(c.partition)?.has(c.first) === true &&
    added.some((a) => a.partition === c.partition && a.first === c.first && a.firstChild === c.firstChild)
  const kept: Array<BatchCut> = []
  for (const cut of cuts) if (!replaced(cut)) kept.push(cut)
  for (const cut of added) kept.push(cut)
  return kept
}

/**
 * What a source is, as a checkpoint remembers it, so that a run is never resumed over another
 * source: its `name` (the one in every idempotency key), a description for messages, and for
 * a file the hash of its first bytes (a file replaced by another at the same path is told
 * apart from one that grew).
 *
 * @since 0.2.0
 * @category models
 */
export interface SourceIdentity {
  readonly name: string
  readonly description: string
  readonly fingerprint?: { readonly bytes: number; readonly sha1: string } | undefined
}

/**
 * A checkpoint could not be read or written.
 *
 * @since 0.1.0
 * @category errors
 */
export class CheckpointError extends Data.TaggedError("CheckpointError")<{
  readonly reason: string
  readonly cause?: unknown
}> {
  override get message() {
    return this.reason
  }
}

// Checked elements and batches

/**
 * A record's primary-key value for the key order. The pipeline gives each record its key's
 * number (`keyValueOf`): a whole number from 0 to 2^30 - 1 stands for itself, any other value
 * (a string, another number, the JSON text of a composite key in key order) for a hash of its
 * text, so `1` and `"1"` differ, as the service compares keys. A string given to the key order
 * is taken the same way (`keyNumber`).
 *
 * @since 0.2.0
 * @category models
 */
export type KeyValue = string | number

/**
 * A record ready to send, with its JSON text, or a dead letter. A valid record keeps only its
 * text: the parsed value is let go right after the check, so that it dies young (records
 * that wait long, as whole parsed objects, are what the garbage collector pays for).
 *
 * @since 0.1.0
 * @category models
 */
export type Checked =
  | {
    readonly _tag: "Valid"
    readonly seq: number
    readonly position: Position
    readonly json: string
    /** Its primary-key value's number (`keyValueOf`), when the dataset has a key. */
    readonly key?: KeyValue | undefined
  }
  | { readonly _tag: "Dead"; readonly seq: number; readonly letter: DeadLetter }
  /** Dropped on purpose by a typed stage: nothing to send, committed like the rest. */
  | { readonly _tag: "Skipped"; readonly seq: number; readonly position: Position }

/**
 * A record in a batch: its JSON text only. The parsed value is dropped after validation, so
 * that records waiting for their batch hold one string, not an object graph each (long-lived
 * garbage is what the collector pays for). Typed records in `run` hold their text as UTF-8
 * bytes instead, and `json` decodes them when it is read (the batch body copies the bytes).
 *
 * @since 0.1.0
 * @category models
 */
export interface BatchRecord {
  readonly position: Position
  readonly json: string
  /** Its primary-key value, when the dataset has a key: batches that share one are sent in order. */
  readonly key?: KeyValue | undefined
}

/**
 * Records of one partition sent with one request, and the dead letters read among them.
 *
 * @since 0.1.0
 * @category models
 */
export interface Batch {
  readonly partition: string
  /** The records (`run` empties this array once the batch is delivered, to let them go). */
  readonly records: ReadonlyArray<BatchRecord>
  /** Dead letters read between the first and the last record. */
  readonly deadLetters: ReadonlyArray<DeadLetter>
  /** The run's element numbers this batch covers, records and dead letters alike. */
  readonly fromSeq: number
  readonly toSeq: number
  /** The position of the element numbered `toSeq`, committed once the batch is done. */
  readonly lastPosition: Position
  /**
   * What closed it: its size, its count, the linger, the input's end, its block's end
   * (`Blocks`), or a boundary decided before (a recorded cut, or a block below the recorded
   * frontier): such a batch goes as it went then, never split afresh.
   */
  readonly closedBy: "count" | "bytes" | "linger" | "end" | "block" | "recorded"
  /** Its request body's length in bytes. */
  readonly bytes: number
  /** Closed at a recorded cut that says it went in parts: the offsets of its second part. */
  readonly held?: ReadonlyArray<number> | undefined
}

/**
 * What the delivery stage receives: a batch, or a dead letter read outside any batch.
 *
 * @since 0.1.0
 * @category models
 */
export type Unit =
  | { readonly _tag: "Batch"; readonly batch: Batch }
  | { readonly _tag: "Dead"; readonly seq: number; readonly letter: DeadLetter }
  /** A record a typed stage dropped, outside any batch: nothing to send, only to commit. */
  | { readonly _tag: "Skipped"; readonly seq: number; readonly position: Position }

/**
 * The partition a unit belongs to.
 *
 * @since 0.1.0
 * @category utils
 */
export const unitPartition = (unit: Unit): string =>
  unit._tag === "Batch" ? unit.batch.partition : unit._tag === "Dead" ? unit.letter.position.partition : unit.position.partition

// Delivery outcomes

/**
 * The outcome of one batch.
 *
 * @since 0.1.0
 * @category models
 */
export interface Delivered {
  readonly ingestionIds: ReadonlyArray<string>
  readonly sent: number
  readonly accepted: number
  /** Of `accepted`, records whose ingestion the service replayed (stored by an earlier request under the same key). */
  readonly replayed: number
  /** Records refused by the service, as dead letters. */
  readonly rejected: ReadonlyArray<DeadLetter>
  /** Records refused before they were stored (a 400, or one record over the size limit). */
  readonly refused: ReadonlyArray<DeadLetter>
}

/**
 * A unit after delivery: the elements it covered, its dead letters (to be written before it
 * is committed) and, for a batch, what the service did with it.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeliveredUnit {
  readonly partition: string
  readonly fromSeq: number
  readonly toSeq: number
  /** The position of the element numbered `toSeq`. */
  readonly lastPosition: Position
  readonly letters: ReadonlyArray<DeadLetter>
  /** Undefined for a lone dead letter. */
  readonly outcome: Delivered | undefined
}
