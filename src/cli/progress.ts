/**
 * Renders pipeline progress: a bar on a terminal, periodic log lines otherwise.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { RetryNotice } from "../client/retry.js"
import type { PipelineEvent, Progress } from "../pipeline/events.js"

const rate = (progress: Progress, now: number) => {
  const seconds = Math.max(0.001, (now - progress.startedAt) / 1000)
  return Math.round(progress.accepted / seconds)
}

/**
 * One line describing the progress.
 *
 * @since 0.1.0
 */
export const describeProgress = (progress: Progress, now: number = Date.now()): string =>
  `read ${progress.read}  stored ${progress.accepted}  rejected ${progress.rejected}  dead-lettered ${progress.deadLettered}` +
  `  in flight ${progress.inFlight}  ${rate(progress, now)} records/s  oldest unacked ${progress.oldestUnackedMillis} ms`

/**
 * An `onEvent` for the pipeline that shows progress on `stream`: rewritten in place on a
 * terminal (with a bar when the total is known), one line per `logEvery` otherwise.
 *
 * @since 0.1.0
 */
export const progressDisplay = (options: {
  readonly stream: NodeJS.WriteStream
  readonly total?: number | undefined
  readonly logEveryMillis?: number | undefined
  /** The line to show (default `describeProgress`). */
  readonly describe?: ((progress: Progress, now: number) => string) | undefined
}) => {
  const tty = options.stream.isTTY === true
  let lastLog = Date.now()
  return (event: PipelineEvent): Effect.Effect<void> =>
    Effect.sync(() => {
      if (event._tag !== "Progress") return
      const now = Date.now()
      const line = (options.describe ?? describeProgress)(event.progress, now)
      if (tty) {
        const total = options.total
        const bar = total === undefined || total === 0 ? "" : (() => {
          const done = Math.min(1, event.progress.read / total)
          const width = 24
          const filled = Math.round(done * width)
          return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${Math.floor(done * 100)}%  `
        })()
        options.stream.write(`\r\x1b[2K${bar}${line}`)
      } else if (now - lastLog >= (options.logEveryMillis ?? 5000)) {
        lastLog = now
        options.stream.write(`${new Date(now).toISOString()} ${line}\n`)
      }
    })
}

/**
 * Ends the in-place line on a terminal.
 *
 * @since 0.1.0
 */
export const endProgress = (stream: NodeJS.WriteStream) => Effect.sync(() => {
  if (stream.isTTY === true) stream.write("\n")
})

/**
 * One line on `stream` for a retry, while it is being retried: the request, the cause, which
 * retry of how many and the wait (on a terminal it replaces the progress line, which the next
 * update redraws).
 *
 * @since 0.3.0
 */
export const retryNotice = (stream: NodeJS.WriteStream) => (notice: RetryNotice): Effect.Effect<void> =>
  Effect.sync(() => {
    stream.write(
      `${stream.isTTY === true ? "\r\x1b[2K" : ""}tributary: ${notice.request} failed: ${notice.cause}; ` +
        `retry ${notice.attempt} of ${notice.maxRetries} in ${(notice.waitMillis / 1000).toFixed(1)} s\n`
    )
  })
