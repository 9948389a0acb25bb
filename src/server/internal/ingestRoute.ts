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
 * Requests it does not take are handed to the API untouched (their body unread): other
 * routes, a query string, a body that is not JSON by its content type, a declared length over
 * the limit, and everything while faults are injected.
 *
 * @since 0.1.0
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Cause, Effect, Either, Exit, FiberRef, Option, ParseResult, Runtime, Schema } from "effect"
import { statusOf, type WireError, wireErrorOf } from "../../api/errors.js"
import { CurrentPrincipal, type Principal } from "../../api/security.js"
import { authenticate } from "../auth.js"
import { IdempotencyHeaders } from "../../api/common.js"
import * as V1 from "../../api/v1.js"
import { DatasetIdPath } from "../../api/v2/common.js"
import { IngestRequest as V2IngestRequest } from "../../api/v2/datasets.js"
import { present } from "../errors.js"
import { once } from "../idempotency.js"
import { CurrentRequestId, newRequestId } from "../request.js"
import { ingest } from "../services/ingestions.js"
import type { Ingestion, Store } from "../store/Store.js"
import { v1IngestAnswer } from "../v1.js"
import { v2IngestAnswer } from "../v2/datasets.js"
import { badRequestFromDecode, bodyTooLarge, invalidJson } from "./decodeError.js"

/**
 * A route in front of the API: answers the request itself, or calls `next` to hand it on
 * (before reading any of its body).
 *
 * @since 0.1.0
 */
export type FrontRoute = (request: IncomingMessage, response: ServerResponse, next: () => void) => void

interface Version {
  readonly decodePath: (segment: string) => Either.Either<{ readonly id: string }, ParseResult.ParseError>
  readonly decodePayload: (u: unknown) => Either.Either<{ readonly records: ReadonlyArray<unknown> }, ParseResult.ParseError>
  readonly decodeHeaders: (u: unknown) => Either.Either<{ readonly "idempotency-key"?: string | undefined }, ParseResult.ParseError>
  readonly answer: (ingestion: Ingestion) => Effect.Effect<object>
}

const decodeHeaders = Schema.decodeUnknownEither(IdempotencyHeaders)

const versions: Readonly<Record<"v1" | "v2", Version>> = {
  v1: {
    decodePath: ((decode) => (segment: string) => Either.map(decode({ datasetId: segment }), (p) => ({ id: p.datasetId })))(
      Schema.decodeUnknownEither(V1.DatasetPath)
    ),
    decodePayload: Schema.decodeUnknownEither(V1.IngestRequest),
    decodeHeaders,
    answer: v1IngestAnswer
  },
  v2: {
    decodePath: ((decode) => (segment: string) => decode({ id: segment }))(Schema.decodeUnknownEither(DatasetIdPath)),
    decodePayload: Schema.decodeUnknownEither(V2IngestRequest),
    decodeHeaders,
    answer: v2IngestAnswer
  }
}

/** `/v1/datasets/{id}/data` or `/v2/...`: the version and the raw id segment. No query string. */
const ingestPath = /^\/(v[12])\/datasets\/([^/?]+)\/data$/

const decodeFailure = (error: ParseResult.ParseError, url: string) =>
  badRequestFromDecode(ParseResult.ArrayFormatter.formatErrorSync(error), url)

/** JSON bodies by the API's rule: no content type, or one that names application/json. */
const isJson = (contentType: string | undefined) =>
  contentType === undefined || contentType.toLowerCase().includes("application/json")

const isWireError = (u: unknown): u is WireError =>
  typeof u === "object" && u !== null && typeof (u as { _tag?: unknown })._tag === "string" &&
  (u as { _tag: string })._tag in statusOf && (u as { status?: unknown }).status === "error"

const send = (response: ServerResponse, status: number, body: object, headers?: Record<string, string>) => {
  if (response.headersSent || response.destroyed) return
  const text = JSON.stringify(body)
  response.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text)
  })
  response.end(text)
}

const sendWireError = (response: ServerResponse, error: WireError) => {
  const { _tag, ...body } = error
  // The rest of a body over the limit is not read: the connection closes after the answer.
  send(response, statusOf[_tag], body, _tag === "PayloadTooLarge" ? { connection: "close" } : undefined)
}

/**
 * The ingest route over the services of `runtime`; `maxBodyBytes` as for the API.
 *
 * @since 0.1.0
 */
export const makeIngestRoute = (
  runtime: Runtime.Runtime<Store>,
  options: { readonly maxBodyBytes: number }
): FrontRoute => {
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
          send(response, 200, exit.value.body, exit.value.replayed ? { "idempotent-replayed": "true" } : undefined)
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
    datasetId: string,
    request: IncomingMessage,
    text: string
  ): Effect.Effect<{ readonly body: object; readonly replayed: boolean }, unknown, Store> => {
    let json: unknown
    try {
      json = text === "" ? null : JSON.parse(text)
    } catch (error) {
      return invalidJson(error instanceof Error ? error.message : String(error))
    }
    const payload = version.decodePayload(json)
    if (Either.isLeft(payload)) return decodeFailure(payload.left, url)
    const headers = version.decodeHeaders(request.headers)
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

  return (request, response, next) => {
    const url = request.url ?? ""
    const match = request.method === "POST" ? ingestPath.exec(url) : null
    if (
      match === null || !isJson(request.headers["content-type"]) ||
      Number(request.headers["content-length"] ?? 0) > options.maxBodyBytes
    ) {
      return next()
    }
    const version = versions[match[1] as "v1" | "v2"]
    const id = newRequestId()
    response.setHeader("x-request-id", id)
    const apiKey = request.headers["x-api-key"]
    const principal = authenticate(typeof apiKey === "string" ? apiKey : "")
    answerWith(
      response,
      id,
      Effect.flatMap(principal, (principal) => {
        const path = version.decodePath(match[2]!)
        if (Either.isLeft(path)) return decodeFailure(path.left, url)
        return Effect.flatMap(readBody(request, options.maxBodyBytes), (text) =>
          Effect.provideService(accept(version, url, principal, path.right.id, request, text), CurrentPrincipal, principal))
      })
    )
  }
}

/** The body as text; 413 when it grows past `maxBytes` (a chunked body declares no length). */
const readBody = (request: IncomingMessage, maxBytes: number) =>
  Effect.async<string, WireError>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBytes) return void chunks.push(chunk)
      cleanup()
      // Nothing more is read: the answer closes the connection.
      request.pause()
      resume(bodyTooLarge)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(Buffer.concat(chunks, size).toString("utf8")))
    }
    const onError = () => {
      cleanup()
      resume(Effect.interrupt)
    }
    const cleanup = () => {
      request.off("data", onData)
      request.off("end", onEnd)
      request.off("error", onError)
      request.off("aborted", onError)
    }
    request.on("data", onData)
    request.on("end", onEnd)
    request.on("error", onError)
    request.on("aborted", onError)
    return Effect.sync(cleanup)
  })
