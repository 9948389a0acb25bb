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
 * batch with the key takes its place. The holders live in two generations of tables: keys go
 * into the young one, and when it holds 4,096 keys (or the pending tickets' keys, if more) it
 * becomes the old one and the previous old one is emptied to be the next young one, the keys of
 * its tickets still pending carried over (with a steady stream, none). The old table is let go
 * as soon as none of its tickets is pending. The partition's tables go when none of its tickets
 * is pending.
 *
 * A table is keyed by a key's number (`keyNumber`): a whole number stands for itself, any other
 * value for a 30-bit hash of its text, made while the record is checked and its text is still
 * warm. Two values with one number are kept in order as if they were one key: that costs a
 * wait, never an order (with 10,000 keys pending, about one new key in 100,000 waits for
 * nothing). The tables are typed arrays with open addressing, emptied and reused, so a key
 * costs no allocation. Measured in `bench:pipeline` (1,000,000 unique string keys, about 8,600
 * keys pending, 4 interleaved rounds): with JavaScript maps of the key strings the pipeline
 * took 6.4 µs of CPU a record, 5.6 with these tables, and 5.7 with no key order at all (a
 * copy whose key order did nothing). Growing the maps' tables and first touching each cold key
 * string were the maps' cost.
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
     * be looked up, only replaced.
     */
    unheld = false
  ): Ticket<A> {
    const ticket: Ticket<A> = { item, partition, keys, waitingOn: 0, dependents: [], done: false, generation: 0 }
    this.live++
    if (keys.length === 0) return ticket
    let held = this.holders.get(partition)
    if (held === undefined) this.holders.set(partition, held = newHolders(keys.length))
    else if (held.young.size + keys.length > held.nextAt) nextGeneration(held, keys.length)
    held.pending.add(ticket)
    held.pendingKeys += keys.length
    held.youngPending++
    ticket.generation = held.generation
    const young = held.young
    const index = young.tickets.push(ticket) - 1
    if (unheld) {
      for (let i = 0; i < keys.length; i++) young.set(keyNumber(keys[i]!), index)
      return ticket
    }
    const old = held.old
    for (let i = 0; i < keys.length; i++) {
      const key = keyNumber(keys[i]!)
      const holder = young.get(key) ?? old?.get(key)
      // One edge per earlier ticket, however many keys the two share.
      if (
        holder !== undefined && !holder.done && holder !== ticket &&
        holder.dependents[holder.dependents.length - 1] !== ticket
      ) {
        holder.dependents.push(ticket)
        ticket.waitingOn++
      }
      young.set(key, index)
    }
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
      const key = keyNumber(keys[i]!)
      const holder = young.get(key) ?? old?.get(key)
      if (holder !== undefined && !holder.done) (blocked ??= new Set()).add(keys[i]!)
    }
    return blocked
  }

  /** Keys held by a partition's tables, done holders included (for tests of the generations). */
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
        else if (--held.oldPending === 0) letGoOld(held)
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

/**
 * A key's number: a whole number from 0 to 2^30 - 1 stands for itself; any other value for a
 * 30-bit hash (FNV-1a) of its text. Equal values give equal numbers; `keyValueOf` gives a
 * record's at once, while its text is warm.
 *
 * @since 0.3.0
 * @category utils
 */
export const keyNumber = (key: KeyValue): number =>
  typeof key === "number" && key >= 0 && key < 0x40000000 && (key | 0) === key ? key : hashText(String(key))

const hashText = (text: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return hash >>> 2
}

/**
 * One generation of holders: key numbers to the index of their last holder among `tickets`,
 * by open addressing (linear probing from a Fibonacci hash of the number).
 */
class Table<A> {
  private keys: Int32Array
  /** The holder's index in `tickets`, plus one; 0: an empty slot. */
  private slots: Int32Array
  private shift: number
  tickets: Array<Ticket<A>> = []
  size = 0

  constructor(readonly capacity: number) {
    this.keys = new Int32Array(capacity)
    this.slots = new Int32Array(capacity)
    this.shift = 32 - Math.log2(capacity)
  }

  get(key: number): Ticket<A> | undefined {
    const mask = this.capacity - 1
    for (let i = Math.imul(key, 0x9e3779b1) >>> this.shift;; i = (i + 1) & mask) {
      const slot = this.slots[i]!
      if (slot === 0) return undefined
      if (this.keys[i] === key) return this.tickets[slot - 1]
    }
  }

