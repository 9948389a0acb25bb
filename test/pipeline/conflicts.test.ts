import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { Conflicts, keyNumber, type Ticket } from "../../src/pipeline/internal/conflicts.js"
import { keyValueOf } from "../../src/pipeline/validate.js"

/** Batches of a few keys out of a small key space (so that they meet often), in two partitions. */
const batches = fc.array(
  fc.record({
    partition: fc.constantFrom("0", "1"),
    keys: fc.uniqueArray(fc.integer({ min: 0, max: 12 }).map(String), { maxLength: 5 })
  }),
  { minLength: 1, maxLength: 40 }
)

const shareKey = (a: { partition: string; keys: ReadonlyArray<string> }, b: { partition: string; keys: ReadonlyArray<string> }) =>
  a.partition === b.partition && a.keys.some((key) => b.keys.includes(key))

describe("Conflicts", () => {
  it("never lets two conflicting batches run together, and holds back nothing that need not wait", () => {
    fc.assert(
      // `unheld`: a batch `blocked` found free is added without looking its holders up, as the
      // scheduler adds it; the order must be the same either way.
      fc.property(batches, fc.array(fc.nat(), { minLength: 200, maxLength: 200 }), fc.nat(), fc.boolean(), (input, picks, arrivals, unheld) => {
        const conflicts = new Conflicts<number>()
        const tickets: Array<Ticket<number>> = []
        const running = new Set<number>()
        const done = new Set<number>()
        let added = 0
        let pick = 0
        const start = (ticket: Ticket<number>) => running.add(ticket.item)
        const check = () => {
          for (let i = 0; i < added; i++) {
            if (done.has(i)) continue
            const blockers = input.slice(0, i).filter((b, j) => !done.has(j) && shareKey(b, input[i]!))
            if (running.has(i)) expect(blockers).toEqual([]) // nothing earlier and conflicting is unfinished
            else expect(blockers.length).toBeGreaterThan(0) // it waits only for a reason
          }
        }
        // Batches arrive a few at a time between completions, in their order.
        while (done.size < input.length) {
          const arriving = added < input.length ? 1 + ((arrivals + added) % 3) : 0
          for (let n = 0; n < arriving && added < input.length; n++) {
            // Blocked: exactly the keys an earlier unfinished batch of the partition holds (the
            // records of the other keys may go at once).
            const held = new Set(
              input.slice(0, added).flatMap((b, j) => (!done.has(j) && b.partition === input[added]!.partition ? b.keys : []))
            )
            const blocked = conflicts.blocked(input[added]!.partition, input[added]!.keys)
            expect([...(blocked ?? [])].sort()).toEqual(input[added]!.keys.filter((key) => held.has(key)).sort())
            const ticket = conflicts.add(added, input[added]!.partition, input[added]!.keys, unheld && blocked === undefined)
            expect(conflicts.ready(ticket)).toBe(blocked === undefined)
            tickets.push(ticket)
            added++
            if (conflicts.ready(ticket)) start(ticket)
          }
          check()
          if (running.size === 0) continue
          const list = [...running]
          const finished = list[picks[pick++ % picks.length]! % list.length]!
          running.delete(finished)
          done.add(finished)
          for (const freed of conflicts.done(tickets[finished]!)) start(freed)
          check()
        }
        expect(conflicts.size).toBe(0)
      })
    )
  })

  it("lets batches of one key through one at a time, in order", () => {
    const conflicts = new Conflicts<string>()
    const a = conflicts.add("a", "0", ["[1]"])
    const b = conflicts.add("b", "0", ["[1]", "[2]"])
    const c = conflicts.add("c", "0", ["[3]"])
    const d = conflicts.add("d", "0", ["[2]"])
    expect([a, b, c, d].map((t) => conflicts.ready(t))).toEqual([true, false, true, false])
    expect(conflicts.done(c)).toEqual([])
    expect(conflicts.done(a).map((t) => t.item)).toEqual(["b"])
    expect(conflicts.done(b).map((t) => t.item)).toEqual(["d"])
    expect(conflicts.done(d)).toEqual([])
    expect(conflicts.size).toBe(0)
  })

  it("keeps partitions apart, and batches without keys conflict with nothing", () => {
    const conflicts = new Conflicts<string>()
    conflicts.add("a", "0", ["[1]"])
    expect(conflicts.ready(conflicts.add("b", "1", ["[1]"]))).toBe(true)
    expect(conflicts.ready(conflicts.add("c", "0", []))).toBe(true)
  })

  it("forgets a revoked partition's waiting batches", () => {
    const conflicts = new Conflicts<string>()
    const a = conflicts.add("a", "0", ["[1]"])
    const b = conflicts.add("b", "0", ["[1]"])
    conflicts.forget("0", [a, b])
    expect(conflicts.size).toBe(0)
    expect(conflicts.done(a)).toEqual([])
    expect(conflicts.ready(conflicts.add("c", "0", ["[1]"]))).toBe(true)
  })

  it("a key value is itself: 1 and \"1\" are different keys", () => {
    const conflicts = new Conflicts<string>()
    conflicts.add("a", "0", [1])
    expect(conflicts.ready(conflicts.add("b", "0", ["1"]))).toBe(true)
    expect(conflicts.ready(conflicts.add("c", "0", [1]))).toBe(false)
  })

  it("a done holder makes no one wait; done holders are swept out, and a partition with nothing pending holds no keys", () => {
    const conflicts = new Conflicts<number>()
    // One batch pending throughout keeps the partition's map; 100 keys a batch, all done at once.
    const keeper = conflicts.add(-1, "0", ["kept"])
    for (let n = 0; n < 1000; n++) {
      const ticket = conflicts.add(n, "0", Array.from({ length: 100 }, (_, i) => n * 100 + i))
      expect(conflicts.ready(ticket)).toBe(true)
      conflicts.done(ticket)
      // Bounded: at most twice the sweep's floor, whatever went through.
      expect(conflicts.heldKeys("0")).toBeLessThanOrEqual(2 * 4096)
    }
    // A later batch with a key of a done batch goes at once; one with the pending key waits.
    expect(conflicts.ready(conflicts.add(1001, "0", [99_999]))).toBe(true)
    const waits = conflicts.add(1002, "0", ["kept"])
    expect(conflicts.ready(waits)).toBe(false)
    expect(conflicts.done(keeper).map((t) => t.item)).toEqual([1002])
    conflicts.done(waits)
    expect(conflicts.heldKeys("0")).toBeGreaterThan(0) // 1001 is still pending
    conflicts.done(conflicts.add(1003, "0", []))
    expect(conflicts.size).toBe(1)
  })

  it("a pending batch keeps its keys through any number of generations; of two carried, the later holds a key", () => {
    const conflicts = new Conflicts<string>()
    const first = conflicts.add("first", "0", ["x", "y"])
    const second = conflicts.add("second", "0", ["x"])
    expect(conflicts.ready(second)).toBe(false)
    // 50,000 other keys: many generations go by while both are pending.
    for (let n = 0; n < 500; n++) {
      conflicts.done(conflicts.add(`n${n}`, "0", Array.from({ length: 100 }, (_, i) => n * 100 + i)))
    }
    expect(conflicts.heldKeys("0")).toBeLessThanOrEqual(2 * 4096)
    expect(conflicts.blocked("0", ["x", "y", "z"])).toEqual(new Set(["x", "y"]))
    expect(conflicts.done(first).map((t) => t.item)).toEqual(["second"])
    // "x" is the second's now (the first is done); "y" is free.
    const third = conflicts.add("third", "0", ["x"])
    expect(conflicts.ready(third)).toBe(false)
    expect(conflicts.ready(conflicts.add("fourth", "0", ["y"]))).toBe(true)
    expect(conflicts.done(second).map((t) => t.item)).toEqual(["third"])
  })

  it("a carried key does not hide a later holder of it", () => {
    const conflicts = new Conflicts<string>()
    let n = 0
    // More keys than one generation holds: the next batch's keys go into a new generation.
    const generation = () => {
      for (let b = 0; b < 45; b++) conflicts.done(conflicts.add(`n${n}`, "0", Array.from({ length: 100 }, () => n++)))
    }
    const first = conflicts.add("first", "0", ["x"])
    generation()
    const second = conflicts.add("second", "0", ["x"])
    generation()
    // The first's generation is dropped and its "x" carried; the second still holds "x".
    const third = conflicts.add("third", "0", ["x"])
    expect(conflicts.done(first).map((t) => t.item)).toEqual(["second"])
    expect(conflicts.ready(third)).toBe(false)
    expect(conflicts.done(second).map((t) => t.item)).toEqual(["third"])
  })

  it("drops the older generation's keys once none of its batches is pending", () => {
    const conflicts = new Conflicts<string>()
    const keeper = conflicts.add("keeper", "0", ["kept"])
    for (let n = 0; n < 45; n++) conflicts.done(conflicts.add(`n${n}`, "0", Array.from({ length: 100 }, (_, i) => n * 100 + i)))
    const late = conflicts.add("late", "0", ["late"])
    const before = conflicts.heldKeys("0")
    expect(before).toBeGreaterThan(4096)
    conflicts.done(keeper)
    // The generation the keeper's keys went into is gone; the young one (since 4,096 keys) stays.
    expect(conflicts.heldKeys("0")).toBeLessThan(before - 2000)
    expect(conflicts.heldKeys("0")).toBeGreaterThan(0)
    expect(conflicts.ready(conflicts.add("again", "0", ["kept"]))).toBe(true)
    expect(conflicts.ready(conflicts.add("after late", "0", ["late"]))).toBe(false)
    conflicts.done(late)
  })

  it("many keys pending at once: the tables grow, and every pending key still holds", () => {
    const conflicts = new Conflicts<number>()
    const tickets: Array<Ticket<number>> = []
    // 40,000 keys pending, ten times a generation's least.
    for (let n = 0; n < 400; n++) tickets.push(conflicts.add(n, "0", Array.from({ length: 100 }, (_, i) => `k${n * 100 + i}`)))
    const sample = [0, 1, 99, 12_345, 39_999].map((k) => `k${k}`)
    expect(conflicts.blocked("0", [...sample, "k40000"])).toEqual(new Set(sample))
    for (const ticket of tickets.slice(0, 200)) conflicts.done(ticket)
    expect(conflicts.blocked("0", ["k0", "k19999", "k20000", "k39999"])).toEqual(new Set(["k20000", "k39999"]))
  })

  it("a key's number: whole numbers stand for themselves, other values for a hash of their text", () => {
    expect(keyNumber(0)).toBe(0)
    expect(keyNumber(123_456)).toBe(123_456)
    expect(keyNumber("123456")).not.toBe(123_456)
    expect(keyNumber("abc")).toBe(keyNumber("abc"))
    expect(keyNumber(-1)).toBe(keyNumber("-1"))
    expect(keyNumber(2 ** 40)).toBe(keyNumber(String(2 ** 40)))
    expect(keyNumber(1.5)).toBe(keyNumber("1.5"))
    for (const key of [0, 7, "a", "rec-000000001", -3, 1.25, 2 ** 31]) {
      const number = keyNumber(key)
      expect(Number.isInteger(number) && number >= 0 && number < 2 ** 30).toBe(true)
    }
    // What the pipeline gives each record: its key's number, also for composite keys.
    expect(keyValueOf(["id"])({ id: "x" })).toBe(keyNumber("x"))
    expect(keyValueOf(["id"])({ id: 42 })).toBe(42)
    expect(keyValueOf(["a", "b"])({ a: 1, b: "x" })).toBe(keyValueOf(["a", "b"])({ b: "x", a: 1 }))
    expect(keyValueOf(["a", "b"])({ a: 1, b: "x" })).not.toBe(keyValueOf(["a", "b"])({ a: "1", b: "x" }))
    expect(keyValueOf([])({ id: "x" })).toBeUndefined()
  })

  it("two values with one number are kept in order as one key: a wait, never an order", () => {
    // Two strings whose numbers meet (a birthday search over 30 bits).
    const seen = new Map<number, string>()
    let pair: [string, string] | undefined
    for (let n = 0; pair === undefined; n++) {
      const text = `key-${n}`
      const other = seen.get(keyNumber(text))
      if (other !== undefined) pair = [other, text]
      else seen.set(keyNumber(text), text)
    }
    const conflicts = new Conflicts<string>()
    const first = conflicts.add("first", "0", [pair[0]])
    const second = conflicts.add("second", "0", [pair[1]])
    expect(conflicts.ready(second)).toBe(false)
    expect(conflicts.done(first).map((t) => t.item)).toEqual(["second"])
  })

  it("drops a partition's keys once none of its batches is pending", () => {
    const conflicts = new Conflicts<string>()
    const a = conflicts.add("a", "0", ["x", "y"])
    const b = conflicts.add("b", "0", ["z"])
    conflicts.done(a)
    expect(conflicts.heldKeys("0")).toBe(3)
    conflicts.done(b)
    expect(conflicts.heldKeys("0")).toBe(0)
  })
})
