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
import { EventEmitter } from "node:events"
import * as Cookies from "@effect/platform/Cookies"
import * as Headers from "@effect/platform/Headers"
import type * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as UrlParams from "@effect/platform/UrlParams"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Duration, Effect, Either, Inspectable, Layer, Option, type Stream } from "effect"
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
 * The platform's `HttpClient` over undici, and the dispatcher itself (for `direct`), with a
 * per-attempt time limit.
 *
 * @since 0.1.0
 */
export const layer = (attemptTimeout: Duration.DurationInput) =>
  NodeHttpClient.layerUndiciWithoutDispatcher.pipe(
    Layer.provideMerge(Layer.scoped(NodeHttpClient.Dispatcher, makeDispatcher(attemptTimeout)))
  )

/**
 * An `HttpClient` straight on an undici dispatcher, for the pipeline's hot path.
 *
 * The platform's client does more per request (a parsed URL, an abort controller and a
 * finalization-registry entry for every request, a cached body read run on a fiber of its
 * own, a tracing span); this one sends the request and wraps the answer, which made the
 * pipeline a quarter faster. What it leaves out: tracing spans, and the release of an answer
 * whose body is never read (read every body, or the connection waits for the body timeout).
 *
 * @since 0.1.0
 */
export const direct = (dispatcher: Dispatcher): HttpClient.HttpClient =>
  HttpClient.makeWith<never, never, HttpClientError.HttpClientError, never>(
    (request) => Effect.flatMap(request, (r) => send(dispatcher, r)),
    Effect.succeed
  )

const send = (
  dispatcher: Dispatcher,
  request: HttpClientRequest.HttpClientRequest
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError> => {
  const url = UrlParams.makeUrl(request.url, request.urlParams, request.hash)
  if (Either.isLeft(url)) {
    return Effect.fail(new HttpClientError.RequestError({ request, reason: "InvalidUrl", cause: url.left }))
  }
  return Effect.flatMap(bodyOf(request), ({ body, contentType }) =>
    Effect.async<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError>((resume) => {
      // undici also takes an EventEmitter as the abort signal: far cheaper than an AbortController.
      const signal = new EventEmitter()
      dispatcher.request({
        origin: url.right.origin,
        path: url.right.pathname + url.right.search,
        method: request.method as Dispatcher.HttpMethod,
        headers: contentType === undefined ? request.headers : { ...request.headers, "content-type": contentType },
        body: body ?? null,
        signal
      }).then(
        (answer) => resume(Effect.succeed(new DirectResponse(request, answer))),
        (cause) => resume(Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause })))
      )
      return Effect.sync(() => signal.emit("abort"))
    }))
}

type DispatchBody = Dispatcher.DispatchOptions["body"]

/** The body as undici takes it, and the content type when only the encoding knows it. */
const bodyOf = (
  request: HttpClientRequest.HttpClientRequest
): Effect.Effect<{ readonly body: DispatchBody; readonly contentType?: string }, HttpClientError.RequestError> => {
  const body: HttpBody.HttpBody = request.body
  const encodeError = (cause: unknown) => new HttpClientError.RequestError({ request, reason: "Encode", cause })
  switch (body._tag) {
    case "Empty":
      return Effect.succeed({ body: null })
    case "Raw":
    case "Uint8Array":
      return Effect.succeed({ body: body.body as DispatchBody })
    case "FormData": {
      // undici's dispatcher does not take Node's global FormData: encode it as fetch does.
      const encoded = new Response(body.formData)
      return Effect.tryPromise({
        try: async () => ({
          body: new Uint8Array(await encoded.arrayBuffer()),
          contentType: encoded.headers.get("content-type") ?? "multipart/form-data"
        }),
        catch: encodeError
      })
    }
    case "Stream":
      return Effect.map(Effect.mapError(NodeStream.toReadable(body.stream), encodeError), (readable) => ({ body: readable }))
  }
}

class DirectResponse extends Inspectable.Class implements HttpClientResponse.HttpClientResponse {
  readonly [HttpIncomingMessage.TypeId]: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId
  readonly [HttpClientResponse.TypeId]: HttpClientResponse.TypeId = HttpClientResponse.TypeId
  /** The body can be taken once: the first read is kept for the others. */
  private read: Promise<string | ArrayBuffer | FormData> | undefined

  constructor(
    readonly request: HttpClientRequest.HttpClientRequest,
    private readonly source: Dispatcher.ResponseData
  ) {
    super()
  }

  get status() {
    return this.source.statusCode
  }

  get headers() {
    return Headers.fromInput(this.source.headers as Record<string, string | Array<string>>)
  }

  get cookies() {
    const set = this.source.headers["set-cookie"]
    return set === undefined ? Cookies.empty : Cookies.fromSetCookie(set)
  }

  get remoteAddress() {
    return Option.none<string>()
  }

  private body<A extends string | ArrayBuffer | FormData>(take: () => Promise<A>): Effect.Effect<A, HttpClientError.ResponseError> {
    return Effect.tryPromise({
      try: () => (this.read ??= take()) as Promise<A>,
      catch: (cause) => new HttpClientError.ResponseError({ request: this.request, response: this, reason: "Decode", cause })
    })
  }

  get text(): Effect.Effect<string, HttpClientError.ResponseError> {
    return this.body(() => this.source.body.text())
  }

  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpClientError.ResponseError> {
    return this.body(() => this.source.body.arrayBuffer())
  }

  get formData(): Effect.Effect<FormData, HttpClientError.ResponseError> {
    return this.body(() => this.source.body.formData() as Promise<FormData>)
  }

  get json(): Effect.Effect<unknown, HttpClientError.ResponseError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({
        try: (): unknown => (text === "" ? null : JSON.parse(text)),
        catch: (cause) => new HttpClientError.ResponseError({ request: this.request, response: this, reason: "Decode", cause })
      }))
  }

  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpClientError.ResponseError> {
    return Effect.map(this.text, (text) => UrlParams.fromInput(new URLSearchParams(text)))
  }

  get stream(): Stream.Stream<Uint8Array, HttpClientError.ResponseError> {
    return NodeStream.fromReadable(
      () => this.source.body,
      (cause) => new HttpClientError.ResponseError({ request: this.request, response: this, reason: "Decode", cause })
    )
  }

  toJSON(): unknown {
    return { _id: "@effect/platform/HttpClientResponse", request: this.request.toJSON(), status: this.status }
  }
}
