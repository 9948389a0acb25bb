/**
 * The scheduler of batches between the batcher and the service: it admits batches up to a
 * bound on what is pending (batches, and bytes of records held for their dead letters), keeps
 * conflicting batches of a keyed dataset in order (`conflicts.ts`), and runs each batch's
 * delivery (post, follow, complete), knowing which partition each belongs to (to drain a
 * revoked one): in callback form, without a fiber, when the run gives one (`deliverNow`: an
 * untraced run nobody asked batch events of) and the batch goes whole; else on a fiber of its
 * own.
 *
 * A batch only some of whose records share keys with an earlier unfinished batch goes in two
 * parts (`parts.ts`): the others at once, those once the earlier batch is terminal. The split
 * is recorded with the batch's cut before either part goes. A batch closed at a recorded cut
 * (after a restart or a rebalance) goes as recorded: in the same parts, or whole; it is never
 * split afresh. Fresh and recorded splits are entered the same way, each part waiting for the
 * holders of its own keys (after a restart a recorded split's free keys may be held too).
 *
 * The bound on pending batches is the pull loop's back-pressure: `admit` waits for room.
 * Requests in flight are bounded apart, by the concurrency limit around the exchanges, so a
 * batch that is followed to its end holds no place among them.
 *
 * The caller races its work against `failed`: the first failure stops it, and the scope's end
 * interrupts (or cancels) the rest. Why no fiber where it can be helped: a fork and its end
 * cost 20-40 µs of CPU, more than the rest of a batch's way (`bench:pipeline` went from 0.62
 * to 0.70 of the raw sender without them). Where a fiber is needed, one per batch:
 * `Stream.mapEffect` with concurrency cost ten times as much (measured when this was a
 * semaphore of `concurrency` deliveries).
 *
 * @since 0.2.0
 * @internal
 */
import { Cause, Deferred, Duration, Effect, Exit, Fiber, FiberId, FiberSet, type Scope } from "effect"
import type { Cancel } from "../../client/transport.js"
import { batchCut } from "../batch.js"
import type { Batch, BatchCut, KeyValue } from "../vocabulary.js"
import { Conflicts, type Ticket } from "./conflicts.js"
import { groupedWrites } from "./groupedWrites.js"
import { type HeldBack, heldOffsets } from "./parts.js"

/**
 * Opened once, when a batch (or the free part of one) may go: awaited by a fiber, or called
 * back. Not a `Deferred`: making one copies Effect's whole prototype (see `PendingRoom`), and
 * a keyed run makes one or two a batch.
 */
class Gate {
  private opened = false
  private readonly waiters = new Set<() => void>()

  /** Calls `then` once open (in a microtask of its own: never inside the opener's bookkeeping). */
  when(then: () => void): Cancel {
    if (this.opened) {
      queueMicrotask(then)
      return () => {}
    }
    const waiter = () => then()
    this.waiters.add(waiter)
    return () => {
      this.waiters.delete(waiter)
    }
  }

  /** Waits until open (made only for a batch delivered on a fiber). */
  wait(): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      const cancel = this.when(() => resume(Effect.void))
      return Effect.sync(cancel)
    })
  }

  open(): void {
    if (this.opened) return
    this.opened = true
    for (const waiter of this.waiters) queueMicrotask(waiter)
    this.waiters.clear()
  }
}

/**
 * How much may be pending at once.
 *
 * @since 0.2.0
 * @category models
 */
export interface PendingBound {
  readonly batches: number
  readonly bytes: number
  /**
   * Of those, how many may be not yet accepted (waiting for an earlier conflicting batch, or
   * for a place among the requests, or being posted): what is pulled ahead of the sends.
   */
  readonly unsent: number
}

/**
 * When a batch no longer holds back the later batches that share a key value with it: once its
 * ingestion is terminal (safe with any service), or once the service accepted it (enough for a
 * service that applies a dataset's accepted ingestions in the order it accepted them, as the
 * reference server does; a chain of batches each sharing a key with the next then costs one
 * request each, not one processing time each).
 *
 * @since 0.2.0
 * @category models
 */
export type OrderRelease = "terminal" | "accepted"

