/**
 * Adaptive request concurrency: how many requests may be out at once, learned from the
 * service's answers (AIMD, as TCP does for packets).
 *
 * The anchor is Vector's adaptive request concurrency (ARC): the limit starts low, grows while
 * answers come back no slower than usual, and shrinks by a ratio on back-pressure (429, 503,
 * 504, 408, transport errors and timeouts) or when a window's mean latency is more than `k`
 * standard deviations above its moving average. Decisions are taken once per observation
 * window, which lasts about one moving-average latency, so the limit moves at the pace the
 * service answers at. Two changes to it:
 *
 * - Latency is measured per attempt. Vector's limiter wraps its retries (rate limit, then
 *   concurrency, then retry, then timeout), so it times a request across all its attempts and
 *   backoffs: one request retried after a backoff looks like a slow answer and lowers the limit
 *   for a reason that is not the service's speed. The driver here sits under the retry wrapper
 *   (`retries.calls(limiter.wrapCalls(attempt))`): every attempt is timed on its own, and a
 *   backoff holds no slot.
 * - Slow start: until the first sign of congestion the limit doubles each window in which it
 *   was reached, instead of growing by one; a pipeline reaches a fast service's capacity in
 *   a few windows rather than a few dozen.
 *
 * Only answers that went well feed the latency statistics: a timeout lasts as long as the
 * time limit and a quick 503 says nothing about how fast real work is done; both count as
 * back-pressure only. Answers that say nothing about load (4xx other than 408 and 429) are
 * ignored. The latency test waits for two windows in the moving average: after one, its
 * deviation is 0 and any slower window would count as a spike.
 *
 * The core (`ConcurrencyLimit`) is pure: no I/O, the clock is passed in. The driver
 * (`makeLimiter`) makes attempts wait, first come first served, for a slot the core allows.
 *
 * @since 0.2.0
 */
import { Cause, Deferred, Effect, Exit, Option } from "effect"
import { type Calls, type Cancel, ExchangeError, type Exchanges, type Reply } from "../../client/transport.js"
import { isTransientStatus } from "../../client/retry.js"

/**
 * What an attempt's answer says about the service's load: `ok` (an answer; its latency
 * counts), `backpressure` (the service is overloaded or did not answer in time) or `ignored`
 * (says nothing about load).
 *
 * @since 0.2.0
 * @category models
 */
export type Outcome = "ok" | "backpressure" | "ignored"

/**
 * Options of a `ConcurrencyLimit`.
 *
 * @since 0.2.0
 * @category models
 */
export interface ConcurrencyLimitOptions {
  /** The most requests ever allowed at once (an integer, at least 1). */
  readonly ceiling: number
  /** `adaptive` learns the limit; `fixed` keeps `initial` (by default the ceiling). */
  readonly mode: "adaptive" | "fixed"
  /** The limit to start with: by default 1 when adaptive, the ceiling when fixed. */
  readonly initial?: number | undefined
  /** The limit is multiplied by this on congestion (rounded down, and at least 1 less). Default 0.9. */
  readonly decreaseRatio?: number | undefined
  /** Weight of the newest window in the moving average and variance of latency. Default 0.4. */
  readonly ewmaAlpha?: number | undefined
  /** A window whose mean latency is over the moving average plus this many standard deviations is congestion. Default 3. */
  readonly deviations?: number | undefined
  /** The shortest observation window, in milliseconds. Default 10. */
  readonly minWindowMillis?: number | undefined
  /** When the first window starts (ms); without it, the first window starts with the first request that finishes. */
  readonly now?: number | undefined
}

/**
 * The limit and its bookkeeping: what may start now, and the decisions taken from what
 * finished. Times are milliseconds on any monotonic scale (fractions allowed); `now` values
 * come from the caller.
 *
 * @since 0.2.0
 * @category models
 */
export class ConcurrencyLimit {
  readonly ceiling: number
  readonly mode: "adaptive" | "fixed"
  readonly decreaseRatio: number
  readonly ewmaAlpha: number
  readonly deviations: number
  readonly minWindowMillis: number

  #limit: number
  #inFlight = 0
  #slowStart: boolean
  #increases = 0
  #decreases = 0
  #windows = 0
  #backpressures = 0

