/**
 * Connections: seeded per organization; read, renamed, shared and deleted through the API.
 * Seen as data sources are (`canSee`, the manager standing for the creator); changing one
 * needs the editor role; deleting one, its manager or an admin.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../api/security.js"
import { requireRole } from "../core/permissions.js"
import { Forbidden, NotFound } from "../core/errors.js"
import { type PageRequest, sliceOf } from "../core/paging.js"
import type { Seed } from "../seed.js"
import { defaultPermissions } from "../core/store/Store.js"
import { CatalogStore } from "../core/store/ports/catalog.js"
import type { StoreError } from "../core/errors.js"
import { canSee, resolvePermissions } from "../core/permissions.js"
import { type Connection, type ConnectionPatch, ConnectionStore } from "./connections/store.js"

/** A connection has no creator of its own: its manager stands for one. */
const asResource = (c: Connection) => ({ ...c, createdBy: c.managedBy ?? { id: -1 } })

/**
 * The connection `id` if the principal may see it; `NotFound` otherwise. Also what a data
 * source created through a connection checks (`CreateDataSource.connection` in
 * `core/catalog/dataSources.ts`).
 *
 * @since 0.1.0
 * @category utils
 */
export const visibleConnection = (principal: Principal, id: number) =>
  Effect.flatMap(ConnectionStore, (store) => store.connection(id)).pipe(
    Effect.flatMap((connection) =>
      Option.isSome(connection) && canSee(principal, asResource(connection.value))
        ? Effect.succeed(connection.value)
        : Effect.fail(new NotFound({ resource: "Connection", id }))
    )
  )

const changed = (id: number) =>
  Effect.flatMap(Option.match({
    onNone: () => Effect.fail(new NotFound({ resource: "Connection", id })),
    onSome: (c: Connection) => Effect.succeed(c)
  }))

/**
 * A page of the connections the principal may see.
 *
 * @since 0.1.0
 * @category utils
 */
export const listConnections = (principal: Principal, params: PageRequest & { readonly search?: string | undefined }) =>
  Effect.gen(function*() {
    const store = yield* ConnectionStore
    const { page, pageSize, slice } = sliceOf(params)
    const found = yield* store.listConnections({ viewer: principal, search: params.search, ...slice })
    return { page, pageSize, found }
  })

const updateConnection = (principal: Principal, id: number, patch: ConnectionPatch) =>
  Effect.gen(function*() {
    const connection = yield* visibleConnection(principal, id)
    yield* requireRole(principal, "editor", "change connections")
    const store = yield* ConnectionStore
    return yield* store.updateConnection(connection.id, patch).pipe(changed(id))
  })

/**
 * Renames a connection; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const renameConnection = (principal: Principal, id: number, name: string) => updateConnection(principal, id, { name })

/**
 * Sets who may see a connection and whether it is shared with the organization's accounts.
 *
 * @since 0.1.0
 * @category utils
 */
export const setConnectionPermissions = (
  principal: Principal,
  id: number,
  update: Parameters<typeof resolvePermissions>[1] & { readonly sharedWithAccounts: boolean }
) =>
  Effect.gen(function*() {
    yield* visibleConnection(principal, id)
    yield* requireRole(principal, "editor", "change connections")
    const permissions = yield* resolvePermissions(principal, update)
    return yield* updateConnection(principal, id, { permissions, sharedWithAccounts: update.sharedWithAccounts })
  })

/**
 * Deletes a connection: its manager or an admin. Its data sources stay, without a connection.
 *
 * @since 0.1.0
 * @category utils
 */
export const deleteConnection = (principal: Principal, id: number) =>
  Effect.gen(function*() {
    const connection = yield* visibleConnection(principal, id)
    if (principal.role !== "admin" && connection.managedBy?.id !== principal.userId) {
      return yield* new Forbidden({ role: principal.role, needed: "admin (or being the connection's manager)", action: "delete this connection" })
    }
    const store = yield* ConnectionStore
    yield* store.deleteConnection(connection.id)
    return connection
  })

/**
 * Puts the seed's connections into the store (idempotent, by organization and name). A
 * connection's manager is the seeded user with its `managedBy` email.
 *
 * @since 0.1.0
 * @category utils
 */
export const seedConnections = (seed: Seed): Effect.Effect<void, StoreError, CatalogStore | ConnectionStore> =>
  Effect.flatMap(Effect.all([CatalogStore, ConnectionStore]), ([catalog, store]) =>
    Effect.forEach(seed.organizations, (org) =>
      Effect.gen(function*() {
        if (org.connections === undefined || org.connections.length === 0) return
        const organization = yield* catalog.ensureOrganization(org.name)
        const users = yield* catalog.users(organization.id)
        for (const c of org.connections) {
          const manager = users.find((u) => u.email === c.managedBy)
          yield* store.ensureConnection({
            organizationId: organization.id,
            name: c.name,
            integrationKey: c.integrationKey ?? null,
            managedBy: manager === undefined ? null : { id: manager.id, name: manager.name },
            sharedWithAccounts: c.sharedWithAccounts ?? false,
            permissions: c.accessLevel === undefined ? defaultPermissions : { accessLevel: c.accessLevel, accessList: null },
            status: c.status ?? "active"
          })
        }
      }), { discard: true }))
