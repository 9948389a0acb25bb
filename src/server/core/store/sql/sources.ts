/**
 * The Postgres store's `SourceStore` port, over the store's shared state: one function per
 * method, each taking the state first; `make` assembles them.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../clock.js"
import { newDataset } from "../entities.js"
import {
  type Creator,
  type DataSource,
  type DataSourcePatch,
  type DataSourceQuery,
  type Dataset,
  type DatasetPatch,
  type DatasetQuery,
  type DatasetRef,
  type NewDataSource,
  type NewDataset
} from "../Store.js"
import { portOf } from "../Stores.js"
import type { SourceStoreService } from "../ports/sources.js"
import type { SqlState } from "./state.js"
import { storeCall, type DataSourceRecord, toDataSource, type DatasetRecord, toDataset } from "./records.js"

/**
 * @since 0.1.0
 * @category utils
 */
export const createDataSource = ({ json, sql }: SqlState, input: NewDataSource) =>
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
    )))

/**
 * @since 0.1.0
 * @category utils
 */
export const dataSource = ({ byId, dataSourceSelect, sql }: SqlState, id: number) =>
  storeCall(Effect.map(sql<DataSourceRecord>`${dataSourceSelect} WHERE s.id = ${id}`, (rows) => byId(rows, toDataSource)))

/**
 * @since 0.1.0
 * @category utils
 */
export const listDataSources = (
  { dataSourceSelect, listOrder, searchIn, sql, visibleTo }: SqlState,
  query: DataSourceQuery
) => {
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
}

/**
 * @since 0.1.0
 * @category utils
 */
export const updateDataSource = (state: SqlState, id: number, patch: DataSourcePatch) => {
  const { sql, json } = state
  return storeCall(Effect.gen(function*() {
    const rows = yield* sql<{ id: number }>`UPDATE data_sources SET
      name = coalesce(${patch.name ?? null}, name),
      timezone = coalesce(${patch.timezone ?? null}, timezone),
      sync_interval = ${patch.syncInterval === undefined ? sql`sync_interval` : sql`${patch.syncInterval}`},
      permissions = coalesce(${patch.permissions === undefined ? null : json(patch.permissions)}::jsonb, permissions)
      WHERE id = ${id} RETURNING id`
    if (rows.length === 0) return Option.none()
    return yield* dataSource(state, id)
  }))
}

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteDataSource = ({ sql }: SqlState, id: number) =>
  storeCall(Effect.asVoid(sql`DELETE FROM data_sources WHERE id = ${id}`))

/**
 * @since 0.1.0
 * @category utils
 */
export const purgeDataSource = ({ purgeWhere, sql }: SqlState, id: number) =>
  storeCall(purgeWhere(sql`data_source_id = ${id}`))

/**
 * @since 0.1.0
 * @category utils
 */
export const createDataset = ({ json, sql }: SqlState, input: NewDataset) =>
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
  }))

/**
 * @since 0.1.0
 * @category utils
 */
export const dataset = ({ byId, datasetSelect, sql }: SqlState, id: DatasetRef) =>
  storeCall(Effect.map(
    sql<DatasetRecord>`${datasetSelect} WHERE ${typeof id === "number" ? sql`d.number = ${id}` : sql`d.id = ${id}::uuid`}`,
    (rows) => byId(rows, toDataset)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const listDatasets = ({ datasetSelect, listOrder, searchIn, sql, visibleTo }: SqlState, query: DatasetQuery) => {
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
}

/**
 * @since 0.1.0
 * @category utils
 */
export const updateDataset = (state: SqlState, id: string, patch: DatasetPatch) => {
  const { sql, json } = state
  return storeCall(Effect.gen(function*() {
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
    return yield* dataset(state, id)
  }))
}

/**
 * @since 0.1.0
 * @category utils
 */
export const updateDatasetsOfDataSource = (
  { sql }: SqlState,
  dataSourceId: number,
  patch: Pick<DatasetPatch, "timezone">
) =>
  storeCall(
    patch.timezone === undefined
      ? Effect.void
      : Effect.asVoid(sql`UPDATE datasets SET timezone = ${patch.timezone} WHERE data_source_id = ${dataSourceId}`)
  )

/**
 * @since 0.1.0
 * @category utils
 */
export const duplicateDataset = (state: SqlState, id: string, name: string, createdBy: Creator) => {
  const { sql, json } = state
  return storeCall(sql.withTransaction(Effect.gen(function*() {
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
    return yield* dataset(state, copyId)
  })))
}

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteDataset = ({ sql }: SqlState, id: string) =>
  storeCall(Effect.asVoid(sql`DELETE FROM datasets WHERE id = ${id}::uuid`))

/**
 * @since 0.1.0
 * @category utils
 */
export const purgeDataset = ({ purgeWhere, sql }: SqlState, id: string) =>
  storeCall(Effect.asVoid(purgeWhere(sql`id = ${id}::uuid`)))

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): SourceStoreService =>
  portOf<SqlState, SourceStoreService>(state, {
    createDataSource,
    dataSource,
    listDataSources,
    updateDataSource,
    deleteDataSource,
    purgeDataSource,
    createDataset,
    dataset,
    listDatasets,
    updateDataset,
    updateDatasetsOfDataSource,
    duplicateDataset,
    deleteDataset,
    purgeDataset
  })