  has(key: number): boolean {
    return this.get(key) !== undefined
  }

  set(key: number, index: number): void {
    const mask = this.capacity - 1
    for (let i = Math.imul(key, 0x9e3779b1) >>> this.shift;; i = (i + 1) & mask) {
      const slot = this.slots[i]!
      if (slot === 0) {
        this.keys[i] = key
        this.slots[i] = index + 1
        this.size++
        return
      }
      if (this.keys[i] === key) {
        this.slots[i] = index + 1
        return
      }
    }
  }

  /** Empties it, to be used again. */
  clear(): void {
    this.slots.fill(0)
    this.tickets = []
    this.size = 0
  }
}

/** A partition's key holders, in two generations. */
interface Holders<A> {
  /** Where keys go; looked up first. */
  young: Table<A>
  /**
   * The generation before; a key here is held by no later ticket of `young`'s. Let go as soon
   * as none of its tickets is pending (its holders make no one wait): a look-up of a new key
   * then costs one table instead of two.
   */
  old: Table<A> | undefined
  /** The table emptied last, kept to be the next young one. */
  spare: Table<A> | undefined
  /** `young`'s generation (a ticket's `generation` says which table got its keys). */
  generation: number
  /** Tickets with keys added and not yet done, in the order they were added. */
  readonly pending: Set<Ticket<A>>
  /** The keys of `pending` (a key of two tickets counts twice). */
  pendingKeys: number
  /** Pending tickets whose keys are in `young`, and in `old`. */
  youngPending: number
  oldPending: number
  /** The most keys `young` takes before the next generation starts. */
  nextAt: number
}

/**
 * A generation takes at least 4,096 keys, and at least the pending tickets' keys, so that a
 * ticket is rarely still pending when its generation is let go.
 */
const minimumGeneration = 4096

/** A table's capacity for a generation of `keys`: at most half full. */
const capacityFor = (keys: number): number => 2 ** Math.ceil(Math.log2(2 * keys))

const newHolders = <A>(firstKeys: number): Holders<A> => {
  const nextAt = Math.max(minimumGeneration, firstKeys)
  return {
    young: new Table(capacityFor(nextAt)),
    old: undefined,
    spare: undefined,
    generation: 0,
    pending: new Set(),
    pendingKeys: 0,
    youngPending: 0,
    oldPending: 0,
    nextAt
  }
}

/**
 * The young table becomes the old one and the old one is emptied (or a bigger one made) to be
 * the young one; the keys of the tickets still pending that were only there go into the young
 * table (where the old table has a key, a later ticket holds it). Pending tickets are visited
 * in the order they were added, so of two that are carried the later holds a key they share.
 * `coming`: the keys of the ticket about to be added.
 */
const nextGeneration = <A>(held: Holders<A>, coming: number): void => {
  const old = held.young
  const dropped = held.old ?? held.spare
  const dropGeneration = held.generation - 1
  held.nextAt = Math.max(minimumGeneration, held.pendingKeys, coming)
  // Room for the carried keys (at most the pending ones) and a whole generation after them.
  const capacity = capacityFor(held.nextAt + held.pendingKeys + coming)
  let young: Table<A>
  if (dropped !== undefined && dropped.capacity >= capacity) {
    dropped.clear()
    young = dropped
  } else {
    young = new Table(capacity)
  }
  held.old = old
  held.young = young
  held.spare = undefined
  held.generation++
  // The young generation's pending tickets are the old one's now; the carried ones, young's.
  held.oldPending = held.youngPending
  held.youngPending = 0
  for (const ticket of held.pending) {
    if (ticket.generation > dropGeneration) continue
    ticket.generation = held.generation
    held.youngPending++
    const index = young.tickets.push(ticket) - 1
    for (let i = 0; i < ticket.keys.length; i++) {
      const key = keyNumber(ticket.keys[i]!)
      if (!old.has(key)) young.set(key, index)
    }
  }
  if (held.oldPending === 0) letGoOld(held)
}

/** The old table's tickets are none of them pending: it is kept only to be used again. */
const letGoOld = <A>(held: Holders<A>): void => {
  held.spare = held.old
  held.old = undefined
  // Its tickets' batches need not live on with it.
  if (held.spare !== undefined) held.spare.tickets = []
}
