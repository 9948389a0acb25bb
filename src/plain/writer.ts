/**
 * A buffered writer for application code that makes records one at a time (a request
 * handler, a queue consumer, a serverless function).
 *
 * Behind it runs the pipeline over a bounded buffer: records are batched (at most 100 per
 * ingestion), sent with idempotency keys (retries replay, never store twice), followed to
 * their ingestion's end, and dead-lettered when the service refuses them, as in any job.
 * `write` waits while the buffer is full (back-pressure), `flush` waits until everything
 * written before it is stored or dead-lettered, `close` stops taking records and waits for
 * the rest.
 *
 * What is at risk: the writer's source is the process's memory, so a crash (or a `close`
 * that times out) loses the records still buffered or in flight; those already sent may or
 * may not be stored, and nothing replays them. Records that `flush` or `close` answered for
 * are stored or dead-lettered.
 *
 * @since 0.3.0
 */
import { randomUUID } from "node:crypto"
import { Effect, Exit, Fiber, Option, Queue, Stream } from "effect"
import { TributaryClient } from "../client/Client.js"
import * as Checkpoint from "../pipeline/Checkpoint.js"
import type { Progress } from "../pipeline/events.js"
import { run } from "../pipeline/run.js"
import type { Source } from "../pipeline/Source.js"
import type { SourceElement } from "../pipeline/vocabulary.js"
import { toError, TributaryError } from "./errors.js"
import { type JobOptions, runJobSettings } from "./jobs.js"
import type { Runner } from "./runtime.js"

/**
 * @since 0.3.0
 * @category models
 */
export interface WriterOptions<A = any, B = A> extends Omit<JobOptions<A, B>, "signal"> {
  /** Records held at most before `write` waits (default 1000). */
  readonly maxBuffered?: number | undefined
}

/**
 * @since 0.3.0
 * @category models
 */
export interface Writer<A = unknown> {
  /** Takes a record; waits while the buffer is full. Rejects once the writer failed or is closing. */
  write(record: A): Promise<void>
  /** Waits until every record written before it is stored or dead-lettered. */
  flush(): Promise<void>
  /**
   * Takes no more records and waits until every one written is stored or dead-lettered; after
   * `timeout` milliseconds (default: none) it stops waiting, gives up what is unsent and
   * rejects saying how many records it gave up.
   */
  close(options?: { readonly timeout?: number | undefined }): Promise<Progress>
  /** The counters so far. */
  readonly progress: () => Progress | undefined
}

type Item = { readonly _tag: "Record"; readonly value: unknown } | { readonly _tag: "End" }

/**
 * Opens a writer into a dataset.
 *
 * @since 0.3.0
 * @category constructors
 */
export const makeWriter = <A, B>(runner: Runner, options: WriterOptions<A, B>): Writer<A> => {
  const queue = Effect.runSync(Queue.bounded<Item>(options.maxBuffered ?? 1000))
  const source: Source = {
    name: `writer:${randomUUID()}`,
    elements: () => {
      let offset = 0
      return Stream.fromQueue(queue).pipe(
        Stream.takeWhile((item) => item._tag === "Record"),
        Stream.map((item): SourceElement => ({
          _tag: "Record",
          position: { partition: "0", offset: ++offset },
          value: (item as Extract<Item, { _tag: "Record" }>).value
        }))
      )
    }
  }
  let written = 0
  let committed = 0
  let latest: Progress | undefined
  let failure: unknown
  let closing = false
  const waiting: Array<{ readonly through: number; readonly resolve: () => void; readonly reject: (error: unknown) => void }> = []
  const settle = () => {
    for (let i = waiting.length - 1; i >= 0; i--) {
      const waiter = waiting[i]!
      if (failure !== undefined) waiter.reject(failure)
      else if (committed >= waiter.through) waiter.resolve()
      else continue
      waiting.splice(i, 1)
    }
  }
  const settings = runJobSettings({ ...options, batch: { lingerMillis: 100, ...options.batch } })
  const fiber = runner.runtime.runFork(Effect.gen(function*() {
    const client = yield* TributaryClient
    return yield* run(client, {
      ...settings.config,
      source,
      checkpoint: yield* Checkpoint.memory(),
      deadLetters: yield* settings.deadLetters("tributary-dead-letters.ndjson"),
      onEvent: (event) =>
        Effect.zipRight(
          settings.config.onEvent?.(event) ?? Effect.void,
          Effect.sync(() => {
            if (event._tag === "Committed") {
              committed = Math.max(committed, event.position.offset)
              settle()
            } else if (event._tag === "Progress") latest = event.progress
          })
        )
    })
  }))
  // A failed run fails every waiter, and every later call.
  fiber.addObserver((exit) => {
    if (Exit.isFailure(exit)) failure = toError(exit.cause)
    else latest = exit.value
    settle()
  })
  const offer = (item: Item) => runner.runtime.runPromise(Queue.offer(queue, item))
  const waitFor = (through: number) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ through, resolve, reject })
      settle()
    })
  return {
    write: (record) => {
      if (failure !== undefined) return Promise.reject(failure)
      if (closing) return Promise.reject(new TributaryError("the writer is closed", { code: "closed" }))
      written++
      return offer({ _tag: "Record", value: record }).then(() => undefined)
    },
    flush: () => (failure !== undefined ? Promise.reject(failure) : waitFor(written)),
    close: async (closeOptions = {}) => {
      if (!closing) {
        closing = true
        await offer({ _tag: "End" })
      }
      const timeout = closeOptions.timeout
      const exit = await runner.runtime.runPromise(
        timeout === undefined
          ? Effect.map(Fiber.await(fiber), Option.some)
          : Fiber.await(fiber).pipe(Effect.timeoutOption(`${timeout} millis`))
      )
      if (Option.isNone(exit)) {
        const unconfirmed = written - committed
        await runner.runtime.runPromise(Fiber.interrupt(fiber))
        throw new TributaryError(
          `the writer closed after ${timeout} ms with ${unconfirmed} record(s) not confirmed: they may or may not be stored`,
          { code: "close_timeout" }
        )
      }
      if (Exit.isSuccess(exit.value)) return exit.value.value
      throw toError(exit.value.cause)
    },
    progress: () => latest
  }
}
