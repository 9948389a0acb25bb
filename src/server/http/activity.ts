/**
 * The activity log's one recording point: every successful mutation made through the API
 * (any method but GET/HEAD/OPTIONS, answered 2xx) is logged by the server's HTTP layer after
 * its handler succeeded, so routes added later are covered without doing anything, and a
 * failed mutation leaves no entry. What the entry is about comes from the route
 * (`activityOf.ts`); who made it from the request's key.
 *
 * @since 0.1.0
 */
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, FiberRef, Option, Schema } from "effect"
import type { Principal } from "../../api/security.js"
import { activityOf } from "./activityOf.js"
import type { StoreService } from "../core/store/Store.js"

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

/** A dataset named by its v1 UUID (`/v1/datasets/{uuid}/purge`, `/v2/datasets/{uuid}`). */
const datasetByUuid = /^\/v[0-9]+\/datasets\/([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})(\/[^/]*)?$/

/**
 * The dataset's v2 number, so that its entries name it one way whichever path the mutation
 * took (v1 UUID or v2 number). Read before the handler runs: a deletion leaves nothing to look up.
 */
const datasetNumber = (store: StoreService, uuid: string): Effect.Effect<string | null> =>
  store.dataset(uuid.toLowerCase()).pipe(
    Effect.map(Option.match({ onNone: () => null, onSome: (dataset) => String(dataset.number) })),
    Effect.catchAll(() => Effect.succeed(null))
  )

/**
 * Runs `app` and records the mutation `request` made, if it is one (see `activityOf`). A store
 * that fails here loses the entry, not the mutation: it is logged and the answer goes out.
 * Ingestion (`POST .../data`) is never logged and costs nothing here.
 *
 * @since 0.1.0
 */
export const recordingMutation = <E, R>(
  store: StoreService,
  request: { readonly method: string; readonly url: string },
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
  if (reads.has(request.method)) return app
  const path = request.url.split("?")[0]!
  const byUuid = datasetByUuid.exec(path)
  if (byUuid === null || (request.method === "POST" && byUuid[2] === "/data")) {
    return Effect.tap(app, (response) => record(store, request.method, path, response, null))
  }
  return Effect.flatMap(
    datasetNumber(store, byUuid[1]!),
    (number) => Effect.tap(app, (response) => record(store, request.method, path, response, number))
  )
}

const record = (
  store: StoreService,
  method: string,
  path: string,
  response: HttpServerResponse.HttpServerResponse,
  datasetNumber: string | null
): Effect.Effect<void> => {
  if (response.status >= 300) return Effect.void
  return Effect.gen(function*() {
    const actor = yield* FiberRef.get(CurrentActor)
    if (actor === undefined || (yield* FiberRef.get(Replayed))) return
    const activity = activityOf({ method, path }, actor.userId, method === "POST" ? createdIdOf(response) : null)
    if (activity === undefined) return
    const resourceId = activity.resourceType === "dataset" && activity.resourceId !== null
      ? datasetNumber ?? (yield* numberOfCreated(store, activity.resourceId))
      : activity.resourceId
    yield* store.recordActivity({
      organizationId: actor.organizationId,
      ...activity,
      resourceId,
      isSystem: false,
      user: { id: actor.userId, name: actor.userName },
      details: { method, path }
    }).pipe(Effect.catchAll((error) => Effect.logWarning("activity not recorded", error.message)))
  })
}

/** A dataset created through v1 answers with its UUID; the log names it by number. */
const numberOfCreated = (store: StoreService, id: string): Effect.Effect<string> =>
  /^[0-9]+$/.test(id) ? Effect.succeed(id) : Effect.map(datasetNumber(store, id), (number) => number ?? id)
