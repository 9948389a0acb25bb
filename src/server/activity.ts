/**
 * The activity log's one recording point: every successful mutation made through the API
 * (any method but GET/HEAD/OPTIONS, answered 2xx) is logged by the server's HTTP layer after
 * its handler succeeded, so routes added later are covered without doing anything, and a
 * failed mutation leaves no entry. What the entry is about comes from the route
 * (`internal/activity.ts`); who made it from the request's key.
 *
 * @since 0.1.0
 */
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, FiberRef, Option, Schema } from "effect"
import type { Principal } from "../api/security.js"
import { activityOf } from "./internal/activity.js"
import type { StoreService } from "./store/Store.js"

/**
 * The principal of the request being served, set by the key check.
 *
 * @since 0.1.0
 */
export const CurrentActor: FiberRef.FiberRef<Principal | undefined> = FiberRef.unsafeMake<Principal | undefined>(undefined)

/**
 * Set when the answer is an `Idempotency-Key` replay: nothing was done again, nothing is logged.
 *
 * @since 0.1.0
 */
export const Replayed: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

const Id = Schema.Union(Schema.Int, Schema.String)

/** The id a creation answered with: `data.id` (v2) or `id` (v1). */
const decodeCreated = Schema.decodeUnknownOption(
  Schema.parseJson(Schema.Struct({ data: Schema.optional(Schema.Struct({ id: Schema.optional(Id) })), id: Schema.optional(Id) }))
)

const createdIdOf = (response: HttpServerResponse.HttpServerResponse): string | null => {
  if (response.body._tag !== "Uint8Array") return null
  return Option.match(decodeCreated(new TextDecoder().decode(response.body.body)), {
    onNone: () => null,
    onSome: (answer) => {
      const id = answer.data?.id ?? answer.id
      return id === undefined ? null : String(id)
    }
  })
}

const reads = new Set(["GET", "HEAD", "OPTIONS"])

/**
 * Records the mutation `request` made, if it is one (see `activityOf`). A store that fails
 * here loses the entry, not the mutation: it is logged and the answer goes out.
 *
 * @since 0.1.0
 */
export const recordMutation = (
  store: StoreService,
  request: { readonly method: string; readonly url: string },
  response: HttpServerResponse.HttpServerResponse
): Effect.Effect<void> => {
  if (reads.has(request.method) || response.status >= 300) return Effect.void
  return Effect.gen(function*() {
    const actor = yield* FiberRef.get(CurrentActor)
    if (actor === undefined || (yield* FiberRef.get(Replayed))) return
    const path = request.url.split("?")[0]!
    const activity = activityOf({ method: request.method, path }, actor.userId, request.method === "POST" ? createdIdOf(response) : null)
    if (activity === undefined) return
    yield* store.recordActivity({
      organizationId: actor.organizationId,
      ...activity,
      isSystem: false,
      user: { id: actor.userId, name: actor.userName },
      details: { method: request.method, path }
    }).pipe(Effect.catchAll((error) => Effect.logWarning("activity not recorded", error.message)))
  })
}
