/**
 * The Postgres store's `SourceStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../clock.js"
import { newDataset } from "../entities.js"
import { type DataSource, type Dataset } from "../Store.js"
import type { SourceStoreService } from "../ports/sources.js"
import type { SqlState } from "./state.js"
import { storeCall, type DataSourceRecord, toDataSource, type DatasetRecord, toDataset } from "./records.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): SourceStoreService => {
  const {
    sql, json, datasetSelect, dataSourceSelect, visibleTo, searchIn, listOrder, byId, purgeWhere
  } = state
  const port: SourceStoreService = {
    createDataSource: (input) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(
          sql<{ id: number }>`INSERT INTO data_sources
            (organization_id, account_id, name, timezone, created_at, key, created_by, sync_interval, permissions, connection_id)
            VALUES (${input.organizationId}, ${input.accountId}, ${input.name}, ${input.timezone}, ${isoTimestamp(now)},
              ${input.key}, ${json(input.createdBy)}::jsonb, ${input.syncInterval}, ${json(input.permissions)}::jsonb,
              ${input.connectionId ?? null})
            RETURNING id`,
          ([r]): DataSource => ({
            ...input,
            connectionId: input.connectionId ?? null,
            id: r!.id,
            createdAt: isoTimestamp(now),
            lastActivityAt: null
          })
        ))),
    dataSource: (id) =>
      storeCall(Effect.map(sql<DataSourceRecord>`${dataSourceSelect} WHERE s.id = ${id}`, (rows) => byId(rows, toDataSource))),
    listDataSources: (query) => {
      const where = sql`${visibleTo("s", query.viewer)} AND ${searchIn("s", query.search)}
        AND ${query.accountId === undefined ? sql`true` : sql`s.account_id = ${query.accountId}`}
        AND ${query.connectionId === undefined ? sql`true` : sql`s.connection_id = ${query.connectionId}`}`
      return storeCall(Effect.all({
        items: Effect.map(
          sql<DataSourceRecord>`SELECT * FROM (${dataSourceSelect}) s WHERE ${where}
            ORDER BY ${listOrder(query, "s", "s.last_activity_at", "s.id")}
            LIMIT ${query.limit} OFFSET ${query.offset}`,
          (rows) => rows.map(toDataSource)
        ),
        totalItems: Effect.map(sql<{ total: number }>`SELECT count(*)::int AS total FROM data_sources s WHERE ${where}`, ([r]) => r!.total)
      }))
    },
    updateDataSource: (id, patch) =>
      storeCall(Effect.gen(function*() {
        const rows = yield* sql<{ id: number }>`UPDATE data_sources SET
          name = coalesce(${patch.name ?? null}, name),
          timezone = coalesce(${patch.timezone ?? null}, timezone),
          sync_interval = ${patch.syncInterval === undefined ? sql`sync_interval` : sql`${patch.syncInterval}`},
          permissions = coalesce(${patch.permissions === undefined ? null : json(patch.permissions)}::jsonb, permissions)
          WHERE id = ${id} RETURNING id`
        if (rows.length === 0) return Option.none()
        return yield* port.dataSource(id)
      })),
    deleteDataSource: (id) => storeCall(Effect.asVoid(sql`DELETE FROM data_sources WHERE id = ${id}`)),
    purgeDataSource: (id) => storeCall(purgeWhere(sql`data_source_id = ${id}`)),
    createDataset: (input) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) => {
        // The number comes from the database's id space (the column's default), shared with data sources.
        const dataset = newDataset(input, now, 0)
        return Effect.map(
          sql<{ number: number }>`INSERT INTO datasets (id, organization_id, data_source_id, name, created_at, primary_key, schema,
              created_by, timezone, sync_interval, permissions, verification, metadata, column_metadata)
            VALUES (${dataset.id}, ${dataset.organizationId}, ${dataset.dataSourceId}, ${dataset.name}, ${dataset.createdAt},
              ${json(dataset.primaryKey)}::jsonb, ${json(dataset.schema)}::jsonb, ${json(dataset.createdBy)}::jsonb,
              ${dataset.timezone}, ${dataset.syncInterval}, ${json(dataset.permissions)}::jsonb,
              ${json(dataset.verification)}::jsonb, ${json(dataset.metadata)}::jsonb, ${json(dataset.columnMetadata)}::jsonb)
            RETURNING number`,
          ([r]): Dataset => ({ ...dataset, number: r!.number })
        )
      })),
    dataset: (id) =>
      storeCall(Effect.map(
        sql<DatasetRecord>`${datasetSelect} WHERE ${typeof id === "number" ? sql`d.number = ${id}` : sql`d.id = ${id}::uuid`}`,
        (rows) => byId(rows, toDataset)
      )),
    listDatasets: (query) => {
      const where = sql`${visibleTo("d", query.viewer)} AND ${searchIn("d", query.search)}
        AND ${query.dataSourceId === undefined ? sql`true` : sql`d.data_source_id = ${query.dataSourceId}`}
        AND ${
        query.accountId === undefined
          ? sql`true`
          : sql`d.data_source_id IN (SELECT id FROM data_sources WHERE account_id = ${query.accountId})`
      }`
      return storeCall(Effect.all({
        items: Effect.map(
          sql<DatasetRecord>`${datasetSelect} WHERE ${where}
            ORDER BY ${listOrder(query, "d", "l.initiated_at", "d.ordinal")}
            LIMIT ${query.limit} OFFSET ${query.offset}`,
          (rows) => rows.map(toDataset)
        ),
        totalItems: Effect.map(sql<{ total: number }>`SELECT count(*)::int AS total FROM datasets d WHERE ${where}`, ([r]) => r!.total)
      }))
    },
    updateDataset: (id, patch) =>
      storeCall(Effect.gen(function*() {
        const jsonOrKeep = (value: unknown, column: string) =>
          value === undefined ? sql.literal(column) : sql`${json(value)}::jsonb`
        const rows = yield* sql<{ id: string }>`UPDATE datasets SET
          name = coalesce(${patch.name ?? null}, name),
          timezone = ${patch.timezone === undefined ? sql`timezone` : sql`${patch.timezone}`},
          sync_interval = ${patch.syncInterval === undefined ? sql`sync_interval` : sql`${patch.syncInterval}`},
          permissions = ${jsonOrKeep(patch.permissions, "permissions")},
          verification = ${jsonOrKeep(patch.verification, "verification")},
          metadata = ${jsonOrKeep(patch.metadata, "metadata")},
          column_metadata = ${jsonOrKeep(patch.columnMetadata, "column_metadata")},
          modifications = ${jsonOrKeep(patch.modifications, "modifications")}
          WHERE id = ${id}::uuid RETURNING id`
        if (rows.length === 0) return Option.none()
        return yield* port.dataset(id)
      })),
    updateDatasetsOfDataSource: (dataSourceId, patch) =>
      storeCall(
        patch.timezone === undefined
          ? Effect.void
          : Effect.asVoid(sql`UPDATE datasets SET timezone = ${patch.timezone} WHERE data_source_id = ${dataSourceId}`)
      ),
    duplicateDataset: (id, name, createdBy) =>
      storeCall(sql.withTransaction(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const copyId = randomUUID()
        const copied = yield* sql`INSERT INTO datasets (id, organization_id, data_source_id, name, created_at, primary_key,
            schema, created_by, timezone, sync_interval, permissions, verification, metadata, column_metadata,
            modifications, row_count, size, next_seq)
          SELECT ${copyId}::uuid, organization_id, data_source_id, ${name}, ${isoTimestamp(now)}, primary_key, schema,
            ${json(createdBy)}::jsonb, timezone, sync_interval, permissions, verification, metadata, column_metadata,
            modifications, row_count, size, next_seq
          FROM datasets WHERE id = ${id}::uuid FOR SHARE
          RETURNING id`
        if (copied.length === 0) return Option.none()
        yield* sql`INSERT INTO dataset_rows (dataset_id, seq, key, data, size)
          SELECT ${copyId}::uuid, seq, key, data, size FROM dataset_rows WHERE dataset_id = ${id}::uuid`
        return yield* port.dataset(copyId)
      }))),
    deleteDataset: (id) => storeCall(Effect.asVoid(sql`DELETE FROM datasets WHERE id = ${id}::uuid`)),
    purgeDataset: (id) => storeCall(Effect.asVoid(purgeWhere(sql`id = ${id}::uuid`)))
  }
  return port
}
