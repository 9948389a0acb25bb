/**
 * The store's port for connections, the credentials a data source of an integration syncs through
 * (the connections feature's own). `ensureConnection` is idempotent by organization and name
 * (seeding).
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "../../errors.js"
import type {
  Connection,
  ConnectionPatch,
  ConnectionQuery,
  NewConnection,
  Page
} from "../Store.js"

/**
 * Every method is atomic; who may do what is the services' concern.
 *
 * @since 0.1.0
 * @category models
 */
export interface ConnectionStoreService {
  readonly ensureConnection: (input: NewConnection) => Effect.Effect<Connection, StoreError>

  readonly connection: (id: number) => Effect.Effect<Option.Option<Connection>, StoreError>

  readonly listConnections: (query: ConnectionQuery) => Effect.Effect<Page<Connection>, StoreError>

  readonly updateConnection: (id: number, patch: ConnectionPatch) => Effect.Effect<Option.Option<Connection>, StoreError>

  /** Deletes it; its data sources stay, without a connection. */
  readonly deleteConnection: (id: number) => Effect.Effect<void, StoreError>
}

/**
 * @since 0.1.0
 * @category services
 */
export class ConnectionStore extends Context.Tag("tributary/server/ConnectionStore")<ConnectionStore, ConnectionStoreService>() {}
