/**
 * The memory store's idempotency keys: each request scope's answer, kept for its window and
 * then forgotten.
 *
 * Kept in the order they were stored, so that the expired ones are at the front: a sweep
 * drops them from there and stops at the first key still in its window. Why: the store used to
 * walk every key, at each new key once it held more than 10,000, to find expired ones; within
 * a day's window none had expired, so each request walked them all. A keyed
 * `bench:tracking` run of 1,000,000 records (some 20,000 keys) spent 33% of the server's CPU
 * in that walk, and the run went at a third of its speed at 400,000 records.
 *
 * A pure core: no effects, no clock; `ingestions.ts` drives it.
 *
 * @since 0.3.0
 * @internal
 */
import type { Deferred } from "effect"

/**
 * One scope's answer: under way (`storedAt` undefined) or stored at `storedAt` for `windowMillis`.
 *
 * @since 0.1.0
 * @category models
 */
export interface IdempotencyEntry {
  readonly fingerprint: string
  readonly answer: Deferred.Deferred<unknown, unknown>
  storedAt: number | undefined
  windowMillis: number
}

/**
 * @since 0.3.0
 * @category models
 */
export class IdempotencyKeys {
  private readonly entries = new Map<string, IdempotencyEntry>()

  get size(): number {
    return this.entries.size
  }

  get(scope: string): IdempotencyEntry | undefined {
    return this.entries.get(scope)
  }

  /** Takes `scope` for a new request: its entry goes to the back, whatever it replaces. */
  claim(scope: string, entry: IdempotencyEntry): void {
    this.entries.delete(scope)
    this.entries.set(scope, entry)
  }

  /** The answer under way is stored at `now`: it goes to the back, in the order of storing. */
  stored(scope: string, entry: IdempotencyEntry, now: number): void {
    entry.storedAt = now
    if (this.entries.get(scope) === entry) this.claim(scope, entry)
  }

  /** Forgets the request under way (it failed): its key is free. */
  release(scope: string, entry: IdempotencyEntry): void {
    if (this.entries.get(scope) === entry) this.entries.delete(scope)
  }

  /**
   * Drops the keys stored longer ago than their window, from the front, up to the first one
   * still in its window; answers how many keys it looked at. Requests under way (at most the
   * requests in flight) are passed over.
   */
  sweep(now: number): number {
    let looked = 0
    for (const [scope, entry] of this.entries) {
      looked++
      if (entry.storedAt === undefined) continue
      if (now - entry.storedAt <= entry.windowMillis) break
      this.entries.delete(scope)
    }
    return looked
  }
}
