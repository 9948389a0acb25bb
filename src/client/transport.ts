/**
 * The HTTP transport of the client: undici with keep-alive, and a time limit on every attempt.
 *
 * The limit is undici's own (headers and body timeouts), set on each request by a dispatcher
 * interceptor, so that an attempt costs no extra fibers or timers: a hung service shows up as
 * a transport error (`RequestError`, reason `Transport`), which the retry policy retries.
 * undici checks these limits on a coarse clock (about every half second), which suits
 * limits of seconds.
 *
 * @since 0.1.0
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Duration, Effect, Layer } from "effect"
import { Agent, type Dispatcher } from "undici"

/**
 * An undici dispatcher whose requests each wait at most `attemptTimeout` for the answer's
 * headers and, between chunks, for its body.
 *
 * @since 0.1.0
 */
export const makeDispatcher = (attemptTimeout: Duration.DurationInput) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const millis = Duration.toMillis(attemptTimeout)
      const limit: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) =>
        dispatch({ ...options, headersTimeout: millis, bodyTimeout: millis }, handler)
      return new Agent().compose(limit)
    }),
    (dispatcher) => Effect.promise(() => dispatcher.destroy())
  )

/**
 * The `HttpClient` over undici with a per-attempt time limit.
 *
 * @since 0.1.0
 */
export const layer = (attemptTimeout: Duration.DurationInput) =>
  NodeHttpClient.layerUndiciWithoutDispatcher.pipe(
    Layer.provide(Layer.scoped(NodeHttpClient.Dispatcher, makeDispatcher(attemptTimeout)))
  )
