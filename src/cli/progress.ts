/**
 * Renders pipeline progress on stderr: a bar rewritten in place on a terminal (with a
 * percentage and the time left when the size of the input is known), periodic log lines
 * otherwise, and a line for every retry while it happens.
 *
 * The bar measures what is done, not what is read: for a file the committed byte offset (a
 * line is committed once its records are stored or dead-lettered), for a table the rows stored
 * or dead-lettered. Read counts ran ahead by up to the pending batches (4,000 rows at the end of
 * a backfill showed as 100% / ETA 0s while still unsent).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { RetryNotice } from "../client/retry.js"
import type { PipelineEvent, Progress } from "../pipeline/events.js"
import { RetryLog } from "./retryLog.js"

/** The retry logs of this process: what they hold is said at a run's end (`endProgress`) or at the exit. */
const openLogs = new Set<() => void>()

const rate = (progress: Progress, now: number) => {
  const seconds = Math.max(0.001, (now - progress.startedAt) / 1000)
  return Math.round(progress.accepted / seconds)
}

/**
 * `3s`, `2m05s`, `1h02m`.
 *
 * @since 0.3.0
 * @category utils
 */
export const formatSeconds = (s: number) => {
  const total = Math.max(0, Math.round(s))
  const h = Math.floor(total / 3600)
  const m = Math.floor((total % 3600) / 60)
  if (h > 0) return `${h}h${String(m).padStart(2, "0")}m`
  return m === 0 ? `${total}s` : `${m}m${String(total % 60).padStart(2, "0")}s`
}

/**
 * What an outage of the service looks like on the progress line (empty while it answers).
 *
 * @since 0.3.0
 * @category utils
 */
export const describeOutage = (progress: Progress, now: number) =>
  progress.outage === null
    ? ""
    : `  SERVICE UNREACHABLE for ${Math.round((now - progress.outage.since) / 1000)}s (${progress.outage.attempts} failed tries: ${progress.outage.cause})`

/**
 * One line describing the progress.
 *
 * @since 0.1.0
 * @category utils
 */
export const describeProgress = (progress: Progress, now: number = Date.now()): string =>
  `read ${progress.read}  stored ${progress.accepted}  rejected ${progress.rejected}  dead-lettered ${progress.deadLettered}` +
  `  in flight ${progress.inFlight}  ${rate(progress, now)} records/s  oldest unacked ${progress.oldestUnackedMillis} ms` +
  describeOutage(progress, now)

/**
 * The bar for a share done, with the time left when it can be told.
 *
 * @since 0.3.0
 * @category utils
 */
export const bar = (done: number, etaSeconds: number | undefined, width = 24) => {
  const share = Math.min(1, Math.max(0, done))
  const filled = Math.floor(share * width)
  // 100% only when all of it is done: 99.6% shows as 99%.
  const percent = Math.floor(share * 100)
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(percent).padStart(3)}%` +
    `${etaSeconds === undefined || share >= 1 ? "" : `  ETA ${formatSeconds(etaSeconds)}`}  `
}

/**
 * The time left at a steady pace: the share done since `first` seen at `since`, projected.
 *
 * @since 0.3.0
 * @category utils
 */
export const etaSeconds = (first: { readonly at: number; readonly done: number }, done: number, now: number) => {
  const gained = done - first.done
  const seconds = (now - first.at) / 1000
  return gained <= 0 || seconds < 1 ? undefined : ((1 - done) * seconds) / gained
}

/**
 * An `onEvent` for the pipeline that shows progress on `stream`: rewritten in place on a
 * terminal (with a bar when `done` tells the share done), one line per `logEvery` otherwise.
 *
 * @since 0.1.0
 * @category utils
 */
export const progressDisplay = (options: {
  readonly stream: NodeJS.WriteStream
  /** The share of the input done, 0 to 1, when the input's size is known. */
  readonly done?: ((progress: Progress) => number | undefined) | undefined
  readonly logEveryMillis?: number | undefined
  /** The line to show (default `describeProgress`). */
  readonly describe?: ((progress: Progress, now: number) => string) | undefined
}) => {
  const tty = options.stream.isTTY === true
  let lastLog = Date.now()
  let first: { readonly at: number; readonly done: number } | undefined
  return (event: PipelineEvent): Effect.Effect<void> =>
    Effect.sync(() => {
      if (event._tag !== "Progress") return
      const now = Date.now()
      const line = (options.describe ?? describeProgress)(event.progress, now)
      const done = options.done?.(event.progress)
      if (done !== undefined) first ??= { at: now, done }
      const shown = done === undefined ? "" : bar(done, etaSeconds(first!, done, now))
      if (tty) {
        options.stream.write(`\r\x1b[2K${shown}${line}`)
      } else if (now - lastLog >= (options.logEveryMillis ?? 5000)) {
        lastLog = now
        options.stream.write(`${new Date(now).toISOString()} ${done === undefined ? "" : `${Math.floor(done * 100)}% `}${line}\n`)
      }
    })
}

/**
 * Ends the in-place line on a terminal, and says the retries a retry log still holds.
 *
 * @since 0.1.0
 * @category utils
 */
export const endProgress = (stream: NodeJS.WriteStream) => Effect.sync(() => {
  if (stream.isTTY === true) stream.write("\n")
  // Retries held back are said before the run's summary, not after it at the exit.
  for (const say of openLogs) say()
})

/**
 * A line on `stream` for each retry while it is being retried: the request, the cause, which
 * retry of how many and the wait (on a terminal it replaces the progress line, which the next
 * update redraws); over `log`'s share of a window, the window's count by cause, once it has
 * passed or when the process exits (`retryLog.ts`).
 *
 * @since 0.3.0
 * @category utils
 */
export const retryNotice = (stream: NodeJS.WriteStream, log: RetryLog = new RetryLog()) => {
  const write = (lines: ReadonlyArray<string>) => {
    for (const line of lines) stream.write(`${stream.isTTY === true ? "\r\x1b[2K" : ""}${line}\n`)
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  const sayHeld = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    write(log.flush(Date.now(), true))
  }
  // One exit hook for the process, made with its first log.
  if (openLogs.size === 0) {
    process.once("exit", () => {
      for (const say of openLogs) say()
    })
  }
  openLogs.add(sayHeld)
  return (notice: RetryNotice): Effect.Effect<void> =>
    Effect.sync(() => {
      const now = Date.now()
      write(log.note(notice, now))
      if (log.holding > 0 && timer === undefined) {
        // Not keeping the process alive for it: an exit says it too.
        timer = setTimeout(sayHeld, Math.max(0, log.windowEnd! - now))
        timer.unref()
      }
    })
}
