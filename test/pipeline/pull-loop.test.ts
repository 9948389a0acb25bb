/**
 * The pull loop (`internal/pullLoop.ts`): when closed batches go out. A source that hands over
 * chunks bigger than a batch and then falls silent (a Kafka fetch) must not leave full batches
 * waiting for the linger ticker while the sends have room (`hungry`), and must still group
 * them while the sends are busy.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream, TestClock } from "effect"
import { makeBatcher } from "../../src/pipeline/batch.js"
import { pullLoop } from "../../src/pipeline/internal/pullLoop.js"
import type { BatchCut, Checked, Unit } from "../../src/pipeline/vocabulary.js"

const valid = (seq: number): Checked => ({
  _tag: "Valid",
  seq,
  position: { partition: "0", offset: seq + 1 },
  json: `{"n":${seq}}`
})

/** After a second, one chunk of `count` elements, then silence (the stream never ends). */
const burst = (count: number) =>
  Stream.fromEffect(Effect.sleep("1 second")).pipe(
    Stream.flatMap(() => Stream.fromChunk(Chunk.fromIterable(Array.from({ length: count }, (_, i) => valid(i))))),
    Stream.concat(Stream.never)
  )

const settle = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
})

const loop = (count: number, hungry: (() => boolean) | undefined) =>
  Effect.gen(function*() {
    const dispatched: Array<Unit> = []
    const recorded: Array<BatchCut> = []
    const fiber = yield* Effect.fork(pullLoop(burst(count), {
      batcher: makeBatcher({ max: 100, maxBytes: 1_000_000, linger: "10 seconds", recordedCuts: [] }),
      max: 100,
      linger: "10 seconds",
      recordCuts: (cuts) => Effect.sync(() => recorded.push(...cuts)),
      dispatch: (unit) => Effect.sync(() => dispatched.push(unit)),
      onPartitionEvent: () => Effect.void,
      hungry
    }))
    yield* settle
    yield* TestClock.adjust("1 second")
    yield* settle
    return { dispatched, recorded, fiber }
  })

describe("pull loop", () => {
  it.effect("full batches of a big chunk go at once while the sends are hungry, their cuts recorded first", () =>
    Effect.gen(function*() {
      const { dispatched, fiber, recorded } = yield* loop(250, () => true)
      expect(dispatched.map((unit) => unit._tag === "Batch" ? unit.batch.records.length : 0)).toEqual([100, 100])
      expect(recorded.map((cut) => [cut.first, cut.last])).toEqual([[1, 100], [101, 200]])
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("while the sends are busy, full batches wait to go out together (until the linger ticker)", () =>
    Effect.gen(function*() {
      const { dispatched, fiber } = yield* loop(250, () => false)
      expect(dispatched).toEqual([])
      // The ticker (each quarter of the linger) sends what waits.
      yield* TestClock.adjust("1500 millis")
      yield* settle
      expect(dispatched.map((unit) => unit._tag === "Batch" ? unit.batch.records.length : 0)).toEqual([100, 100])
      yield* Fiber.interrupt(fiber)
    }))
})
