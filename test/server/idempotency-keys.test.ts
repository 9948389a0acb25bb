/**
 * The memory store's idempotency keys (a pure core): expired keys are dropped from the front,
 * in the order they were stored, and a sweep looks no further than the first key still in
 * its window.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, FiberId } from "effect"
import { type IdempotencyEntry, IdempotencyKeys } from "../../src/server/core/store/memory/idempotencyKeys.js"

const entry = (windowMillis = 1000): IdempotencyEntry => ({
  fingerprint: "f",
  answer: Deferred.unsafeMake(FiberId.none),
  storedAt: undefined,
  windowMillis
})

/** `count` keys `k0..`, each claimed and stored at its own millisecond from `from`. */
const storedKeys = (keys: IdempotencyKeys, count: number, from = 0, prefix = "k") => {
  for (let i = 0; i < count; i++) {
    const e = entry()
    keys.claim(`${prefix}${i}`, e)
    keys.stored(`${prefix}${i}`, e, from + i)
  }
}

describe("IdempotencyKeys", () => {
  it("drops the keys past their window, oldest first, and keeps the rest", () => {
    const keys = new IdempotencyKeys()
    storedKeys(keys, 100)
    keys.sweep(1000 + 49) // k0..k48 are past 1000 ms; k49 is exactly at its window's end
    expect(keys.size).toBe(51)
    expect(keys.get("k48")).toBeUndefined()
    expect(keys.get("k49")).toBeDefined()
    expect(keys.get("k99")).toBeDefined()
  })

  it("looks at one key when none has expired, however many there are", () => {
    const keys = new IdempotencyKeys()
    storedKeys(keys, 20_000)
    expect(keys.sweep(500)).toBe(1)
    expect(keys.size).toBe(20_000)
    // Past everyone's window: all of them go, each looked at once.
    expect(keys.sweep(100_000)).toBe(20_000)
    expect(keys.size).toBe(0)
  })

  it("a key stored again goes to the back: it does not hold back the sweep of older keys", () => {
    const keys = new IdempotencyKeys()
    storedKeys(keys, 3) // k0, k1, k2 at 0, 1, 2
    const again = entry()
    keys.claim("k0", again)
    keys.stored("k0", again, 900)
    keys.sweep(1500) // k1 and k2 expired; k0 (stored at 900) has not
    expect(keys.get("k1")).toBeUndefined()
    expect(keys.get("k2")).toBeUndefined()
    expect(keys.get("k0")).toBe(again)
  })

  it("passes over requests under way, and a failed one frees its key", () => {
    const keys = new IdempotencyKeys()
    const underWay = entry()
    keys.claim("busy", underWay)
    storedKeys(keys, 2, 0)
    keys.sweep(5000)
    expect(keys.get("busy")).toBe(underWay)
    expect(keys.size).toBe(1)
    keys.release("busy", underWay)
    expect(keys.size).toBe(0)
  })

  it("a failed request does not free a key another request took since", () => {
    const keys = new IdempotencyKeys()
    const first = entry()
    const second = entry()
    keys.claim("k", first)
    keys.claim("k", second)
    keys.release("k", first)
    expect(keys.get("k")).toBe(second)
    // Nor does a late store of the first move or replace it.
    keys.stored("k", first, 10)
    expect(keys.get("k")).toBe(second)
  })

  it("each key is kept for its own window", () => {
    const keys = new IdempotencyKeys()
    const short = entry(10)
    const long = entry(10_000)
    keys.claim("long", long)
    keys.stored("long", long, 0)
    keys.claim("short", short)
    keys.stored("short", short, 0)
    keys.sweep(100)
    // The long-lived key in front stops the sweep: the short one behind it waits for a later one.
    expect(keys.size).toBe(2)
    keys.sweep(20_000)
    expect(keys.size).toBe(0)
  })
})
