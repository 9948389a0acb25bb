/**
 * Keys: resolving `x-api-key` to its principal (what a principal may do is `core/permissions.ts`).
 *
 * @since 0.1.0
 */
import { Effect, FiberRef, Layer, Option, Redacted } from "effect"
import { CurrentActor } from "./activity.js"
import type { Unauthorized } from "../../api/errors.js"
import { ApiKeyAuth, type Principal } from "../../api/security.js"
import { toWireError } from "./wireErrors.js"
import { failWith } from "./envelope.js"
import { CatalogStore, type CatalogStoreService } from "../core/store/ports/catalog.js"

/**
 * The principal of an `x-api-key` value; a missing (empty) or unknown key is 401. A store
 * that cannot answer is a 503 all the same: the key check may only fail with 401, so that
 * wire error travels as a defect, which the error envelopes send as it is.
 *
 * @since 0.1.0
 * @category utils
 */
export const authenticate = (apiKey: string): Effect.Effect<Principal, Unauthorized, CatalogStore> =>
  Effect.flatMap(CatalogStore, (store) => principalOf(store, apiKey))

const principalOf = (store: CatalogStoreService, apiKey: string): Effect.Effect<Principal, Unauthorized> => {
  if (apiKey === "") {
    return failWith("Unauthorized", { code: "unauthorized", message: "the x-api-key header is missing" })
  }
  return store.principalByKey(apiKey).pipe(
    Effect.catchTag("StoreError", (error) => Effect.flatMap(Effect.flip(toWireError(error)), Effect.die)),
    Effect.flatMap(Option.match({
      onNone: () => failWith("Unauthorized", { code: "unauthorized", message: "the API key is not valid" }),
      onSome: Effect.succeed
    }))
  )
}

/**
 * Resolves `x-api-key` to its principal ({@link authenticate}).
 *
 * @since 0.1.0
 * @category layers
 */
export const ApiKeyAuthLive = Layer.effect(
  ApiKeyAuth,
  Effect.map(CatalogStore, (store) =>
    ApiKeyAuth.of({
      // A missing header arrives as an empty value, not as a failure.
      // The principal is also kept for the activity log, which records after the handler.
      apiKey: (key) => Effect.tap(principalOf(store, Redacted.value(key)), (principal) => FiberRef.set(CurrentActor, principal))
    }))
)
