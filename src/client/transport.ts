/**
 * The HTTP transport of the client: undici with keep-alive, and a time limit on every attempt.
 *
 * The limit is undici's own (headers and body timeouts), set on each request by a dispatcher
 * interceptor, so that an attempt costs no extra fibers or timers: a hung service shows up as
 * a transport error (a `RequestError` with reason `Transport`, or an `ExchangeError`), which
 * the retry policy retries.
 * undici checks these limits on a coarse clock (about every half second), which suits
 * limits of seconds.
 *
 * @since 0.1.0
 */
import { EventEmitter } from "node:events"
import * as HttpBody from "@effect/platform/HttpBody"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Context, Data, Duration, Effect, Layer } from "effect"
import { Agent, type Dispatcher } from "undici"

/**
 * An undici agent whose requests each wait at most `attemptTimeout` for the answer's headers
 * and, between chunks, for its body (unless a request sets limits of its own).
 *
 * @since 0.1.0
 */
export const makeDispatcher = (attemptTimeout: Duration.DurationInput) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const millis = Duration.toMillis(attemptTimeout)
      return new Agent({ headersTimeout: millis, bodyTimeout: millis })
    }),
    (dispatcher) => Effect.promise(() => dispatcher.destroy())
  )

/**
 * The undici dispatcher that `exchanges` go straight to.
 *
 * @since 0.1.0
 */
export class ExchangeDispatcher extends Context.Tag("tributary/Transport/ExchangeDispatcher")<
  ExchangeDispatcher,
  Dispatcher
>() {}

/**
 * The platform's `HttpClient` over undici, and the dispatcher for `exchanges`, both on one
 * agent (one pool of connections) with a per-attempt time limit.
 *
 * The platform's client sets its own generous limits on every request, so its dispatcher is
 * the agent behind an interceptor that puts the agent's limits back. `exchanges` use the
 * agent itself: an interceptor costs about a third of a request's CPU time (measured).
 *
 * @since 0.1.0
 */
export const layer = (attemptTimeout: Duration.DurationInput) => {
  const millis = Duration.toMillis(attemptTimeout)
  const limit: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) =>
    dispatch({ ...options, headersTimeout: millis, bodyTimeout: millis }, handler)
  const agent = Layer.scoped(ExchangeDispatcher, makeDispatcher(attemptTimeout))
  const forPlatform = Layer.effect(NodeHttpClient.Dispatcher, Effect.map(ExchangeDispatcher, (agent) => agent.compose(limit)))
  return NodeHttpClient.layerUndiciWithoutDispatcher.pipe(
    Layer.provideMerge(forPlatform),
    Layer.provideMerge(agent)
  )
}

/**
 * One request of the pipeline's hot path: a path under the client's base URL and, for a
 * POST, a JSON body (text or its UTF-8 bytes).
 *
 * @since 0.1.0
 */
export interface Exchange {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly body?: string | Uint8Array | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/**
 * The answer to an `Exchange`, read whole.
 *
 * @since 0.1.0
 */
export interface Reply {
  readonly status: number
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly text: string
}

/**
 * An exchange got no whole answer: the connection failed, or an attempt ran out of time.
 *
 * @since 0.1.0
 */
export class ExchangeError extends Data.TaggedError("ExchangeError")<{
  readonly method: string
  readonly path: string
  readonly cause: unknown
}> {
  override get message() {
    const cause = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `${this.method} ${this.path}: ${cause}`
  }
}

/**
 * Sends exchanges and answers their replies.
 *
 * @since 0.1.0
 */
export type Exchanges = (exchange: Exchange) => Effect.Effect<Reply, ExchangeError>

/**
 * Exchanges straight on an undici dispatcher: one suspension of the calling fiber per
 * request, the answer read whole. The platform's `HttpClient` does much more per request (a
 * request object per step, a parsed URL, an abort controller, a span, the body read on a
 * fiber of its own); for the pipeline's two requests per batch that cost as much as all the
 * rest of the pipeline. `headers` go with every request (the API key).
 *
 * @since 0.1.0
 */
export const exchanges = (dispatcher: Dispatcher, baseUrl: string, headers: Readonly<Record<string, string>>): Exchanges => {
  const base = new URL(baseUrl)
  const origin = base.origin // a getter that builds a new string on every read
  const prefix = base.pathname.replace(/\/+$/, "")
  const withBody = { ...headers, "content-type": "application/json" }
  return (exchange) =>
    Effect.async<Reply, ExchangeError>((resume) => {
      // undici also takes an EventEmitter as the abort signal: far cheaper than an AbortController.
      const signal = new EventEmitter()
      const common = exchange.body === undefined ? headers : withBody
      dispatcher.request({
        origin,
        path: prefix + exchange.path,
        method: exchange.method,
        headers: exchange.headers === undefined ? common : { ...common, ...exchange.headers },
        body: exchange.body ?? null,
        signal
      }).then(async (answer) => {
        const text = await answer.body.text()
        resume(Effect.succeed({ status: answer.statusCode, headers: answer.headers, text }))
      }).catch((cause) => resume(Effect.fail(new ExchangeError({ method: exchange.method, path: exchange.path, cause }))))
      return Effect.sync(() => signal.emit("abort"))
    })
}

/**
 * Exchanges over an `HttpClient` (with its base URL and credentials applied): for a client
 * built on an `HttpClient` of the caller's, and for traced requests.
 *
 * @since 0.1.0
 */
export const exchangesVia = (http: HttpClient.HttpClient): Exchanges => (exchange) =>
  http.execute(
    HttpClientRequest.make(exchange.method)(exchange.path, {
      headers: exchange.headers,
      body: exchange.body === undefined ? undefined : HttpBody.raw(exchange.body, { contentType: "application/json" })
    })
  ).pipe(
    Effect.flatMap((response) => Effect.map(response.text, (text): Reply => ({ status: response.status, headers: response.headers, text }))),
    Effect.mapError((cause) => new ExchangeError({ method: exchange.method, path: exchange.path, cause }))
  )
