/**
 * `GET /v2/datasets/{id}/ingestions/{ingestionId}` served straight from node:http, in front of
 * the API, as the ingest routes are (`fastIngest.ts`).
 *
 * Why: a pipeline follows every ingestion it sent to its end and reads each one's detail once
 * it ended (its counts and its rejected records), so next to the posts these reads are most of
 * what a pipeline asks. As an HttpApi route a read cost the server about as much as a post's
 * machinery; in a keyed `bench:tracking` run of 1,000,000 records (two ingestions a batch)
 * the server was at 88% of its core and the pipeline's tracker fell behind, holding the run at
 * its bound of pending ingestions.
 *
 * The same use case (`getIngestion`) and the same view (`ingestionDetail`), encoded with the
 * contract's response schema: the API's key check (`authenticate`), the path decoded with the
 * contract's `IngestionPath` (a failure is the API's 400), domain errors presented as the API
 * presents them. Only a plain path is taken: a query string, a percent-encoded or otherwise
 * unusual segment, a body, goes to the API.
 *
 * @since 0.3.0
 */
import type { IncomingMessage } from "node:http"
import { Effect, Either, ParseResult, type Runtime, Schema } from "effect"
import type { WireError } from "../../api/errors.js"
import { IngestionDetailResponse, IngestionPath } from "../../api/v2/datasets.js"
import { getIngestion } from "../core/ingestion.js"
import type { Stores } from "../core/store/Stores.js"
import { badRequestFromDecode } from "./decodeError.js"
import { respond } from "./envelope.js"
import { type InFrontAnswer, inFront, principalOf } from "./fastIngest.js"
import type { ReadRoute } from "./front.js"
import { ingestionDetail } from "./v2/datasets.js"
import { present } from "./wireErrors.js"

/** The plain paths this route takes: no query, no percent-encoding, nothing after the id. */
const detailPath = /^\/v2\/datasets\/([A-Za-z0-9-]+)\/ingestions\/([A-Za-z0-9-]+)$/

const decodePath = Schema.decodeUnknownEither(IngestionPath)
const encodeAnswer = Schema.encode(IngestionDetailResponse)

/** The key, then the path, then the use case; the answer encoded as the contract says. */
const serveDetail = (request: IncomingMessage, url: string, id: string, ingestionId: string) =>
  Effect.flatMap(principalOf(request), (principal): Effect.Effect<InFrontAnswer, WireError, Stores> => {
    const path = decodePath({ id, ingestionId })
    if (Either.isLeft(path)) return badRequestFromDecode(ParseResult.ArrayFormatter.formatErrorSync(path.left), url)
    return present(Effect.flatMap(
      getIngestion(principal, path.right.id, path.right.ingestionId),
      ({ ingestion }) =>
        Effect.map(
          Effect.orDie(Effect.flatMap(respond("success", { data: ingestionDetail(ingestion) }), encodeAnswer)),
          (body) => ({ body, replayed: false })
        )
    ))
  })

/**
 * The ingestion detail route over the services of `runtime`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const makeIngestionRoute = (
  runtime: Runtime.Runtime<Stores>,
  /** Set on every answer (the server's faults, as the API says them). */
  headers: Readonly<Record<string, string>> = {}
): ReadRoute => {
  const serve = inFront(runtime, headers)
  return {
    takes: (request) => request.method === "GET" && detailPath.test(request.url ?? ""),
    serve: (request, response) => {
      const url = request.url ?? ""
      const [, id, ingestionId] = detailPath.exec(url)!
      serve(response, serveDetail(request, url, id!, ingestionId!))
    }
  }
}
