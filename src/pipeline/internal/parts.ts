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
 * its key is terminal. Each part has its own idempotency key, named by the part and the
 * positions of its records, so a part can never share a key with the whole batch, with the
 * other part, or with a part of other records (after a restart the same batch may split
 * otherwise, or not at all: its parts then carry other keys, and a record sent again under
 * another key is stored again, which on a keyed dataset is the same row written once more).
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
  readonly keys: ReadonlySet<KeyValue>
  /**
   * Waits until the held records may go: `true`, or `false` when the batch's partition was
   * taken away meanwhile (they are then not sent, and the batch is not delivered).
   */
  readonly ready: Effect.Effect<boolean>
  /** Runs once the free records were taken (the scheduler may let their keys go then). */
  readonly freeAccepted: Effect.Effect<void>
  /** Runs once the free records' ingestions are terminal: later batches of their keys may go. */
  readonly freeEnded: Effect.Effect<void>
}

/**
 * Whether some of the records may go before the others: at least one record's key is not
 * held back.
 *
 * @since 0.3.0
 * @category utils
 */
export const hasFreeRecords = (records: ReadonlyArray<BatchRecord>, held: ReadonlySet<KeyValue>): boolean => {
  for (let i = 0; i < records.length; i++) {
    const key = records[i]!.key
    if (key === undefined || !held.has(key)) return true
  }
  return false
}

/**
 * The records that may go now and those that wait, each in the batch's order.
 *
 * @since 0.3.0
 * @category utils
 */
export const splitRecords = (
  records: ReadonlyArray<BatchRecord>,
  held: ReadonlySet<KeyValue>
): { readonly free: ReadonlyArray<BatchRecord>; readonly held: ReadonlyArray<BatchRecord> } => {
  const free: Array<BatchRecord> = []
  const waiting: Array<BatchRecord> = []
  for (const record of records) {
    if (record.key !== undefined && held.has(record.key)) waiting.push(record)
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
 * Sends the free records now and the held ones once they may go; `accepted` runs once both
 * parts were taken. Answers nothing when the held records were not sent (the partition was
 * taken away): the batch is then not delivered.
 *
 * @since 0.3.0
 * @category utils
 */
export const deliverInParts = (
  delivery: Delivery,
  batch: Batch,
  heldBack: HeldBack,
  accepted: Effect.Effect<void>
): Effect.Effect<Delivered | undefined, DeliveryError> =>
  Effect.suspend(() => {
    const parts = splitRecords(batch.records, heldBack.keys)
    let taken = 0
    const oneTaken = Effect.suspend(() => (++taken === 2 ? accepted : Effect.void))
    const free = Effect.tap(
      deliverBatch(delivery, { ...batch, records: parts.free }, Effect.zipRight(heldBack.freeAccepted, oneTaken), partName("free", parts.free)),
      () => heldBack.freeEnded
    )
    const held = Effect.flatMap(heldBack.ready, (go) =>
      go
        ? deliverBatch(delivery, { ...batch, records: parts.held }, oneTaken, partName("held", parts.held))
        : Effect.succeed(undefined))
    return Effect.map(
      Effect.all([free, held], { concurrency: 2 }),
      ([a, b]) => (b === undefined ? undefined : mergeDelivered(a, b))
    )
  })
