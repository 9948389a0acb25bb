/**
 * Adaptive request concurrency: the pure core (slow start, additive increase, multiplicative
 * decrease on back-pressure and on latency spikes, bounds, fixed mode) and the Effect driver
 * (never more attempts than the limit, first come first served, slots given back on
 * interruption, each attempt timed on its own under retries).
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, FastCheck as fc, Fiber, FiberId, TestClock } from "effect"
import { makeRetries } from "../../src/client/retry.js"
import * as Transport from "../../src/client/transport.js"
import { type Calls, type Exchange, ExchangeError, type Exchanges, type Reply } from "../../src/client/transport.js"
import {
  ConcurrencyLimit,
  type ConcurrencyLimitOptions,
  makeLimiter,
  type Outcome,
  outcomeOfExit,
  outcomeOfStatus
} from "../../src/pipeline/internal/concurrencyLimit.js"

const ok = (): Outcome => "ok"
const reply = (status: number): Reply => ({ status, headers: {}, text: "" })
const exchange = (path: string): Exchange => ({ method: "POST", path, body: "[]" })

/**
 * One observation window: as many requests as the limit allows start at `now` and all answer
 * within the window after `latency`, the last one closing it. Answers the time it closed.
 */
const round = (core: ConcurrencyLimit, now: number, latency: number, outcome: (i: number) => Outcome = ok): number => {
  let started = 0
  while (core.canStart()) {
    core.started()
    started++
  }
  const end = Math.max(now + latency, core.windowEnd!)
  for (let i = 0; i < started; i++) {
    const at = i === started - 1 ? end : Math.min(now + latency, core.windowEnd! - 0.001)
    core.finished(at, latency, outcome(i))
  }
  return end
}

/** Limits after each of `rounds` rounds. */
const rounds = (core: ConcurrencyLimit, from: number, latencies: ReadonlyArray<number>, outcome: (round: number, i: number) => Outcome = ok) => {
  let now = from
  const limits: Array<number> = []
  latencies.forEach((latency, r) => {
    now = round(core, now, latency, (i) => outcome(r, i))
    limits.push(core.limit)
  })
  return { now, limits }
}

const adaptive = (options: Partial<ConcurrencyLimitOptions> = {}) =>
  new ConcurrencyLimit({ ceiling: 100, mode: "adaptive", now: 0, ...options })

/** Warmed up at `initial` (slow start over) on latencies that vary a little around 12 ms. */
const warmedUp = (initial: number) => {
  const core = adaptive({ ceiling: initial, initial })
  const { now } = rounds(core, 0, [10, 14, 12, 11, 13, 12, 10, 14, 12, 13, 11, 12])
  return { core, now }
}

