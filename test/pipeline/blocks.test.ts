/**
 * Batches by blocks of offsets (`Blocks` in `vocabulary.ts`): a partition whose offsets are
 * dense (Kafka's) closes a batch at the end of each block of 100 offsets, with no cut written
 * before it goes; only what timing decides (a block the linger closed early, one `maxBytes`
 * closed) is recorded. A frontier ahead of the reading is recorded before the first batch of a
 * block past it goes, and after a restart the blocks below the frontier go only whole (never
 * closed early, never split into parts: `closedBy: "recorded"`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { type Batch, makeBatcher } from "../../src/pipeline/batch.js"
import { pullLoop } from "../../src/pipeline/internal/pullLoop.js"
import { type BatchCut, type Checked, frontierLead, type Frontier, type Unit } from "../../src/pipeline/vocabulary.js"

const valid = (offset: number, partition = "t:0"): Checked => ({
  _tag: "Valid",
  seq: offset,
  position: { partition, offset },
  json: `{"n":${offset}}`
})

const dead = (offset: number, partition = "t:0"): Checked => ({
  _tag: "Dead",
  seq: offset,
  letter: { position: { partition, offset }, reason: { code: "bad", field: null, message: "bad" }, stage: "validate" }
})

const batches = (units: ReadonlyArray<Unit>): Array<Batch> => units.flatMap((u) => (u._tag === "Batch" ? [u.batch] : []))
const span = (batch: Batch) => [batch.records[0]!.position.offset, batch.records[batch.records.length - 1]!.position.offset]

const blockBatcher = (whole: number, recorded: number, options: { maxBytes?: number; cuts?: ReadonlyArray<BatchCut> } = {}) => {
  const batcher = makeBatcher({ max: 100, maxBytes: options.maxBytes ?? 1_000_000, linger: "1 second", recordedCuts: [] })
  batcher.assign(options.cuts ?? [], { partition: "t:0", whole, recorded })
  return batcher
}

describe("batches by blocks of offsets", () => {
  it("close at each block's end, whatever record comes first or is missing, and need no cut written", () => {
    const batcher = blockBatcher(0, 1_000_000)
    // A partition starting mid-block, with gaps (a compacted topic) and a bad record at a block's end.
    for (const offset of [150, 151, 198]) batcher.add(valid(offset), 0)
    batcher.add(dead(199), 0)
    for (const offset of [200, 250, 301, 305]) batcher.add(valid(offset), 0)
    const { cuts, frontiers, units } = batcher.take()
    expect(batches(units).map(span)).toEqual([[150, 198], [200, 250]])
    expect(batches(units).map((b) => b.closedBy)).toEqual(["block", "block"])
    // The bad record at 199 travels with its block's batch, so the commit lands after it.
    expect(batches(units)[0]!.deadLetters.map((l) => l.position.offset)).toEqual([199])
    expect(cuts).toEqual([])
    expect(frontiers).toEqual([])
    expect(batcher.waiting()).toBe(0)
  })

  it("a dead letter past the open block closes it and goes alone", () => {
    const batcher = blockBatcher(0, 1_000_000)
    batcher.add(valid(10), 0)
    batcher.add(dead(120), 0)
    const { units } = batcher.take()
    expect(units.map((u) => u._tag)).toEqual(["Batch", "Dead"])
    expect(span(batches(units)[0]!)).toEqual([10, 10])
  })

  it("a block past the recorded frontier asks for a frontier a lead past what was read, once, before it goes", () => {
    const batcher = blockBatcher(0, 0)
    for (let offset = 0; offset < 250; offset++) batcher.add(valid(offset), 0)
    const first = batcher.take()
    expect(batches(first.units).map(span)).toEqual([[0, 99], [100, 199]])
    expect(first.cuts).toEqual([])
    // Read up to 249: the blocks read whole end at 200.
    expect(first.frontiers).toEqual([{ partition: "t:0", offset: 200 + frontierLead }])
    for (let offset = 250; offset < 5_000; offset++) batcher.add(valid(offset), 0)
    const second = batcher.take()
    expect(batches(second.units)).toHaveLength(48)
    expect(second.frontiers).toEqual([])
    for (let offset = 5_000; offset < 200 + frontierLead + 100; offset++) batcher.add(valid(offset), 0)
    const third = batcher.take()
    expect(third.frontiers).toEqual([{ partition: "t:0", offset: 300 + 2 * frontierLead }])
  })

  it("what timing decides is still recorded: a block closed by the linger or by size, and the input's end", () => {
    const batcher = blockBatcher(0, 1_000_000, { maxBytes: 14 + 3 * 9 })
    for (const offset of [0, 1, 2, 3]) batcher.add(valid(offset), 0) // the fourth passes maxBytes
    batcher.add(valid(50), 0)
    batcher.closeLingering(1_000)
    const { cuts, units } = batcher.take()
    expect(batches(units).map((b) => [b.closedBy, ...span(b)])).toEqual([["bytes", 0, 2], ["linger", 3, 50]])
    expect(cuts.map((c) => [c.first, c.last])).toEqual([[0, 2], [3, 50]])
    // The rest of the block after a recorded cut closes at the block's end, without a cut.
    batcher.add(valid(60), 2_000)
    batcher.add(valid(99), 2_000)
    const rest = batcher.take()
    expect(batches(rest.units).map((b) => [b.closedBy, ...span(b)])).toEqual([["block", 60, 99]])
    expect(rest.cuts).toEqual([])
  })

  it("below the frontier a block goes only whole, as recorded: never closed by the linger or by size", () => {
    const batcher = blockBatcher(200, 10_000, { maxBytes: 14 + 3 * 9 })
    for (const offset of [100, 101, 102, 103]) batcher.add(valid(offset), 0)
    batcher.closeLingering(60_000)
    expect(batcher.waiting()).toBe(0)
    batcher.add(valid(199), 60_000)
    // Past the frontier the rules of timing hold again.
    batcher.add(valid(200), 60_000)
    batcher.add(valid(201), 60_000)
    batcher.closeLingering(120_000)
    const { cuts, units } = batcher.take()
    expect(batches(units).map((b) => [b.closedBy, ...span(b)])).toEqual([["recorded", 100, 199], ["linger", 200, 201]])
    expect(cuts.map((c) => [c.first, c.last])).toEqual([[200, 201]])
  })

  it("a recorded cut wins over the blocks (one recorded by count may span two)", () => {
    const batcher = blockBatcher(0, 1_000_000, { cuts: [{ partition: "t:0", first: 50, last: 149 }] })
    for (let offset = 50; offset < 260; offset++) batcher.add(valid(offset), 0)
    const { units } = batcher.take()
    expect(batches(units).map((b) => [b.closedBy, ...span(b)])).toEqual([["recorded", 50, 149], ["block", 150, 199]])
  })

  it("a partition assigned without blocks, and a revoked one, batch by count with every cut recorded", () => {
    const batcher = blockBatcher(0, 1_000_000)
    batcher.revoke("t:0")
    batcher.assign([])
    for (let offset = 50; offset < 250; offset++) batcher.add(valid(offset), 0)
    const { cuts, units } = batcher.take()
    expect(batches(units).map(span)).toEqual([[50, 149], [150, 249]])
    expect(cuts).toHaveLength(2)
  })

  it.effect("the pull loop dispatches batches under the recorded frontier without a write", () =>
    Effect.gen(function*() {
      const batcher = blockBatcher(0, 0)
      const writes: Array<{ cuts: number; frontiers: ReadonlyArray<Frontier> }> = []
      const dispatched: Array<number> = []
      const elements = Stream.fromChunks(
        Chunk.fromIterable(Array.from({ length: 300 }, (_, i) => valid(i))),
        Chunk.fromIterable(Array.from({ length: 300 }, (_, i) => valid(300 + i)))
      )
      yield* pullLoop(elements, {
        batcher,
        max: 100,
        linger: "1 second",
        recordCuts: (cuts, frontiers) => Effect.sync(() => writes.push({ cuts: cuts.length, frontiers })),
        dispatch: (unit) => Effect.sync(() => unit._tag === "Batch" && dispatched.push(unit.batch.records[0]!.position.offset)),
        onPartitionEvent: () => Effect.void
      })
      expect(dispatched).toEqual([0, 100, 200, 300, 400, 500])
      // One write for the frontier before the first blocks; none for the next ones.
      expect(writes).toHaveLength(1)
      expect(writes[0]!.cuts).toBe(0)
      expect(writes[0]!.frontiers.map((f) => f.partition)).toEqual(["t:0"])
      expect(writes[0]!.frontiers[0]!.offset).toBeGreaterThanOrEqual(300 + frontierLead)
    }))
})
