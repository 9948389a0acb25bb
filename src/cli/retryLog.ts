/**
 * What the commands say of retries: each retry as a line while they are few, and what goes over
 * `lines` in a window of `windowMillis` as one line of counts by cause once the window has
 * passed. Why: against a flaky service (`tributary serve --faults 5xx=0.1`, a proxy that drops
 * one request in ten) `tributary backfill` of 200,000 rows wrote 270 retry lines in a few
 * seconds, and the progress and the one line that mattered scrolled away among them. A request
 * that keeps failing is still seen: its retries back off, so a window holds few of them.
 *
 * The core (`RetryLog`) is pure: no I/O, the clock is passed in. The driver
 * (`progress.ts`, `retryNotice`) writes its lines and says the last window's counts when the
 * window has passed or the command ends.
 *
 * @since 0.3.0
 */
import type { RetryNotice } from "../client/retry.js"

/**
 * How many retry lines a window shows, and how long a window lasts.
 *
 * @since 0.3.0
 * @category defaults
 */
export const defaultRetryLog = { lines: 5, windowMillis: 5_000 } as const

/**
 * The line of one retry: the request, the cause, which retry of how many and the wait.
 *
 * @since 0.3.0
 * @category utils
 */
export const retryLine = (notice: RetryNotice): string =>
  `tributary: ${notice.request} failed: ${notice.cause}; retry ${notice.attempt} of ${notice.maxRetries} in ` +
  `${(notice.waitMillis / 1000).toFixed(1)} s`

/** Causes named in a window's line; the rest are counted together. */
const causesNamed = 3

/**
 * The retry lines of a command: `note` answers the lines to write for a retry, `flush` the line
 * of the retries a window held back, once that window has passed (or at once, at the end).
 *
 * @since 0.3.0
 * @category models
 */
export class RetryLog {
  private windowStart: number | undefined = undefined
  private shown = 0
  private readonly held = new Map<string, number>()
  private heldCount = 0

  constructor(private readonly options: { readonly lines: number; readonly windowMillis: number } = defaultRetryLog) {}

  /** Retries held back and not yet said. */
  get holding(): number {
    return this.heldCount
  }

  /** When the current window ends (undefined before the first retry). */
  get windowEnd(): number | undefined {
    return this.windowStart === undefined ? undefined : this.windowStart + this.options.windowMillis
  }

  /** The lines for a retry at `now`: the last window's held retries first when it has passed, then its own line while there is room. */
  note(notice: RetryNotice, now: number): Array<string> {
    const out = this.flush(now)
    if (this.windowStart === undefined) this.windowStart = now
    if (this.shown < this.options.lines) {
      this.shown++
      out.push(retryLine(notice))
    } else {
      this.heldCount++
      this.held.set(notice.cause, (this.held.get(notice.cause) ?? 0) + 1)
    }
    return out
  }

  /** The line of the held retries once their window has passed (`atEnd`: at once), and a new window after it. */
  flush(now: number, atEnd = false): Array<string> {
    const end = this.windowEnd
    if (end === undefined || (!atEnd && now < end)) return []
    const out = this.heldCount === 0 ? [] : [this.heldLine(Math.min(now, end) - this.windowStart!)]
    this.windowStart = undefined
    this.shown = 0
    this.held.clear()
    this.heldCount = 0
    return out
  }

  private heldLine(millis: number): string {
    const causes = [...this.held].sort((a, b) => b[1] - a[1])
    const named = causes.slice(0, causesNamed).map(([cause, count]) => `${cause} x ${count}`)
    const others = causes.slice(causesNamed).reduce((sum, [, count]) => sum + count, 0)
    const what = others === 0 ? named.join(", ") : `${named.join(", ")}, other causes x ${others}`
    const plural = this.heldCount === 1 ? "retry" : "retries"
    return `tributary: ${this.heldCount} more ${plural} in ${(millis / 1000).toFixed(1)} s, not shown one by one (${what})`
  }
}
