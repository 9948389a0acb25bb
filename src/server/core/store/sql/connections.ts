/**
 * The Postgres store's `ConnectionStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../clock.js"
import type { ConnectionStoreService } from "../ports/connections.js"
import type { SqlState } from "./state.js"
import { storeCall, type ConnectionRecord, toConnection } from "./records.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): ConnectionStoreService => {
  const { sql, json, searchIn, connectionSelect, visibleConnection, byId } = state
  const port: ConnectionStoreService = {
    ensureConnection: (input) =>
      storeCall(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const [row] = yield* sql<{ id: number }>`INSERT INTO connections
            (organization_id, name, integration_key, managed_by, shared_with_accounts, permissions, created_at, status)
          VALUES (${input.organizationId}, ${input.name}, ${input.integrationKey},
            ${input.managedBy === null ? null : json(input.managedBy)}::jsonb, ${input.sharedWithAccounts},
            ${json(input.permissions)}::jsonb, ${isoTimestamp(now)}, ${input.status})
          ON CONFLICT (organization_id, name) DO UPDATE SET name = excluded.name
          RETURNING id`
        return Option.getOrThrow(yield* port.connection(row!.id))
      })),
    connection: (id) =>
      storeCall(Effect.map(sql<ConnectionRecord>`${connectionSelect} WHERE c.id = ${id}`, (rows) => byId(rows, toConnection))),
    listConnections: (query) => {
      const where = sql`${visibleConnection(query.viewer)} AND ${searchIn("c", query.search)}`
      return storeCall(Effect.all({
        items: Effect.map(
          sql<ConnectionRecord>`${connectionSelect} WHERE ${where} ORDER BY c.id LIMIT ${query.limit} OFFSET ${query.offset}`,
          (rows) => rows.map(toConnection)
        ),
        totalItems: Effect.map(sql<{ total: number }>`SELECT count(*)::int AS total FROM connections c WHERE ${where}`, ([r]) => r!.total)
      }))
    },
    updateConnection: (id, patch) =>
      storeCall(Effect.gen(function*() {
        const rows = yield* sql<{ id: number }>`UPDATE connections SET
          name = coalesce(${patch.name ?? null}, name),
          shared_with_accounts = coalesce(${patch.sharedWithAccounts ?? null}, shared_with_accounts),
          permissions = coalesce(${patch.permissions === undefined ? null : json(patch.permissions)}::jsonb, permissions)
          WHERE id = ${id} RETURNING id`
        if (rows.length === 0) return Option.none()
        return yield* port.connection(id)
      })),
    deleteConnection: (id) =>
      storeCall(sql.withTransaction(Effect.asVoid(Effect.zipRight(
        sql`UPDATE data_sources SET connection_id = NULL WHERE connection_id = ${id}`,
        sql`DELETE FROM connections WHERE id = ${id}`
      ))))
  }
  return port
}
