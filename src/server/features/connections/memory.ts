/**
 * The memory store's `ConnectionStore` port: the connections of one memory store, beside the
 * core's state (`core/store/memory/state.ts`) they are made from. One function per method, each
 * taking the state first; `make` assembles them.
 *
 * A connection's count of data sources is read from the core's data sources, and deleting one
 * clears it from them: this feature's steps on the core's data (as its SQL is), so that the
 * core need not know connections exist.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../core/clock.js"
import { canSee } from "../../core/permissions.js"
import { matchesSearch } from "../../core/store/order.js"
import { portOf } from "../../core/store/Stores.js"
import { type MemoryState, patchEntry, slice } from "../../core/store/memory/state.js"
import type { Connection, ConnectionPatch, ConnectionQuery, ConnectionStoreService, NewConnection } from "./store.js"

/**
 * The connections of one memory store, with the core's state they belong to.
 *
 * @since 0.1.0
 * @category models
 */
export interface ConnectionsState {
  readonly core: MemoryState
  readonly connections: Map<number, Connection>
  readonly ids: () => number
}

/**
 * No connections yet, over `core`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeState = (core: MemoryState): ConnectionsState => ({ core, connections: new Map(), ids: core.counter() })

const withCount = ({ core }: ConnectionsState, connection: Connection): Connection => {
  let dataSourcesCount = 0
  for (const source of core.dataSources.values()) if (source.connectionId === connection.id) dataSourcesCount++
  return { ...connection, dataSourcesCount }
}

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureConnection = (state: ConnectionsState, input: NewConnection) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const existing = [...state.connections.values()].find((c) =>
      c.organizationId === input.organizationId && c.name === input.name
    )
    if (existing !== undefined) return withCount(state, existing)
    const connection: Connection = { ...input, id: state.ids(), createdAt: isoTimestamp(now), dataSourcesCount: 0 }
    state.connections.set(connection.id, connection)
    return connection
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const connection = (state: ConnectionsState, id: number) =>
  Effect.sync(() => Option.map(Option.fromNullable(state.connections.get(id)), (c) => withCount(state, c)))

/**
 * @since 0.1.0
 * @category utils
 */
export const listConnections = (state: ConnectionsState, query: ConnectionQuery) =>
  Effect.sync(() => {
    const visible = [...state.connections.values()].filter((c) =>
      canSee(query.viewer, { ...c, createdBy: c.managedBy ?? { id: -1 } }) && matchesSearch(c.name, query.search)
    )
    const page = slice(visible, query)
    return { ...page, items: page.items.map((c) => withCount(state, c)) }
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const updateConnection = (state: ConnectionsState, id: number, patch: ConnectionPatch) =>
  Effect.sync(() => Option.map(patchEntry(state.connections, id, patch), (updated) => withCount(state, updated)))

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteConnection = ({ connections, core: { dataSources } }: ConnectionsState, id: number) =>
  Effect.sync(() => {
    connections.delete(id)
    for (const source of dataSources.values()) {
      if (source.connectionId === id) dataSources.set(source.id, { ...source, connectionId: null })
    }
  })

/**
 * The port over the core's `state`, with connections of its own.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): ConnectionStoreService =>
  portOf<ConnectionsState, ConnectionStoreService>(makeState(state), {
    ensureConnection,
    connection,
    listConnections,
    updateConnection,
    deleteConnection
  })
