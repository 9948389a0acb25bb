/**
 * Keys and roles: resolving `x-api-key`, role checks.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { ApiKeyAuth, type Principal, type Role } from "../api/security.js"
import { Forbidden, toWireError } from "./errors.js"
import { failWith } from "./request.js"
import { Store } from "./store/Store.js"

/**
 * Resolves `x-api-key` to its principal; a missing or unknown key is 401.
 *
 * @since 0.1.0
 * @category layers
 */
export const ApiKeyAuthLive = Layer.effect(
  ApiKeyAuth,
  Effect.map(Store, (store) =>
    ApiKeyAuth.of({
      apiKey: (key) => {
        // A missing header arrives as an empty value, not as a failure.
        const apiKey = Redacted.value(key)
        if (apiKey === "") {
          return failWith("Unauthorized", { code: "unauthorized", message: "the x-api-key header is missing" })
        }
        return store.principalByKey(apiKey).pipe(
          // The middleware may only fail with 401; a store that cannot answer is a 503 all the
          // same: the wire error travels as a defect that the error-envelope middleware sends.
          Effect.catchTag("StoreError", (error) => Effect.flatMap(Effect.flip(toWireError(error)), Effect.die)),
          Effect.flatMap(Option.match({
            onNone: () => failWith("Unauthorized", { code: "unauthorized", message: "the API key is not valid" }),
            onSome: Effect.succeed
          }))
        )
      }
    }))
)

const rank: Record<Role, number> = { viewer: 0, editor: 1, admin: 2 }

/**
 * Fails with `Forbidden` unless the principal's role is at least `minimum`.
 *
 * @since 0.1.0
 */
export const requireRole = (principal: Principal, minimum: Role, action: string): Effect.Effect<void, Forbidden> =>
  rank[principal.role] >= rank[minimum]
    ? Effect.void
    : Effect.fail(new Forbidden({ role: principal.role, needed: minimum, action }))
