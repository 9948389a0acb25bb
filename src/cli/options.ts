/**
 * Option shapes shared by the commands.
 *
 * @since 0.1.0
 */
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect } from "effect"

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
 * `--concurrency N`: batches in flight at once (default 4).
 *
 * @since 0.1.0
 */
export const concurrencyOption = positiveInteger("concurrency").pipe(
  Options.withDefault(4),
  Options.withDescription("Batches in flight at once")
)