describe("ConcurrencyLimit", () => {
  it("slow start: the limit doubles each window in which it was reached, up to the ceiling", () => {
    const core = adaptive()
    expect(core.limit).toBe(1)
    expect(rounds(core, 0, Array(9).fill(20)).limits).toEqual([2, 4, 8, 16, 32, 64, 100, 100, 100])
    expect(core.increases).toBe(7)
    expect(core.decreases).toBe(0)
    expect(core.slowStart).toBe(true)
  })

  it("slow start does not grow a limit that was not reached", () => {
    const core = adaptive({ initial: 4 })
    let now = 0
    for (let r = 0; r < 10; r++) {
      core.started()
      core.started() // 2 of 4
      core.finished(now + 5, 5, "ok")
      now = Math.max(now + 20, core.windowEnd!)
      core.finished(now, 20, "ok")
    }
    expect(core.limit).toBe(4)
    expect(core.windows).toBe(10)
  })

  it("back-pressure in a window takes off about 10% (at least 1) and ends slow start", () => {
    const core = adaptive()
    let { now } = rounds(core, 0, Array(6).fill(20)) // 64
    expect(core.limit).toBe(64)
    now = round(core, now, 20, (i) => (i === 10 ? "backpressure" : "ok"))
    expect(core.limit).toBe(57) // floor(64 * 0.9)
    expect(core.slowStart).toBe(false)
    expect(core.backpressures).toBe(1)
    expect(core.decreases).toBe(1)
    // Each window with back-pressure: 57 -> 51 -> 45 -> 40 -> 36 -> 32 ...; small limits lose 1; never below 1.
    const { limits } = rounds(core, now, Array(40).fill(20), () => "backpressure")
    expect(limits.slice(0, 5)).toEqual([51, 45, 40, 36, 32])
    expect(limits.slice(-12)).toEqual(Array(12).fill(1))
    const path = [57, ...limits]
    for (let i = 1; i < path.length; i++) {
      if (path[i - 1]! > 1) expect(path[i]).toBe(Math.min(path[i - 1]! - 1, Math.floor(path[i - 1]! * 0.9)))
    }
  })

  it("a window whose mean latency is over the moving average plus 3 deviations decreases the limit; one within does not", () => {
    const { core, now: warm } = warmedUp(20)
    expect(core.limit).toBe(20)
    expect(core.decreases).toBe(0)
    const mean = core.averageLatency!
    const band = 3 * core.latencyDeviation
    expect(band).toBeGreaterThan(0)

    let now = round(core, warm, mean + band * 0.9) // slower, within the band
    expect(core.limit).toBe(20)
    expect(core.decreases).toBe(0)

    now = round(core, now, 100) // a spike
    expect(core.limit).toBe(18)
    expect(core.decreases).toBe(1)
    expect(core.backpressures).toBe(0)
    expect(core.slowStart).toBe(false)

    // The spike is in the moving average and its deviation now: the same latency again is no new spike.
    round(core, now, 100)
    expect(core.decreases).toBe(1)
  })

  it("after back-pressure stops, the limit grows by 1 per window (reached, no slower than usual)", () => {
    const core = adaptive()
    let { now } = rounds(core, 0, Array(6).fill(20)) // 64
    now = round(core, now, 20, () => "backpressure") // 57, slow start over
    expect(core.limit).toBe(57)
    const { limits } = rounds(core, now, Array(10).fill(20))
    expect(limits).toEqual([58, 59, 60, 61, 62, 63, 64, 65, 66, 67])
  })

  it("no additive increase in a window slower than the moving average, nor in one where the limit was not reached", () => {
    const core = adaptive()
    let { now } = rounds(core, 0, [20, 20, 20]) // 8
    now = round(core, now, 20, () => "backpressure") // 7
    now = round(core, now, 21) // slower than the average of 20, within no band (deviation 0 so far: a spike)
    expect(core.limit).toBe(6)
    now = round(core, now, 20) // faster than the average: +1
    expect(core.limit).toBe(7)
    core.started() // 1 of 7: not reached
    core.finished(Math.max(now + 5, core.windowEnd!), 5, "ok")
    expect(core.limit).toBe(7)
  })

  it("answers that say nothing about load are ignored: no latency, no back-pressure, no growth", () => {
    const core = adaptive({ initial: 4 })
    rounds(core, 0, Array(5).fill(20), () => "ignored")
    expect(core.limit).toBe(4)
    expect(core.averageLatency).toBeUndefined()
    expect(core.backpressures).toBe(0)
    expect(core.windows).toBe(5)
  })

  it("back-pressure latency (timeouts, quick 503s) does not enter the moving average", () => {
    const core = adaptive({ initial: 2 })
    let now = round(core, 0, 20)
    now = round(core, now, 30_000, () => "backpressure")
    round(core, now, 2, () => "backpressure")
    expect(core.averageLatency).toBe(20)
  })

  it("windows last about one moving-average latency, at least 10 ms", () => {
    const core = adaptive({ ceiling: 4 })
    let now = rounds(core, 0, [200, 200, 200]).now
    expect(core.windowEnd).toBe(now + 200)
    const fast = adaptive({ ceiling: 4 })
    now = rounds(fast, 0, [1, 1]).now
    expect(fast.windowEnd).toBe(now + 10)
    // Answers before the end stay in the window: no decision on them yet.
    const windows = core.windows
    core.started()
    core.finished(core.windowEnd! - 1, 1, "backpressure")
    expect(core.windows).toBe(windows)
    expect(core.limit).toBe(4)
  })

  it("fixed mode keeps its limit whatever the answers", () => {
    const core = new ConcurrencyLimit({ ceiling: 8, mode: "fixed", now: 0 })
    expect(core.limit).toBe(8)
    let now = rounds(core, 0, [20, 20, 20], () => "backpressure").now
    now = rounds(core, now, [20, 500, 20, 20]).now
    expect(core.limit).toBe(8)
    expect(new ConcurrencyLimit({ ceiling: 8, mode: "fixed", initial: 3 }).limit).toBe(3)
    expect(core.increases + core.decreases).toBe(0)
    expect(core.averageLatency).toBeDefined()
  })

  type Step =
    | { readonly _tag: "start" }
    | { readonly _tag: "finish"; readonly advance: number; readonly latency: number; readonly outcome: Outcome }
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.constant<Step>({ _tag: "start" }),
    fc.record({
      _tag: fc.constant("finish" as const),
      advance: fc.double({ min: 0, max: 200, noNaN: true }),
      latency: fc.double({ min: 0, max: 5000, noNaN: true }),
      outcome: fc.constantFrom<Outcome>("ok", "backpressure", "ignored")
    })
  )
  const options = fc.record({
    ceiling: fc.integer({ min: 1, max: 64 }),
    decreaseRatio: fc.double({ min: 0.05, max: 0.99, noNaN: true }),
    ewmaAlpha: fc.double({ min: 0.01, max: 1, noNaN: true }),
    deviations: fc.double({ min: 0, max: 5, noNaN: true })
  })
  const play = (core: ConcurrencyLimit, steps: ReadonlyArray<Step>, check: () => void) => {
    let now = 0
    for (const s of steps) {
      if (s._tag === "start") {
        if (core.canStart()) core.started()
      } else if (core.inFlight > 0) {
        now += s.advance
        core.finished(now, s.latency, s.outcome)
      }
      check()
    }
  }

  it("the limit stays an integer from 1 to the ceiling, whatever the answers", () => {
    fc.assert(
      fc.property(options, fc.array(step, { maxLength: 400 }), (opts, steps) => {
        const core = new ConcurrencyLimit({ ...opts, mode: "adaptive" })
        play(core, steps, () => {
          expect(Number.isInteger(core.limit)).toBe(true)
          expect(core.limit).toBeGreaterThanOrEqual(1)
          expect(core.limit).toBeLessThanOrEqual(opts.ceiling)
          expect(core.inFlight).toBeGreaterThanOrEqual(0)
          expect(core.inFlight).toBeLessThanOrEqual(opts.ceiling)
        })
        expect(core.increases).toBeLessThanOrEqual(core.windows)
        expect(core.decreases).toBeLessThanOrEqual(core.windows)
      }),
      { numRuns: 300 }
    )
  })

  it("fixed mode never changes the limit, whatever the answers", () => {
    fc.assert(
      fc.property(options, fc.array(step, { maxLength: 200 }), (opts, steps) => {
        const core = new ConcurrencyLimit({ ...opts, mode: "fixed" })
        play(core, steps, () => expect(core.limit).toBe(opts.ceiling))
      }),
      { numRuns: 100 }
    )
  })

  it("rejects options out of range", () => {
    expect(() => new ConcurrencyLimit({ ceiling: 0, mode: "adaptive" })).toThrow(RangeError)
    expect(() => new ConcurrencyLimit({ ceiling: 2.5, mode: "adaptive" })).toThrow(RangeError)
    expect(() => new ConcurrencyLimit({ ceiling: 4, mode: "adaptive", initial: 5 })).toThrow(RangeError)
    expect(() => new ConcurrencyLimit({ ceiling: 4, mode: "adaptive", decreaseRatio: 1 })).toThrow(RangeError)
    expect(() => new ConcurrencyLimit({ ceiling: 4, mode: "adaptive", ewmaAlpha: 0 })).toThrow(RangeError)
    expect(() => new ConcurrencyLimit({ ceiling: 4, mode: "adaptive", deviations: -1 })).toThrow(RangeError)
  })

  it("classifies answers: the transient statuses (408, 429, 500, 502, 503, 504) and exchange errors are back-pressure, other 4xx and 5xx ignored, the rest ok", () => {
    expect([200, 201, 204, 301].map(outcomeOfStatus)).toEqual(Array(4).fill("ok"))
    expect([500, 502].map(outcomeOfStatus)).toEqual(["backpressure", "backpressure"])
    expect([501, 505].map(outcomeOfStatus)).toEqual(["ignored", "ignored"])
    expect([408, 429, 503, 504].map(outcomeOfStatus)).toEqual(Array(4).fill("backpressure"))
    expect([400, 401, 403, 404, 409, 413, 422].map(outcomeOfStatus)).toEqual(Array(7).fill("ignored"))
    const error = new ExchangeError({ method: "POST", path: "/x", cause: new Error("timeout") })
    expect(outcomeOfExit(Exit.fail(error))).toBe("backpressure")
    expect(outcomeOfExit(Exit.succeed(reply(429)))).toBe("backpressure")
    expect(outcomeOfExit(Exit.succeed(reply(200)))).toBe("ok")
    expect(outcomeOfExit(Exit.interrupt(FiberId.none))).toBe("ignored")
    expect(outcomeOfExit(Exit.failCause(Cause.die("boom")))).toBe("ignored")
  })
})

