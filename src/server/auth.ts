/**
 * Keys and permissions: resolving `x-api-key`, role checks, organization visibility.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { ApiKeyAuth, type Principal, type Role } from "../api/security.js"
import { failWith } from "./request.js"
import { Store, type Permissions } from "./store/Store.js"

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
        return Effect.flatMap(store.principalByKey(apiKey), (principal) =>
          Option.match(principal, {
            onNone: () => failWith("Unauthorized", { code: "unauthorized", message: "the API key is not valid" }),
            onSome: Effect.succeed
          }))
      }
    }))
)

const rank: Record<Role, number> = { viewer: 0, editor: 1, admin: 2 }

/**
 * 403 unless the principal's role is at least `minimum`.
 *
 * @since 0.1.0
 */
export const requireRole = (principal: Principal, minimum: Role, action: string) =>
  rank[principal.role] >= rank[minimum]
    ? Effect.void
    : failWith("Forbidden", {
      code: "forbidden",
      message: `a ${principal.role} key may not ${action}; it needs the ${minimum} role or higher`
    })

/**
 * Whether a principal may see a resource: it must be in the principal's organization, and
 * its permissions must admit the principal (admins and the creator always pass).
 *
 * @since 0.1.0
 */
export const canSee = (
  principal: Principal,
  resource: {
    readonly organizationId: number
    readonly permissions: Permissions
    readonly createdBy: { readonly id: number }
  }
): boolean => {
  if (resource.organizationId !== principal.organizationId) return false
  if (principal.role === "admin" || resource.createdBy.id === principal.userId) return true
  switch (resource.permissions.accessLevel) {
    case "everyone":
      return true
    case "private":
      return false
    case "selectedUsers":
      return resource.permissions.accessList?.some((user) => user.id === principal.userId) ?? false
  }
}