/**
 * @since 0.2.0
 * @category models
 */
export interface Scheduler<E> {
  /**
   * Waits for room, then enters the batch; its delivery starts when nothing earlier conflicts
   * (fails when a split could not be recorded).
   */
  readonly admit: (batch: Batch) => Effect.Effect<void, E>
  /**
   * Starts nothing more of the partition, drops its batches still waiting, and waits for its
   * deliveries under way; those still running after `timeout` are interrupted.
   */
  readonly drain: (partition: string, timeout: Duration.Duration) => Effect.Effect<void>
  /** Waits until every admitted batch is delivered. */
  readonly finished: Effect.Effect<void>
  /** Fails with the first failure. */
  readonly failed: Effect.Effect<never, E>
  readonly hasFailed: Effect.Effect<boolean>
  /** Admitted and not yet delivered. */
  readonly admitted: () => number
  /** Of those, held back by an earlier conflicting batch. */
  readonly waiting: () => number
  /** Of those, not yet accepted by the service (waiting, being sent or retried). */
  readonly unsent: () => number
  /** How many more batches could be admitted now without waiting, by count. */
  readonly room: () => number
}

/**
 * A delivery in callback form: `done` is called once, with nothing when the batch was
 * delivered and completed, or with the cause of its failure; cancelled, it calls nothing.
 * `succeeded` is for a batch that goes whole: called once its ingestions are known to have
 * succeeded, before their details are read (`deliverBatchNow`).
 *
 * @since 0.3.0
 * @category models
 */
export type DeliverNow<E> = (
  batch: Batch,
  accepted: () => void,
  heldBack: HeldBack | undefined,
  done: (failure: Cause.Cause<E> | undefined) => void,
  succeeded: () => void
) => Cancel

interface Slot {
  readonly batch: Batch
  /** Opened when the batch may go (undefined: it could go when admitted). */
  ready: Gate | undefined
  /** Starts a delivery in callback form held back until now (called when the batch may go). */
  start: (() => void) | undefined
  fiber: Fiber.RuntimeFiber<void, unknown> | undefined
  /** Stops a delivery in callback form under way. */
  cancel: (() => void) | undefined
  /** Completed when a delivery in callback form ends (made only when a drain waits for it). */
  ended: Deferred.Deferred<void> | undefined
  /** Still holds its place among the unsent batches. */
  unsent: boolean
  /** Held back by an earlier conflicting batch now (whole, or the records of its shared keys). */
  waiting: boolean
  /**
   * It goes in two parts (`parts.ts`): the offsets of the held records, and the ticket of the
   * others, done when their part is (the slot's own ticket is the held part's). The free
   * ticket's item is a gate of its own: a fresh split's free keys wait for nothing, but after a
   * restart a recorded split's free keys may be held by an earlier batch sent again.
   */
  parts: {
    readonly held: ReadonlySet<number>
    readonly free: Ticket<Slot>
    /** The batch's records, both parts. */
    readonly records: number
    /** Completes once the split is recorded (a fresh split): neither part goes before. */
    readonly recorded: Effect.Effect<void, unknown> | undefined
  } | undefined
  started: boolean
  /** The KiB of records it holds under the bound (its held records' share once its free part ended). */
  permits: number
  /** Its place under the bound, in units (a share once its free part ended). */
  units: number
}

const kibibytes = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024))

/**
 * The primary-key values of a batch's records (none for a dataset without a key); a value may
 * repeat (`Conflicts` counts each earlier batch once).
 */
const batchKeys = (batch: Batch): ReadonlyArray<KeyValue> => {
  const records = batch.records
  if (records.length === 0 || records[0]!.key === undefined) return []
  const keys: Array<KeyValue> = new Array(records.length)
  let n = 0
  for (let i = 0; i < records.length; i++) {
    const key = records[i]!.key
    if (key !== undefined) keys[n++] = key
  }
  keys.length = n
  return keys
}

