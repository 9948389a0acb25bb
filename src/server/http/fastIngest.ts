/**
 * `POST /v1/datasets/{datasetId}/data` and `POST /v2/datasets/{id}/data` served straight from
 * node:http, in front of the API.
 *
 * Ingest is the server's hot path: a pipeline sends little else. As an HttpApi route it cost
 * about 1.2 ms of CPU per 100-record request where a bare node:http server doing the least the
 * route must do needs about 0.1 ms; HttpApi's per-request machinery with our middlewares and a
 * handler that did nothing was 0.60 of it (docs/decisions.md, "Reference server cost per
 * ingest request"). This route is another way of calling the same use case (`http/ingest.ts`), in one fiber per
 * request: the API's key check (`authenticate`) resolves the key, the use case's `decode`
 * applies the contract's schemas in the API's order (path, body, headers) and its `accept`
 * does the rest; only writing the answer on node's response is this module's. So every answer,
 * error or not, is the one the API gives.
 *
 * The body comes checked by the front (`front.ts`: size, media type, UTF-8, depth; a record
 * nested too deep already cut out and replaced by a stand-in that the ingestion rejects alone). A query string is left to the API; so is everything
 * while faults act on requests (the route is not set then; see `server.ts`).
 *
 * @since 0.1.0
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Cause, Effect, Exit, FiberRef, Option, Runtime } from "effect"
import { isWireError, wireErrorOf } from "../../api/errors.js"
import { authenticate } from "./auth.js"
import * as Ingest from "./ingest.js"
import { CurrentRequestId, newRequestId } from "./envelope.js"
import { type Stores } from "../core/store/Stores.js"
import { ingestTarget, type IngestRoute, sendJson, sendWireError } from "./front.js"

/**
 * What a request served in front of the API answers: the body, and whether it is a replay.
 *
 * @since 0.3.0
 * @category models
 */
export interface InFrontAnswer {
  readonly body: object
  readonly replayed: boolean
}

/** Answers `response` with the outcome of a request: the answer, or its wire error. */
const answerWith = (
  run: ReturnType<typeof Runtime.runCallback<Stores>>,
  response: ServerResponse,
  id: string
) =>
(exit: Exit.Exit<InFrontAnswer, unknown>) => {
  if (Exit.isSuccess(exit)) {
    sendJson(response, 200, JSON.stringify(exit.value.body), exit.value.replayed ? { "idempotent-replayed": "true" } : undefined)
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

/**
 * Serves requests in front of the API over the services of `runtime`: each gets a request id
 * (the fiber's and the `x-request-id` header), `headers` (the server's faults, as the API says
 * them), and its outcome written on `response` as the API would write it (a defect is logged
 * and answered 500).
 *
 * @since 0.3.0
 * @category constructors
 */
export const inFront = (runtime: Runtime.Runtime<Stores>, headers: Readonly<Record<string, string>>) => {
  const run = Runtime.runCallback(runtime)
  return (response: ServerResponse, answer: Effect.Effect<InFrontAnswer, unknown, Stores>): void => {
    const id = newRequestId()
    response.setHeader("x-request-id", id)
    for (const name in headers) response.setHeader(name, headers[name]!)
    run(Effect.zipRight(FiberRef.set(CurrentRequestId, id), answer), { onExit: answerWith(run, response, id) })
  }
}

/**
 * The request's principal, by its `x-api-key` header (the API's key check).
 *
 * @since 0.3.0
 * @category utils
 */
export const principalOf = (request: IncomingMessage) => {
  const apiKey = request.headers["x-api-key"]
  return authenticate(typeof apiKey === "string" ? apiKey : "")
}

/** The key, then the use case: decoded as the API would, then accepted. */
const serveIngest = (request: IncomingMessage, body: Buffer) => {
  const path = request.url ?? ""
  const target = ingestTarget(path)!
  // The principal goes to the use case as an argument, not as a service: providing one copied
  // the runtime's whole context for every request.
  return Effect.flatMap(principalOf(request), (principal) =>
    Effect.flatMap(
      Ingest.decode(target.version, { principal, path, idSegment: target.id, body, headers: request.headers }),
      (decoded) => Ingest.accept(target.version, decoded)
    ))
}

/**
 * The ingest route over the services of `runtime`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeIngestRoute = (
  runtime: Runtime.Runtime<Stores>,
  /** Set on every answer (the server's faults, as the API says them). */
  headers: Readonly<Record<string, string>> = {}
): IngestRoute => {
  const serve = inFront(runtime, headers)
  return {
    takes: (request) => request.method === "POST" && ingestTarget(request.url ?? "")?.query === false,
    serve: (request, response, body) => serve(response, serveIngest(request, body))
  }
}
