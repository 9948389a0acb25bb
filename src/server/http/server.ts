/**
 * The reference server as a layer: v1 and v2 on one port, `/openapi.json`, `/docs`.
 *
 * Two middlewares give every answer the spec's shape:
 * - the outer one stamps each request with an id (FiberRef + `x-request-id` header);
 * - the inner one (inside HttpApiBuilder's error encoder) turns everything that is not a
 *   declared API error into one: decode failures (400), malformed JSON (400), bodies over
 *   the limit (413), unknown routes (404) and defects (500). It also injects the faults of
 *   `ServerOptions.faults` into API requests (see `../faults.ts`), so they are envelopes too.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as OpenApi from "@effect/platform/OpenApi"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Cause, Context, Effect, FiberRef, Layer, Option } from "effect"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { isWireError } from "../../api/errors.js"
import { TributaryApi } from "../../api/index.js"
import { ApiKeyAuthLive } from "./auth.js"
import { applySeed, type Seed } from "../seed.js"
import * as Boards from "../features/boards.js"
import { seedConnections } from "../features/connections.js"
import { FrontServer } from "./front.js"
import { makeIngestRoute } from "./fastIngest.js"
import { makeIngestionRoute } from "./fastIngestion.js"
import { badRequestFromDecode, bodyTooLarge, invalidJson } from "./decodeError.js"
import { CurrentRequestId, failWith, newRequestId } from "./envelope.js"
import { actsOnRequests, delayedProcessing, type FaultSpec, formatFaults, makeInjector } from "../faults.js"
import * as WebConsole from "./console.js"
import { defaultWorkerOptions, type WorkerOptions, workersLayer } from "../core/ingestion.js"
import * as MemoryStore from "../features/memoryStore.js"
import { type ServerStores } from "../features/stores.js"
import { type Stores } from "../core/store/Stores.js"
import { ActivityStore } from "../features/activity/store.js"
import type { StoreError } from "../core/errors.js"
import { recordingMutation } from "./activity.js"
import { V1AccountsLive, V1AuthLive, V1DataSourcesLive, V1DatasetsLive } from "./v1.js"
import { V2AuthLive } from "./v2/auth.js"
import { V2DataSourcesLive } from "./v2/dataSources.js"
import { V2DatasetsLive } from "./v2/datasets.js"
import { V2DatasetModificationsLive } from "./v2/datasetModifications.js"
import { V2BoardsLive } from "./v2/boards.js"
import { V2ConnectionsLive } from "./v2/connections.js"
import { V2DatasetSettingsLive } from "./v2/datasetSettings.js"
import { V2IntegrationsLive } from "./v2/integrations.js"
import { V2MetricsLive } from "./v2/metrics.js"
import { V2OrganizationLive } from "./v2/organization.js"
import { V2AccountsLive } from "./v2/accounts.js"
import { V2BillingLive } from "./v2/billing.js"
import { V2ProfileLive, V2UsersLive } from "./v2/users.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface ServerOptions {
  readonly host: string
  /** 0 picks a free port. */
  readonly port: number
  readonly seed: Seed
  /** Request bodies over this many bytes are answered 413. */
  readonly maxBodyBytes: number
  /** Faults to inject into API requests (see `../faults.ts`); `max-body` overrides `maxBodyBytes`. */
  readonly faults?: FaultSpec | undefined
  /** Where everything is kept: the memory store unless given (e.g. `SqlStore.layer`). */
  readonly store?: Layer.Layer<ServerStores, StoreError> | undefined
  /** Ingestion workers of this process. */
  readonly workers?: WorkerOptions | undefined
  /** Time to receive a whole request, headers and body (408 after it); 60 s unless given. */
  readonly requestTimeoutMillis?: number | undefined
  /**
   * Continue the callers' traces (`traceparent`): a span per request, under the caller's. The
   * ingest fast path has no spans, so every request then goes through the API's routes.
   */
  readonly traced?: boolean | undefined
}

/**
 * 10 MB, the documented default body limit.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultMaxBodyBytes = 10 * 1024 * 1024

const isRequestError = (u: unknown): u is { readonly _tag: "RequestError"; readonly cause?: unknown } =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "RequestError"

const causeMessage = (u: { readonly cause?: unknown }) => u.cause instanceof Error ? u.cause.message : String(u.cause)

/** Maps what HttpApi leaves unshaped into declared wire errors; declared errors pass as they are. */
const toWireError = (cause: Cause.Cause<unknown>, url: string): Effect.Effect<never, unknown> => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value as { readonly _tag?: string }
    switch (error._tag) {
      case "HttpApiDecodeError":
        return badRequestFromDecode((error as HttpApiDecodeError).issues, url)
      case "RouteNotFound":
        return failWith("NotFound", { code: "not_found", message: "no such route" })
      default:
        return Effect.failCause(cause)
    }
  }
  const defect = Cause.dieOption(cause)
  // A wire error raised where only a narrower one may be declared (the key check's 503).
  if (Option.isSome(defect) && isWireError(defect.value)) return Effect.fail(defect.value)
  if (Option.isSome(defect) && isRequestError(defect.value)) {
    // The body could not be read: over the size limit, or not JSON.
    return causeMessage(defect.value) === "maxBytes exceeded" ? bodyTooLarge : invalidJson(causeMessage(defect.value))
  }
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
  return Effect.zipRight(
    Effect.logError("request failed", cause),
    failWith("InternalServerError", { code: "internal_error", message: "the server failed; the request may be retried" })
  )
}