  // The moving average and variance of window mean latencies, over `#samples` windows.
  #mean: number | undefined = undefined
  #variance = 0
  #samples = 0

  // The current window.
  #windowEnd: number | undefined = undefined
  #latencySum = 0
  #latencyCount = 0
  #reachedLimit = false
  #hadBackpressure = false

  constructor(options: ConcurrencyLimitOptions) {
    const { ceiling, mode } = options
    if (!Number.isInteger(ceiling) || ceiling < 1) throw new RangeError(`ceiling must be an integer of at least 1, got ${ceiling}`)
    const initial = options.initial ?? (mode === "fixed" ? ceiling : 1)
    if (!Number.isInteger(initial) || initial < 1 || initial > ceiling) {
      throw new RangeError(`initial must be an integer from 1 to the ceiling (${ceiling}), got ${initial}`)
    }
    const decreaseRatio = options.decreaseRatio ?? 0.9
    if (!(decreaseRatio > 0 && decreaseRatio < 1)) throw new RangeError(`decreaseRatio must be above 0 and below 1, got ${decreaseRatio}`)
    const ewmaAlpha = options.ewmaAlpha ?? 0.4
    if (!(ewmaAlpha > 0 && ewmaAlpha <= 1)) throw new RangeError(`ewmaAlpha must be above 0 and at most 1, got ${ewmaAlpha}`)
    const deviations = options.deviations ?? 3
    if (!(deviations >= 0)) throw new RangeError(`deviations must be at least 0, got ${deviations}`)
    const minWindowMillis = options.minWindowMillis ?? 10
    if (!(minWindowMillis >= 0)) throw new RangeError(`minWindowMillis must be at least 0, got ${minWindowMillis}`)
    this.ceiling = ceiling
    this.mode = mode
    this.decreaseRatio = decreaseRatio
    this.ewmaAlpha = ewmaAlpha
    this.deviations = deviations
    this.minWindowMillis = minWindowMillis
    this.#limit = initial
    this.#slowStart = mode === "adaptive"
    if (options.now !== undefined) this.#windowEnd = options.now + minWindowMillis
  }

  /** How many requests may be out at once: an integer from 1 to the ceiling. */
  get limit(): number {
    return this.#limit
  }

  /** Requests started and not yet finished. */
  get inFlight(): number {
    return this.#inFlight
  }

  /** Whether the limit still doubles (no congestion seen yet). */
  get slowStart(): boolean {
    return this.#slowStart
  }

  /** How many times the limit went up. */
  get increases(): number {
    return this.#increases
  }

  /** How many times the limit went down. */
  get decreases(): number {
    return this.#decreases
  }

  /** Observation windows closed so far. */
  get windows(): number {
    return this.#windows
  }

  /** Attempts that finished with back-pressure. */
  get backpressures(): number {
    return this.#backpressures
  }

  /** The moving average of window mean latencies (ms), once a window had an `ok` answer. */
  get averageLatency(): number | undefined {
    return this.#mean
  }

