/**
 * The typed client of the Data Ingestion Service, derived from the same contract the
 * reference server implements.
 *
 * ```ts
 * const program = Effect.gen(function*() {
 *   const client = yield* TributaryClient
 *   const { accounts } = yield* client.v1.v1Accounts.listAccounts()
 * })
 * program.pipe(Effect.provide(TributaryClient.layer({ baseUrl, apiKey: Redacted.make(key) })))
 * ```
 *
 * Failures are tagged and can be matched with `Effect.catchTag`: the wire errors
 * (`BadRequest`, `Unauthorized`, `Forbidden`, `NotFound`, `Conflict`, `PayloadTooLarge`,
 * `Unprocessable`, `TooManyRequests`, `InternalServerError`, `ServiceUnavailable`), transport
 * failures (`RequestError`, `ResponseError`) and undecodable answers (`ParseError`).
 * Transient failures are retried first (see {@link RetryPolicy}); calls that create something
 * or trigger a side effect carry an `Idempotency-Key` that stays the same across their retries
 * (see `withIdempotencyKeys`). Lists can be walked whole as streams (see `pages`).
 *
 * @since 0.1.0
 */
import type * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { V1Api } from "../api/v1.js"
import { V2Api } from "../api/v2/index.js"
import { withIdempotencyKeys } from "./idempotency.js"
import { defaultRetryPolicy, makeRetries, type RetryNotice, type RetryPolicy } from "./retry.js"
import * as Transport from "./transport.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface ClientConfig {
  /** Base address of the service, e.g. `https://api.example.com` or a reference server's URL. */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string>
  readonly retry?: Partial<RetryPolicy> | undefined
  /**
   * Trace the pipeline's requests and batches too (`exchanges`: ingest and polls; a span per
   * batch, see `tributary/telemetry`). Off by default: they
   * then go straight to undici (`Transport.exchanges`), at a fraction of the cost per request,
   * and the pipeline reports its progress as events. The typed `v1` and `v2` clients are
   * always traced.
   */
  readonly traceRequests?: boolean | undefined
  /** Told of every retry before its wait (the command line shows them). */
  readonly onRetry?: ((notice: RetryNotice) => Effect.Effect<void>) | undefined
}

/**
 * A typed client whose groups are built when they are first used, each on its own. Why:
 * `HttpApiClient.make` builds every endpoint of every group at once (their paths, encoders and
 * decoders), 70-75 ms of CPU for v2 and 13-36 ms for v1 at every client's start, measured on the
 * 2-core machine; a pipeline run uses one or two endpoints of the typed clients, and the command
 * line a handful. The client is the same object to its users: a group is a property that builds
 * its endpoints on first read and then stays.
 */
const lazyClient = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, ApiError, ApiR, E>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  httpClient: HttpClient.HttpClient.With<E>,
  baseUrl: string,
  context: Context.Context<never>
): HttpApiClient.Client<Groups, ApiError | E, never> => {
  const client: Record<string, unknown> = {}
  for (const group of Object.values(api.groups) as ReadonlyArray<unknown> as ReadonlyArray<HttpApiGroup.HttpApiGroup.AnyWithProps>) {
    const name = group.identifier
    const build = () =>
      Effect.runSync(
        Effect.provide(
          HttpApiClient.group(api, { group: name as HttpApiGroup.HttpApiGroup.Name<Groups>, httpClient, baseUrl }) as unknown as Effect.Effect<object>,
          context
        )
      )
    // A top-level group's endpoints are the client's own methods: built at once (the contract has none).
    if (group.topLevel) {
      Object.assign(client, build())
      continue
    }
    Object.defineProperty(client, name, {
      enumerable: true,
      configurable: true,
      get: () => {
        const built = build()
        Object.defineProperty(client, name, { value: built, enumerable: true })
        return built
      }
    })
  }
  return client as HttpApiClient.Client<Groups, ApiError | E, never>
}