// Per request this is one `flatMap` and one `catchAllCause`; the body limit is provided once
// (`apiLayer`). With an `Effect.gen`, `withMaxBodySize` (an `Effect.locally`) and the request id
// set by `Effect.locally`, the two middlewares cost 9 µs per request against 2 µs now
// (measured on a bare fiber).
const errorEnvelopes = (maxBodyBytes: number, faults: FaultSpec | undefined) =>
  HttpApiBuilder.middleware(TributaryApi, Effect.map(ActivityStore, (store) => {
    // One injector (random source, request count) per server.
    const inject = faults === undefined || !actsOnRequests(faults) ? undefined : makeInjector(faults)
    return (app: HttpApp.Default): HttpApp.Default<never> =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        // node's own headers: the request's `headers` getter copies them all on every read.
        const declaredLength = Number(NodeHttpServerRequest.toIncomingMessage(request).headers["content-length"] ?? 0)
        if (declaredLength > maxBodyBytes) {
          return failWith("PayloadTooLarge", {
            code: "payload_too_large",
            message: `the request body (${declaredLength} bytes) is over the ${maxBodyBytes}-byte limit`
          })
        }
        const handled = Effect.catchAllCause(
          // Every successful mutation is logged here, once for all routes (`activity.ts`).
          recordingMutation(store, request, app),
          (cause) => toWireError(cause, request.url)
        )
        return inject === undefined ? handled : inject(request, handled)
        // The failures are declared API errors (encoded by HttpApiBuilder right after this
        // middleware), but the middleware type only admits the API-level ones.
      }) as HttpApp.Default<never>
  }))

/**
 * The header goes straight onto node's response (merged into the head written later):
 * a pre-response handler per request costs a measurable share of a small request. The id is
 * set, not scoped with `Effect.locally`: every request runs in a fiber of its own, which ends
 * with it, so there is nothing to restore.
 *
 * A server started with faults also says which, in `x-tributary-faults` (the `--faults` spec
 * as `formatFaults` writes it): that is how a client, the web console among them, can show
 * them; no route of the API tells.
 */
const withRequestId = (faults: FaultSpec | undefined) => {
  const described = faults === undefined ? undefined : formatFaults(faults)
  return (app: HttpApp.Default): HttpApp.Default =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const id = newRequestId()
      const response = NodeHttpServerRequest.toServerResponse(request)
      response.setHeader("x-request-id", id)
      if (described !== undefined) response.setHeader("x-tributary-faults", described)
      return Effect.zipRight(FiberRef.set(CurrentRequestId, id), app)
    })
}

const tidyOpenApi = (spec: Record<string, any>): Record<string, any> => {
  // HttpApi always declares its own decode error; the wire answers BadRequest instead.
  const text = JSON.stringify(spec).replaceAll("{\"$ref\":\"#/components/schemas/HttpApiDecodeError\"},", "")
    .replaceAll(",{\"$ref\":\"#/components/schemas/HttpApiDecodeError\"}", "")
    .replaceAll("\"$ref\":\"#/components/schemas/HttpApiDecodeError\"", "\"$ref\":\"#/components/schemas/BadRequest\"")
    // Every Schema.Unknown carries the same `$id`, which OpenAPI forbids repeating.
    .replaceAll(",\"$id\":\"/schemas/unknown\"", "")
    .replaceAll("\"$id\":\"/schemas/unknown\",", "")
    .replaceAll("\"$id\":\"/schemas/unknown\"", "")
  const cleaned = JSON.parse(text)
  delete cleaned.components?.schemas?.HttpApiDecodeError
  return cleaned
}

/** The contract with its docs annotations, as served. */
const ServedApi = TributaryApi.annotate(OpenApi.Transform, tidyOpenApi)

const handlers = Layer.mergeAll(
  V1AuthLive,
  V1AccountsLive,
  V1DataSourcesLive,
  V1DatasetsLive,
  V2AuthLive,
  V2OrganizationLive,
  V2DataSourcesLive,
  V2DatasetsLive,
  V2DatasetSettingsLive,
  V2DatasetModificationsLive,
  V2MetricsLive,
  V2BoardsLive,
  V2IntegrationsLive,
  V2ConnectionsLive,
  V2AccountsLive,
  V2UsersLive,
  V2ProfileLive,
  V2BillingLive
)

