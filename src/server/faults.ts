/**
 * Fault injection for the reference server: answer some API requests 503 or 429, delay
 * them, commit an ingestion and then drop the connection, or keep accepted ingestions pending
 * for a while, so that a client's retries (and their idempotency) and its tracking of
 * ingestions can be tested against the real API.
 *
 * The spec is a comma list of `key=value` entries, e.g.
 * `5xx=0.05,429=0.02,retry-after=1,latency=5-20ms,drop=0.01,max-body=1mb,seed=7`:
 *
 * | entry              | effect                                                                     |
 * | ------------------ | -------------------------------------------------------------------------- |
 * | `5xx=RATE`         | that fraction of API requests is answered 503 `injected_fault`, not run     |
 * | `429=RATE`         | that fraction is answered 429 `rate_limited` with `Retry-After`, not run    |
 * | `retry-after=N`    | the `Retry-After` seconds of injected 429s (default 1)                      |
 * | `latency=MS`       | delay before each API request is handled; `MIN-MAX` for a uniform range     |
 * | `processing=MS`    | each accepted ingestion stays `queued`/`processing` at least that long      |
 * |                    | after its acceptance; `MIN-MAX` for a uniform range. Held with the          |
 * |                    | ingestion in the store, so every server on a shared database honours it;    |
 * |                    | a dataset's ingestions are still applied in the order they were accepted    |
 * | `drop=RATE`        | that fraction of `POST .../data` is run and committed, then the connection  |
 * |                    | is destroyed without an answer                                              |
 * | `max-body=SIZE`    | body limit (413) in bytes, or with a `kb`/`mb` suffix (1024-based)          |
 * | `seed=N`           | seeds the random source, so a run's fault sequence repeats                  |
 * | `after=N`          | faults start after the first N API requests                                 |
 *
 * RATE is a number from 0 to 1; `5xx` and `429` come from one draw per request, so together
 * they may not exceed 1. Faults apply to the API routes (`/v1/...`, `/v2/...`) only, never
 * to `/openapi.json` or `/docs`. `processing` is not a fault of requests: the ingest requests
 * are answered as ever (on the server's fast route too), their ingestions just end later;
 * its delays come from a random source of their own (seeded by `seed` too).
 *
 * @since 0.1.0
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect, Either, Layer } from "effect"
import { failWith } from "./http/envelope.js"
import { IngestionStore } from "./core/store/ports/ingestions.js"

/**
 * The faults a server injects; every field is optional and absent means "none".
 *
 * @since 0.1.0
 * @category models
 */
export interface FaultSpec {
  /** `5xx=RATE`: fraction of API requests answered 503 without running them. */
  readonly serverErrorRate?: number
  /** `429=RATE`: fraction of API requests answered 429 without running them. */
  readonly rateLimitRate?: number
  /** `retry-after=N`: the `Retry-After` seconds of injected 429s (default 1). */
  readonly retryAfterSeconds?: number
  /** `latency=MIN-MAXms`: delay (uniform in the range) before each API request is handled. */
  readonly latencyMs?: { readonly min: number; readonly max: number }
  /** `processing=MIN-MAXms`: time (uniform in the range) an accepted ingestion stays pending at least. */
  readonly processingMs?: { readonly min: number; readonly max: number }
  /** `drop=RATE`: fraction of ingest requests that are committed, then left unanswered. */
  readonly dropRate?: number
  /** `max-body=SIZE`: the body limit in bytes; overrides `ServerOptions.maxBodyBytes`. */
  readonly maxBodyBytes?: number
  /** `seed=N`: seeds the random source; without it, `Math.random`. */
  readonly seed?: number
  /** `after=N`: the first N API requests get no faults. */
  readonly after?: number
}

const keys = ["5xx", "429", "retry-after", "latency", "processing", "drop", "max-body", "seed", "after"] as const
type Key = typeof keys[number]

const rate = (key: Key, value: string): Either.Either<number, string> => {
  const n = /^(?:\d+(?:\.\d*)?|\.\d+)$/.test(value) ? Number(value) : NaN
  return n >= 0 && n <= 1 ? Either.right(n) : Either.left(`${key} must be a rate between 0 and 1, got "${value}"`)
}

const count = (key: Key, value: string, what: string): Either.Either<number, string> => {
  const n = /^\d+$/.test(value) ? Number(value) : NaN
  return Number.isSafeInteger(n) ? Either.right(n) : Either.left(`${key} must be ${what}, got "${value}"`)
}

