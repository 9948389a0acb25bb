/**
 * The Kafka source's assignment state machine, without a broker: generations, who may still
 * write, what is written, and which fetched messages are new.
 */
import { describe, expect, it } from "vitest"
import {
  addCuts,
  Assignments,
  blocksOf,
  commitAt,
  commitBase,
  committedPosition,
  loadCommitted,
  maxMetadataLength,
  offsetsToWrite,
  oversizedMetadata,
  roomForParts,
  takeFetched
} from "../../connectors/kafka/assignments.js"
import { encodeCuts } from "../../connectors/kafka/codec.js"
import type { KafkaMessage } from "../../connectors/kafka/kafkajs.js"

const at = (offset: number): KafkaMessage => ({
  topic: "orders",
  partition: 0,
  offset,
  key: null,
  value: null,
  headers: {},
  timestamp: 0
})

describe("Kafka assignments", () => {
  it("a write of an older generation is refused, even for a partition that came back in the newest one", () => {
    const held = new Assignments()
    const first = held.assign([{ topic: "orders", partition: 0 }, { topic: "orders", partition: 1 }])
    expect(first.fresh.map((s) => s.name)).toEqual(["orders:0", "orders:1"])
    expect(held.mayWrite(first.epoch)).toBe(true)

    expect(held.revokeAll().map((s) => [s.name, s.status])).toEqual([["orders:0", "revoked"], ["orders:1", "revoked"]])
    expect(held.mayWrite(first.epoch)).toBe(true) // revoked, draining: no new generation yet
    expect(held.all()).toEqual([])
    expect(held.revokeAll()).toEqual([]) // nothing left to announce
    // A member cannot tell whether a generation it never saw (dropped by the group, or its
    // sync refused) gave orders:0 to another member, who committed past the old state.
    const second = held.assign([{ topic: "orders", partition: 0 }])
    expect(second.epoch).toBe(first.epoch + 1)
    expect(held.mayWrite(first.epoch)).toBe(false)
    expect(held.mayWrite(second.epoch)).toBe(true)
    expect(held.isCurrent(first.epoch)).toBe(false)
  })

  it("owned: live and still this member's; a revoked partition's waiting fetch is let go", async () => {
    const held = new Assignments()
    const { epoch, fresh } = held.assign([{ topic: "orders", partition: 0 }])
    const s = fresh[0]!
    expect(held.owned(s, epoch)).toBe(false) // pending
    s.status = "live"
    expect(held.owned(s, epoch)).toBe(true)
    held.revokeAll()
    await s.ready
    expect(held.owned(s, epoch)).toBe(false)
  })

  it("a failed commit is left to the next owner once a new generation formed, or at once when refused as fenced", () => {
    const held = new Assignments()
    const { epoch, fresh } = held.assign([{ topic: "orders", partition: 0 }])
    const s = fresh[0]!
    s.status = "live"
    expect(held.leftToNextOwner(epoch, "NOT_COORDINATOR")).toBe(false) // still its generation: try again
    expect(held.owned(s, epoch)).toBe(true)
    // Dropped by the group, and not told yet: its generation is over all the same.
    expect(held.leftToNextOwner(epoch, "UNKNOWN_MEMBER_ID")).toBe(true)
    expect(held.mayWrite(epoch)).toBe(false)
    expect(held.owned(s, epoch)).toBe(false) // nothing more is sent
    held.revokeAll()
    const next = held.assign([{ topic: "orders", partition: 0 }])
    expect(held.mayWrite(next.epoch)).toBe(true) // joined again: a new generation
    expect(held.leftToNextOwner(epoch, "NOT_COORDINATOR")).toBe(true)
    expect(held.leftToNextOwner(next.epoch, undefined)).toBe(false)
  })

  it("a consumer that stopped and left the group (to start again) ends its generation: nothing more is written or sent", () => {
    const held = new Assignments()
    const { epoch, fresh } = held.assign([{ topic: "orders", partition: 0 }])
    const s = fresh[0]!
    s.status = "live"
    held.leftGroup()
    expect(held.mayWrite(epoch)).toBe(false)
    expect(held.owned(s, epoch)).toBe(false)
    // A commit kafkajs did not send because its consumer was stopped is the next owner's too.
    const again = held.assign([{ topic: "orders", partition: 0 }])
    expect(held.leftToNextOwner(again.epoch, "CONSUMER_STOPPED")).toBe(true)
    const third = held.assign([{ topic: "orders", partition: 0 }])
    expect(held.mayWrite(third.epoch)).toBe(true) // joined again: a new generation
  })

  it("the committed offset and its cuts are loaded, and written back against the commit base", () => {
    const held = new Assignments()
    const s = held.assign([{ topic: "orders", partition: 0 }]).fresh[0]!
    expect(commitBase(s)).toBeUndefined()
    expect(offsetsToWrite([s])).toEqual([])
    loadCommitted(s, { topic: "orders", partition: 0, offset: -1, metadata: null })
    expect(s.committed).toBeUndefined()

    const cuts = [{ partition: "orders:0", first: 10, last: 19 }, { partition: "orders:0", first: 20, last: 29 }]
    loadCommitted(s, { topic: "orders", partition: 0, offset: 10, metadata: encodeCuts(cuts, 10) })
    expect({ committed: s.committed, skipBelow: s.skipBelow, cuts: s.cuts }).toEqual({ committed: 10, skipBelow: 10, cuts })
    expect(committedPosition(s)).toEqual({ partition: "orders:0", offset: 9, resume: { topic: "orders", partition: 0 } })

    const byName = new Map([[s.name, s]])
    expect(addCuts(byName, [{ partition: "orders:0", first: 30, last: 39 }, { partition: "orders:9", first: 0, last: 1 }])).toEqual([s])
    commitAt(s, { partition: "orders:0", offset: 19 })
    expect(s.committed).toBe(20)
    expect(s.cuts.map((c) => c.first)).toEqual([20, 30])
    expect(offsetsToWrite([s])).toEqual([{ topic: "orders", partition: 0, offset: 20, metadata: encodeCuts(s.cuts, 20) }])
    // A batch going in parts records its cut again, with the split: it replaces the cut.
    addCuts(byName, [{ partition: "orders:0", first: 30, last: 39, held: [33] }])
    expect(s.cuts).toEqual([{ partition: "orders:0", first: 20, last: 29 }, { partition: "orders:0", first: 30, last: 39, held: [33] }])
    // Splits take room only while the metadata stays within half of what fits.
    expect(roomForParts(s, { partition: "orders:0", first: 30, last: 39, held: [31] })).toBe(true)
    for (let i = 0; i < 50; i++) {
      addCuts(byName, [{ partition: "orders:0", first: 100 + i * 100, last: 199 + i * 100, held: Array.from({ length: 15 }, (_, j) => 100 + i * 100 + j * 6) }])
    }
    expect(offsetsToWrite([s])[0]!.metadata.length).toBeGreaterThan(maxMetadataLength / 2)
    expect(roomForParts(s, { partition: "orders:0", first: 5000, last: 5099, held: [5001] })).toBe(false)
    expect(roomForParts(undefined, { partition: "orders:9", first: 0, last: 1, held: [1] })).toBe(false)
  })

  it("a partition's run identity: fresh without our commit, kept from its metadata, none for metadata of before runs", () => {
    const held = new Assignments()
    const [a, b, c] = held.assign([{ topic: "o", partition: 0 }, { topic: "o", partition: 1 }, { topic: "o", partition: 2 }]).fresh
    const fresh = a!.run
    expect(fresh).toMatch(/^[0-9a-f-]{36}$/)
    loadCommitted(a!, undefined)
    expect(a!.run).toBe(fresh)
    loadCommitted(b!, { topic: "o", partition: 1, offset: 7, metadata: encodeCuts([], 7, "run-of-before") })
    expect(b!.run).toBe("run-of-before")
    expect(offsetsToWrite([b!])[0]!.metadata).toBe("t2:run-of-before;")
    loadCommitted(c!, { topic: "o", partition: 2, offset: 7, metadata: encodeCuts([], 7) })
    expect(c!.run).toBeUndefined()
    expect(offsetsToWrite([c!])[0]!.metadata).toBe("t1:")
    // Offsets reset by another tool (no metadata of ours): a fresh run, its batches stored again.
    const [d] = held.assign([{ topic: "o", partition: 3 }]).fresh
    const before = d!.run
    loadCommitted(d!, { topic: "o", partition: 3, offset: 0, metadata: "" })
    expect(d!.run).toBe(before)
  })

  it("while nothing is committed the base is the first offset fetched; cuts too long for the metadata are refused", () => {
    const held = new Assignments()
    const s = held.assign([{ topic: "orders", partition: 0 }]).fresh[0]!
    s.cuts.push({ partition: "orders:0", first: 7, last: 8 })
    expect(commitBase(s)).toBe(7)
    takeFetched(s, { topic: "orders", partition: 0, highWatermark: 50, messages: [at(5), at(6)] })
    expect(commitBase(s)).toBe(5)

    const long = { topic: "orders", partition: 0, offset: 0, metadata: "x".repeat(4001) }
    expect(oversizedMetadata([long])).toMatch(/^topic orders partition 0: 4001 characters of batch cuts do not fit/)
    expect(oversizedMetadata([{ ...long, metadata: "x".repeat(4000) }])).toBeUndefined()
  })

  it("fetched messages below what was committed or taken are skipped; the end is noted", () => {
    const held = new Assignments()
    const s = held.assign([{ topic: "orders", partition: 0 }]).fresh[0]!
    s.skipBelow = 3
    const taken = takeFetched(s, { topic: "orders", partition: 0, highWatermark: 9, messages: [2, 3, 4].map(at) }).map((m) => m.offset)
    expect(taken).toEqual([3, 4])
    expect({ start: s.start, skipBelow: s.skipBelow, end: s.end }).toEqual({ start: 3, skipBelow: 5, end: 9 })
    // A fetch that started earlier brings nothing twice.
    expect(takeFetched(s, { topic: "orders", partition: 0, highWatermark: 9, messages: [4, 5].map(at) }).map((m) => m.offset)).toEqual([5])
  })

  it("blocks: the frontier read back goes with every write, only grows, and is capped by the log's end at assignment", () => {
    const held = new Assignments()
    const s = held.assign([{ topic: "orders", partition: 0 }]).fresh[0]!
    loadCommitted(s, { topic: "orders", partition: 0, offset: 1100, metadata: encodeCuts([], 1100, s.run, 21_100) })
    expect(s.frontier).toBe(21_100)
    // Blocks up to the frontier go only whole, but none past the blocks wholly in the log then.
    expect(blocksOf(s, 5_050)).toEqual({ whole: 5_000, recorded: 21_100 })
    expect(blocksOf(s, 90_000)).toEqual({ whole: 21_100, recorded: 21_100 })
    const byName = new Map([[s.name, s]])
    expect(addCuts(byName, [], [{ partition: s.name, offset: 31_100 }])).toEqual([s])
    expect(addCuts(byName, [], [{ partition: s.name, offset: 25_000 }])).toEqual([s])
    expect(s.frontier).toBe(31_100)
    commitAt(s, { partition: s.name, offset: 1_499 })
    expect(offsetsToWrite([s])).toEqual([{ topic: "orders", partition: 0, offset: 1_500, metadata: encodeCuts([], 1_500, s.run, 31_100) }])
    // Nothing recorded (a partition new to the group, or one written by a build without blocks).
    const fresh = held.assign([{ topic: "orders", partition: 1 }]).fresh[0]!
    expect(blocksOf(fresh, 5_050)).toEqual({ whole: 0, recorded: 0 })
  })
})