const makeClients = (config: ClientConfig) =>
  Effect.gen(function*() {
    const policy: RetryPolicy = { ...defaultRetryPolicy, ...config.retry }
    const retries = yield* makeRetries(policy, config.onRetry, config.baseUrl)
    const apiKey = { "x-api-key": Redacted.value(config.apiKey) }
    // The key is set before the retries, so every retry of a call carries the same one.
    const typed = withIdempotencyKeys(retries.client(HttpClient.mapRequest(yield* HttpClient.HttpClient, HttpClientRequest.setHeaders(apiKey))))
    const context = yield* Effect.context<never>()
    const v1 = lazyClient(V1Api, typed, config.baseUrl, context)
    const v2 = lazyClient(V2Api, typed, config.baseUrl, context)
    const http = HttpClient.mapRequest(
      config.traceRequests === true ? typed : HttpClient.withTracerDisabledWhen(typed, () => true),
      HttpClientRequest.prependUrl(config.baseUrl)
    )
    // The hot path goes straight to undici when its dispatcher is at hand and no spans are wanted.
    // `Transport.layer`'s own agent; else a dispatcher the caller provided for the HttpClient.
    const ownAgent = yield* Effect.serviceOption(Transport.ExchangeDispatcher)
    const callersDispatcher = yield* Effect.serviceOption(NodeHttpClient.Dispatcher)
    const dispatcher = Option.orElse(ownAgent, () => callersDispatcher)
    const attempts = Option.isSome(dispatcher) && config.traceRequests !== true
      ? Option.some(Transport.calls(dispatcher.value, config.baseUrl, apiKey))
      : Option.none()
    const exchanges = Option.match(attempts, {
      onNone: () => Transport.exchangesVia(http),
      onSome: (attempts) => Transport.exchangesOf(retries.calls(attempts))
    })
    return {
      v1,
      v2,
      /** The authenticated, retrying HTTP client with the base URL applied. */
      http,
      /** The pipeline's hot path: authenticated, retrying requests under the base URL, answers read whole. */
      exchanges,
      /**
       * Single attempts of `exchanges` in callback form, before its retries (none when requests
       * are traced): for a caller that wraps each attempt (the pipeline times each one for its
       * concurrency limit) and then retries them with `retrying`.
       */
      attempts,
      /** The client's retry policy over exchanges in callback form (sharing its `Retry-After` pause). */
      retrying: retries.calls,
      /** The retry policy in force. */
      retryPolicy: policy,
      /** The service's base address, as configured. */
      baseUrl: config.baseUrl,
      /** Whether requests are traced (`traceRequests`): a run then has a span per batch too. */
      traced: config.traceRequests === true
    }
  })

/**
 * @since 0.1.0
 * @category models
 */
export type TributaryClientService = Effect.Effect.Success<ReturnType<typeof makeClients>>

/**
 * @since 0.1.0
 * @category services
 */
export class TributaryClient extends Context.Tag("tributary/Client")<TributaryClient, TributaryClientService>() {
  /**
   * Builds a client on an `HttpClient` from the context.
   */
  static readonly make = makeClients

  /**
   * The client over undici (keep-alive, the fastest Node client for Effect), each attempt
   * limited to the retry policy's `attemptTimeout`.
   */
  static readonly layer = (config: ClientConfig): Layer.Layer<TributaryClient> =>
    Layer.effect(TributaryClient, makeClients(config)).pipe(
      Layer.provide(Transport.layer(config.retry?.attemptTimeout ?? defaultRetryPolicy.attemptTimeout))
    )

  /**
   * The client configured from `TRIBUTARY_API_URL` and `TRIBUTARY_API_KEY` by default.
   */
  static readonly layerConfig = (
    config: Config.Config<ClientConfig> = Config.all({
      baseUrl: Config.string("TRIBUTARY_API_URL"),
      apiKey: Config.redacted("TRIBUTARY_API_KEY")
    })
  ): Layer.Layer<TributaryClient, import("effect/ConfigError").ConfigError> =>
    Layer.unwrapEffect(Effect.map(config, TributaryClient.layer))
}
