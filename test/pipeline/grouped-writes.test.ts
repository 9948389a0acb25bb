/**
 * Grouped writes (`internal/groupedWrites.ts`): one write at a time, what is asked meanwhile
 * together in the next, each ask answered by a write that started after it, a failure told to
 * the asks of its write only.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberSet } from "effect"
import { groupedWrites, groupedWritesIn } from "../../src/pipeline/internal/groupedWrites.js"

/** A store whose writes are held until the test lets each go; it notes what each write held. */
const heldStore = Effect.gen(function*() {
  const writes: Array<ReadonlyArray<number>> = []
  const gates: Array<Deferred.Deferred<void, string>> = []
  let running = 0
  let most = 0
  const writeAll = (items: ReadonlyArray<number>) =>
    Effect.suspend(() => {
      running++
      most = Math.max(most, running)
      writes.push(items)
      const gate = Deferred.unsafeMake<void, string>(Effect.runSync(Effect.fiberId))
      gates.push(gate)
      return Effect.ensuring(Deferred.await(gate), Effect.sync(() => running--))
    })
  return { writes, gates, writeAll, most: () => most }
})

/** Lets the forked fibers and the writer run as far as they can. */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

describe("grouped writes", () => {
  it.scoped("one write at a time; what is asked during a write goes together in the next; each ask waits for a write that started after it", () =>
    Effect.gen(function*() {
      const store = yield* heldStore
      const grouped = yield* groupedWrites(store.writeAll)
      const first = yield* Effect.fork(grouped.record([1]))
      yield* settle
      expect(store.writes).toEqual([[1]])
      // Asked while the first write runs: noted, not written yet.
      const second = yield* Effect.fork(grouped.record([2, 3]))
      const third = yield* Effect.fork(grouped.record([4]))
      yield* settle
      expect(store.writes).toEqual([[1]])
      yield* Deferred.succeed(store.gates[0]!, undefined)
      yield* Fiber.join(first)
      yield* settle
      expect(store.writes).toEqual([[1], [2, 3, 4]])
      // The first write's end answers only its own ask.
      expect(second.unsafePoll()).toBeNull()
      expect(third.unsafePoll()).toBeNull()
      yield* Deferred.succeed(store.gates[1]!, undefined)
      yield* Fiber.join(second)
      yield* Fiber.join(third)
      expect(store.most()).toBe(1)
      // Nothing waits: the next ask starts a write of its own at once.
      const fourth = yield* Effect.fork(grouped.record([5]))
      yield* settle
      expect(store.writes).toEqual([[1], [2, 3, 4], [5]])
      yield* Deferred.succeed(store.gates[2]!, undefined)
      yield* Fiber.join(fourth)
    }))

  it.scoped("a failed write fails the asks it held, and the next write goes on", () =>
    Effect.gen(function*() {
      const store = yield* heldStore
      const grouped = yield* groupedWrites(store.writeAll)
      const first = yield* Effect.fork(grouped.record([1]))
      yield* settle
      const second = yield* Effect.fork(grouped.record([2]))
      yield* settle
      yield* Deferred.fail(store.gates[0]!, "the store refused")
      expect(yield* Fiber.await(first)).toEqual(Exit.fail("the store refused"))
      yield* settle
      expect(store.writes).toEqual([[1], [2]])
      yield* Deferred.succeed(store.gates[1]!, undefined)
      expect(yield* Fiber.await(second)).toEqual(Exit.void)
    }))

  it.scoped("an ask interrupted while it waits leaves the writer going: the others' asks are still answered", () =>
    Effect.gen(function*() {
      const store = yield* heldStore
      const writers = yield* FiberSet.make<void, never>()
      const grouped = groupedWritesIn(writers, store.writeAll)
      const first = yield* Effect.fork(grouped.record([1]))
      yield* settle
      const second = yield* Effect.fork(grouped.record([2]))
      yield* settle
      yield* Fiber.interrupt(first)
      yield* Deferred.succeed(store.gates[0]!, undefined)
      yield* settle
      expect(store.writes).toEqual([[1], [2]])
      yield* Deferred.succeed(store.gates[1]!, undefined)
      expect(yield* Fiber.await(second)).toEqual(Exit.void)
    }))
})
