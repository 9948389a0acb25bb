/**
 * `Idempotency-Key`: a successful answer is kept for 24 hours and replayed for the same
 * key, user and route; the same key with a different body is 422 and runs nothing; a
 * request arriving while the first with its key still runs waits for that one's answer.
 * The records live in the store, so that server processes sharing a store share them.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"
import { CurrentPrincipal } from "../../api/security.js"
import { IngestionStore } from "../core/store/ports/ingestions.js"

/**
 * 24 hours, the service's window.
 *
 * @since 0.1.0
 * @category defaults
 */
export const idempotencyWindowMillis = 24 * 60 * 60 * 1000

const fingerprintOf = (body: unknown): string => createHash("sha256").update(JSON.stringify(body ?? null)).digest("hex")

/**
 * Marks the answer of the API request being served as a replay: the `idempotent-replayed`
 * header. (Nothing is logged: the replay ran nothing, so reported no change.)
 *
 * @since 0.1.0
 * @category defaults
 */
export const markReplayed: Effect.Effect<void, never, HttpServerRequest.HttpServerRequest> = HttpApp.appendPreResponseHandler(
  (_request, response) => Effect.succeed(HttpServerResponse.setHeader(response, "idempotent-replayed", "true"))
)

/**
 * Runs `execute` at most once per idempotency key (within the window) for this user and
 * route (`method` and `path`, without the query); tells whether the answer is a replay.
 *
 * @since 0.1.0
 * @category utils
 */
export const once = <A, E, R>(
  request: { readonly userId: number; readonly method: string; readonly path: string; readonly key: string },
  body: unknown,
  execute: Effect.Effect<A, E, R>
) =>
  Effect.flatMap(IngestionStore, (store) =>
    store.once(
      {
        key: request.key,
        scope: `${request.userId} ${request.method} ${request.path} ${request.key}`,
        fingerprint: fingerprintOf(body),
        windowMillis: idempotencyWindowMillis
      },
      execute
    ))

/**
 * {@link once} for an API handler: the user and route come from the request being served,
 * and a replay is marked with the `idempotent-replayed` header. Without a key it simply runs.
 *
 * @since 0.1.0
 * @category utils
 */
export const idempotent = <A, E, R>(key: string | undefined, body: unknown, execute: Effect.Effect<A, E, R>) => {
  if (key === undefined) return execute
  return Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const request = yield* HttpServerRequest.HttpServerRequest
    const { answer, replayed } = yield* once(
      { userId: principal.userId, method: request.method, path: request.url.split("?")[0]!, key },
      body,
      execute
    )
    if (replayed) yield* markReplayed
    return answer
  })
}
