/**
 * The order of keyed updates: a batch whose primary-key values meet those of an earlier batch
 * of its partition that is not yet terminal waits for that batch; batches that share no key
 * go at once, in any order.
 *
 * Why: a batch that failed and was retried while a later batch of the same keys was accepted
 * and applied left the older values in the dataset (measured: 100 of 200 keys stale after
 * 20,000 updates under `--faults 5xx=0.3,drop=0.1`). The service applies the ingestions it
 * accepted in the order it accepted them, so keeping conflicting batches apart until the
 * earlier one is terminal is enough, and it holds across crashes too: a batch is never sent
 * before every earlier conflicting batch was terminal, so a resend after a restart can never
 * overtake an applied later batch.
 *
 * Each key points at the last waiting-or-running batch that holds it; a new batch depends on
 * those holders only (the holders themselves depend on theirs), so a chain of updates of one
 * key costs one edge per batch, not one per pair.
 *
 * A batch only some of whose keys are held goes as two tickets (`blocked` tells which keys,
 * before it is added): one of the free keys, which goes at once, and one of the held keys,
 * which waits; later batches wait for the ticket that holds their key, not for the whole
 * batch, so a key shared now and then between neighbouring batches does not chain them all.
 *
 * A key's holder is not removed when it is done: a done holder makes no one wait, and the next
 * batch with the key takes its place. The holders live in two generations of maps: keys go
 * into the young one, and when it holds 2,048 keys (or the pending tickets' keys, if more) it becomes the old one and the previous old
 * one is dropped, with the keys of its tickets still pending carried into the new young one
 * (with a steady stream, none or one ticket). A look-up tries the young map, then the old one.
 * Measured on 1,000,000 unique keys in batches of 100, 24 pending: 0.47 µs a key with one map
 * swept at twice its pending keys, 0.14 with the two generations of 2,048 keys; most of the
 * cost was growing and rebuilding maps of 8,192 entries. (Deleting each key when its batch ended had
 * cost a third more than the sweep.) The partition's maps go when none of its tickets is
 * pending.
 *
 * A pure core: no effects, no clock; the scheduler in `run` drives it.
 *
 * @since 0.2.0
 * @internal
 */
import type { KeyValue } from "../vocabulary.js"

/**
 * A batch's place in the order: what it waits for and who waits for it.
 *
 * @since 0.2.0
 * @category models
 */
export interface Ticket<A> {
  readonly item: A
  readonly partition: string
  readonly keys: ReadonlyArray<KeyValue>
  /** Earlier conflicting tickets not yet done. */
  waitingOn: number
  readonly dependents: Array<Ticket<A>>
  done: boolean
  /** Which generation of its partition's holders has its keys (`nextGeneration`). */
  generation: number
}

/**
 * Conflicting batches kept in order, per partition.
 *
 * @since 0.2.0
 * @category models
 */
export class Conflicts<A> {
  private readonly holders = new Map<string, Holders<A>>()
  private live = 0

  /** Tickets added and not yet done or forgotten. */
  get size(): number {
    return this.live
  }

