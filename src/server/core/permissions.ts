/**
 * Who sees what: one rule for services (single resources) and stores (lists filter by it
 * before they page; the Postgres store states the same rule in SQL).
 *
 * @since 0.1.0
 */
import type { Permissions, Viewer } from "./store/Store.js"

/**
 * Whether a viewer may see a resource: it must be in the viewer's organization, and its
 * permissions must admit the viewer (admins and the creator always pass).
 *
 * @since 0.1.0
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
