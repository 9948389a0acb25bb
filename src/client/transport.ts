/**
 * The HTTP transport of the client: undici with keep-alive, and a time limit on every attempt.
 *
 * The limit is undici's own (headers and body timeouts, the agent's defaults), so that an
 * attempt costs no extra fibers or timers: a hung service shows up as a transport error (a
 * `RequestError` with reason `Transport`, or an `ExchangeError`), which the retry policy
 * retries.
 * undici checks these limits on a coarse clock (about every half second), which suits
 * limits of seconds.
 *
 * @since 0.1.0
 */
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
 * @category constructors
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
 * @category services
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
 * @category layers
 */
export const layer = (attemptTimeout: Duration.DurationInput) => {
  const millis = Duration.toMillis(attemptTimeout)
  const limit: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) =>
    dispatch(Object.assign({}, options, { headersTimeout: millis, bodyTimeout: millis }), handler) // not a spread: "Spreads" in docs/decisions.md
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
 * @category models
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
 * @category models
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
 * @category errors
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
 * @category models
 */
export type Exchanges = (exchange: Exchange) => Effect.Effect<Reply, ExchangeError>

/**
 * An exchange in callback form: `done` is called once with the reply or the error, unless
 * the exchange is cancelled first (the function it answers; a no-op once `done` was called).
 *
 * Why a second form: the pipeline's hot path makes two or three requests a batch, and each
 * fiber it forked or woke for one cost more CPU than the request itself (measured: a fork and
 * its end about 40 µs, a fan-out of reads under `Effect.forEach` with concurrency about 50 µs a
 * read, against about 1 µs for a callback). The retries, the concurrency limit and the outage
 * watch have a callback form over `Calls`; the pipeline enters Effect once a batch.
 *
 * @since 0.3.0
 * @category models
 */
export type Calls = (exchange: Exchange, done: (outcome: Reply | ExchangeError) => void) => Cancel

/**
 * Stops waiting for an exchange in callback form (its request is aborted).
 *
 * @since 0.3.0
 * @category models
 */
export type Cancel = () => void

/**
 * `Calls` as `Exchanges`: one suspension of the calling fiber per exchange; interrupting it
 * cancels the exchange.
 *
 * @since 0.3.0
 * @category constructors
 */
export const exchangesOf = (calls: Calls): Exchanges => (exchange) =>
  Effect.async<Reply, ExchangeError>((resume) => {
    const cancel = calls(exchange, (outcome) => resume(outcome instanceof ExchangeError ? Effect.fail(outcome) : Effect.succeed(outcome)))
    return Effect.sync(cancel)
  })

/**
 * An exchange made again until it is answered for good: after each attempt, `again` answers
 * the wait before another one, or undefined to pass the outcome on; `holdOff` answers a wait
 * before an attempt (0: none). Cancelled, the attempt under way or the wait is stopped. The
 * retries and the outage watch are each an `again` over it.
 *
 * @since 0.3.0
 * @category combinators
 */
export const callAgain = (
  calls: Calls,
  exchange: Exchange,
  done: (outcome: Reply | ExchangeError) => void,
  again: (outcome: Reply | ExchangeError, attempt: number) => number | undefined,
  holdOff: () => number = () => 0
): Cancel => {
  let cancelAttempt: Cancel | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  const attempt = (n: number) => {
    timer = undefined
    const wait = holdOff()
    if (wait > 0) {
      timer = setTimeout(attempt, wait, n)
      return
    }
    cancelAttempt = calls(exchange, (outcome) => {
      cancelAttempt = undefined
      const next = again(outcome, n)
      if (next === undefined) return done(outcome)
      timer = setTimeout(attempt, next, n + 1)
    })
  }
  attempt(0)
  return () => {
    if (timer !== undefined) clearTimeout(timer)
    cancelAttempt?.()
  }
}

/**
 * Exchanges straight on an undici dispatcher, in callback form: the answer collected whole by
 * a plain handler. The platform's `HttpClient` does much more per request (a request object
 * per step, a parsed URL, an abort controller, a span, the body read on a fiber of its own);
 * for the pipeline's two requests per batch that cost as much as all the rest of the
 * pipeline. undici's own `request` answers with a body stream, which also costs more than
 * reading the few bytes of an answer. `headers` go with every request (the API key).
 *
 * @since 0.3.0
 * @category constructors
 */
export const calls = (dispatcher: Dispatcher, baseUrl: string, headers: Readonly<Record<string, string>>): Calls => {
  const base = new URL(baseUrl)
  const origin = base.origin // a getter that builds a new string on every read
  const prefix = base.pathname.replace(/\/+$/, "")
  const withBody = { ...headers, "content-type": "application/json" }
  return (exchange, done) => {
    const common = exchange.body === undefined ? headers : withBody
    const handler = new WholeAnswer(
      done,
      (cause) => done(new ExchangeError({ method: exchange.method, path: exchange.path, cause }))
    )
    try {
      dispatcher.dispatch({
        origin,
        path: prefix + exchange.path,
        method: exchange.method,
        headers: exchange.headers === undefined ? common : { ...common, ...exchange.headers },
        body: exchange.body ?? null
      }, handler)
    } catch (cause) {
      handler.onResponseError(undefined, cause)
    }
    return () => handler.abandon()
  }
}

/**
 * Exchanges straight on an undici dispatcher (`calls`, one suspension of the calling fiber
 * per request).
 *
 * @since 0.1.0
 * @category constructors
 */
export const exchanges = (dispatcher: Dispatcher, baseUrl: string, headers: Readonly<Record<string, string>>): Exchanges =>
  exchangesOf(calls(dispatcher, baseUrl, headers))

/** An undici handler that collects one answer whole, or the error that cut it short. */
class WholeAnswer implements Dispatcher.DispatchHandler {
  private status = 0
  private headers: Reply["headers"] = {}
  private readonly chunks: Array<Buffer> = []
  private controller: Dispatcher.DispatchController | undefined = undefined
  private abandoned = false
  private settled = false

  constructor(
    private readonly succeed: (reply: Reply) => void,
    private readonly fail: (cause: unknown) => void
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController) {
    this.controller = controller
    if (this.abandoned) controller.abort(new Error("the exchange was interrupted"))
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Reply["headers"]) {
    if (statusCode < 200) return // an informational answer: the real one follows
    this.status = statusCode
    this.headers = headers
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer) {
    this.chunks.push(chunk)
  }

  onResponseEnd() {
    if (this.settled) return
    this.settled = true
    const bytes = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)
    this.succeed({ status: this.status, headers: this.headers, text: bytes.toString("utf8") })
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: unknown) {
    if (this.settled) return
    this.settled = true
    this.fail(error)
  }

  /**
   * The caller no longer waits: the request is aborted (now, or as soon as it starts), and
   * neither callback is called; once the answer is in, nothing happens.
   */
  abandon() {
    if (this.settled) return
    this.settled = true
    this.abandoned = true
    this.controller?.abort(new Error("the exchange was interrupted"))
  }
}

/**
 * Exchanges over an `HttpClient` (with its base URL and credentials applied): for a client
 * built on an `HttpClient` of the caller's, and for traced requests.
 *
 * @since 0.1.0
 * @category constructors
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
