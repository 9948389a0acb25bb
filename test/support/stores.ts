/**
 * The stores the conformance and HTTP suites run against: the memory store, and the Postgres
 * store on the test database (a schema of its own per layer, dropped when the layer ends).
 */
import { randomBytes } from "node:crypto"
import { Effect, Layer, Redacted, Schedule } from "effect"
import pg from "pg"
import * as MemoryStore from "../../src/server/features/memoryStore.js"
import * as SqlStore from "../../src/server/features/sqlStore.js"
import { type ServerStores } from "../../src/server/features/stores.js"
import type { StoreError } from "../../src/server/core/errors.js"
import { databaseUrl } from "./services.js"

/** A fresh schema name. */
export const freshSchema = () => `t_${randomBytes(6).toString("hex")}`

/** Runs one statement on the test database with a connection of its own. */
export const adminQuery = (text: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: databaseUrl() })
    await client.connect()
    try {
      return await client.query(text)
    } finally {
      await client.end()
    }
  })

/**
 * Drops a schema with everything in it when the scope closes. Postgres may end the drop as the
 * loser of a deadlock with the last queries of a store still closing on it ("deadlock
 * detected", seen in test/server/ingestion-order.test.ts on a loaded machine): it is tried
 * again a few times, and a drop that still fails fails no test (it only leaves the schema).
 */
export const dropSchemaAfterwards = (schema: string) =>
  Effect.addFinalizer(() =>
    adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).pipe(
      Effect.sandbox,
      Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.intersect(Schedule.recurs(5)))),
      Effect.ignore
    )
  )

/** The Postgres store in a fresh schema (or `schema`), dropped when the layer ends unless `keep`. */
export const sqlStoreLayer = (
  options: { readonly schema?: string; readonly keep?: boolean } = {}
): Layer.Layer<ServerStores, StoreError> => {
  const schema = options.schema ?? freshSchema()
  const store = SqlStore.layer({ url: Redacted.make(databaseUrl()), schema, maxConnections: 5 })
  return options.keep === true ? store : Layer.provideMerge(store, Layer.scopedDiscard(dropSchemaAfterwards(schema)))
}

/** @since 0.1.0 */
export type StoreKind = "memory" | "postgres"

/** The store of a kind, fresh. */
export const storeLayer = (kind: StoreKind): Layer.Layer<ServerStores, StoreError> =>
  kind === "memory" ? MemoryStore.layer : sqlStoreLayer()

/**
 * The store the HTTP suites use: `TRIBUTARY_TEST_STORE=postgres` runs them on the Postgres
 * store (the `postgres` vitest project does), the memory store otherwise.
 */
export const testStoreKind = (): StoreKind => process.env["TRIBUTARY_TEST_STORE"] === "postgres" ? "postgres" : "memory"