/** A fake service that counts the attempts running at once; `answer` says how long each takes and what it answers. */
const fakeService = (answer: (path: string) => { delay: number; status: number | "error" }) => {
  const state = { running: 0, most: 0, calls: [] as Array<string>, onStart: (): void => {} }
  const exchanges: Exchanges = (x) =>
    Effect.suspend(() => {
      const { delay, status } = answer(x.path)
      state.calls.push(x.path)
      state.running++
      state.most = Math.max(state.most, state.running)
      state.onStart()
      return Effect.sleep(delay).pipe(
        Effect.zipRight(
          status === "error"
            ? Effect.fail(new ExchangeError({ method: x.method, path: x.path, cause: new Error("socket hang up") }))
            : Effect.succeed(reply(status))
        ),
        Effect.ensuring(Effect.sync(() => state.running--))
      )
    })
  return { state, exchanges }
}

/** Moves the test clock on, `step` ms at a time, until `fiber` is done. */
const runOn = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, step = 100) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1_000_000; i++) {
      const done = yield* Fiber.poll(fiber)
      if (done._tag === "Some") return yield* Fiber.join(fiber)
      yield* TestClock.adjust(step)
    }
    return yield* Effect.dieMessage("did not finish")
  })

/** A small seeded generator, so a failure can be replayed. */
const seeded = (seed: number) => () => {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
}