/**
 * The room left under a `PendingBound`, counted synchronously: one gate for the three bounds.
 * Three Effect semaphores (batches, bytes, unsent) cost six acquire/release effects a batch at
 * admission and at the end, a measurable share of the runtime's steps a batch (about 227 steps
 * and 1.7 fibers a batch in all, profiled on `bench:pipeline`); the counters cost nothing, and a
 * waiter is woken only when the admission actually had to wait.
 *
 * A waiter is a callback, not a `Deferred`: making a `Deferred` copies Effect's whole prototype
 * into a new object (about 15 µs), and the pull loop waited for room 1.5 times a batch.
 *
 * @since 0.2.0
 * @category models
 */
export class PendingRoom {
  /** Places taken, in units of `placeUnits` a whole batch. */
  private units = 0
  /** Batches admitted and not yet ended, whatever place they keep. */
  private batches = 0
  private kibibytes = 0
  private unsent = 0
  private readonly waiters = new Set<Waiter>()

  constructor(readonly bound: { readonly batches: number; readonly kibibytes: number; readonly unsent: number }) {}

  /** Batches admitted and not yet ended. */
  get admitted(): number {
    return this.batches
  }

  /** Of those, not yet accepted. */
  get unaccepted(): number {
    return this.unsent
  }

  /**
   * Whether a batch of `kibibytes` fits now (one batch always fits into an empty room): a whole
   * place under the bound, a place among the unsent, room for its bytes, and fewer than
   * `aliveFactor` times the bound of batches alive (those keeping a part's place included).
   */
  fits(kibibytes: number): boolean {
    return this.units + placeUnits <= this.bound.batches * placeUnits && this.unsent < this.bound.unsent &&
      this.batches < this.bound.batches * aliveFactor &&
      (this.kibibytes + kibibytes <= this.bound.kibibytes || this.batches === 0)
  }

  /** How many more batches would fit now, by count (the bytes are checked at each entry). */
  get free(): number {
    return Math.max(
      0,
      Math.min(
        Math.floor((this.bound.batches * placeUnits - this.units) / placeUnits),
        this.bound.unsent - this.unsent,
        this.bound.batches * aliveFactor - this.batches
      )
    )
  }

  /**
   * Whether a batch of `kibibytes` fits with room to spare among the unsent (a quarter of
   * their bound), or the room is empty: what an admission that had to wait waits for, so that
   * it is woken once for several batches, not once a batch (the places among the unsent are
   * taken back one acceptance at a time).
   */
  fitsWithSpare(kibibytes: number): boolean {
    return this.fits(kibibytes) && (this.unsent <= this.bound.unsent - Math.max(1, this.bound.unsent >> 2) || this.batches === 0)
  }

  enter(kibibytes: number): void {
    this.batches++
    this.units += placeUnits
    this.unsent++
    this.kibibytes += kibibytes
  }

  /** A batch was accepted: its place among the unsent is free. */
  sent(): void {
    this.unsent--
    this.opened()
  }

  /**
   * A batch gives back `units` of its place and `kibibytes` of its bytes and keeps the rest (a
   * batch in parts whose free part ended keeps its held records' share: `placeShare`).
   */
  giveBack(units: number, kibibytes: number): void {
    this.units -= units
    this.kibibytes -= kibibytes
    this.opened()
  }

  /** A batch ended, keeping `units` of a place (a whole one unless it shrank); `unsent`: it had not been accepted. */
  leave(kibibytes: number, unsent: boolean, units: number = placeUnits): void {
    this.batches--
    this.units -= units
    this.kibibytes -= kibibytes
    if (unsent) this.unsent--
    this.opened()
  }

  /**
   * Waits until `ready()` holds: at once when it does, else until room opens and `woken()`
   * holds (by default `ready()`), checked each time room opens.
   */
  until(ready: () => boolean, woken: () => boolean = ready): Effect.Effect<void> {
    const wait = Effect.async<void>((resume) => {
      const waiter: Waiter = { when: woken, wake: () => resume(Effect.void) }
      this.waiters.add(waiter)
      return Effect.sync(() => {
        this.waiters.delete(waiter)
      })
    })
    const loop: Effect.Effect<void> = Effect.suspend(() => (ready() ? Effect.void : Effect.zipRight(wait, loop)))
    return loop
  }

