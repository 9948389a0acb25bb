/**
 * `POST /v1/datasets/{datasetId}/data` and `POST /v2/datasets/{id}/data` served straight from
 * node:http, in front of the API.
 *
 * Ingest is the server's hot path: a pipeline sends little else. As an HttpApi route it cost
 * about 1.2 ms of CPU per 100-record request where a bare node:http server doing the least the
 * route must do needs about 0.1 ms; HttpApi's per-request machinery with our middlewares and a
 * handler that did nothing was 0.60 of it (docs/decisions.md, "Reference server cost per
 * ingest request"). This route does the same steps with the same parts, in one fiber per
 * request: the contract's schemas decode the path, body and headers; the API's key check
 * (`authenticate`) resolves the key; the `ingest` service accepts the records; `present` maps its
 * errors; the answers are the handlers' own. The order of checks is the API's (key, path,
 * body, headers), so every answer, error or not, is the one the API gives.
 *
 * The body comes checked by the front (`front.ts`: size, media type, UTF-8, depth; a record
 * nested too deep already cut out and replaced by a stand-in that the ingestion rejects alone). A query string is left to the API; so is everything
 * while faults act on requests (the route is not set then; see `http.ts`).
 *
 * @since 0.1.0
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Cause, Effect, Either, Exit, FiberRef, Option, ParseResult, Runtime, Schema } from "effect"
import { isWireError, wireErrorOf } from "../../api/errors.js"
import { CurrentPrincipal, type Principal } from "../../api/security.js"
import { authenticate } from "../auth.js"
import { IdempotencyHeaders, MaxRecordsPerIngestion } from "../../api/common.js"
import * as V1 from "../../api/v1.js"
import { DatasetIdPath } from "../../api/v2/common.js"
import { IngestRequest as V2IngestRequest } from "../../api/v2/datasets.js"
import { present } from "../errors.js"
import { once } from "../idempotency.js"
import { CurrentRequestId, newRequestId } from "../request.js"
import { ingest } from "../services/ingestions.js"
import type { DatasetRef, Ingestion, Store } from "../store/Store.js"
import { v1IngestAnswer } from "../v1.js"
import { v2IngestAnswer } from "../v2/datasets.js"
import { badRequestFromDecode, invalidJson } from "./decodeError.js"
import { ingestTarget, type IngestRoute, sendJson, sendWireError } from "./front.js"

interface Version {
  /** The dataset id of the path's id segment. */
  readonly decodePath: (segment: string) => Either.Either<DatasetRef, ParseResult.ParseError>
  readonly decodePayload: (u: unknown) => Either.Either<{ readonly records: ReadonlyArray<unknown> }, ParseResult.ParseError>
  readonly answer: (ingestion: Ingestion) => Effect.Effect<object>
}

/** A decoder of the path's one parameter `name`, as the router would hand it to the schema. */
const pathParameter = <Name extends string, A>(schema: Schema.Schema<{ readonly [K in Name]: A }, any>, name: Name) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (segment: string) => Either.map(decode({ [name]: segment }), (path) => path[name])
}

const decodeHeaders = Schema.decodeUnknownEither(IdempotencyHeaders)

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

const versions: Readonly<Record<"v1" | "v2", Version>> = {
  v1: {
    decodePath: pathParameter(V1.DatasetPath, "datasetId"),
    decodePayload: payloadDecoder(V1.IngestRequest),
    answer: v1IngestAnswer
  },
  v2: {
    decodePath: pathParameter(DatasetIdPath, "id"),
    decodePayload: payloadDecoder(V2IngestRequest),
    answer: v2IngestAnswer
  }
}

const decodeFailure = (error: ParseResult.ParseError, url: string) =>
  badRequestFromDecode(ParseResult.ArrayFormatter.formatErrorSync(error), url)

/**
 * The ingest route over the services of `runtime`; `maxBodyBytes` as for the API.
 *
 * @since 0.1.0
 */
export const makeIngestRoute = (runtime: Runtime.Runtime<Store>): IngestRoute => {
  const run = Runtime.runCallback(runtime)

  /** Runs `effect` as the request `id` and answers with its outcome. */
  const answerWith = (
    response: ServerResponse,
    id: string,
    effect: Effect.Effect<{ readonly body: object; readonly replayed: boolean }, unknown, Store>
  ) =>
    run(Effect.zipRight(FiberRef.set(CurrentRequestId, id), effect), {
      onExit: (exit) => {
        if (Exit.isSuccess(exit)) {
          sendJson(
            response,
            200,
            JSON.stringify(exit.value.body),
            exit.value.replayed ? { "idempotent-replayed": "true" } : undefined
          )
          return
        }
        const failure = Cause.failureOption(exit.cause)
        const defect = Cause.dieOption(exit.cause)
        // A declared wire error (401 from the key check; 503 travels as a defect from there).
        const wire = Option.isSome(failure) ? failure.value : Option.getOrUndefined(defect)
        if (isWireError(wire)) return sendWireError(response, wire)
        if (Cause.isInterruptedOnly(exit.cause)) return void response.destroy()
        run(Effect.logError("request failed", exit.cause))
        sendWireError(response, wireErrorOf("InternalServerError", id, {
          code: "internal_error",
          message: "the server failed; the request may be retried"
        }))
      }
    })

  /** The body, parsed and decoded, then the headers (the API's order), then the ingestion. */
  const accept = (
    version: Version,
    url: string,
    principal: Principal,
    datasetId: DatasetRef,
    request: IncomingMessage,
    body: Buffer
  ): Effect.Effect<{ readonly body: object; readonly replayed: boolean }, unknown, Store> => {
    let json: unknown
    try {
      json = body.length === 0 ? null : JSON.parse(body.toString("utf8"))
    } catch (error) {
      return invalidJson(error instanceof Error ? error.message : String(error))
    }
    const payload = version.decodePayload(json)
    if (Either.isLeft(payload)) return decodeFailure(payload.left, url)
    const headers = decodeHeaders(request.headers)
    if (Either.isLeft(headers)) return decodeFailure(headers.left, url)
    const execute = Effect.flatMap(ingest(principal, datasetId, payload.right.records), version.answer)
    const key = headers.right["idempotency-key"]
    const accepted = key === undefined
      ? Effect.map(execute, (body) => ({ body, replayed: false }))
      : Effect.map(
        once({ userId: principal.userId, method: "POST", path: url, key }, payload.right, execute),
        ({ answer, replayed }) => ({ body: answer, replayed })
      )
    return present(accepted)
  }

  return {
    takes: (request) => request.method === "POST" && ingestTarget(request.url ?? "")?.query === false,
    serve: (request, response, body) => {
      const url = request.url ?? ""
      const target = ingestTarget(url)!
      const version = versions[target.version]
      const id = newRequestId()
      response.setHeader("x-request-id", id)
      const apiKey = request.headers["x-api-key"]
      answerWith(
        response,
        id,
        Effect.flatMap(authenticate(typeof apiKey === "string" ? apiKey : ""), (principal) => {
          const path = version.decodePath(target.id)
          if (Either.isLeft(path)) return decodeFailure(path.left, url)
          return Effect.provideService(
            accept(version, url, principal, path.right, request, body),
            CurrentPrincipal,
            principal
          )
        })
      )
    }
  }
}
