/**
 * The commands' retry lines (`src/cli/retryLog.ts`): every retry while they are few, a window's
 * count by cause for what goes over. Pure: the clock is given.
 */
import { describe, expect, it } from "vitest"
import type { RetryNotice } from "../../src/client/retry.js"
import { RetryLog, retryLine } from "../../src/cli/retryLog.js"

const notice = (cause: string, attempt = 1): RetryNotice => ({
  request: "POST http://127.0.0.1:8080/v2/datasets/2/data",
  cause,
  attempt,
  maxRetries: 8,
  waitMillis: 100
})

describe("retry lines", () => {
  it("a retry's line names the request, the cause, which retry of how many and the wait", () => {
    expect(retryLine(notice("HTTP 503", 2))).toBe(
      "tributary: POST http://127.0.0.1:8080/v2/datasets/2/data failed: HTTP 503; retry 2 of 8 in 0.1 s"
    )
  })

  it("shows the first retries of a window one by one, and nothing more to say when none was held", () => {
    const log = new RetryLog({ lines: 3, windowMillis: 1000 })
    const lines = [0, 10, 20].flatMap((t) => log.note(notice("HTTP 503"), t))
    expect(lines).toEqual([retryLine(notice("HTTP 503")), retryLine(notice("HTTP 503")), retryLine(notice("HTTP 503"))])
    expect(log.holding).toBe(0)
    expect(log.flush(5000, true)).toEqual([])
  })

  it("holds what goes over the window's lines and says it by cause once the window has passed", () => {
    const log = new RetryLog({ lines: 2, windowMillis: 1000 })
    const shown = [
      ...log.note(notice("HTTP 503"), 0),
      ...log.note(notice("HTTP 503"), 100),
      ...log.note(notice("HTTP 503"), 200),
      ...log.note(notice("HTTP 429"), 300),
      ...log.note(notice("HTTP 503"), 400)
    ]
    expect(shown).toHaveLength(2)
    expect(log.holding).toBe(3)
    expect(log.windowEnd).toBe(1000)
    // Not before the window ends.
    expect(log.flush(999)).toEqual([])
    expect(log.flush(1000)).toEqual([
      "tributary: 3 more retries in 1.0 s, not shown one by one (HTTP 503 x 2, HTTP 429 x 1)"
    ])
    expect(log.holding).toBe(0)
    // A new window shows its first retries again.
    expect(log.note(notice("HTTP 503", 3), 5000)).toEqual([retryLine(notice("HTTP 503", 3))])
  })

  it("a retry after the window says the window's count first, then its own line", () => {
    const log = new RetryLog({ lines: 1, windowMillis: 1000 })
    log.note(notice("HTTP 503"), 0)
    log.note(notice("connect ECONNRESET"), 500)
    expect(log.note(notice("HTTP 503"), 2500)).toEqual([
      "tributary: 1 more retry in 1.0 s, not shown one by one (connect ECONNRESET x 1)",
      retryLine(notice("HTTP 503"))
    ])
  })

  it("names the three commonest causes and counts the others together", () => {
    const log = new RetryLog({ lines: 0, windowMillis: 1000 })
    const causes = ["HTTP 503", "HTTP 503", "HTTP 503", "HTTP 502", "HTTP 502", "HTTP 429", "timeout", "reset"]
    causes.forEach((cause, i) => log.note(notice(cause), i))
    expect(log.flush(400, true)).toEqual([
      "tributary: 8 more retries in 0.4 s, not shown one by one (HTTP 503 x 3, HTTP 502 x 2, HTTP 429 x 1, other causes x 2)"
    ])
  })
})