  /** The moving standard deviation of window mean latencies (ms). */
  get latencyDeviation(): number {
    return Math.sqrt(this.#variance)
  }

  /** When the current window ends: the first request to finish at or after it closes the window. */
  get windowEnd(): number | undefined {
    return this.#windowEnd
  }

  /** Whether one more request may start now. */
  canStart(): boolean {
    return this.#inFlight < this.#limit
  }

  /** A request started (the caller checked `canStart`). */
  started(): void {
    this.#inFlight++
    if (this.#inFlight >= this.#limit) this.#reachedLimit = true
  }

  /** A slot taken by `started` was given back before its request ran: nothing to learn. */
  abandoned(): void {
    if (this.#inFlight > 0) this.#inFlight--
  }

  /**
   * A request finished at `now` after `latencyMillis` (its own attempt only), with `outcome`.
   * The window closes at the first answer at or after its end, and the limit is decided then.
   */
  finished(now: number, latencyMillis: number, outcome: Outcome): void {
    if (this.#inFlight > 0) this.#inFlight--
    if (outcome === "ok") {
      this.#latencySum += latencyMillis
      this.#latencyCount++
    } else if (outcome === "backpressure") {
      this.#backpressures++
      this.#hadBackpressure = true
    }
    // The first window starts when the first request did.
    if (this.#windowEnd === undefined) this.#windowEnd = now - latencyMillis + Math.max(this.minWindowMillis, latencyMillis)
    if (now >= this.#windowEnd) this.#closeWindow(now)
  }

  #closeWindow(now: number): void {
    this.#windows++
    const windowMean = this.#latencyCount === 0 ? undefined : this.#latencySum / this.#latencyCount
    if (this.mode === "adaptive") this.#decide(windowMean)
    if (windowMean !== undefined) this.#observe(windowMean)
    this.#windowEnd = now + Math.max(this.minWindowMillis, this.#mean ?? 0)
    this.#latencySum = 0
    this.#latencyCount = 0
    this.#hadBackpressure = false
    // Requests still out at the limit count as having reached it in the new window.
    this.#reachedLimit = this.#inFlight >= this.#limit
  }

  #decide(windowMean: number | undefined): void {
    const mean = this.#mean
    // The deviation means something from the second window on.
    const slower = windowMean !== undefined && mean !== undefined && this.#samples >= 2 &&
      windowMean > mean + this.deviations * Math.sqrt(this.#variance)
    if (this.#hadBackpressure || slower) {
      this.#slowStart = false
      if (this.#limit > 1) {
        this.#limit = Math.max(1, Math.min(this.#limit - 1, Math.floor(this.#limit * this.decreaseRatio)))
        this.#decreases++
      }
      return
    }
    if (!this.#reachedLimit || windowMean === undefined || this.#limit >= this.ceiling) return
    if (this.#slowStart) {
      this.#limit = Math.min(this.ceiling, this.#limit * 2)
      this.#increases++
    } else if (mean === undefined || windowMean <= mean) {
      this.#limit++
      this.#increases++
    }
  }

  /** Exponentially weighted moving average and variance (West's incremental form, as Vector). */
  #observe(windowMean: number): void {
    if (this.#mean === undefined) {
      this.#mean = windowMean
      this.#variance = 0
    } else {
      const difference = windowMean - this.#mean
      const increment = this.ewmaAlpha * difference
      this.#mean += increment
      this.#variance = (1 - this.ewmaAlpha) * (this.#variance + difference * increment)
    }
    this.#samples++
  }
}

/**
 * What an answer's status says about load: the transient failures the client retries (408,
 * 429, 500, 502, 503, 504: a service that fails under load should get less of it, as Vector's
 * ARC counts retriable answers) are back-pressure; other 4xx and 5xx say nothing about load
 * (ignored); everything else is an answer whose latency counts.
 *
 * @since 0.2.0
 * @category utils
 */
export const outcomeOfStatus = (status: number): Outcome =>
  isTransientStatus(status)
    ? "backpressure"
    : status >= 400
    ? "ignored"
    : "ok"

/**
 * What an attempt's end says about load: a reply by its status, an `ExchangeError` (transport
 * error or timeout) is back-pressure, an interruption or a defect is ignored.
 *
 * @since 0.2.0
 * @category utils
 */
export const outcomeOfExit = (exit: Exit.Exit<Reply, ExchangeError>): Outcome =>
  Exit.isSuccess(exit)
    ? outcomeOfStatus(exit.value.status)
    : Option.isSome(Cause.failureOption(exit.cause))
    ? "backpressure"
    : "ignored"

/**
 * What an attempt in callback form says about load: a reply by its status, an `ExchangeError`
 * (transport error or timeout) is back-pressure.
 *
 * @since 0.3.0
 * @category utils
 */
export const outcomeOfCall = (outcome: Reply | ExchangeError): Outcome =>
  outcome instanceof ExchangeError ? "backpressure" : outcomeOfStatus(outcome.status)

/**
 * Attempts limited by a `ConcurrencyLimit`.
 *
 * @since 0.2.0
 * @category models
 */
export interface Limiter {
  /**
   * Each attempt waits, first come first served, until the limit allows it, is timed on its
   * own, and reports its outcome. Traced runs use it over the platform client's exchanges,
   * which retry inside: it then times whole retry sequences.
   */
  readonly wrap: (attempt: Exchanges) => Exchanges
  /** The same for attempts in callback form: `retries.calls(limiter.wrapCalls(attempt))`. */
  readonly wrapCalls: (attempt: Calls) => Calls
  /** The current limit. */
  readonly limit: () => number
  /** Attempts running now. */
  readonly inFlight: () => number
  /** Attempts waiting for a slot. */
  readonly waiting: () => number
  /** The core, for its counters. */
  readonly core: ConcurrencyLimit
}

interface Waiter {
  /** Called when the slot is the waiter's. */
  readonly grant: () => void
  granted: boolean
}

/**
 * Makes a `Limiter` over a new `ConcurrencyLimit` with `options`. Invalid options are a
 * defect (a `RangeError`).
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeLimiter = (options: ConcurrencyLimitOptions): Effect.Effect<Limiter> =>
  Effect.clockWith((clock) => Effect.sync(() => {
    const now = () => Number(clock.unsafeCurrentTimeNanos()) / 1e6
    const core = new ConcurrencyLimit({ ...options, now: options.now ?? now() })
    // Waiters in arrival order. Whenever one waits, the limit is reached (`drain` runs after
    // every change of `inFlight` or of the limit), so a newcomer never overtakes it.
    const queue: Array<Waiter> = []

    /** Hands free slots to waiters, oldest first; the slot is theirs from that moment. */
    const drain = () => {
      while (queue.length > 0 && core.canStart()) {
        const waiter = queue.shift()!
        waiter.granted = true
        core.started()
        waiter.grant()
      }
    }

    /** Takes a slot, waiting for one if need be; on interruption, a slot handed over is given back. */
    const acquire = (restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) =>
      Effect.fiberIdWith((fiberId) => {
        if (queue.length === 0 && core.canStart()) {
          core.started()
          return Effect.void
        }
        const deferred = Deferred.unsafeMake<void>(fiberId)
        const waiter: Waiter = { grant: () => Deferred.unsafeDone(deferred, Exit.void), granted: false }
        queue.push(waiter)
        return Effect.onInterrupt(restore(Deferred.await(deferred)), () =>
          Effect.sync(() => {
            if (waiter.granted) {
              core.abandoned()
            } else {
              const at = queue.indexOf(waiter)
              if (at >= 0) queue.splice(at, 1)
            }
            drain()
          }))
      })

    // Timed on the clock of the fiber that made the limiter, in fractions of a millisecond.
    const wrap = (attempt: Exchanges): Exchanges => (exchange) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(
          acquire(restore),
          Effect.suspend(() => {
            const start = now()
            return Effect.onExit(restore(attempt(exchange)), (exit) =>
              Effect.sync(() => {
                const end = now()
                core.finished(end, end - start, outcomeOfExit(exit))
                drain()
              }))
          })
        )
      )

    // The same in callback form: a slot is handed over by calling the attempt, so there is no
    // moment between the grant and the start; a cancelled attempt says nothing about load.
    const wrapCalls = (attempt: Calls): Calls => (exchange, done) => {
      let cancelAttempt: Cancel | undefined
      let start = 0
      const go = () => {
        start = now()
        cancelAttempt = attempt(exchange, (outcome) => {
          cancelAttempt = undefined
          const end = now()
          core.finished(end, end - start, outcomeOfCall(outcome))
          drain()
          done(outcome)
        })
      }
      const waiter: Waiter = { grant: go, granted: false }
      if (queue.length === 0 && core.canStart()) {
        waiter.granted = true
        core.started()
        go()
      } else {
        queue.push(waiter)
      }
      return () => {
        if (!waiter.granted) {
          const at = queue.indexOf(waiter)
          if (at >= 0) queue.splice(at, 1)
        } else if (cancelAttempt !== undefined) {
          cancelAttempt()
          cancelAttempt = undefined
          const end = now()
          core.finished(end, end - start, "ignored")
        } else {
          return
        }
        drain()
      }
    }

    return {
      wrap,
      wrapCalls,
      limit: () => core.limit,
      inFlight: () => core.inFlight,
      waiting: () => queue.length,
      core
    }
  }))