const milliseconds = (key: Key, value: string): Either.Either<{ min: number; max: number }, string> => {
  const match = /^(\d+)(?:-(\d+))?(?:ms)?$/i.exec(value)
  if (match === null) {
    return Either.left(`${key} must be milliseconds ("20", "20ms") or a range ("5-20ms"), got "${value}"`)
  }
  const min = Number(match[1])
  const max = match[2] === undefined ? min : Number(match[2])
  return min <= max ? Either.right({ min, max }) : Either.left(`${key} range must not end below its start, got "${value}"`)
}

const sizeUnits: Record<string, number> = { "": 1, b: 1, kb: 1024, mb: 1024 * 1024 }

const size = (value: string): Either.Either<number, string> => {
  const match = /^(\d+(?:\.\d+)?)(b|kb|mb)?$/i.exec(value)
  const bytes = match === null ? NaN : Math.floor(Number(match[1]) * sizeUnits[(match[2] ?? "").toLowerCase()]!)
  return bytes >= 1 && Number.isSafeInteger(bytes)
    ? Either.right(bytes)
    : Either.left(`max-body must be a size in bytes, or with a kb or mb suffix ("1mb"), got "${value}"`)
}

type Mutable<A> = { -readonly [K in keyof A]: A[K] }

/**
 * Parses a fault spec such as `5xx=0.05,429=0.02,retry-after=1,latency=5-20ms,drop=0.01`.
 * The left side is one line naming the bad entry.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseFaults = (spec: string): Either.Either<FaultSpec, string> => {
  const entries = spec.split(",").map((entry) => entry.trim())
  if (entries.every((entry) => entry === "")) return Either.left("the fault spec is empty")
  const result: Mutable<FaultSpec> = {}
  const seen = new Set<string>()
  for (const entry of entries) {
    if (entry === "") continue
    const at = entry.indexOf("=")
    if (at < 0) return Either.left(`"${entry}" is not key=value`)
    const key = entry.slice(0, at).trim().toLowerCase()
    const value = entry.slice(at + 1).trim()
    if (!(keys as ReadonlyArray<string>).includes(key)) {
      return Either.left(`unknown fault "${key}" (known: ${keys.join(", ")})`)
    }
    if (seen.has(key)) return Either.left(`${key} is given twice`)
    seen.add(key)
    const parsed = ((): Either.Either<void, string> => {
      switch (key as Key) {
        case "5xx":
          return Either.map(rate("5xx", value), (n) => void (result.serverErrorRate = n))
        case "429":
          return Either.map(rate("429", value), (n) => void (result.rateLimitRate = n))
        case "drop":
          return Either.map(rate("drop", value), (n) => void (result.dropRate = n))
        case "retry-after":
          return Either.map(count("retry-after", value, "whole seconds"), (n) => void (result.retryAfterSeconds = n))
        case "seed":
          return Either.map(count("seed", value, "a whole number"), (n) => void (result.seed = n))
        case "after":
          return Either.map(count("after", value, "a number of requests"), (n) => void (result.after = n))
        case "latency":
          return Either.map(milliseconds("latency", value), (range) => void (result.latencyMs = range))
        case "processing":
          return Either.map(milliseconds("processing", value), (range) => void (result.processingMs = range))
        case "max-body":
          return Either.map(size(value), (n) => void (result.maxBodyBytes = n))
      }
    })()
    if (Either.isLeft(parsed)) return Either.left(parsed.left)
  }
  if ((result.serverErrorRate ?? 0) + (result.rateLimitRate ?? 0) > 1) {
    return Either.left("5xx and 429 together must not exceed 1")
  }
  return Either.right(result)
}

/**
 * The spec in its canonical text form (what `parseFaults` reads), or `"none"`.
 *
 * @since 0.1.0
 * @category utils
 */
export const formatFaults = (spec: FaultSpec): string => {
  const parts: Array<string> = []
  if (spec.serverErrorRate !== undefined) parts.push(`5xx=${spec.serverErrorRate}`)
  if (spec.rateLimitRate !== undefined) parts.push(`429=${spec.rateLimitRate}`)
  if (spec.retryAfterSeconds !== undefined) parts.push(`retry-after=${spec.retryAfterSeconds}`)
  const range = ({ max, min }: { readonly min: number; readonly max: number }) => `${min === max ? min : `${min}-${max}`}ms`
  if (spec.latencyMs !== undefined) parts.push(`latency=${range(spec.latencyMs)}`)
  if (spec.processingMs !== undefined) parts.push(`processing=${range(spec.processingMs)}`)
  if (spec.dropRate !== undefined) parts.push(`drop=${spec.dropRate}`)
  if (spec.maxBodyBytes !== undefined) parts.push(`max-body=${spec.maxBodyBytes}`)
  if (spec.seed !== undefined) parts.push(`seed=${spec.seed}`)
  if (spec.after !== undefined) parts.push(`after=${spec.after}`)
  return parts.length === 0 ? "none" : parts.join(",")
}

