/**
 * The activity log's one recording point. A mutation's handler says what it changed
 * (`handler.ts` `change`, through {@link reportChange}); after the handler, this layer records
 * that, with who did it (the request's key) and the route, when the answer is a success. A
 * request that reports nothing is not logged: reads (whatever their method: a drilldown or a
 * preview is a `POST`), ingestion (the data itself, with its own history), a replayed
 * `Idempotency-Key` answer (nothing ran again) and a failed mutation.
 *
 * @since 0.1.0
 */
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, FiberRef } from "effect"
import type { Principal } from "../../api/security.js"
import { activityOf, type Changed } from "./activityOf.js"
import type { ActivityStoreService } from "../features/activity/store.js"

export type { Changed } from "./activityOf.js"

/**
 * The principal of the request being served, set by the key check.
 *
 * @since 0.1.0
 * @category models
 */
export const CurrentActor: FiberRef.FiberRef<Principal | undefined> = FiberRef.unsafeMake<Principal | undefined>(undefined)

/**
 * The changes the request being served reported. Set on the request's fiber, not scoped
 * with `Effect.locally` (see `server.ts`: each request runs in a fiber of its own).
 */
const Reports: FiberRef.FiberRef<Array<Changed> | undefined> = FiberRef.unsafeMake<Array<Changed> | undefined>(undefined)

/**
 * Reports what the request being served changed, for the activity log. Outside a request
 * (or in a read) it does nothing.
 *
 * @since 0.1.0
 * @category utils
 */
export const reportChange = (changed: Changed): Effect.Effect<void> =>
  Effect.map(FiberRef.get(Reports), (reports) => {
    reports?.push(changed)
  })

const reads = new Set(["GET", "HEAD", "OPTIONS"])

/**
 * Runs `app` and records what it reported it changed, if it answered with a success. A store
 * that fails here loses the entry, not the mutation: it is logged and the answer goes out.
 *
 * @since 0.1.0
 * @category combinators
 */
export const recordingMutation = <E, R>(
  store: ActivityStoreService,
  request: { readonly method: string; readonly url: string },
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
  if (reads.has(request.method)) return app
  const reports: Array<Changed> = []
  return Effect.zipRight(
    FiberRef.set(Reports, reports),
    Effect.tap(app, (response) => reports.length === 0 || response.status >= 300 ? Effect.void : record(store, request, reports[0]!))
  )
}

const record = (
  store: ActivityStoreService,
  request: { readonly method: string; readonly url: string },
  changed: Changed
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const actor = yield* FiberRef.get(CurrentActor)
    if (actor === undefined) return
    const path = request.url.split("?")[0]!
    const activity = activityOf({ method: request.method, path }, actor.userId, changed)
    if (activity === undefined) return
    yield* store.recordActivity({
      organizationId: actor.organizationId,
      ...activity,
      isSystem: false,
      user: { id: actor.userId, name: actor.userName },
      details: { method: request.method, path }
    }).pipe(Effect.catchAll((error) => Effect.logWarning("activity not recorded", error.message)))
  })
