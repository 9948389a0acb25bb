/**
 * `Idempotency-Key` on every call that may create something or trigger a side effect.
 *
 * The key is chosen once per call, before the retry wrapper sees the request, so every
 * retry of that call carries the same key: a retried ingestion whose first attempt did reach
 * the service is answered from the service's idempotency store instead of running twice.
 * A key the caller gives (`headers: { "idempotency-key": "..." }`) is sent as it is.
 *
 * @since 0.1.0
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Effect } from "effect"

/**
 * The header, lower-case as it is matched.
 *
 * @since 0.1.0
 * @category defaults
 */
export const idempotencyKeyHeader = "idempotency-key"

/**
 * Routes that accept `Idempotency-Key` (API decisions): creation of data sources, datasets,
 * accounts, metrics and users; dataset ingest (v2, and v1 as an extension) and duplicate;
 * data source and dataset purge; the dataset modification PUT.
 */
const idempotentRoutes: ReadonlyArray<{ readonly method: string; readonly path: RegExp }> = [
  { method: "POST", path: /\/v2\/data-sources$/ },
  { method: "POST", path: /\/v2\/data-sources\/[^/]+\/purge$/ },
  { method: "POST", path: /\/v2\/datasets$/ },
  { method: "POST", path: /\/v2\/datasets\/[^/]+\/purge$/ },
  { method: "POST", path: /\/v2\/datasets\/[^/]+\/duplicate$/ },
  { method: "POST", path: /\/v2\/datasets\/[^/]+\/data$/ },
  { method: "PUT", path: /\/v2\/datasets\/[^/]+\/modifications$/ },
  { method: "POST", path: /\/v2\/accounts$/ },
  { method: "POST", path: /\/v2\/metrics$/ },
  { method: "POST", path: /\/v2\/users$/ },
  { method: "POST", path: /\/v1\/datasets\/[^/]+\/data$/ }
]

const idempotentMethods = new Set(idempotentRoutes.map((route) => route.method))

const pathOf = (url: string): string => {
  try {
    return new URL(url, "http://localhost").pathname.replace(/\/+$/, "")
  } catch {
    return url.split("?")[0] ?? url
  }
}

/**
 * Whether a request goes to a route that takes `Idempotency-Key`.
 *
 * @since 0.1.0
 * @category guards
 */
export const acceptsIdempotencyKey = (method: string, url: string): boolean => {
  // Most calls are reads: settle those before parsing the URL.
  if (!idempotentMethods.has(method)) return false
  const path = pathOf(url)
  return idempotentRoutes.some((route) => route.method === method && route.path.test(path))
}

/**
 * Sets a fresh `Idempotency-Key` (a random UUID) on a request to an idempotent route that
 * carries none; any other request is returned unchanged.
 *
 * @since 0.1.0
 * @category utils
 */
export const ensureIdempotencyKey = (
  request: HttpClientRequest.HttpClientRequest
): Effect.Effect<HttpClientRequest.HttpClientRequest> =>
  request.headers[idempotencyKeyHeader] !== undefined || !acceptsIdempotencyKey(request.method, request.url)
    ? Effect.succeed(request)
    : Effect.sync(() => HttpClientRequest.setHeader(request, idempotencyKeyHeader, crypto.randomUUID()))

/**
 * Wraps a client so that each call to an idempotent route gets its own key. Apply it
 * outside the retry wrapper (`withIdempotencyKeys(retrying(client))`): the key is then set
 * once per call and kept by every retry.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withIdempotencyKeys = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.mapRequestEffect(client, ensureIdempotencyKey)
