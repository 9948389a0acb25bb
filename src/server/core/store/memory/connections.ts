/**
 * The memory store's `ConnectionStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../clock.js"
import { canSee } from "../../permissions.js"
import { matchesSearch } from "../order.js"
import { type Connection } from "../Store.js"
import type { ConnectionStoreService } from "../ports/connections.js"
import { type MemoryState, slice } from "./state.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): ConnectionStoreService => {
  const { dataSources, connections, connectionIds, withCount } = state
  const port: ConnectionStoreService = {
    ensureConnection: (input) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const existing = [...connections.values()].find((c) => c.organizationId === input.organizationId && c.name === input.name)
        if (existing !== undefined) return withCount(existing)
        const connection: Connection = { ...input, id: connectionIds(), createdAt: isoTimestamp(now), dataSourcesCount: 0 }
        connections.set(connection.id, connection)
        return connection
      }),
    connection: (id) => Effect.sync(() => Option.map(Option.fromNullable(connections.get(id)), withCount)),
    listConnections: (query) =>
      Effect.sync(() => {
        const visible = [...connections.values()].filter((c) =>
          canSee(query.viewer, { ...c, createdBy: c.managedBy ?? { id: -1 } }) && matchesSearch(c.name, query.search)
        )
        const page = slice(visible, query)
        return { ...page, items: page.items.map(withCount) }
      }),
    updateConnection: (id, patch) =>
      Effect.sync(() => {
        const connection = connections.get(id)
        if (connection === undefined) return Option.none()
        const updated = { ...connection, ...patch }
        connections.set(id, updated)
        return Option.some(withCount(updated))
      }),
    deleteConnection: (id) =>
      Effect.sync(() => {
        connections.delete(id)
        for (const source of dataSources.values()) {
          if (source.connectionId === id) dataSources.set(source.id, { ...source, connectionId: null })
        }
      })
  }
  return port
}