/**
 * mulberry32: a small seedable generator of numbers in [0, 1).
 *
 * @since 0.1.0
 * @category utils
 */
export const seededRandom = (seed: number): () => number => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6D2B79F5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Whether the spec acts on requests: anything but `processing` and `seed`. An empty spec
 * counts (it runs every request through the API, with no fault), so that only a spec of
 * `processing` alone leaves the server's fast ingest route in place.
 *
 * @since 0.1.0
 * @category utils
 */
export const actsOnRequests = (spec: FaultSpec): boolean =>
  spec.processingMs === undefined ||
  Object.entries(spec).some(([key, value]) => value !== undefined && key !== "processingMs" && key !== "seed")

/**
 * `processing=MIN-MAXms` over a store: every ingestion it accepts gets a delay drawn
 * uniformly from the range (from a random source of its own, seeded by `seed` when given),
 * which the store keeps with the ingestion and its workers honour.
 *
 * @since 0.1.0
 * @category layers
 */
export const delayedProcessing = (
  range: { readonly min: number; readonly max: number },
  seed: number | undefined
): Layer.Layer<IngestionStore, never, IngestionStore> =>
  Layer.effect(
    IngestionStore,
    Effect.map(IngestionStore, (store) => {
      // Not the request faults' sequence: adding `processing` to a spec keeps their draws.
      const random = seed === undefined ? Math.random : seededRandom(seed ^ 0x5bd1e995)
      return {
        ...store,
        createIngestion: (input, records) =>
          store.createIngestion({
            datasetId: input.datasetId,
            initiatedBy: input.initiatedBy,
            processingDelayMillis: range.min + Math.floor(random() * (range.max - range.min + 1))
          }, records)
      }
    })
  )

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query < 0 ? url : url.slice(0, query)
}

/** `/v1/...` and `/v2/...`: the routes faults apply to. */
const isApiRoute = (url: string) => /^\/v[12](?:\/|$)/.test(pathOf(url))

/** `POST /v1/datasets/{id}/data` and `POST /v2/datasets/{id}/data`. */
const isIngest = (method: string, url: string) => method === "POST" && /^\/v[12]\/datasets\/[^/]+\/data\/?$/.test(pathOf(url))

/**
 * What to do with one request: fail it before it runs (503, 429 with `Retry-After`), or run
 * it and drop the connection before the answer; `undefined` for no fault. Keeps the
 * server's random source and request count, so make one per server.
 *
 * Runs inside the server's error-envelope middleware, so injected errors are encoded as
 * envelopes with the request id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeInjector = (spec: FaultSpec) => {
  const random = spec.seed === undefined ? Math.random : seededRandom(spec.seed)
  const after = spec.after ?? 0
  const serverErrorRate = spec.serverErrorRate ?? 0
  const rateLimitRate = spec.rateLimitRate ?? 0
  const dropRate = spec.dropRate ?? 0
  const retryAfter = String(spec.retryAfterSeconds ?? 1)
  let seen = 0

  /** Wraps the handling of one request (`run`) with the faults drawn for it. */
  return <A, E, R>(
    request: HttpServerRequest.HttpServerRequest,
    run: Effect.Effect<A, E, R>
  ): Effect.Effect<A, unknown, R> =>
    Effect.suspend((): Effect.Effect<A, unknown, R> => {
      if (!isApiRoute(request.url)) return run
      seen += 1
      if (seen <= after) return run
      // Draws happen in a fixed order per request, so a seed repeats the whole sequence.
      const { latencyMs } = spec
      const delay = latencyMs === undefined
        ? 0
        : latencyMs.min + Math.floor(random() * (latencyMs.max - latencyMs.min + 1))
      const draw = random()
      const drop = isIngest(request.method, request.url) && random() < dropRate
      const handled: Effect.Effect<A, unknown, R> = draw < serverErrorRate
        ? failWith("ServiceUnavailable", {
          code: "injected_fault",
          message: "injected fault: the server is unavailable for a moment; the request was not run"
        })
        : draw < serverErrorRate + rateLimitRate
        ? HttpApp.appendPreResponseHandler((_request, response) =>
          Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", retryAfter))
        ).pipe(Effect.zipRight(failWith("TooManyRequests", {
          code: "rate_limited",
          message: `injected fault: rate limited; retry after ${retryAfter} s`
        })))
        : drop
        ? HttpApp.appendPreResponseHandler((request, response) =>
          Effect.sync(() => {
            // Committed: the operation ran. Now the client gets no answer at all.
            NodeHttpServerRequest.toIncomingMessage(request).socket.destroy()
            return response
          })
        ).pipe(Effect.zipRight(run))
        : run
      return delay > 0 ? Effect.zipRight(Effect.sleep(delay), handled) : handled
    })
}