describe("makeLimiter", () => {
  it.effect("never runs more attempts at once than a fixed limit", () =>
    Effect.gen(function*() {
      const limiter = yield* makeLimiter({ ceiling: 3, mode: "fixed" })
      const service = fakeService(() => ({ delay: 10, status: 200 }))
      const send = limiter.wrap(service.exchanges)
      const fiber = yield* Effect.fork(Effect.forEach(Array.from({ length: 40 }, (_, i) => exchange(`/${i}`)), send, { concurrency: "unbounded" }))
      const replies = yield* runOn(fiber)
      expect(replies).toHaveLength(40)
      expect(service.state.most).toBe(3)
      expect(limiter.inFlight()).toBe(0)
      expect(limiter.waiting()).toBe(0)
    }))

  it.effect("adaptive: attempts running never exceed what the core let start, nor the ceiling; nobody waits while a slot is free", () =>
    Effect.gen(function*() {
      const limiter = yield* makeLimiter({ ceiling: 16, mode: "adaptive" })
      const random = seeded(7)
      const service = fakeService(() => ({ delay: 5 + Math.floor(random() * 20), status: random() < 0.15 ? 503 : 200 }))
      const violations: Array<string> = []
      service.state.onStart = () => {
        if (service.state.running > limiter.inFlight()) violations.push(`running ${service.state.running} > in flight ${limiter.inFlight()}`)
        if (limiter.inFlight() > 16) violations.push(`in flight ${limiter.inFlight()}`)
        if (limiter.waiting() > 0 && limiter.core.canStart()) violations.push("a waiter while a slot is free")
      }
      const fiber = yield* Effect.fork(Effect.forEach(Array.from({ length: 250 }, (_, i) => exchange(`/${i}`)), limiter.wrap(service.exchanges), { concurrency: 40 }))
      yield* runOn(fiber)
      expect(violations).toEqual([])
      expect(service.state.most).toBeLessThanOrEqual(16)
      expect(service.state.most).toBeGreaterThan(1) // it did grow
      expect(limiter.core.decreases).toBeGreaterThan(0) // and back off
      expect(limiter.inFlight()).toBe(0)
    }))

  it.effect("waiters start in the order they arrived", () =>
    Effect.gen(function*() {
      const limiter = yield* makeLimiter({ ceiling: 1, mode: "fixed" })
      const gate = yield* Deferred.make<void>()
      const order: Array<string> = []
      const send = limiter.wrap((x) =>
        x.path === "/holder" ? Effect.as(Deferred.await(gate), reply(200)) : Effect.sync(() => (order.push(x.path), reply(200))))
      const holder = yield* Effect.fork(send(exchange("/holder")))
      yield* Effect.yieldNow()
      const waiters: Array<Fiber.RuntimeFiber<Reply, ExchangeError>> = []
      for (const name of ["a", "b", "c", "d", "e"]) {
        waiters.push(yield* Effect.fork(send(exchange(`/${name}`))))
        yield* Effect.yieldNow()
      }
      expect(limiter.waiting()).toBe(5)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.joinAll(waiters)
      expect(order).toEqual(["/a", "/b", "/c", "/d", "/e"])
    }))

  it.effect("an attempt interrupted while waiting leaves the queue; one interrupted while running gives its slot back", () =>
    Effect.gen(function*() {
      const limiter = yield* makeLimiter({ ceiling: 1, mode: "fixed" })
      const calls: Array<string> = []
      const send = limiter.wrap((x) => Effect.sync(() => calls.push(x.path)).pipe(Effect.zipRight(Effect.never)))
      const running = yield* Effect.fork(send(exchange("/running")))
      yield* Effect.yieldNow()
      const waiting = yield* Effect.fork(send(exchange("/waiting")))
      yield* Effect.yieldNow()
      expect([limiter.inFlight(), limiter.waiting()]).toEqual([1, 1])

      yield* Fiber.interrupt(waiting)
      expect([limiter.inFlight(), limiter.waiting()]).toEqual([1, 0])

      yield* Fiber.interrupt(running)
      expect([limiter.inFlight(), limiter.waiting()]).toEqual([0, 0])
      expect(calls).toEqual(["/running"])

      const answered = yield* limiter.wrap(() => Effect.succeed(reply(200)))(exchange("/next"))
      expect(answered.status).toBe(200)
      expect(limiter.inFlight()).toBe(0)
    }))

  it.effect("a slot handed to a waiter that is interrupted before its attempt runs is given back", () =>
    Effect.gen(function*() {
      const limiter = yield* makeLimiter({ ceiling: 1, mode: "fixed" })
      const gate = yield* Deferred.make<void>()
      const calls: Array<string> = []
      const send = limiter.wrap((x) =>
        Effect.sync(() => calls.push(x.path)).pipe(Effect.zipRight(x.path === "/holder" ? Deferred.await(gate) : Effect.void), Effect.as(reply(200))))
      const waiter = yield* Effect.fork(send(exchange("/waiter")).pipe(Effect.delay(1)))
      // The holder finishes, which hands the slot to the waiter; in the same run, before the
      // waiter's fiber resumes, the waiter is interrupted.
      const holder = yield* Effect.fork(
        send(exchange("/holder")).pipe(
          Effect.zipRight(Effect.sync(() => expect([limiter.inFlight(), limiter.waiting()]).toEqual([1, 0]))),
          Effect.zipRight(Fiber.interrupt(waiter))
        )
      )
      yield* TestClock.adjust(1)
      expect([limiter.inFlight(), limiter.waiting()]).toEqual([1, 1])
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holder)
      expect(calls).toEqual(["/holder"])
      expect([limiter.inFlight(), limiter.waiting()]).toEqual([0, 0])
      expect(limiter.core.canStart()).toBe(true)
    }))

  it.effect("no slot leaks when attempts are interrupted at random, waiting or running", () =>
    Effect.gen(function*() {
      const limiter = yield* makeLimiter({ ceiling: 8, mode: "adaptive", initial: 4 })
      const random = seeded(42)
      const service = fakeService(() => ({ delay: Math.floor(random() * 30), status: random() < 0.1 ? "error" : 200 }))
      const send = limiter.wrap(service.exchanges)
      const fibers: Array<Fiber.RuntimeFiber<Reply, ExchangeError>> = []
      for (let i = 0; i < 200; i++) {
        fibers.push(yield* Effect.fork(Effect.delay(send(exchange(`/${i}`)), Math.floor(random() * 100))))
      }
      const killer = yield* Effect.fork(Effect.forEach(fibers, (fiber) =>
        random() < 0.3 ? Effect.delay(Fiber.interrupt(fiber), Math.floor(random() * 120)) : Effect.void, { concurrency: "unbounded" }))
      yield* runOn(killer)
      yield* runOn(yield* Effect.fork(Fiber.awaitAll(fibers)))
      expect(limiter.inFlight()).toBe(0)
      expect(limiter.waiting()).toBe(0)
      expect(service.state.running).toBe(0)
      expect(service.state.most).toBeLessThanOrEqual(8)
    }))

  it.live("under retries (the callback forms the pipeline uses), each attempt is timed on its own: backoffs are not latency and hold no slot", () =>
    Effect.gen(function*() {
      const limiter = yield* makeLimiter({ ceiling: 1, mode: "adaptive" })
      const retries = yield* makeRetries({ maxRetries: 3, baseDelay: "200 millis", maxDelay: "1 second", attemptTimeout: "30 seconds" })
      // "/a" is answered 503 twice, then 200; "/b" at once. Every attempt takes 50 ms (real time).
      let attemptsOfA = 0
      const calls: Array<string> = []
      const service: Calls = (x, done) => {
        calls.push(x.path)
        const status = x.path === "/a" && attemptsOfA++ < 2 ? 503 : 200
        const timer = setTimeout(() => done(reply(status)), 50)
        return () => clearTimeout(timer)
      }
      const send = Transport.exchangesOf(retries.calls(limiter.wrapCalls(service)))
      const finished: Array<string> = []
      // The backoffs at the top of their ranges (about 200 and 400 ms), so "/b" comes during the first.
      const random = Math.random
      Math.random = () => 0.99
      try {
        yield* Effect.all([
          Effect.tap(send(exchange("/a")), () => finished.push("/a")),
          Effect.tap(Effect.delay(send(exchange("/b")), 60), () => finished.push("/b"))
        ], { concurrency: 2 })
      } finally {
        Math.random = random
      }
      expect(calls.filter((path) => path === "/a")).toHaveLength(3)
      expect(limiter.core.backpressures).toBe(2)
      // One slot: "/b" ran while "/a" waited out its backoff, and finished first.
      expect(finished).toEqual(["/b", "/a"])
      // Every answer's own 50 ms or so, not the time since a request's first attempt (650 ms and more).
      expect(limiter.core.averageLatency).toBeGreaterThanOrEqual(49)
      expect(limiter.core.averageLatency).toBeLessThan(150)
      expect(limiter.inFlight()).toBe(0)
    }))

  it.live("a cancelled attempt in callback form gives its slot back and a waiting one is cancelled without running", () =>
    Effect.gen(function*() {
      const limiter = yield* makeLimiter({ ceiling: 1, mode: "fixed" })
      const started: Array<string> = []
      const cancelled: Array<string> = []
      const service: Calls = (x) => {
        started.push(x.path)
        return () => cancelled.push(x.path)
      }
      const limited = limiter.wrapCalls(service)
      const never = () => expect.fail("a cancelled attempt answers nothing")
      const cancelA = limited(exchange("/a"), never)
      const cancelB = limited(exchange("/b"), never)
      expect({ started, waiting: limiter.waiting(), inFlight: limiter.inFlight() }).toEqual({ started: ["/a"], waiting: 1, inFlight: 1 })
      cancelB()
      expect({ waiting: limiter.waiting(), cancelled }).toEqual({ waiting: 0, cancelled: [] })
      cancelA()
      expect({ inFlight: limiter.inFlight(), cancelled }).toEqual({ inFlight: 0, cancelled: ["/a"] })
      let answered = false
      limited(exchange("/c"), () => (answered = true))
      expect(started).toEqual(["/a", "/c"])
      expect(answered).toBe(false)
    }))
})