  /**
   * Enters a batch after every batch entered before it; `keys` are its records' primary-key
   * values (none: it conflicts with nothing). Answers its ticket; `ready(ticket)` says
   * whether it may go now.
   */
  add(
    item: A,
    partition: string,
    keys: ReadonlyArray<KeyValue>,
    /**
     * `blocked` just answered none of `keys` (nothing happened since): the holders need not
     * be looked up, only replaced (a look-up is a third of a key's cost here).
     */
    unheld = false
  ): Ticket<A> {
    const ticket: Ticket<A> = { item, partition, keys, waitingOn: 0, dependents: [], done: false, generation: 0 }
    this.live++
    if (keys.length === 0) return ticket
    let held = this.holders.get(partition)
    if (held === undefined) this.holders.set(partition, held = { young: new Map(), old: undefined, generation: 0, pending: new Set(), pendingKeys: 0, nextAt: minimumGeneration, youngPending: 0, oldPending: 0 })
    held.pending.add(ticket)
    held.pendingKeys += keys.length
    held.youngPending++
    ticket.generation = held.generation
    const young = held.young
    if (unheld) {
      for (let i = 0; i < keys.length; i++) young.set(keys[i]!, ticket)
    } else {
      const old = held.old
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!
        const holder = young.get(key) ?? old?.get(key)
        // One edge per earlier ticket, however many keys the two share.
        if (
          holder !== undefined && !holder.done && holder !== ticket &&
          holder.dependents[holder.dependents.length - 1] !== ticket
        ) {
          holder.dependents.push(ticket)
          ticket.waitingOn++
        }
        young.set(key, ticket)
      }
    }
    if (young.size >= held.nextAt) nextGeneration(held)
    return ticket
  }

  /**
   * Of `keys`, those an earlier ticket of the partition not yet done holds (none: a ticket of
   * them would go at once). The scheduler asks before adding a batch, to send the records of
   * the other keys apart (`parts.ts`).
   */
  blocked(partition: string, keys: ReadonlyArray<KeyValue>): Set<KeyValue> | undefined {
    const held = this.holders.get(partition)
    if (held === undefined) return undefined
    const { young, old } = held
    let blocked: Set<KeyValue> | undefined
    for (let i = 0; i < keys.length; i++) {
      const holder = young.get(keys[i]!) ?? old?.get(keys[i]!)
      if (holder !== undefined && !holder.done) (blocked ??= new Set()).add(keys[i]!)
    }
    return blocked
  }

  /** Keys held by a partition's map, done holders included (for tests of the sweep). */
  heldKeys(partition: string): number {
    const held = this.holders.get(partition)
    return held === undefined ? 0 : held.young.size + (held.old?.size ?? 0)
  }

  /** Whether a ticket waits for nothing. */
  ready(ticket: Ticket<A>): boolean {
    return ticket.waitingOn === 0
  }

  /**
   * Marks a ticket terminal (its ingestion ended, or it was refused): answers the tickets that
   * waited for it and wait for nothing else now, in the order they were added.
   */
  done(ticket: Ticket<A>): ReadonlyArray<Ticket<A>> {
    if (ticket.done) return []
    ticket.done = true
    this.live--
    if (ticket.keys.length > 0) {
      const held = this.holders.get(ticket.partition)
      // Nothing of the partition is pending: no holder can make anyone wait.
      if (held !== undefined && held.pending.delete(ticket)) {
        held.pendingKeys -= ticket.keys.length
        if (ticket.generation === held.generation) held.youngPending--
        else if (--held.oldPending === 0) held.old = undefined
        if (held.pending.size === 0) this.holders.delete(ticket.partition)
      }
    }
    const freed: Array<Ticket<A>> = []
    for (const dependent of ticket.dependents) {
      if (--dependent.waitingOn === 0 && !dependent.done) freed.push(dependent)
    }
    ticket.dependents.length = 0
    return freed
  }

  /**
   * Forgets a partition (revoked): its tickets still to come are never started; `done` on one
   * of them later is harmless.
   */
  forget(partition: string, tickets: Iterable<Ticket<A>>): void {
    this.holders.delete(partition)
    for (const ticket of tickets) {
      if (ticket.partition === partition && !ticket.done) {
        ticket.done = true
        this.live--
      }
    }
  }
}

/** A partition's key holders, in two generations. */
interface Holders<A> {
  /** Where keys go; looked up first. */
  young: Map<KeyValue, Ticket<A>>
  /**
   * The generation before; a key here is held by no later ticket of `young`'s. Dropped as soon
   * as none of its tickets is pending (its holders make no one wait): a look-up of a new key
   * then costs one map instead of two.
   */
  old: Map<KeyValue, Ticket<A>> | undefined
  /** `young`'s generation (a ticket's `generation` says which map got its keys). */
  generation: number
  /** Tickets with keys added and not yet done, in the order they were added. */
  readonly pending: Set<Ticket<A>>
  /** The keys of `pending` (a key of two tickets counts twice). */
  pendingKeys: number
  /** Pending tickets whose keys are in `young`, and in `old`. */
  youngPending: number
  oldPending: number
  /** `young`'s size at which the next generation starts. */
  nextAt: number
}

/**
 * A generation holds at least 2,048 keys, and at least the pending tickets' keys, so that a
 * ticket is rarely still pending when its generation is dropped. Measured (1,000,000 unique
 * keys, batches of 100, 24 pending): 0.14 µs a key at 2,048, 0.28 at 4,096, 0.42 at 16,384
 * (bigger maps cost more to grow), 0.8-1.0 at 1,024 (every generation carried keys).
 */
const minimumGeneration = 2048

/**
 * The young map becomes the old one and the old one is dropped; the keys of the tickets still
 * pending that were only there go into the new young map (where the old map has a key, a later
 * ticket holds it). Pending tickets are visited in the order they were added, so of two that
 * are carried the later holds a key they share.
 */
const nextGeneration = <A>(held: Holders<A>): void => {
  const old = held.young
  const young = new Map<KeyValue, Ticket<A>>()
  const dropped = held.generation - 1
  held.old = old
  held.young = young
  held.generation++
  held.nextAt = Math.max(minimumGeneration, held.pendingKeys)
  // The young generation's pending tickets are the old one's now; the carried ones, young's.
  held.oldPending = held.youngPending
  held.youngPending = 0
  for (const ticket of held.pending) {
    if (ticket.generation > dropped) continue
    ticket.generation = held.generation
    held.youngPending++
    for (let i = 0; i < ticket.keys.length; i++) {
      if (!old.has(ticket.keys[i]!)) young.set(ticket.keys[i]!, ticket)
    }
  }
  if (held.oldPending === 0) held.old = undefined
}