/**
 * The docs page at `/docs`. Loaded when a server starts: the page's script is megabytes of
 * text that programs which only use the client or the pipeline should not carry.
 */
const docsPage = Layer.unwrapEffect(
  Effect.map(Effect.promise(() => import("@effect/platform/HttpApiScalar")), (scalar) => scalar.layer({ path: "/docs" }))
)

/**
 * The API with its handlers, ready to serve (no HTTP server yet).
 *
 * @since 0.1.0
 * @category layers
 */
export const apiLayer = (options: Pick<ServerOptions, "seed" | "maxBodyBytes" | "faults" | "workers">) => {
  const maxBodyBytes = options.faults?.maxBodyBytes ?? options.maxBodyBytes
  return Layer.mergeAll(
    docsPage,
    WebConsole.layer,
    HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" }),
    errorEnvelopes(maxBodyBytes, options.faults),
    // The body limit as a service of the serving layer: every request fiber starts from that
    // context, so the limit is set once rather than per request.
    Layer.succeed(HttpIncomingMessage.MaxBodySize, Option.some(FileSystem.Size(maxBodyBytes)))
  ).pipe(
    Layer.provideMerge(HttpApiBuilder.api(ServedApi)),
    Layer.provide(handlers),
    Layer.provide(ApiKeyAuthLive),
    Layer.provide(Boards.layer(options.seed)),
    // Seeded before the workers start and before the first request is served.
    Layer.provide(Layer.merge(workersLayer(options.workers ?? defaultWorkerOptions), Layer.effectDiscard(Effect.zipRight(applySeed(options.seed), seedConnections(options.seed))))),
  )
}

class Front extends Context.Tag("tributary/server/Front")<Front, FrontServer>() {}

/**
 * 60 s to receive a whole request: a 10 MB body at 170 KB/s.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultRequestTimeoutMillis = 60_000

const nodeServer = (options: ServerOptions) =>
  Layer.unwrapEffect(Effect.sync(() => {
    const server = new FrontServer({
      maxBodyBytes: options.faults?.maxBodyBytes ?? options.maxBodyBytes,
      requestTimeoutMillis: options.requestTimeoutMillis ?? defaultRequestTimeoutMillis
    })
    return Layer.merge(
      NodeHttpServer.layer(() => server, { host: options.host, port: options.port }),
      Layer.succeed(Front, server)
    )
  }))

/**
 * The ingest routes and the ingestion detail served in front of the API (`fastIngest.ts`,
 * `fastIngestion.ts`: the server's hot paths, at a fraction of an HttpApi route's cost). Not while faults act on requests: those apply
 * to every API request, so everything goes through the API then. `processing` alone does not:
 * it delays the ingestions, wherever they were accepted (`storeOf`).
 */
const ingestRoute = (options: Pick<ServerOptions, "faults">) =>
  options.faults !== undefined && actsOnRequests(options.faults) ? Layer.empty : Layer.effectDiscard(
    Effect.gen(function*() {
      const front = yield* Front
      const runtime = yield* Effect.runtime<Stores>()
      // The `processing` fault is said on these answers too, as on the API's.
      const headers = options.faults === undefined ? {} : { "x-tributary-faults": formatFaults(options.faults) }
      front.ingestRoute = makeIngestRoute(runtime, headers)
      front.readRoute = makeIngestionRoute(runtime, headers)
    })
  )

/**
 * The store of the options (memory unless given), with the `processing` fault's delays given to
 * the ingestions it accepts, on every route. Without the fault, the store itself.
 */
const storeOf = (options: Pick<ServerOptions, "store" | "faults">): Layer.Layer<ServerStores, StoreError> => {
  const store = options.store ?? MemoryStore.layer
  const processing = options.faults?.processingMs
  return processing === undefined ? store : Layer.provideMerge(delayedProcessing(processing, options.faults?.seed), store)
}

/**
 * The reference server listening on `host:port`. The output `HttpServer` tells the bound
 * address (useful with port 0).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ServerOptions): Layer.Layer<HttpServer.HttpServer, ServeError | StoreError> =>
  HttpApiBuilder.serve(withRequestId(options.faults)).pipe(
    // No per-request tracing spans unless asked for: they cost, and nothing else reads them.
    (served) => options.traced === true ? served : HttpMiddleware.withTracerDisabledWhen(served, () => true),
    Layer.provide(apiLayer(options)),
    Layer.merge(options.traced === true ? Layer.empty : ingestRoute(options)),
    Layer.provide(storeOf(options)),
    Layer.provideMerge(nodeServer(options))
  )

/**
 * `http://host:port` of a running server.
 *
 * @since 0.1.0
 * @category utils
 */
export const serverUrl = (address: HttpServer.Address): string =>
  address._tag === "TcpAddress"
    ? `http://${address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname}:${address.port}`
    : `unix://${address.path}`
