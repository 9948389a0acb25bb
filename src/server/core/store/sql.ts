/**
 * The durable store: everything in Postgres (`@effect/sql-pg`), so that a restart keeps it
 * and several server processes on one database behave as one service.
 *
 * - Tables live in a schema of their own (`tributary` by default), created with the
 *   migrations at start-up; start-ups of several processes at once take turns on an advisory
 *   lock.
 * - Lists, rows pages and sorts are queries: filter, sort and page in SQL.
 * - The ingestion queue is the `ingestions` table, in `seq` order per dataset (the order of
 *   acceptance): a worker claims the oldest pending ingestion of a dataset, when it is queued
 *   (or its lease ran out) and due, with the ones after it, under `FOR UPDATE SKIP LOCKED`;
 *   a dataset whose oldest pending ingestion is held gives nothing, so one batch of a dataset
 *   is in flight at a time. It completes them in one transaction that holds the dataset's row
 *   lock, checks the leases are still its own and that nothing accepted before them is still
 *   pending, so that every accepted ingestion ends exactly once, in order, whichever process
 *   finishes it. A new ingestion wakes this process's workers at once and is announced to
 *   the other processes with `NOTIFY` once it has committed (a NOTIFY holds a lock through its
 *   transaction's commit, so one per request made the requests' commits go one at a time: one
 *   NOTIFY is under way at a time, carrying every announcement made meanwhile; inside an
 *   idempotent request's transaction it goes with the ingestion's statement, delivered at
 *   commit), so that idle workers of every process wake at once; they also look every second,
 *   for leases that ran out, and wake when the next delayed ingestion (`processing` fault)
 *   comes due.
 * - Idempotency: the claim is an insert into a table keyed by the request's scope, in the
 *   same transaction as the request's own writes. A second request with the same key waits on
 *   the first one's uncommitted row and then reads its answer: never two executions.
 * - The features' own ports (`features/<feature>/sql.ts`) work on the same client and state
 *   (`layerWith`); the server's whole Postgres store is `features/sqlStore.ts`. Their tables
 *   are made by the migrations here all the same: the schema's history is one sequence, each
 *   step recorded in the database by its id, so it cannot be split by feature after release.
 *   What a feature keeps under a dataset goes with it by the schema's `ON DELETE CASCADE`.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { type Context, Effect, Layer, Redacted } from "effect"
import * as Pg from "pg"
import { migrations } from "./migrations.js"
import { StoreError } from "../errors.js"
import { contextOf, type Stores, type StoreService } from "./Stores.js"
import { makeState, type SqlState } from "./sql/state.js"
import { make as catalog } from "./sql/catalog.js"
import { make as sources } from "./sql/sources.js"
import { make as ingestions } from "./sql/ingestions.js"
import { type SqlStoreOptions, defaultSchema, migrationLock, toStoreError } from "./sql/records.js"

export { defaultSchema, type SqlStoreOptions, sortKeyOf } from "./sql/records.js"

/**
 * The core's ports over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const portsOf = (state: SqlState): StoreService => ({
  ...catalog(state),
  ...sources(state),
  ...ingestions(state)
})

const schemaName = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * A Postgres client whose connections put `schema` first on their search path.
 *
 * @since 0.1.0
 * @category layers
 */
export const clientLayer = (options: SqlStoreOptions): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, StoreError> => {
  const schema = options.schema ?? defaultSchema
  if (!schemaName.test(schema)) {
    return Layer.fail(new StoreError({ reason: "Failed", message: `invalid schema name "${schema}": lower-case letters, digits and _` }))
  }
  return Layer.mapError(PgClient.layerFromPool({
    acquire: Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new Pg.Pool({
          connectionString: Redacted.value(options.url),
          max: options.maxConnections ?? 10,
          connectionTimeoutMillis: 5_000,
          options: `-c search_path=${schema}`,
          application_name: "tributary"
        })
        // An idle connection that the database drops is an 'error' event on the pool: without a
        // listener it would end the process. The next query opens a new connection instead.
        pool.on("error", () => undefined)
        return pool
      }),
      (pool) => Effect.promise(() => pool.end())
    )
  }), toStoreError)
}

/**
 * Creates the schema and runs the migrations, one process at a time.
 *
 * @since 0.1.0
 * @category utils
 */
export const migrate = (schema: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(${migrationLock})`
        yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`
        // The migrator would find out whether its table exists with a query that fails when it
        // does not, and a failed query ends the transaction this runs in: made here first.
        yield* sql`CREATE TABLE IF NOT EXISTS tributary_migrations (
          migration_id integer PRIMARY KEY,
          created_at timestamp with time zone NOT NULL DEFAULT now(),
          name text NOT NULL
        )`
        return yield* Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "tributary_migrations" })
      })
    ))

/**
 * A Postgres store whose ports are what `contextOf` makes of its state (the core's and others
 * over the same client): connects, migrates, and serves from the database at `url`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = <R>(
  options: SqlStoreOptions,
  contextOf: (state: SqlState) => Context.Context<R>
): Layer.Layer<R, StoreError> =>
  Layer.scopedContext(
    migrate(options.schema ?? defaultSchema).pipe(
      Effect.mapError((error) =>
        error._tag === "SqlError"
          ? toStoreError(error)
          : new StoreError({ reason: "Failed", message: `migrations failed: ${error.message}`, cause: error })
      ),
      Effect.zipRight(makeState),
      Effect.map(contextOf)
    )
  ).pipe(Layer.provide(clientLayer(options)))

/**
 * The Postgres store of the core's ports.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: SqlStoreOptions): Layer.Layer<Stores, StoreError> =>
  layerWith(options, (state) => contextOf(portsOf(state)))
