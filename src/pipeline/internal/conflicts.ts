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
 * batch with the key takes its place. The done holders are swept out once they could make up
 * half of a partition's map, and the map goes when none of its tickets is pending. Deleting each key when its batch ended was a third of this
 * module's cost (`bench:pipeline`: 144 of 463 ms); the sweep is one pass over the map for at
 * least as many insertions, so a key costs one look-up and one insertion.
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
    const ticket: Ticket<A> = { item, partition, keys, waitingOn: 0, dependents: [], done: false }
    this.live++
    if (keys.length === 0) return ticket
    let held = this.holders.get(partition)
    if (held === undefined) this.holders.set(partition, held = { byKey: new Map(), sweepAt: minimumSweep, pending: new Set() })
    held.pending.add(ticket)
    const byKey = held.byKey
    if (unheld) {
      for (let i = 0; i < keys.length; i++) byKey.set(keys[i]!, ticket)
      if (byKey.size >= held.sweepAt) sweep(held)
      return ticket
    }
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!
      const holder = byKey.get(key)
      // One edge per earlier ticket, however many keys the two share.
      if (
        holder !== undefined && !holder.done && holder !== ticket &&
        holder.dependents[holder.dependents.length - 1] !== ticket
      ) {
        holder.dependents.push(ticket)
        ticket.waitingOn++
      }
      byKey.set(key, ticket)
    }
    if (byKey.size >= held.sweepAt) sweep(held)
    return ticket
  }

  /**
   * Of `keys`, those an earlier ticket of the partition not yet done holds (none: a ticket of
   * them would go at once). The scheduler asks before adding a batch, to send the records of
   * the other keys apart (`parts.ts`).
   */
  blocked(partition: string, keys: ReadonlyArray<KeyValue>): Set<KeyValue> | undefined {
    const byKey = this.holders.get(partition)?.byKey
    if (byKey === undefined) return undefined
    let blocked: Set<KeyValue> | undefined
    for (let i = 0; i < keys.length; i++) {
      const holder = byKey.get(keys[i]!)
      if (holder !== undefined && !holder.done) (blocked ??= new Set()).add(keys[i]!)
    }
    return blocked
  }

  /** Keys held by a partition's map, done holders included (for tests of the sweep). */
  heldKeys(partition: string): number {
    return this.holders.get(partition)?.byKey.size ?? 0
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
      if (held !== undefined && held.pending.delete(ticket) && held.pending.size === 0) this.holders.delete(ticket.partition)
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

/** A partition's key holders, and the size at which the done ones are swept out. */
interface Holders<A> {
  byKey: Map<KeyValue, Ticket<A>>
  sweepAt: number
  /** Tickets with keys added and not yet done, in the order they were added. */
  readonly pending: Set<Ticket<A>>
}

const minimumSweep = 4096

/**
 * Drops the done holders: the map is made again from the pending tickets in the order they
 * were added (the last to hold a key holds it), which costs their keys only, where deleting
 * the done ones cost as much as deleting each key when its batch ended. The next sweep comes
 * when as many keys again were added.
 */
const sweep = <A>(held: Holders<A>): void => {
  const byKey = new Map<KeyValue, Ticket<A>>()
  for (const ticket of held.pending) {
    for (let i = 0; i < ticket.keys.length; i++) byKey.set(ticket.keys[i]!, ticket)
  }
  held.byKey = byKey
  held.sweepAt = Math.max(minimumSweep, 2 * byKey.size)
}
