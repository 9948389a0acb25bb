/**
 * The connections feature's store port and its model: the credentials a data source of an
 * integration syncs through, kept by the store the core's ports are kept by (`memory.ts`,
 * `sql.ts` beside this). `ensureConnection` is idempotent by organization and name (seeding).
 *
 * A data source names its connection by id (`DataSource.connectionId`, the core's); the core
 * reads nothing else of connections. Creating a data source through a connection takes the
 * connection from the caller (`core/catalog/dataSources.ts`, `CreateDataSource.connection`),
 * which finds it here; deleting a connection clears the id on its data sources (this feature's
 * step, on the core's data).
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "../../core/errors.js"
import type { Creator, Page, Permissions, Slice, Viewer } from "../../core/store/Store.js"

/**
 * A connection: the credentials a data source of an integration syncs through. Seen as a data
 * source is (`canSee`, its manager as the creator); only its manager deletes it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Connection {
  readonly id: number
  readonly organizationId: number
  readonly name: string
  readonly integrationKey: string | null
  /** The owner; null for one nobody manages any more. */
  readonly managedBy: Creator | null
  readonly sharedWithAccounts: boolean
  readonly permissions: Permissions
  readonly createdAt: string | null
  /** `active`, or `error` for credentials the integration refused. */
  readonly status: "active" | "error"
  /** How many data sources sync through it. */
  readonly dataSourcesCount: number
}

/**
 * @since 0.1.0
 * @category models
 */
export type NewConnection = Omit<Connection, "id" | "createdAt" | "dataSourcesCount">

/**
 * @since 0.1.0
 * @category models
 */
export type ConnectionPatch = Partial<Pick<Connection, "name" | "permissions" | "sharedWithAccounts">>

/**
 * @since 0.1.0
 * @category models
 */
export interface ConnectionQuery extends Slice {
  readonly viewer: Viewer
  /** Case-insensitive substring of the name. */
  readonly search?: string | undefined
}

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