  private opened(): void {
    if (this.waiters.size === 0) return
    for (const waiter of this.waiters) {
      if (waiter.when()) {
        this.waiters.delete(waiter)
        waiter.wake()
      }
    }
  }
}

/** A whole batch's place under the bound, in units (a part's share is counted in them). */
const placeUnits = 64

/**
 * How many batches may be alive per place of the bound: batches in parts whose held records
 * wait keep only their share of a place, and this bounds how many of them there can be.
 */
const aliveFactor = 2

/**
 * The place and bytes a batch in parts keeps once its free part ended: its held records' share
 * (at least one unit and one KiB).
 *
 * @since 0.3.0
 * @category utils
 */
export const placeShare = (kibibytes: number, held: number, records: number): { readonly units: number; readonly kibibytes: number } => ({
  units: Math.min(placeUnits, Math.max(1, Math.ceil((placeUnits * held) / records))),
  kibibytes: Math.min(kibibytes, Math.max(1, Math.ceil((kibibytes * held) / records)))
})

interface Waiter {
  readonly when: () => boolean
  readonly wake: () => void
}

/**
 * A scheduler whose fibers live as long as the scope; `deliver` runs once per batch.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeScheduler = <E>(options: {
  readonly bound: PendingBound
  readonly release: OrderRelease
  /**
   * Delivers a batch; runs `accepted` once the service took it (or refused it). With
   * `heldBack`, the batch's records of those keys must wait for its `ready`; the others may go.
   */
  readonly deliver: (batch: Batch, accepted: () => void, heldBack: HeldBack | undefined, succeeded: () => void) => Effect.Effect<void, E>
  /**
   * Delivers a batch in callback form, without a fiber (a fiber a batch, its start and its
   * end, cost more than the rest of the batch's way in the runtime: measured on
   * `bench:pipeline`; alive while a batch in parts waits and is followed, some 3,500 fibers
   * held 100 MB in a keyed run, `bench:tracking` (b)), whole or in parts as `deliver`.
   */
  readonly deliverNow?: DeliverNow<E> | undefined
  /** Records batches' cuts with the splits they go in (several at once), before either part is sent. */
  readonly recordParts: (cuts: ReadonlyArray<BatchCut>) => Effect.Effect<void, E>
  /** Whether there is room to record a split (none: the batch goes whole); default yes. */
  readonly roomForParts?: ((cut: BatchCut) => boolean) | undefined
  /**
   * Whether the partition is still the run's, asked again before each part of a batch goes;
   * default yes. A partition is taken away (a Kafka rebalance) before its drain: meanwhile the
   * batches of its that were not sent end without being sent, and in ending let later batches
   * of their keys go. A whole batch asks at its start (`deliver`), but a held part had asked
   * long before, when its free part went: it went out ahead of the earlier batch it had waited
   * for, which the partition's next owner (this member again, after the rebalance) sent later,
   * so the older values were applied last (`test/cli/sink-keyed-chaos.test.ts`, hot keys).
   */
  readonly owned?: ((partition: string) => boolean) | undefined
}): Effect.Effect<Scheduler<E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const conflicts = new Conflicts<Slot>()
    const running = yield* FiberSet.make<void, E>()
    const room = new PendingRoom({
      batches: options.bound.batches,
      kibibytes: kibibytes(options.bound.bytes),
      unsent: options.bound.unsent
    })
    // Recorded before the batch's permits come back, so no failure can go unseen.
    const failed = yield* Deferred.make<never, E>()
    const byPartition = new Map<string, Set<Ticket<Slot>>>()
    const closed = new Set<string>()
    const splits = yield* groupedWrites(options.recordParts)
    const runInScope = yield* FiberSet.runtime(running)<never>()
    let waiting = 0

    const free = (tickets: ReadonlyArray<Ticket<Slot>>) => {
      for (const ticket of tickets) {
        const slot = ticket.item
        if (slot.waiting) {
          slot.waiting = false
          waiting--
        }
        slot.ready?.open()
        const start = slot.start
        if (start !== undefined) {
          slot.start = undefined
          // Not inside the caller's bookkeeping (another batch's end): in a microtask of its own.
          queueMicrotask(start)
        }
      }
    }

    /** A batch's place among the unsent goes back: once it was taken, or its first part was. */
    const placeSent = (slot: Slot) => {
      if (!slot.unsent) return
      slot.unsent = false
      room.sent()
    }

    /** The batch (its last part) was accepted: its place goes back (and, in `accepted` order, its keys). */
    const accepted = (ticket: Ticket<Slot>) => () => {
      placeSent(ticket.item)
      if (options.release === "accepted") free(conflicts.done(ticket))
    }

    /**
     * The batch's ingestions (its held part's, in parts) are known to have succeeded: its keys
     * go, before their details are read. Terminal is terminal; what the details add (counts,
     * rejected records as dead letters) changes nothing of the order. Held until the details,
     * later batches of its keys waited for the detail reads' queue as well: in a keyed run in
     * parts against a service taking 1-2 s, the lists showed thousands ended whose details
     * were still to be read (`bench:tracking` (b)). A failed ingestion keeps its keys until
     * its detail stops the run.
     */
    const succeeded = (ticket: Ticket<Slot>) => () => free(conflicts.done(ticket))

    const finish = (ticket: Ticket<Slot>) => {
      byPartition.get(ticket.partition)?.delete(ticket)
      const slot = ticket.item
      if (slot.waiting) {
        slot.waiting = false
        waiting--
      }
      const unsentPlace = slot.unsent
      slot.unsent = false
      if (slot.parts !== undefined) free(conflicts.done(slot.parts.free))
      free(conflicts.done(ticket))
      room.leave(slot.permits, unsentPlace, slot.units)
      // Nothing left to give back: a free part said ended after this (a cancelled delivery's
      // late answer) gives back nothing.
      slot.units = 0
      slot.permits = 0
      if (slot.ended !== undefined) Deferred.unsafeDone(slot.ended, Exit.void)
    }

    /** Deliveries in callback form under way (stopped when the scope ends). */
    const underWay = new Set<Slot>()

    /** Starts a batch's delivery in callback form; it ends through `finish`, as a fiber would. */
    const startNow = (ticket: Ticket<Slot>, deliverNow: DeliverNow<E>) => {
      const slot = ticket.item
      slot.started = true
      if (closed.has(ticket.partition)) return finish(ticket)
      let over = false
      underWay.add(slot)
      const cancel = deliverNow(slot.batch, accepted(ticket), slot.parts === undefined ? undefined : heldBackOf(ticket), (failure) => {
        if (over) return
        over = true
        underWay.delete(slot)
        slot.cancel = undefined
        // Recorded before the batch's room comes back, so no failure can go unseen.
        if (failure !== undefined && !Cause.isInterruptedOnly(failure)) Deferred.unsafeDone(failed, Exit.failCause(failure))
        finish(ticket)
      }, succeeded(ticket))
      if (!over) {
        slot.cancel = () => {
          if (over) return
          over = true
          underWay.delete(slot)
          slot.cancel = undefined
          cancel()
          finish(ticket)
        }
      }
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const slot of [...underWay]) slot.cancel?.()
      })
    )

    /** What a batch in parts is told of its two parts: the held offsets, when each may go, what to say when. */
    const heldBackOf = (ticket: Ticket<Slot>): HeldBack => {
      const parts = ticket.item.parts!
      const freeTicket = parts.free
      const freeDone = () => free(conflicts.done(freeTicket))
      // Its free records are let go (their dead letters are settled): the batch keeps only its
      // held records' share of its place and bytes, so that later batches are read while the
      // held ones wait. Held whole, a batch in parts kept its place for two processing times
      // (its free part's, then its held part's, sent once the batch before it ended), and the
      // bound let half as many records through as for batches that go whole (bench:tracking,
      // terminal against processing: 0.56-0.63).
      const freeEnded = () => {
        freeDone()
        const slot = ticket.item
        const share = placeShare(slot.permits, parts.held.size, parts.records)
        if (share.units >= slot.units && share.kibibytes >= slot.permits) return
        room.giveBack(slot.units - share.units, slot.permits - share.kibibytes)
        slot.units = share.units
        slot.permits = share.kibibytes
      }
      // The held part waits like an accepted batch's ingestion: it holds no place among the
      // unsent (those bound what is pulled ahead of the sends; the pending bound still holds).
      // Held there, 32 batches waiting for their held parts capped a keyed run at 1.5k
      // records/s against a service taking 1-2 s (bench:tracking, terminal).
      const freeTaken = () => placeSent(ticket.item)
      const stillOurs = () => !closed.has(ticket.partition) && (options.owned?.(ticket.partition) ?? true)
      const whenMayGo = (gate: Gate | undefined) => (then: (mayGo: boolean) => void): Cancel => {
        if (gate !== undefined) return gate.when(() => then(stillOurs()))
        then(stillOurs())
        return () => {}
      }
      return {
        offsets: parts.held,
        whenFreeReady: whenMayGo(freeTicket.item.ready),
        whenReady: whenMayGo(ticket.item.ready),
        freeAccepted: options.release === "accepted"
          ? () => {
            freeTaken()
            freeDone()
          }
          : freeTaken,
        freeEnded,
        freeSucceeded: freeDone,
        heldSucceeded: succeeded(ticket)
      }
    }

    const deliverWhenReady = (ticket: Ticket<Slot>): Effect.Effect<void, E> => {
      const ready = ticket.item.ready
      const go = (heldBack: HeldBack | undefined) =>
        Effect.suspend(() => {
          ticket.item.started = true
          return closed.has(ticket.partition) ? Effect.void : options.deliver(ticket.item.batch, accepted(ticket), heldBack, succeeded(ticket))
        })
      const parts = ticket.item.parts
      if (parts === undefined) return ready === undefined ? go(undefined) : Effect.zipRight(ready.wait(), go(undefined))
      const heldBack = heldBackOf(ticket)
      return parts.recorded === undefined ? go(heldBack) : Effect.zipRight(parts.recorded as Effect.Effect<void, E>, go(heldBack))
    }

    /**
     * Enters a batch's two parts: the free keys' ticket first, on a gate of its own, then the
     * held keys' (the slot's). A key in both (a recorded split over other records) waits in
     * the held ticket for the free one.
     */
    const enterInParts = (slot: Slot, held: ReadonlyArray<number>, recorded: Effect.Effect<void, unknown> | undefined) => {
      const batch = slot.batch
      const offsets = new Set(held)
      const freeKeys: Array<KeyValue> = []
      const heldKeys: Array<KeyValue> = []
      for (const record of batch.records) {
        if (record.key !== undefined) (offsets.has(record.position.offset) ? heldKeys : freeKeys).push(record.key)
      }
      const gate: Slot = { ...slot, ready: undefined, start: undefined, waiting: false, parts: undefined }
      const freeTicket = conflicts.add(gate, batch.partition, freeKeys)
      if (!conflicts.ready(freeTicket)) gate.ready = new Gate()
      slot.parts = { held: offsets, free: freeTicket, records: batch.records.length, recorded }
      return enter(slot, conflicts.add(slot, batch.partition, heldKeys))
    }

    const admit = (batch: Batch): Effect.Effect<void, E> =>
      Effect.suspend(() => {
        const permits = kibibytes(batch.bytes)
        return Effect.zipRight(
          room.until(() => room.fits(permits), () => room.fitsWithSpare(permits)),
          Effect.suspend(() => {
            room.enter(permits)
            closed.delete(batch.partition)
            const slot: Slot = {
              batch,
              ready: undefined,
              start: undefined,
              fiber: undefined,
              cancel: undefined,
              ended: undefined,
              unsent: true,
              waiting: false,
              parts: undefined,
              started: false,
              permits,
              units: placeUnits
            }
            const keys = batchKeys(batch)
            // Recorded in parts before (a restart, a rebalance): the same parts again, nothing to record.
            if (batch.held !== undefined) return enterInParts(slot, batch.held, undefined)
            // A batch closed at a recorded cut goes as recorded: its holders are not asked.
            const asked = keys.length > 0 && batch.closedBy !== "recorded"
            const blocked = asked ? conflicts.blocked(batch.partition, keys) : undefined
            const offsets = blocked === undefined ? undefined : heldOffsets(batch.records, blocked)
            const cut = offsets === undefined ? undefined : { ...batchCut(batch), held: offsets }
            if (cut === undefined || options.roomForParts?.(cut) === false) {
              return enter(slot, conflicts.add(slot, batch.partition, keys, asked && blocked === undefined))
            }
            // Neither part is sent before the split is recorded; splits admitted while a write
            // is under way go together in the next one (one write each cost a whole checkpoint
            // file per batch in parts: 14% of a keyed run's CPU with a thousand batches pending).
            return enterInParts(slot, offsets!, splits.record([cut]))
          })
        )
      })

    const enter = (slot: Slot, ticket: Ticket<Slot>): Effect.Effect<void> => {
      const batch = slot.batch
      const ready = conflicts.ready(ticket)
      if (!ready) {
        slot.waiting = true
        waiting++
      }
      let tickets = byPartition.get(batch.partition)
      if (tickets === undefined) byPartition.set(batch.partition, tickets = new Set())
      tickets.add(ticket)
      const deliverNow = options.deliverNow
      if (deliverNow !== undefined && slot.parts === undefined) {
        if (ready) startNow(ticket, deliverNow)
        else slot.start = () => startNow(ticket, deliverNow)
        return Effect.void
      }
      if (!ready) slot.ready = new Gate()
      if (deliverNow !== undefined) {
        // In parts: each part waits at its own gate; both once the split is recorded (a fresh
        // split), which a fiber of the scope waits for (the write is short, the parts' wait is not).
        const recorded = slot.parts!.recorded
        if (recorded === undefined) {
          startNow(ticket, deliverNow)
          return Effect.void
        }
        runInScope(Effect.matchCause(recorded as Effect.Effect<void, E>, {
          onSuccess: () => startNow(ticket, deliverNow),
          onFailure: (cause) => {
            if (!Cause.isInterruptedOnly(cause)) Deferred.unsafeDone(failed, Exit.failCause(cause))
            finish(ticket)
          }
        }))
        return Effect.void
      }
      const work = Effect.onExit(deliverWhenReady(ticket), (exit) =>
        Effect.sync(() => {
          // Recorded before the batch's room comes back, so no failure can go unseen.
          if (Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) Deferred.unsafeDone(failed, Exit.failCause(exit.cause))
          finish(ticket)
        }))
      return Effect.map(FiberSet.run(running, work), (fiber) => {
        slot.fiber = fiber
      })
    }

    return {
      admit,
      drain: (partition, timeout) =>
        Effect.suspend(() => {
          closed.add(partition)
          const tickets = [...(byPartition.get(partition) ?? [])]
          byPartition.delete(partition)
          // Not started yet: let them run, see the partition closed and end at once (through their
          // own `finish`). Interrupting them instead lost their bookkeeping: a fiber interrupted
          // before its first step never runs its `onExit`, and the batch stayed admitted forever
          // (seen: a sink that could not finish its drain on SIGTERM after a rebalance).
          for (const ticket of tickets) {
            if (!ticket.item.started) free([ticket])
          }
          const fibers = tickets.flatMap((t) => (t.item.fiber === undefined ? [] : [t.item.fiber]))
          // Deliveries in callback form under way: awaited the same way, then cancelled.
          const now = tickets.flatMap((t) => {
            const slot = t.item
            if (slot.cancel === undefined) return []
            slot.ended ??= Deferred.unsafeMake<void>(FiberId.none)
            return [slot]
          })
          if (fibers.length === 0 && now.length === 0) return Effect.void
          return Effect.zipRight(Fiber.awaitAll(fibers), Effect.forEach(now, (slot) => Deferred.await(slot.ended!), { discard: true })).pipe(
            Effect.timeout(timeout),
            Effect.catchAll(() =>
              Effect.zipRight(
                Effect.sync(() => {
                  for (const slot of now) slot.cancel?.()
                }),
                Fiber.interruptAll(fibers)
              )
            )
          )
        }),
      finished: room.until(() => room.admitted === 0),
      failed: Deferred.await(failed),
      hasFailed: Deferred.isDone(failed),
      admitted: () => room.admitted,
      waiting: () => waiting,
      unsent: () => room.unaccepted,
      room: () => room.free
    }
  })
