/**
 * `--otlp-endpoint` at run time: a command's effect runs with the telemetry layer when an
 * endpoint is given (what is left is exported when the command ends). The option itself is with
 * the others (`options.ts`).
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import * as Telemetry from "../telemetry/index.js"

/**
 * Runs `effect` exporting traces and metrics to `endpoint`, or as it is without one.
 *
 * @since 0.3.0
 * @category combinators
 */
export const withTelemetry = (endpoint: string | undefined) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  endpoint === undefined ? effect : Effect.provide(effect, Telemetry.layer({ endpoint }))
