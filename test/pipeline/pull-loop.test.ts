/**
 * The pull loop (`internal/pullLoop.ts`): when closed batches go out. A source that hands over
 * chunks bigger than a batch and then falls silent (a Kafka fetch) must not leave full batches
 * waiting for the linger ticker while the sends have room (`hungry`), and must still group
 * them while the sends are busy. The cuts are written behind the loop: it pulls on while a
 * write is under way, never dispatches a unit before its cut is written, and waits for the
 * writer when the sends have no room.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Exit, Fiber, type FiberRefs, Stream, TestClock } from "effect"
import { CheckpointError } from "../../src/pipeline/vocabulary.js"
import { makeBatcher } from "../../src/pipeline/batch.js"
import { pullLoop, type PullLoopOptions } from "../../src/pipeline/internal/pullLoop.js"
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

/** What the runtime's fiber has besides its public interface (`setFiberRefs`, used by `addFinalizer`). */
interface Internal {
  readonly setFiberRefs: (refs: FiberRefs.FiberRefs) => void
}

const settle = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
})

/** A loop's options: batches of 100, a linger of 10 s, cuts and units taken and dropped, unless overridden. */
const optionsWith = (overrides: Partial<PullLoopOptions<never>>): PullLoopOptions<never> => ({
  batcher: makeBatcher({ max: 100, maxBytes: 1_000_000, linger: "10 seconds", recordedCuts: [] }),
  max: 100,
  linger: "10 seconds",
  recordCuts: () => Effect.void,
  dispatch: () => Effect.void,
  onPartitionEvent: () => Effect.void,
  ...overrides
})

const loop = (count: number, hungry: (() => boolean) | undefined) =>
  Effect.gen(function*() {
    const dispatched: Array<Unit> = []
    const recorded: Array<BatchCut> = []
    const fiber = yield* Effect.fork(pullLoop(burst(count), optionsWith({
      recordCuts: (cuts) => Effect.sync(() => recorded.push(...cuts)),
      dispatch: (unit) => Effect.sync(() => dispatched.push(unit)),
      hungry
    })))
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

  /** Chunks of 100 records each (the rest a second after the first), then silence; counts what the loop pulled. */
  const chunks = (count: number, pulled: { n: number }) =>
    Stream.fromChunks(...Array.from({ length: count }, (_, c) => Chunk.fromIterable(Array.from({ length: 100 }, (_, i) => valid(c * 100 + i))))).pipe(
      Stream.rechunk(100),
      Stream.tap((checked) => checked.seq === 100 ? Effect.sleep("1 second") : Effect.void),
      Stream.mapChunks((chunk) => {
        pulled.n += Chunk.size(chunk)
        return chunk
      }),
      Stream.concat(Stream.never)
    )

  /** A loop whose first cut write waits for `gate`; `room` is what dispatch has room for. */
  const gated = (count: number, room: (() => number) | undefined) =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const pulled = { n: 0 }
      const log: Array<string> = []
      let writes = 0
      const fiber = yield* Effect.fork(pullLoop(chunks(count, pulled), optionsWith({
        recordCuts: (cuts) =>
          Effect.zipRight(
            writes++ === 0 ? Deferred.await(gate) : Effect.void,
            Effect.sync(() => log.push(`write ${cuts.map((cut) => `${cut.first}-${cut.last}`).join(" ")}`))
          ),
        dispatch: (unit) => Effect.sync(() => log.push(`send ${unit._tag === "Batch" ? unit.batch.records[0]!.position.offset : "?"}`)),
        hungry: () => true,
        room
      })))
      yield* settle
      return { fiber, gate, log, pulled }
    })

  it.effect("a cut write under way does not stop the pull; each unit goes after its own cut is written, those closed meanwhile in one write", () =>
    Effect.gen(function*() {
      const { fiber, gate, log, pulled } = yield* gated(4, () => 16)
      yield* TestClock.adjust("1 second")
      yield* settle
      // The first write waits: the loop pulled everything meanwhile, and nothing went out.
      expect(pulled.n).toBe(400)
      expect(log).toEqual([])
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      expect(log).toEqual(["write 1-100", "send 1", "write 101-200 201-300 301-400", "send 101", "send 201", "send 301"])
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("with no room to dispatch, the loop waits for the writer instead of pulling ahead", () =>
    Effect.gen(function*() {
      const { fiber, gate, log, pulled } = yield* gated(4, () => 0)
      yield* TestClock.adjust("1 second")
      yield* settle
      // One unit closed while the first write waits: with no room for it, the loop stopped there.
      expect(pulled.n).toBe(200)
      expect(log).toEqual([])
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      yield* TestClock.adjust("1 second")
      yield* settle
      expect(pulled.n).toBe(400)
      expect(log.filter((line) => line.startsWith("send"))).toEqual(["send 1", "send 101", "send 201", "send 301"])
      // Every unit's cut was written before it went.
      for (const offset of [1, 101, 201, 301]) {
        expect(log.findIndex((line) => line.startsWith("write") && line.includes(`${offset}-`)))
          .toBeLessThan(log.indexOf(`send ${offset}`))
      }
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("a cut write that fails behind the loop fails the loop while it waits for its source", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(pullLoop(chunks(1, { n: 0 }), optionsWith({
        recordCuts: () => Effect.fail(new CheckpointError({ reason: "disk full" })),
        hungry: () => true
      })))
      yield* settle
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause).includes("disk full")).toBe(true)
    }))

  it.live("a stop reaches the feed even when the source, at its end, undoes the interruption (as Effect 3.22's addFinalizer can)", () =>
    Effect.gen(function*() {
      const ending = yield* Deferred.make<void>()
      // Puts back the fiber refs it found, as `addFinalizer` does after a scope's finalizer:
      // an interruption that came meanwhile is gone.
      const forgetful = Effect.uninterruptible(Effect.withFiberRuntime<void>((fiber) => {
        const before = fiber.getFiberRefs()
        return Deferred.succeed(ending, undefined).pipe(
          Effect.zipRight(Effect.sleep("200 millis")),
          Effect.zipRight(Effect.sync(() => (fiber as unknown as Internal).setFiberRefs(before)))
        )
      }))
      const source = Stream.concat(Stream.make(valid(0), valid(1)), Stream.execute(forgetful))
      // Nothing is ever dispatched: a feed that carried on to its end would wait forever.
      const fiber = yield* Effect.fork(pullLoop(source, optionsWith({ dispatch: () => Effect.never })))
      yield* Deferred.await(ending)
      const exit = yield* Effect.timeout(Fiber.interrupt(fiber), "5 seconds")
      expect(Exit.isInterrupted(exit)).toBe(true)
    }))
})
