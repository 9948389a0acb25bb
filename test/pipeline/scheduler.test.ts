import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect } from "effect"
import type { Batch } from "../../src/pipeline/batch.js"
import { makeScheduler } from "../../src/pipeline/internal/scheduler.js"

/** A batch of `partition` whose records carry `keys` (none: a dataset without a key). */
const batchOf = (partition: string, from: number, keys: ReadonlyArray<string> = []): Batch => ({
  partition,
  records: (keys.length === 0 ? ["x"] : keys).map((key, i) => ({
    position: { partition, offset: from + i },
    json: "{}",
    key: keys.length === 0 ? undefined : key
  })),
  deadLetters: [],
  fromSeq: from,
  toSeq: from + Math.max(keys.length, 1) - 1,
  lastPosition: { partition, offset: from },
  closedBy: "count",
  bytes: 100
})

describe("the scheduler", () => {
  it.scopedLive("a drain leaves nothing admitted: a batch under way is awaited (then interrupted), one not started is never sent", () =>
    Effect.gen(function*() {
      const delivered: Array<string> = []
      const stuck = yield* Deferred.make<void>()
      const scheduler = yield* makeScheduler<never>({
        bound: { batches: 10, bytes: 1_000_000, unsent: 10 },
        release: "terminal",
        deliver: (batch, accepted) =>
          Effect.zipRight(
            accepted,
            batch.partition === "p" && batch.fromSeq === 0
              ? Deferred.await(stuck)
              : Effect.sync(() => delivered.push(`${batch.partition}${batch.fromSeq}`))
          )
      })
      yield* scheduler.admit(batchOf("p", 0, ["[1]"])) // under way, never ends by itself
      yield* scheduler.admit(batchOf("p", 1, ["[1]"])) // waits for the first: shares its key
      yield* scheduler.admit(batchOf("q", 0)) // another partition
      yield* Effect.sleep("50 millis")
      expect({ admitted: scheduler.admitted(), delivered }).toEqual({ admitted: 2, delivered: ["q0"] })
      expect(scheduler.waiting()).toBe(1)
      yield* scheduler.drain("p", Duration.millis(100))
      expect(scheduler.admitted()).toBe(0)
      expect(scheduler.waiting()).toBe(0)
      expect(delivered).toEqual(["q0"]) // p's second batch was never delivered
      yield* scheduler.finished
    }))

  it.scopedLive("batches sharing a key go one after the other; the bound on unsent batches holds the admission back", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      const scheduler = yield* makeScheduler<never>({
        bound: { batches: 10, bytes: 1_000_000, unsent: 2 },
        release: "terminal",
        deliver: (batch, accepted) =>
          Effect.gen(function*() {
            order.push(`start ${batch.fromSeq}`)
            yield* Effect.sleep("20 millis")
            yield* accepted
            order.push(`end ${batch.fromSeq}`)
          })
      })
      yield* scheduler.admit(batchOf("p", 0, ["[1]"]))
      yield* scheduler.admit(batchOf("p", 1, ["[1]"]))
      yield* scheduler.admit(batchOf("p", 2, ["[2]"]))
      yield* scheduler.finished
      expect(order.indexOf("end 0")).toBeLessThan(order.indexOf("start 1"))
      expect(order.indexOf("start 2")).toBeLessThan(order.indexOf("end 1"))
    }))
})
