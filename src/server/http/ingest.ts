/**
 * The one ingest use case, `POST /v1/datasets/{datasetId}/data` and `POST /v2/datasets/{id}/data`:
 * decode, run at most once per idempotency key, accept the records, answer.
 *
 * It has two callers. The API's handlers (`v1.ts`, `v2/datasets.ts`) get the path, body and
 * headers decoded by HttpApi and call {@link accept}. The fast route in front of the API
 * (`fastIngest.ts`, the server's hot path) decodes the raw request with {@link decode}, which
 * uses the same schemas of the contract in the same order as HttpApi, and calls {@link accept}.
 * So the two ways in differ only in who decodes and who writes the answer on the socket:
 * the checks, the idempotency record, the ingestion and the body of the answer are this module's.
 *
 * @since 0.1.0
 */
import type { IncomingHttpHeaders } from "node:http"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import type { WireError } from "../../api/errors.js"
import { IdempotencyHeaders, MaxRecordsPerIngestion } from "../../api/common.js"
import { CurrentPrincipal, type Principal } from "../../api/security.js"
import * as V1 from "../../api/v1.js"
import { DatasetIdPath } from "../../api/v2/common.js"
import { IngestRequest as V2IngestRequest } from "../../api/v2/datasets.js"
import { present } from "./wireErrors.js"
import { markReplayed, once } from "./idempotency.js"
import { badRequestFromDecode, invalidJson } from "./decodeError.js"
import { respond } from "./envelope.js"
import { ingest, traceparentOf } from "../core/ingestion.js"
import type { DatasetRef, Ingestion } from "../core/store/Store.js"

/**
 * The answer to an accepted v1 ingest.
 *
 * @since 0.1.0
 * @category constructors
 */
export const v1Answer = (ingestion: Ingestion) =>
  respond("success", {
    ingestionId: ingestion.id,
    message: `Data ingestion request accepted: ${ingestion.counts.received} records`
  })

/**
 * The answer to an accepted v2 ingest.
 *
 * @since 0.1.0
 * @category constructors
 */
export const v2Answer = (ingestion: Ingestion) =>
  respond("success", {
    data: {
      ingestionId: ingestion.id,
      status: ingestion.status,
      message: `Data ingestion request accepted: ${ingestion.counts.received} records`
    }
  })

const answers = { v1: v1Answer, v2: v2Answer }

/**
 * The API version of an ingest route.
 *
 * @since 0.1.0
 * @category models
 */
export type Version = keyof typeof answers

/**
 * The body of an accepted ingest of `version`.
 *
 * @since 0.1.0
 * @category models
 */
export type Answer<V extends Version> = Effect.Effect.Success<ReturnType<(typeof answers)[V]>>

/**
 * An ingest request, decoded.
 *
 * @since 0.1.0
 * @category models
 */
export interface IngestRequest {
  readonly principal: Principal
  readonly datasetId: DatasetRef
  /** The decoded body: what the idempotency fingerprint is taken of. */
  readonly payload: { readonly records: ReadonlyArray<unknown> }
  readonly idempotencyKey: string | undefined
  /** The request's path without its query: the idempotency scope's route. */
  readonly path: string
  /** The request's span as a `traceparent`, when it was traced: stored with the ingestion. */
  readonly traceparent?: string | undefined
}

/**
 * Accepts the records of `request` and answers in the shape of `version`; with an idempotency
 * key, at most once per key, user and route (a later request with the key gets the first
 * answer, `replayed`). Domain errors come out as wire errors.
 *
 * @since 0.1.0
 * @category running
 */
export const accept = <V extends Version>(version: V, request: IngestRequest) => {
  const answer = answers[version] as (ingestion: Ingestion) => Effect.Effect<Answer<V>>
  const execute = Effect.flatMap(
    ingest(request.principal, request.datasetId, request.payload.records, request.traceparent),
    answer
  )
  const key = request.idempotencyKey
  return present(
    key === undefined
      ? Effect.map(execute, (body) => ({ body, replayed: false }))
      : Effect.map(
        once({ userId: request.principal.userId, method: "POST", path: request.path, key }, request.payload, execute),
        ({ answer, replayed }) => ({ body: answer, replayed })
      )
  )
}

