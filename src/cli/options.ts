/**
 * Option shapes shared by the commands.
 *
 * @since 0.1.0
 */
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Config, Effect, Option } from "effect"
import * as Telemetry from "../telemetry/index.js"
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
export const maxPendingOption = (fallback: number = defaultMaxPending.batches) =>
  positiveInteger("max-pending").pipe(
    Options.withDefault(fallback),
    Options.withDescription(
      `Batches pending at once (sent and followed to their end, or held back behind an earlier batch of the same keys); the source is read no further while this many are pending (default ${fallback})`
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

/**
 * `--key-order terminal|accepted`: when a batch stops holding back later batches of the same
 * primary-key values.
 *
 * @since 0.2.0
 */
export const keyOrderOption = Options.choice("key-order", ["terminal", "accepted"]).pipe(
  Options.withDefault("terminal" as const),
  Options.withDescription(
    "For a dataset with a primary key, a batch sharing a key value with an earlier batch waits until that one's ingestion is terminal (terminal, the default: safe with any service) or accepted (accepted: for a service that applies a dataset's ingestions in the order it accepted them, as tributary serve does; much faster when neighbouring batches share keys)"
  )
)

/**
 * `--max-dead-letters N|P%`: the run stops (exit 1, after committing what was delivered) once
 * more records than that are dead-lettered.
 *
 * @since 0.2.0
 */
export const maxDeadLettersOption = (fallback: string) => Options.text("max-dead-letters").pipe(
  Options.withDefault(fallback),
  Options.mapEffect((text): Effect.Effect<{ readonly count: number } | { readonly ratio: number }, ValidationError.ValidationError> => {
    const percent = /^([0-9]+(?:\.[0-9]+)?)%$/.exec(text.trim())
    if (percent !== null && Number(percent[1]) <= 100) return Effect.succeed({ ratio: Number(percent[1]) / 100 })
    const count = /^[0-9]+$/.exec(text.trim())
    if (count !== null) return Effect.succeed({ count: Number(text.trim()) })
    return Effect.fail(ValidationError.invalidValue(HelpDoc.p(
      `--max-dead-letters must be a count (500) or a share of the records read (10%), got '${text}'`
    )))
  }),
  Options.withDescription(
    `Stop with exit 1 (after committing what was delivered) once more records than this are dead-lettered: a count, or a share of the records read, checked from the 1,000th record on and at the end from the 100th (a run that dead-lettered every record fails at any size); default ${fallback}, 100% never stops`
  )
)

/**
 * `--restart`: ignore the checkpoint and start a fresh run (new idempotency keys).
 *
 * @since 0.2.0
 */
export const restartOption = Options.boolean("restart").pipe(
  Options.withDescription(
    "Start over: ignore the checkpoint and begin a fresh run (its records are stored again even if an earlier run sent them); the checkpoint is replaced"
  )
)

/**
 * `--otlp-endpoint URL` (or `OTEL_EXPORTER_OTLP_ENDPOINT`): export traces and metrics over
 * OTLP/HTTP; `OTEL_SERVICE_NAME` names the service.
 *
 * @since 0.3.0
 */
export const otlpEndpointOption = Options.text("otlp-endpoint").pipe(
  Options.withFallbackConfig(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")),
  Options.optional,
  Options.withDescription("Export traces and metrics over OTLP/HTTP to this address, e.g. http://localhost:4318 (or OTEL_EXPORTER_OTLP_ENDPOINT)")
)

/**
 * Runs a command's effect with the telemetry layer when an OTLP endpoint is given (what is
 * left is exported when the command ends).
 *
 * @since 0.3.0
 */
export const withTelemetry = (endpoint: Option.Option<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Option.isNone(endpoint) ? effect : Effect.provide(effect, Telemetry.layer({ endpoint: endpoint.value }))
