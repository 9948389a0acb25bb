import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect } from "effect"
import type { Batch } from "../../src/pipeline/batch.js"
import { makeScheduler, PendingRoom, placeShare } from "../../src/pipeline/internal/scheduler.js"
import { awaitCall } from "../../src/pipeline/internal/parts.js"

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

/** What most cases use: room for ten batches, terminal order, splits recorded at once. */
const defaults = {
  bound: { batches: 10, bytes: 1_000_000, unsent: 10 },
  release: "terminal" as const,
  recordParts: () => Effect.void
}

describe("the scheduler", () => {
  it.scopedLive("a drain leaves nothing admitted: a batch under way is awaited (then interrupted), one not started is never sent", () =>
    Effect.gen(function*() {
      const delivered: Array<string> = []
      const stuck = yield* Deferred.make<void>()
      const scheduler = yield* makeScheduler<never>({
        ...defaults,
        deliver: (batch, accepted) =>
          Effect.zipRight(
            Effect.sync(accepted),
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
        ...defaults,
        bound: { ...defaults.bound, unsent: 2 },
        deliver: (batch, accepted) =>
          Effect.gen(function*() {
            order.push(`start ${batch.fromSeq}`)
            yield* Effect.sleep("20 millis")
            accepted()
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

  it.scopedLive("a batch sharing only some keys with an unfinished earlier one sends the others at once, and the shared ones after it ends", () =>
    Effect.gen(function*() {
      const sent: Array<string> = []
      const first = yield* Deferred.make<void>()
      const scheduler = yield* makeScheduler<never>({
        ...defaults,
        deliver: (batch, accepted, heldBack) =>
          Effect.gen(function*() {
            const keys = (records: ReadonlyArray<{ readonly key?: unknown }>) => records.map((r) => String(r.key)).join(",")
            if (heldBack === undefined) {
              sent.push(`${batch.fromSeq}: ${keys(batch.records)}`)
              accepted()
              if (batch.fromSeq === 0) yield* Deferred.await(first) // the earlier batch stays unfinished
              return
            }
            const free = batch.records.filter((r) => !heldBack.offsets.has(r.position.offset))
            const held = batch.records.filter((r) => heldBack.offsets.has(r.position.offset))
            sent.push(`${batch.fromSeq} now: ${keys(free)}`)
            expect(yield* awaitCall(heldBack.whenReady)).toBe(true)
            sent.push(`${batch.fromSeq} later: ${keys(held)}`)
            accepted()
          })
      })
      yield* scheduler.admit(batchOf("p", 0, ["a", "b"]))
      yield* scheduler.admit(batchOf("p", 2, ["c", "a", "d"]))
      yield* Effect.sleep("50 millis")
      expect(sent).toEqual(["0: a,b", "2 now: c,d"])
      expect(scheduler.waiting()).toBe(1)
      yield* Deferred.succeed(first, undefined)
      yield* scheduler.finished
      expect(sent).toEqual(["0: a,b", "2 now: c,d", "2 later: a"])
      expect(scheduler.waiting()).toBe(0)
    }))

  /**
   * Three batches of partition p: 0 [a b] goes and stays unfinished until `first`; 2 [b a]
   * waits whole (every key held); 4 [a z] goes in parts (z now, a after 2). Each call noted;
   * a batch whose partition `owned` says is gone is not sent, as the run does.
   */
  const heldScene = (owned: () => boolean = () => true) =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const first = yield* Deferred.make<void>()
      const scheduler = yield* makeScheduler<never>({
        ...defaults,
        owned,
        deliver: (batch, accepted, heldBack) =>
          Effect.gen(function*() {
            if (!owned()) return void calls.push(`${batch.fromSeq} not sent`)
            calls.push(`${batch.fromSeq} ${heldBack === undefined ? "whole" : "in parts"}`)
            if (heldBack !== undefined) calls.push(`${batch.fromSeq} held may go: ${yield* awaitCall(heldBack.whenReady)}`)
            accepted()
            if (batch.fromSeq === 0) yield* Deferred.await(first)
          })
      })
      yield* scheduler.admit(batchOf("p", 0, ["a", "b"]))
      yield* scheduler.admit(batchOf("p", 2, ["b", "a"]))
      yield* scheduler.admit(batchOf("p", 4, ["a", "z"]))
      yield* Effect.sleep("50 millis")
      return { calls, first, scheduler }
    })

  it.scopedLive("a batch whose every key is held waits whole; a drained partition's held records are not sent", () =>
    Effect.gen(function*() {
      const { calls, first, scheduler } = yield* heldScene()
      expect(calls).toEqual(["0 whole", "4 in parts"])
      yield* Effect.fork(scheduler.drain("p", Duration.seconds(5)))
      yield* Effect.sleep("20 millis")
      yield* Deferred.succeed(first, undefined)
      yield* scheduler.finished
      // 2 was never started (drained); 4's held records see the partition gone.
      expect(calls).toEqual(["0 whole", "4 in parts", "4 held may go: false"])
    }))

  it.scopedLive("a partition taken away before its drain: a held part whose earlier batch ended unsent is not sent either", () =>
    Effect.gen(function*() {
      let owned = true
      const { calls, first, scheduler } = yield* heldScene(() => owned)
      expect(calls).toEqual(["0 whole", "4 in parts"])
      // The partition is taken away; its drain has not come yet. 0 ends, 2 ends unsent.
      owned = false
      yield* Deferred.succeed(first, undefined)
      yield* scheduler.finished
      // 4's held records (a) must not go ahead of 2's, which its next owner sends again.
      expect(calls).toEqual(["0 whole", "4 in parts", "2 not sent", "4 held may go: false"])
    }))

  it.scopedLive("later batches wait for the part that holds their key, not for the whole batch: a held part does not chain the rest", () =>
    Effect.gen(function*() {
      const sent: Array<string> = []
      const first = yield* Deferred.make<void>()
      const keys = (records: ReadonlyArray<{ readonly key?: unknown }>) => records.map((r) => String(r.key)).join(",")
      const scheduler = yield* makeScheduler<never>({
        ...defaults,
        deliver: (batch, accepted, heldBack) =>
          Effect.gen(function*() {
            if (heldBack === undefined) {
              sent.push(`${batch.fromSeq}: ${keys(batch.records)}`)
              accepted()
              if (batch.fromSeq === 0) yield* Deferred.await(first)
              return
            }
            sent.push(`${batch.fromSeq} now: ${keys(batch.records.filter((r) => !heldBack.offsets.has(r.position.offset)))}`)
            heldBack.freeAccepted()
            yield* Effect.sleep("10 millis") // the free part's ingestion ends
            heldBack.freeEnded()
            yield* awaitCall(heldBack.whenReady)
            sent.push(`${batch.fromSeq} later: ${keys(batch.records.filter((r) => heldBack.offsets.has(r.position.offset)))}`)
            accepted()
          })
      })
      yield* scheduler.admit(batchOf("p", 0, ["a", "b"])) // stays unfinished
      yield* scheduler.admit(batchOf("p", 2, ["a", "c"])) // c now, a after 0
      yield* scheduler.admit(batchOf("p", 4, ["c", "d"])) // c after 2's free part only
      yield* Effect.sleep("100 millis")
      expect(sent).toEqual(["0: a,b", "2 now: c", "4 now: d", "4 later: c"])
      yield* Deferred.succeed(first, undefined)
      yield* scheduler.finished
      expect(sent.slice(4)).toEqual(["2 later: a"])
    }))

  it.scopedLive("a split is recorded (the cut with the offsets of the held records) before either part goes; splits made during a write go in the next one together", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const first = yield* Deferred.make<void>()
      const scheduler = yield* makeScheduler<never>({
        ...defaults,
        recordParts: (cuts) =>
          Effect.zipRight(
            Effect.sync(() => events.push(`writing ${cuts.map((cut) => `${cut.first}..${cut.last} held ${cut.held}`).join("; ")}`)),
            Effect.sleep("30 millis")
          ),
        deliver: (batch, accepted, heldBack) =>
          Effect.gen(function*() {
            events.push(`${batch.fromSeq} ${heldBack === undefined ? "whole" : "in parts"}`)
            accepted()
            if (batch.fromSeq === 0) yield* Deferred.await(first)
            if (heldBack !== undefined) yield* awaitCall(heldBack.whenReady)
          })
      })
      yield* scheduler.admit(batchOf("p", 0, ["a", "b", "x"]))
      yield* scheduler.admit(batchOf("p", 3, ["c", "a", "d"]))
      yield* Effect.sleep("10 millis")
      // The first split's write is under way; two more splits wait for the next write.
      yield* scheduler.admit(batchOf("p", 6, ["e", "b"]))
      yield* scheduler.admit(batchOf("p", 8, ["x", "f"]))
      expect(events).toEqual(["0 whole", "writing 3..5 held 4"])
      yield* Effect.sleep("30 millis")
      expect(events.slice(2).sort()).toEqual(["3 in parts", "writing 6..7 held 7; 8..9 held 8"])
      yield* Effect.sleep("40 millis")
      expect(events.slice(4).sort()).toEqual(["6 in parts", "8 in parts"])
      yield* Deferred.succeed(first, undefined)
      yield* scheduler.finished
    }))

  it.scopedLive("a failed split record fails the run, and neither part is sent", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const first = yield* Deferred.make<void>()
      const scheduler = yield* makeScheduler<string>({
        ...defaults,
        recordParts: () => Effect.fail("disk full"),
        deliver: (batch, accepted) =>
          Effect.gen(function*() {
            events.push(`${batch.fromSeq} sent`)
            accepted()
            if (batch.fromSeq === 0) yield* Deferred.await(first)
          })
      })
      yield* scheduler.admit(batchOf("p", 0, ["a", "b"]))
      yield* scheduler.admit(batchOf("p", 2, ["c", "a"]))
      expect(yield* Effect.flip(scheduler.failed)).toBe("disk full")
      expect(events).toEqual(["0 sent"])
      yield* Deferred.succeed(first, undefined)
    }))

  it.scopedLive("a batch closed at a recorded cut goes as it went before: in its recorded parts even when nothing holds its keys, whole when nothing was recorded; each part waits for the holders of its own keys", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const first = yield* Deferred.make<void>()
      const scheduler = yield* makeScheduler<never>({
        ...defaults,
        recordParts: (cuts) => Effect.sync(() => events.push(`recorded ${cuts.map((cut) => cut.first)}`)),
        deliver: (batch, accepted, heldBack) =>
          Effect.gen(function*() {
            events.push(`${batch.fromSeq} ${heldBack === undefined ? "whole" : `in parts, held ${[...heldBack.offsets]}`}`)
            if (heldBack !== undefined) {
              yield* Effect.all([
                Effect.flatMap(awaitCall(heldBack.whenFreeReady), () => Effect.sync(() => events.push(`${batch.fromSeq} free part goes`))),
                Effect.flatMap(awaitCall(heldBack.whenReady), () => Effect.sync(() => events.push(`${batch.fromSeq} held part goes`)))
              ], { concurrency: 2 })
            }
            accepted()
            if (batch.fromSeq === 0) yield* Deferred.await(first)
          })
      })
      // Recorded in parts, nothing holds its keys now: still in the same parts, both at once.
      yield* scheduler.admit({ ...batchOf("q", 10, ["x", "y", "z"]), closedBy: "recorded", held: [11] })
      yield* Effect.sleep("20 millis")
      expect(events).toEqual(["10 in parts, held 11", "10 free part goes", "10 held part goes"])
      // Recorded whole while an earlier batch holds one of its keys: waits whole, never split.
      yield* scheduler.admit(batchOf("p", 0, ["a", "b"]))
      yield* scheduler.admit({ ...batchOf("p", 2, ["c", "a"]), closedBy: "recorded" })
      // Recorded in parts while an earlier batch holds the key of its free part (b): the held
      // part (e) goes at once, the free part after batch 0.
      yield* scheduler.admit({ ...batchOf("p", 4, ["b", "e"]), closedBy: "recorded", held: [5] })
      yield* Effect.sleep("50 millis")
      expect(events.slice(3)).toEqual(["0 whole", "4 in parts, held 5", "4 held part goes"])
      yield* Deferred.succeed(first, undefined)
      yield* scheduler.finished
      expect(events.slice(6).sort()).toEqual(["2 whole", "4 free part goes"])
      // No split was recorded again.
      expect(events.filter((event) => event.startsWith("recorded"))).toEqual([])
    }))

  it.scopedLive("without room to record a split (the store says no), a partly held batch waits whole", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const first = yield* Deferred.make<void>()
      const scheduler = yield* makeScheduler<never>({
        ...defaults,
        recordParts: (cuts) => Effect.sync(() => events.push(`recorded ${cuts.map((cut) => cut.first)}`)),
        roomForParts: () => false,
        deliver: (batch, accepted, heldBack) =>
          Effect.gen(function*() {
            events.push(`${batch.fromSeq} ${heldBack === undefined ? "whole" : "in parts"}`)
            accepted()
            if (batch.fromSeq === 0) yield* Deferred.await(first)
          })
      })
      yield* scheduler.admit(batchOf("p", 0, ["a", "b"]))
      yield* scheduler.admit(batchOf("p", 2, ["c", "a", "d"]))
      yield* Effect.sleep("30 millis")
      expect(events).toEqual(["0 whole"])
      yield* Deferred.succeed(first, undefined)
      yield* scheduler.finished
      expect(events).toEqual(["0 whole", "2 whole"])
    }))

  describe("deliveries in callback form (deliverNow: a batch that goes whole, without a fiber)", () => {
    /** A delivery in callback form each of whose batches ends when the test says so. */
    const manual = () => {
      const log: Array<string> = []
      const pending = new Map<number, (failure?: string) => void>()
      const cancelled: Array<number> = []
      return {
        log,
        cancelled,
        /** Ends batch `from` (with a failure when given). */
        end: (from: number, failure?: string) => pending.get(from)?.(failure),
        deliverNow: (batch: Batch, accepted: () => void, _heldBack: unknown, done: (failure: Cause.Cause<string> | undefined) => void) => {
          log.push(`start ${batch.partition}${batch.fromSeq}`)
          accepted()
          pending.set(batch.fromSeq, (failure) => {
            pending.delete(batch.fromSeq)
            log.push(`end ${batch.partition}${batch.fromSeq}`)
            done(failure === undefined ? undefined : Cause.fail(failure))
          })
          return () => {
            pending.delete(batch.fromSeq)
            cancelled.push(batch.fromSeq)
          }
        }
      }
    }
    const never = () => Effect.dieMessage("batches that go whole do not go through deliver")

    it.scopedLive("batches sharing a key go one after the other, the others at once; finished waits for the last", () =>
      Effect.gen(function*() {
        const service = manual()
        const scheduler = yield* makeScheduler<string>({ ...defaults, deliver: never, deliverNow: service.deliverNow })
        yield* scheduler.admit(batchOf("p", 0, ["a"]))
        yield* scheduler.admit(batchOf("p", 1, ["a"]))
        yield* scheduler.admit(batchOf("p", 2, ["b"]))
        expect(service.log).toEqual(["start p0", "start p2"])
        expect({ admitted: scheduler.admitted(), waiting: scheduler.waiting() }).toEqual({ admitted: 3, waiting: 1 })
        service.end(0)
        yield* Effect.sleep("5 millis")
        expect(service.log).toEqual(["start p0", "start p2", "end p0", "start p1"])
        expect(scheduler.waiting()).toBe(0)
        service.end(2)
        service.end(1)
        yield* scheduler.finished
        expect(scheduler.admitted()).toBe(0)
      }))

    it.scopedLive("a failure is recorded before the batch's room comes back, and the run sees it", () =>
      Effect.gen(function*() {
        const service = manual()
        const scheduler = yield* makeScheduler<string>({ ...defaults, deliver: never, deliverNow: service.deliverNow })
        yield* scheduler.admit(batchOf("p", 0))
        service.end(0, "the service refused")
        expect(yield* scheduler.hasFailed).toBe(true)
        expect(yield* Effect.flip(scheduler.failed)).toBe("the service refused")
        expect(scheduler.admitted()).toBe(0)
      }))

    it.scopedLive("a drain awaits a delivery under way, then cancels it after the timeout; one not started never starts; nothing stays admitted", () =>
      Effect.gen(function*() {
        const service = manual()
        const scheduler = yield* makeScheduler<string>({ ...defaults, deliver: never, deliverNow: service.deliverNow })
        yield* scheduler.admit(batchOf("p", 0, ["a"])) // under way, never ends by itself
        yield* scheduler.admit(batchOf("p", 1, ["a"])) // waits for it
        yield* scheduler.admit(batchOf("q", 2)) // another partition, under way
        yield* scheduler.drain("p", Duration.millis(50))
        expect(service.cancelled).toEqual([0])
        expect(service.log).toEqual(["start p0", "start q2"])
        expect(scheduler.admitted()).toBe(1)
        // A drain whose delivery ends in time does not cancel it.
        const draining = yield* Effect.fork(scheduler.drain("q", Duration.seconds(5)))
        yield* Effect.sleep("10 millis")
        service.end(2)
        yield* draining
        expect(service.cancelled).toEqual([0])
        expect(scheduler.admitted()).toBe(0)
        expect(scheduler.waiting()).toBe(0)
      }))

    it.scopedLive("the scope's end cancels the deliveries under way", () =>
      Effect.gen(function*() {
        const service = manual()
        yield* Effect.scoped(Effect.gen(function*() {
          const scheduler = yield* makeScheduler<string>({ ...defaults, deliver: never, deliverNow: service.deliverNow })
          yield* scheduler.admit(batchOf("p", 0))
          yield* scheduler.admit(batchOf("p", 1))
        }))
        expect(service.cancelled.sort()).toEqual([0, 1])
      }))
  })

  it("an admission that had to wait is woken once a quarter of the unsent places are free, or the room is empty", () => {
    const room = new PendingRoom({ batches: 100, kibibytes: 1000, unsent: 8 })
    for (let i = 0; i < 8; i++) room.enter(1)
    expect(room.fits(1)).toBe(false)
    room.sent()
    expect({ fits: room.fits(1), spare: room.fitsWithSpare(1) }).toEqual({ fits: true, spare: false })
    room.sent()
    expect(room.fitsWithSpare(1)).toBe(true)
    // An empty room lets any batch in, however large.
    const small = new PendingRoom({ batches: 100, kibibytes: 10, unsent: 1 })
    expect(small.fitsWithSpare(50)).toBe(true)
    small.enter(50)
    expect(small.fitsWithSpare(1)).toBe(false)
    small.leave(50, true)
    expect(small.fitsWithSpare(1)).toBe(true)
  })

  it("a batch in parts whose free part ended keeps its held records' share of a place and of its bytes (at least a unit and a KiB)", () => {
    expect(placeShare(12, 1, 100)).toEqual({ units: 1, kibibytes: 1 })
    expect(placeShare(12, 50, 100)).toEqual({ units: 32, kibibytes: 6 })
    expect(placeShare(12, 100, 100)).toEqual({ units: 64, kibibytes: 12 })
    // Two shrunk batches give back a whole place between them; the bytes come back too.
    const room = new PendingRoom({ batches: 2, kibibytes: 20, unsent: 8 })
    room.enter(10)
    room.enter(10)
    expect({ fits: room.fits(1), free: room.free }).toEqual({ fits: false, free: 0 })
    const share = placeShare(10, 1, 100)
    room.giveBack(64 - share.units, 10 - share.kibibytes)
    expect(room.fits(1)).toBe(false) // 65 of 128 units: no whole place yet
    room.giveBack(64 - share.units, 10 - share.kibibytes)
    expect({ fits: room.fits(10), free: room.free }).toEqual({ fits: true, free: 1 })
  })

  it("however small their shares, no more than twice the bound of batches are alive at once", () => {
    const room = new PendingRoom({ batches: 2, kibibytes: 1000, unsent: 8 })
    for (let i = 0; i < 4; i++) {
      expect(room.fits(1), `batch ${i}`).toBe(true)
      room.enter(1)
      room.giveBack(63, 0) // keeps 1 unit and its KiB
    }
    expect({ admitted: room.admitted, fits: room.fits(1), free: room.free }).toEqual({ admitted: 4, fits: false, free: 0 })
    room.leave(1, true, 1)
    expect(room.fits(1)).toBe(true)
  })

  it.scopedLive("batches whose held records wait give back the rest of their places: a later batch is admitted while the earlier ones are unfinished", () =>
    Effect.gen(function*() {
      const first = yield* Deferred.make<void>()
      const ended: Array<number> = []
      const scheduler = yield* makeScheduler<never>({
        ...defaults,
        bound: { batches: 3, bytes: 1_000_000, unsent: 10 },
        deliver: (batch, accepted, heldBack) =>
          Effect.gen(function*() {
            if (heldBack !== undefined) {
              // The free part is taken and ends; the held one waits for batch 0.
              heldBack.freeAccepted()
              heldBack.freeEnded()
              yield* awaitCall(heldBack.whenReady)
            }
            accepted()
            if (batch.fromSeq === 0) yield* Deferred.await(first)
            ended.push(batch.fromSeq)
          })
      })
      yield* scheduler.admit(batchOf("p", 0, ["a", "b"]))
      yield* scheduler.admit(batchOf("p", 2, ["a", "c"])) // a held: in parts
      yield* scheduler.admit(batchOf("p", 4, ["b", "d"])) // b held: in parts
      // Three places of three were taken; two batches now keep half a place each.
      const fourth = yield* Effect.fork(scheduler.admit(batchOf("p", 6, ["e"])))
      yield* Effect.sleep("50 millis")
      expect(fourth.unsafePoll()).not.toBeNull()
      // It went and ended; the two held parts still wait for batch 0.
      expect({ ended, admitted: scheduler.admitted(), waiting: scheduler.waiting() }).toEqual({ ended: [6], admitted: 3, waiting: 2 })
      yield* Deferred.succeed(first, undefined)
      yield* scheduler.finished
      expect(ended.sort((a, b) => a - b)).toEqual([0, 2, 4, 6])
    }))

  it.scopedLive("a free part said ended after its batch was stopped (a drain's timeout) gives back nothing more: the room is whole again, not larger", () =>
    Effect.gen(function*() {
      const late: Array<() => void> = []
      const scheduler = yield* makeScheduler<never>({
        ...defaults,
        bound: { batches: 2, bytes: 1_000_000, unsent: 10 },
        deliver: (_batch, accepted, heldBack) =>
          Effect.gen(function*() {
            if (heldBack !== undefined) {
              late.push(heldBack.freeEnded)
              return yield* Effect.never
            }
            accepted()
            yield* Effect.sleep("20 millis")
          })
      })
      // Twice: a batch holding `a`, then one of 64 keys whose `a` is held (its free part never
      // ends), stopped by a drain. Said ended late, each would give back 63 of a place's 64ths.
      for (const from of [0, 1000]) {
        yield* scheduler.admit(batchOf("p", from, ["a", "b"]))
        yield* scheduler.admit(batchOf("p", from + 2, ["a", ...Array.from({ length: 63 }, (_, i) => `k${from + i}`)]))
        yield* Effect.sleep("5 millis")
        expect({ room: scheduler.room(), admitted: scheduler.admitted(), late: late.length }).toEqual({ room: 0, admitted: 2, late: from === 0 ? 1 : 2 })
        yield* scheduler.drain("p", Duration.millis(50))
        expect({ admitted: scheduler.admitted(), room: scheduler.room() }).toEqual({ admitted: 0, room: 2 })
      }
      for (const call of late) call()
      expect({ admitted: scheduler.admitted(), room: scheduler.room() }).toEqual({ admitted: 0, room: 2 })
    }))

  it.scopedLive("a waiting admission goes on after room opens with spare (not at the first free place), and finished waits for an empty room", () =>
    Effect.gen(function*() {
      const room = new PendingRoom({ batches: 100, kibibytes: 1000, unsent: 8 })
      for (let i = 0; i < 8; i++) room.enter(1)
      let woken = false
      const waiting = yield* Effect.fork(Effect.map(room.until(() => room.fits(1), () => room.fitsWithSpare(1)), () => (woken = true)))
      yield* Effect.sleep("5 millis")
      room.sent() // 7 unsent of 8: a batch fits, but there is no spare yet
      yield* Effect.sleep("5 millis")
      expect(woken).toBe(false)
      room.sent() // 6 of 8: a quarter free
      yield* Effect.sleep("5 millis")
      expect(woken).toBe(true)
      yield* waiting
      for (let i = 0; i < 5; i++) room.leave(1, false)
      const finished = yield* Effect.fork(room.until(() => room.admitted === 0))
      room.leave(1, true)
      room.leave(1, true)
      yield* Effect.sleep("5 millis")
      expect(finished.unsafePoll()).toBeNull()
      room.leave(1, true)
      yield* finished
      expect(room.admitted).toBe(0)
    }))
})
