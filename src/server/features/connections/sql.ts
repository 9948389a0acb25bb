/**
 * The Postgres store's `ConnectionStore` port, over the core's store state
 * (`core/store/sql/state.ts`: the client and its shared fragments). One function per method,
 * each taking the state first; `make` assembles them.
 *
 * A connection's count of data sources is read from the core's `data_sources`, and deleting one
 * clears `connection_id` there in the same transaction: this feature's steps on the core's
 * table, so that the core need not know connections exist.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../core/clock.js"
import { portOf } from "../../core/store/Stores.js"
import type { SqlState } from "../../core/store/sql/state.js"
import { storeCall } from "../../core/store/sql/records.js"
import type { Connection, ConnectionPatch, ConnectionQuery, ConnectionStoreService, NewConnection } from "./store.js"

/**
 * A connection as the database holds it, with its count of data sources.
 *
 * @since 0.1.0
 * @category models
 */
export interface ConnectionRecord {
  readonly id: number
  readonly organization_id: number
  readonly name: string
  readonly integration_key: string | null
  readonly managed_by: Connection["managedBy"]
  readonly shared_with_accounts: boolean
  readonly permissions: Connection["permissions"]
  readonly created_at: string | null
  readonly status: Connection["status"]
  readonly data_sources_count: number
}

/**
 * @since 0.1.0
 * @category utils
 */
export const toConnection = (r: ConnectionRecord): Connection => ({
  id: r.id,
  organizationId: r.organization_id,
  name: r.name,
  integrationKey: r.integration_key,
  managedBy: r.managed_by,
  sharedWithAccounts: r.shared_with_accounts,
  permissions: r.permissions,
  createdAt: r.created_at,
  status: r.status,
  dataSourcesCount: r.data_sources_count
})

const connectionSelect = ({ sql }: SqlState) =>
  sql`
    SELECT c.id, c.organization_id, c.name, c.integration_key, c.managed_by, c.shared_with_accounts, c.permissions,
      c.created_at, c.status,
      (SELECT count(*)::int FROM data_sources s WHERE s.connection_id = c.id) AS data_sources_count
    FROM connections c`

/**
 * @since 0.1.0
 * @category utils
 */
export const connection = (state: SqlState, id: number) =>
  storeCall(Effect.map(
    state.sql<ConnectionRecord>`${connectionSelect(state)} WHERE c.id = ${id}`,
    (rows) => state.byId(rows, toConnection)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureConnection = (state: SqlState, input: NewConnection) => {
  const { json, sql } = state
  return storeCall(Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const [row] = yield* sql<{ id: number }>`INSERT INTO connections
        (organization_id, name, integration_key, managed_by, shared_with_accounts, permissions, created_at, status)
      VALUES (${input.organizationId}, ${input.name}, ${input.integrationKey},
        ${input.managedBy === null ? null : json(input.managedBy)}::jsonb, ${input.sharedWithAccounts},
        ${json(input.permissions)}::jsonb, ${isoTimestamp(now)}, ${input.status})
      ON CONFLICT (organization_id, name) DO UPDATE SET name = excluded.name
      RETURNING id`
    return Option.getOrThrow(yield* connection(state, row!.id))
  }))
}

/**
 * @since 0.1.0
 * @category utils
 */
export const listConnections = (state: SqlState, query: ConnectionQuery) => {
  const { searchIn, sql, visibleTo } = state
  // Seen as data sources are, the manager standing for the creator.
  const where = sql`${visibleTo("c", query.viewer, "managed_by")} AND ${searchIn("c", query.search)}`
  return storeCall(Effect.all({
    items: Effect.map(
      sql<ConnectionRecord>`${connectionSelect(state)} WHERE ${where} ORDER BY c.id LIMIT ${query.limit} OFFSET ${query.offset}`,
      (rows) => rows.map(toConnection)
    ),
    totalItems: Effect.map(sql<{ total: number }>`SELECT count(*)::int AS total FROM connections c WHERE ${where}`, ([r]) => r!.total)
  }))
}

/**
 * @since 0.1.0
 * @category utils
 */
export const updateConnection = (state: SqlState, id: number, patch: ConnectionPatch) => {
  const { json, sql } = state
  return storeCall(Effect.gen(function*() {
    const rows = yield* sql<{ id: number }>`UPDATE connections SET
      name = coalesce(${patch.name ?? null}, name),
      shared_with_accounts = coalesce(${patch.sharedWithAccounts ?? null}, shared_with_accounts),
      permissions = coalesce(${patch.permissions === undefined ? null : json(patch.permissions)}::jsonb, permissions)
      WHERE id = ${id} RETURNING id`
    if (rows.length === 0) return Option.none()
    return yield* connection(state, id)
  }))
}

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteConnection = ({ sql }: SqlState, id: number) =>
  storeCall(sql.withTransaction(Effect.asVoid(Effect.zipRight(
    sql`UPDATE data_sources SET connection_id = NULL WHERE connection_id = ${id}`,
    sql`DELETE FROM connections WHERE id = ${id}`
  ))))

/**
 * The port over the core's `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): ConnectionStoreService =>
  portOf<SqlState, ConnectionStoreService>(state, {
    ensureConnection,
    connection,
    listConnections,
    updateConnection,
    deleteConnection
  })
