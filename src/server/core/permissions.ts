/**
 * What a key may do, one rule for v1 and v2: who sees what ({@link canSee}, for services
 * (single resources) and stores (lists filter by it before they page; the Postgres store
 * states the same rule in SQL)), which role an action needs ({@link requireRole}), and what a
 * permissions setting may name ({@link resolvePermissions}).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { Principal, Role } from "../../api/security.js"
import { Forbidden, InvalidField } from "./errors.js"
import { type Permissions, type Viewer } from "./store/Store.js"
import { CatalogStore } from "./store/ports/catalog.js"

/**
 * Whether a viewer may see a resource: it must be in the viewer's organization, and its
 * permissions must admit the viewer (admins and the creator always pass).
 *
 * @since 0.1.0
 * @category guards
 */
export const canSee = (
  viewer: Viewer,
  resource: {
    readonly organizationId: number
    readonly permissions: Permissions
    readonly createdBy: { readonly id: number }
  }
): boolean => {
  if (resource.organizationId !== viewer.organizationId) return false
  if (viewer.role === "admin" || resource.createdBy.id === viewer.userId) return true
  switch (resource.permissions.accessLevel) {
    case "everyone":
      return true
    case "private":
      return false
    case "selectedUsers":
      return resource.permissions.accessList?.some((user) => user.id === viewer.userId) ?? false
  }
}

const rank: Record<Role, number> = { viewer: 0, editor: 1, admin: 2 }

/**
 * Fails with `Forbidden` unless the principal's role is at least `minimum`.
 *
 * @since 0.1.0
 * @category utils
 */
export const requireRole = (principal: Principal, minimum: Role, action: string): Effect.Effect<void, Forbidden> =>
  rank[principal.role] >= rank[minimum]
    ? Effect.void
    : Effect.fail(new Forbidden({ role: principal.role, needed: minimum, action }))

const invalid = (field: string, message: string) => Effect.fail(new InvalidField({ field, message }))

/**
 * Checks a permissions update: `accessList` only with `selectedUsers` (and required then),
 * naming users of the principal's organization.
 *
 * @since 0.1.0
 * @category utils
 */
export const resolvePermissions = (
  principal: Principal,
  update: {
    readonly accessLevel: Permissions["accessLevel"]
    readonly accessList?: ReadonlyArray<{ readonly id: number }> | null | undefined
  }
) =>
  Effect.gen(function*() {
    if (update.accessLevel !== "selectedUsers") {
      if (update.accessList != null && update.accessList.length > 0) {
        return yield* invalid("accessList", "accessList is only allowed with accessLevel selectedUsers")
      }
      return { accessLevel: update.accessLevel, accessList: null } satisfies Permissions
    }
    if (update.accessList == null || update.accessList.length === 0) {
      return yield* invalid("accessList", "accessLevel selectedUsers needs a non-empty accessList")
    }
    const store = yield* CatalogStore
    const members = yield* store.users(principal.organizationId)
    const accessList: Array<{ id: number; name: string }> = []
    for (const [i, { id }] of update.accessList.entries()) {
      const member = members.find((u) => u.id === id)
      if (member === undefined) {
        return yield* invalid(`accessList[${i}].id`, `user ${id} is not a member of the organization`)
      }
      accessList.push({ id: member.id, name: member.name })
    }
    return { accessLevel: "selectedUsers", accessList } satisfies Permissions
  })
