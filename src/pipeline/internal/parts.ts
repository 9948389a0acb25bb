/**
 * A keyed batch sent in two parts: the records whose key values no earlier unfinished batch
 * holds go at once; those whose keys one holds go once it is terminal (`conflicts.ts`
 * `blocked`). Each part holds its own keys for later batches, so the free part's keys are
 * released when it ends, whatever the held part waits for. The batch is delivered (and may be
 * committed) when both parts are.
 *
 * Why: waiting whole, a batch that shares one key with the batch before it waits one
 * processing time of the service; a stream where neighbouring batches share a key now and
 * then (updates of a few hot keys among many) went one batch per processing time
 * (`bench:tracking`, keyed, 1% of each batch's keys shared with the batch before, a service
 * taking 1-2 s per ingestion: 53 records/s). In parts, only the shared keys' records wait.
 *
 * The order of each key is kept: a record is still never sent before every earlier record of
 * its key is terminal. Which records wait depends on timing (which earlier batches are still
 * pending), so the split is recorded with the batch's cut (`BatchCut.held`: the offsets of the
 * second part) before the first part is sent, and each part's idempotency key names the part
 * and the offsets of its records. After a restart the batch goes in the very same parts under
 * the same keys: a part that was applied is answered as a replay, never applied again behind a
 * later batch of its key. (A first version decided the split afresh after a restart; the
 * batch could then go whole under a new key and be applied again after a later batch of the
 * same key had been applied and was only replayed: the older version won.)
 *
 * Batches with children of a `flatMap` (records sharing an offset) always go whole.
 *
 * @since 0.3.0
 * @internal
 */
import { Effect } from "effect"
import { type Delivered, type Delivery, deliverBatch, type DeliveryError } from "../deliver.js"
import type { Batch, BatchRecord, KeyValue } from "../vocabulary.js"

/**
 * The records of a batch that must wait: their key values an earlier unfinished batch holds.
 *
 * @since 0.3.0
 * @category models
 */
export interface HeldBack {
  /** The offsets of the records of the second part. */
  readonly offsets: ReadonlySet<number>
  /**
   * Waits until the free records may go (at once, unless a recorded split's free keys are
   * held after a restart): `true`, or `false` when the partition was taken away meanwhile.
   */
  readonly freeReady: Effect.Effect<boolean>
  /**
   * Waits until the held records may go: `true`, or `false` when the batch's partition was
   * taken away meanwhile (they are then not sent, and the batch is not delivered).
   */
  readonly ready: Effect.Effect<boolean>
  /** Called once the free records were taken (the scheduler may let their keys go then). */
  readonly freeAccepted: () => void
  /** Runs once the free records' ingestions are terminal: later batches of their keys may go. */
  readonly freeEnded: Effect.Effect<void>
}

/**
 * The offsets of the records that must wait, when a batch may go in parts: some of its
 * records' keys are `held`, some are not, and no record is a child of a `flatMap`. Undefined
 * when it goes whole.
 *
 * @since 0.3.0
 * @category utils
 */
export const heldOffsets = (records: ReadonlyArray<BatchRecord>, held: ReadonlySet<KeyValue>): Array<number> | undefined => {
  const offsets: Array<number> = []
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!
    if (record.position.child !== undefined) return undefined
    if (record.key !== undefined && held.has(record.key)) offsets.push(record.position.offset)
  }
  return offsets.length === 0 || offsets.length === records.length ? undefined : offsets
}

/**
 * The records that may go now and those that wait (at `offsets`), each in the batch's order.
 *
 * @since 0.3.0
 * @category utils
 */
export const splitRecords = (
  records: ReadonlyArray<BatchRecord>,
  offsets: ReadonlySet<number>
): { readonly free: ReadonlyArray<BatchRecord>; readonly held: ReadonlyArray<BatchRecord> } => {
  const free: Array<BatchRecord> = []
  const waiting: Array<BatchRecord> = []
  for (const record of records) {
    if (offsets.has(record.position.offset)) waiting.push(record)
    else free.push(record)
  }
  return { free, held: waiting }
}

/**
 * A part's name in its idempotency key: which part, and where each of its records sits.
 *
 * @since 0.3.0
 * @category utils
 */
export const partName = (which: "free" | "held", records: ReadonlyArray<BatchRecord>): string =>
  `${which}:${records.map((r) => (r.position.child === undefined ? r.position.offset : `${r.position.offset}.${r.position.child.index}`)).join(",")}`

/**
 * Two parts' outcomes as the batch's.
 *
 * @since 0.3.0
 * @category utils
 */
export const mergeDelivered = (a: Delivered, b: Delivered): Delivered => ({
  ingestionIds: [...a.ingestionIds, ...b.ingestionIds],
  sent: a.sent + b.sent,
  accepted: a.accepted + b.accepted,
  replayed: a.replayed + b.replayed,
  rejected: [...a.rejected, ...b.rejected],
  refused: [...a.refused, ...b.refused]
})

/**
 * Sends the free records and the held ones, each once they may go; `accepted` runs once both
 * parts were taken. Answers nothing when either part was not sent (the partition was taken
 * away): the batch is then not delivered.
 *
 * @since 0.3.0
 * @category utils
 */
export const deliverInParts = (
  delivery: Delivery,
  batch: Batch,
  heldBack: HeldBack,
  accepted: () => void
): Effect.Effect<Delivered | undefined, DeliveryError> =>
  Effect.suspend(() => {
    const parts = splitRecords(batch.records, heldBack.offsets)
    // A part with no records was never sent (only a recorded split can leave one empty).
    let taken = parts.free.length === 0 || parts.held.length === 0 ? 1 : 0
    const oneTaken = () => {
      if (++taken === 2) accepted()
    }
    const none: Delivered = { ingestionIds: [], sent: 0, accepted: 0, replayed: 0, rejected: [], refused: [] }
    const free = parts.free.length === 0 ? Effect.zipRight(heldBack.freeEnded, Effect.succeed(none)) : Effect.flatMap(heldBack.freeReady, (go) =>
      !go ? Effect.succeed(undefined) : Effect.tap(
        deliverBatch(delivery, { ...batch, records: parts.free, held: undefined }, () => {
          heldBack.freeAccepted()
          oneTaken()
        }, partName("free", parts.free)),
        () => heldBack.freeEnded
      ))
    const held = Effect.flatMap(heldBack.ready, (go) =>
      !go ? Effect.succeed(undefined) : parts.held.length === 0 ? Effect.succeed(none) :
      deliverBatch(delivery, { ...batch, records: parts.held, held: undefined }, oneTaken, partName("held", parts.held)))
    return Effect.map(
      Effect.all([free, held], { concurrency: 2 }),
      ([a, b]) => (a === undefined || b === undefined ? undefined : mergeDelivered(a, b))
    )
  })
