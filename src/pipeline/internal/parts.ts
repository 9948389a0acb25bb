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
import { Effect, type Tracer } from "effect"
import type { Calls, Cancel } from "../../client/transport.js"
import { type Delivered, type Delivery, DeliveryError, deliverPartNow, postingOf } from "../deliver.js"
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
   * Calls `go` once the free records may go (at once, unless a recorded split's free keys are
   * held after a restart): with `true`, or `false` when the partition was taken away meanwhile.
   */
  readonly whenFreeReady: (go: (mayGo: boolean) => void) => Cancel
  /**
   * Calls `go` once the held records may go: with `true`, or `false` when the batch's
   * partition was taken away meanwhile (they are then not sent, and the batch is not delivered).
   */
  readonly whenReady: (go: (mayGo: boolean) => void) => Cancel
  /** Called once the free records were taken (the scheduler may let their keys go then). */
  readonly freeAccepted: () => void
  /** Called once the free records' ingestions are terminal: later batches of their keys may go. */
  readonly freeEnded: () => void
  /**
   * Called once the free records' ingestions are known to have succeeded, before their details
   * are read (and before `freeEnded`): later batches of their keys may go already.
   */
  readonly freeSucceeded: () => void
  /** The same for the held records: later batches of the held keys may go. */
  readonly heldSucceeded: () => void
}

/**
 * Waits for one of `HeldBack`'s calls: what it is called with.
 *
 * @since 0.3.0
 * @category utils
 */
export const awaitCall = (when: (go: (mayGo: boolean) => void) => Cancel): Effect.Effect<boolean> =>
  Effect.async<boolean>((resume) => {
    const cancel = when((mayGo) => resume(Effect.succeed(mayGo)))
    return Effect.sync(cancel)
  })

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
 * away): the batch is then not delivered. One `Effect.async` drives both parts in callback
 * form: two fibers a batch (the parts under `Effect.all`) and the batch's own, alive while its
 * parts wait and are followed, were a tenth of a keyed run's CPU (`bench:tracking` (b)).
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
  Effect.flatMap(postingOf(delivery), ({ calls, span }) =>
    Effect.async<Delivered | undefined, DeliveryError>((resume) => {
      const cancel = deliverInPartsNow(delivery, calls, span, batch, heldBack, accepted, (outcome) =>
        resume(outcome instanceof DeliveryError ? Effect.fail(outcome) : Effect.succeed(outcome)))
      return Effect.sync(cancel)
    }))

/**
 * `deliverInParts` in callback form, posting through `calls`: `done` is called once, with the
 * outcome, nothing (not delivered) or the failure, unless cancelled.
 *
 * @since 0.3.0
 * @category utils
 */
export const deliverInPartsNow = (
  delivery: Delivery,
  calls: Calls,
  span: Tracer.AnySpan | undefined,
  batch: Batch,
  heldBack: HeldBack,
  accepted: () => void,
  done: (outcome: Delivered | undefined | DeliveryError) => void
): Cancel => {
  const parts = splitRecords(batch.records, heldBack.offsets)
  // A part with no records was never sent (only a recorded split can leave one empty).
  let taken = parts.free.length === 0 || parts.held.length === 0 ? 1 : 0
  const oneTaken = () => {
    if (++taken === 2) accepted()
  }
  let over = false
  const cancels: Array<Cancel> = []
  const outcomes: [Delivered | undefined, Delivered | undefined] = [undefined, undefined]
  let left = 2
  const ended = (which: 0 | 1, outcome: Delivered | DeliveryError | undefined) => {
    if (over) return
    if (outcome instanceof DeliveryError) {
      over = true
      for (const cancel of cancels) cancel()
      return done(outcome)
    }
    outcomes[which] = outcome
    if (--left > 0) return
    over = true
    const [free, held] = outcomes
    done(free === undefined || held === undefined ? undefined : mergeDelivered(free, held))
  }
  const send = (which: 0 | 1, records: ReadonlyArray<BatchRecord>, onTaken: () => void, sent: (outcome: Delivered | DeliveryError) => void) => {
    const name = partName(which === 0 ? "free" : "held", records)
    const succeeded = which === 0 ? heldBack.freeSucceeded : heldBack.heldSucceeded
    cancels.push(deliverPartNow(delivery, calls, { ...batch, records, held: undefined }, name, span, onTaken, sent, succeeded))
  }
  if (parts.free.length === 0) {
    heldBack.freeEnded()
    ended(0, none)
  } else {
    cancels.push(heldBack.whenFreeReady((go) => {
      if (over) return
      if (!go) return ended(0, undefined)
      send(0, parts.free, () => {
        heldBack.freeAccepted()
        oneTaken()
      }, (outcome) => {
        if (!(outcome instanceof DeliveryError)) {
          letGoOfFree(batch, parts)
          heldBack.freeEnded()
        }
        ended(0, outcome)
      })
    }))
  }
  if (!over) {
    cancels.push(heldBack.whenReady((go) => {
      if (over) return
      if (!go) return ended(1, undefined)
      if (parts.held.length === 0) return ended(1, none)
      send(1, parts.held, oneTaken, (outcome) => ended(1, outcome))
    }))
  }
  return () => {
    over = true
    for (const cancel of cancels) cancel()
  }
}

/**
 * Once the free part ended (its rejected records are in its outcome), the batch keeps only its
 * held records: a batch waiting for its held part is then as small as that part, and the
 * scheduler gives back the rest of its place and bytes (`placeShare`). What follows reads the
 * batch's coordinates, never its records.
 */
const letGoOfFree = (batch: Batch, parts: { readonly free: ReadonlyArray<BatchRecord>; readonly held: ReadonlyArray<BatchRecord> }) => {
  const records = batch.records as Array<BatchRecord>
  records.length = 0
  for (const record of parts.held) records.push(record)
  ;(parts.free as Array<BatchRecord>).length = 0
}

const none: Delivered = { ingestionIds: [], sent: 0, accepted: 0, replayed: 0, rejected: [], refused: [] }
