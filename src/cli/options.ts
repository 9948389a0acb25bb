/**
 * Option shapes shared by the commands.
 *
 * @since 0.1.0
 */
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect } from "effect"
import { defaultRetryPolicy } from "../client/retry.js"
import { defaultConcurrency, defaultMaxPending } from "../pipeline/run.js"

/**
 * `--name N` where N must be a whole number of at least 1 (a 0 would stall or refuse all).
 *
 * @since 0.1.0
 */
export const positiveInteger = (name: string) =>
  Options.integer(name).pipe(
    Options.mapEffect((n) =>
      n >= 1 ? Effect.succeed(n) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name} must be at least 1, got ${n}`)))
    )
  )

/**
 * `--dataset ID`: the destination dataset.
 *
 * @since 0.1.0
 */
export const datasetOption = Options.text("dataset").pipe(Options.withDescription("Id of the destination dataset"))

/**
 * `--concurrency N` (the ceiling of an adaptive limit on requests in flight) or
 * `--concurrency fixed:N` (always N).
 *
 * @since 0.1.0
 */
export const concurrencyOption = Options.text("concurrency").pipe(
  Options.withDefault(String(defaultConcurrency)),
  Options.mapEffect((text) => {
    const match = /^(fixed:)?([0-9]+)$/.exec(text.trim())
    const n = match === null ? NaN : Number(match[2])
    if (!(Number.isInteger(n) && n >= 1)) {
      return Effect.fail(ValidationError.invalidValue(HelpDoc.p(
        `--concurrency must be a whole number of at least 1 (an adaptive ceiling) or fixed:N, got '${text}'`
      )))
    }
    return Effect.succeed(match![1] === undefined ? n : { fixed: n })
  }),
  Options.withDescription(
    `Requests in flight at once: N is the ceiling of an adaptive limit (starts at 1, grows while the service keeps up, backs off on 429/503, timeouts and rising latency); fixed:N keeps N (default ${defaultConcurrency})`
  )
)

/**
 * `--max-pending N`: batches sent or waiting whose ingestions are not yet at their end.
 *
 * @since 0.2.0
 */
export const maxPendingOption = positiveInteger("max-pending").pipe(
  Options.withDefault(defaultMaxPending.batches),
  Options.withDescription(
    `Batches pending at once (sent and followed to their end, or held back behind an earlier batch of the same keys); the source is read no further while this many are pending (default ${defaultMaxPending.batches})`
  )
)

/**
 * `--max-pending-bytes SIZE`: bytes of records held by pending batches (`64mb`, `512kb`, bytes).
 *
 * @since 0.2.0
 */
export const maxPendingBytesOption = Options.text("max-pending-bytes").pipe(
  Options.withDefault("64mb"),
  Options.mapEffect((text) => {
    const match = /^([0-9]+)\s*(b|kb|mb|gb)?$/i.exec(text.trim())
    const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(match?.[2] ?? "b").toLowerCase() as "b"]
    const bytes = match === null ? NaN : Number(match[1]) * unit
    return Number.isFinite(bytes) && bytes >= 1
      ? Effect.succeed(bytes)
      : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--max-pending-bytes must be a size like 64mb, 512kb or 1048576, got '${text}'`)))
  }),
  Options.withDescription("Bytes of records pending batches may hold, for their dead letters (default 64mb)")
)

/**
 * `--retries N`: how often a request is tried again before a one-shot run gives up.
 *
 * @since 0.2.0
 */
export const retriesOption = Options.integer("retries").pipe(
  Options.withDefault(defaultRetryPolicy.maxRetries),
  Options.mapEffect((n) =>
    n >= 0 ? Effect.succeed(n) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--retries must be at least 0, got ${n}`)))
  ),
  Options.withDescription(
    `Retries of a failing request (transport errors, 408, 429, 5xx; backoff from 100 ms to 10 s) before the run stops with exit 1 (default ${defaultRetryPolicy.maxRetries})`
  )
)
