/**
 * The server's durable store: the core's ports and the features' own on one Postgres database
 * (`core/store/sql.ts`: client, migrations and the shared state; each feature's `sql.ts` over
 * the same state).
 *
 * @since 0.1.0
 */
import { Config, Effect, Layer } from "effect"
import * as CoreSql from "../core/store/sql.js"
import type { SqlStoreOptions } from "../core/store/sql/records.js"
import type { SqlState } from "../core/store/sql/state.js"
import type { StoreError } from "../core/errors.js"
import * as ActivitySql from "./activity/sql.js"
import * as ConnectionsSql from "./connections/sql.js"
import * as MetricsSql from "./metrics/sql.js"
import { contextOf, type ServerStores, type ServerStoreService } from "./stores.js"

export { defaultSchema, type SqlStoreOptions } from "../core/store/sql/records.js"

const portsOf = (state: SqlState): ServerStoreService => ({
  ...CoreSql.portsOf(state),
  ...MetricsSql.make(state),
  ...ConnectionsSql.make(state),
  ...ActivitySql.make(state)
})

/**
 * The Postgres store: connects, migrates, and serves every port from the database at `url`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: SqlStoreOptions): Layer.Layer<ServerStores, StoreError> =>
  CoreSql.layerWith(options, (state) => contextOf(portsOf(state)))

/**
 * The Postgres store from `TRIBUTARY_DATABASE_URL` (and `TRIBUTARY_DATABASE_SCHEMA`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = Layer.unwrapEffect(
  Effect.map(
    Config.all({
      url: Config.redacted("TRIBUTARY_DATABASE_URL"),
      schema: Config.string("TRIBUTARY_DATABASE_SCHEMA").pipe(Config.withDefault(CoreSql.defaultSchema))
    }),
    layer
  )
)