/**
 * The use case as an API handler calls it: the principal and the route from the request being
 * served, the rest decoded by HttpApi; a replay is marked as one.
 *
 * @since 0.1.0
 * @category running
 */
export const handle = <V extends Version>(
  version: V,
  input: Pick<IngestRequest, "datasetId" | "payload" | "idempotencyKey">
) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const request = yield* HttpServerRequest.HttpServerRequest
    // The server's span of this request, when the server traces requests (`traced`).
    const span = yield* Effect.option(Effect.currentSpan)
    const { body, replayed } = yield* accept(version, {
      ...input,
      principal,
      path: request.url.split("?")[0]!,
      traceparent: Option.isSome(span) ? traceparentOf(span.value) : undefined
    })
    if (replayed) yield* markReplayed
    return body
  })

// Decoding a raw request: the contract's schemas, as HttpApi applies them.

/** A decoder of the path's one parameter `name`, as the router would hand it to the schema. */
const pathParameter = <Name extends string, A>(schema: Schema.Schema<{ readonly [K in Name]: A }, any>, name: Name) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (segment: string) => Either.map(decode({ [name]: segment }), (path) => path[name])
}

/**
 * The payload decoder of `schema` (`{ records: Array(IngestRecord) }` with 1 to
 * `MaxRecordsPerIngestion` items): a body that plainly passes is taken as it is, anything
 * else goes through the schema, whose answer (and message) counts. The schema's array
 * decoding cost about 20 µs of a 100-record request, one parse result per record, for records
 * it passes through unchanged (`IngestRecord` is any JSON value).
 */
const payloadDecoder = (schema: typeof V1.IngestRequest | typeof V2IngestRequest) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (u: unknown): Either.Either<{ readonly records: ReadonlyArray<unknown> }, ParseResult.ParseError> => {
    if (typeof u === "object" && u !== null && !Array.isArray(u)) {
      const records = (u as { readonly records?: unknown }).records
      if (Array.isArray(records) && records.length >= 1 && records.length <= MaxRecordsPerIngestion) {
        return Either.right({ records })
      }
    }
    return decode(u)
  }
}

const decoders = {
  v1: { path: pathParameter(V1.DatasetPath, "datasetId"), payload: payloadDecoder(V1.IngestRequest) },
  v2: { path: pathParameter(DatasetIdPath, "id"), payload: payloadDecoder(V2IngestRequest) }
}

const decodeHeaders = Schema.decodeUnknownEither(IdempotencyHeaders)

const decodeFailure = (error: ParseResult.ParseError, url: string) =>
  badRequestFromDecode(ParseResult.ArrayFormatter.formatErrorSync(error), url)

/**
 * A raw ingest request of `version` decoded into an {@link IngestRequest}, in HttpApi's order
 * (path, body, headers): a failure is the wire error the API answers. `body` is the request's
 * text, already checked by the front (size, media type, UTF-8, depth).
 *
 * @since 0.1.0
 * @category utils
 */
export const decode = (
  version: Version,
  raw: {
    readonly principal: Principal
    readonly path: string
    readonly idSegment: string
    readonly body: Buffer
    readonly headers: IncomingHttpHeaders
  }
): Effect.Effect<IngestRequest, WireError> => {
  const decoder = decoders[version]
  const datasetId = decoder.path(raw.idSegment)
  if (Either.isLeft(datasetId)) return decodeFailure(datasetId.left, raw.path)
  let json: unknown
  try {
    json = raw.body.length === 0 ? null : JSON.parse(raw.body.toString("utf8"))
  } catch (error) {
    return invalidJson(error instanceof Error ? error.message : String(error))
  }
  const payload = decoder.payload(json)
  if (Either.isLeft(payload)) return decodeFailure(payload.left, raw.path)
  // Without the header there is nothing for the schema to check (it is the one optional field).
  let idempotencyKey: string | undefined = undefined
  if (raw.headers["idempotency-key"] !== undefined) {
    const headers = decodeHeaders(raw.headers)
    if (Either.isLeft(headers)) return decodeFailure(headers.left, raw.path)
    idempotencyKey = headers.right["idempotency-key"]
  }
  return Effect.succeed({
    principal: raw.principal,
    datasetId: datasetId.right,
    payload: payload.right,
    idempotencyKey,
    path: raw.path
  })
}
