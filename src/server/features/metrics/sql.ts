/**
 * The Postgres store's `MetricStore` port, over the core's store state (`core/store/sql/state.ts`:
 * the client and its shared fragments). One function per method, each taking the state first;
 * `make` assembles them.
 *
 * A metric goes with its dataset by the schema (`metrics.dataset_id REFERENCES datasets ON DELETE
 * CASCADE`, migration `3_metrics_connections`): the core deletes datasets without knowing of
 * metrics. A metric is seen by whoever sees its dataset: lists join the dataset and use the
 * core's visibility fragment.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../core/clock.js"
import { portOf } from "../../core/store/Stores.js"
import type { SqlState } from "../../core/store/sql/state.js"
import { storeCall } from "../../core/store/sql/records.js"
import type { Metric, MetricPatch, MetricQuery, MetricStoreService, NewMetric } from "./store.js"

/**
 * A metric as the database holds it.
 *
 * @since 0.1.0
 * @category models
 */
export interface MetricRecord {
  readonly id: string
  readonly organization_id: number
  readonly data_source_id: number
  readonly dataset_id: string
  readonly name: string
  readonly measure: Metric["measure"]
  readonly date: Metric["date"]
  readonly aggregation_function: Metric["aggregationFunction"]
  readonly dimensions: Metric["dimensions"]
  readonly filters: Metric["filters"]
  readonly verification: Metric["verification"]
  readonly created_at: string
  readonly created_by: Metric["createdBy"]
}

/**
 * @since 0.1.0
 * @category utils
 */
export const toMetric = (r: MetricRecord): Metric => ({
  id: r.id,
  organizationId: r.organization_id,
  dataSourceId: r.data_source_id,
  datasetId: r.dataset_id,
  name: r.name,
  measure: r.measure,
  date: r.date,
  aggregationFunction: r.aggregation_function,
  dimensions: r.dimensions,
  filters: r.filters,
  verification: r.verification,
  createdAt: r.created_at,
  createdBy: r.created_by
})

const metricColumns = "m.id, m.organization_id, m.data_source_id, m.dataset_id, m.name, m.measure, m.date, " +
  "m.aggregation_function, m.dimensions, m.filters, m.verification, m.created_at, m.created_by"

/**
 * @since 0.1.0
 * @category utils
 */
export const createMetric = ({ json, sql }: SqlState, input: NewMetric) =>
  storeCall(Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const [next] = yield* sql<{ n: number }>`SELECT nextval(pg_get_serial_sequence('metrics', 'ordinal'))::float8 AS n`
    const metric: Metric = { ...input, id: `${input.dataSourceId}|custom_query_${next!.n}`, createdAt: isoTimestamp(now) }
    yield* sql`INSERT INTO metrics (id, ordinal, organization_id, data_source_id, dataset_id, name, measure, date,
        aggregation_function, dimensions, filters, verification, created_at, created_by)
      VALUES (${metric.id}, ${next!.n}, ${metric.organizationId}, ${metric.dataSourceId}, ${metric.datasetId}, ${metric.name},
        ${json(metric.measure)}::jsonb, ${json(metric.date)}::jsonb, ${metric.aggregationFunction},
        ${json(metric.dimensions)}::jsonb, ${metric.filters === null ? null : json(metric.filters)}::jsonb,
        ${json(metric.verification)}::jsonb, ${metric.createdAt}, ${json(metric.createdBy)}::jsonb)`
    return metric
  }))

/**
 * @since 0.1.0
 * @category utils
 */
export const metric = ({ byId, sql }: SqlState, id: string) =>
  storeCall(Effect.map(
    sql<MetricRecord>`SELECT ${sql.literal(metricColumns)} FROM metrics m WHERE m.id = ${id}`,
    (rows) => byId(rows, toMetric)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const listMetrics = ({ direction, sql, visibleTo }: SqlState, query: MetricQuery) => {
  // Seen with their dataset: the dataset's visibility decides.
  const where = sql`${visibleTo("d", query.viewer)}
    AND ${query.dataSourceId === undefined ? sql`true` : sql`m.data_source_id = ${query.dataSourceId}`}
    AND ${query.datasetId === undefined ? sql`true` : sql`m.dataset_id = ${query.datasetId}`}
    AND ${
    query.search === undefined
      ? sql`true`
      : sql`(strpos(lower(m.name), lower(${query.search})) > 0 OR strpos(lower(m.id), lower(${query.search})) > 0)`
  }`
  const sort = query.sort
  const order = sort === undefined
    ? sql.literal("m.ordinal")
    : sql`${sql.literal(sort.by === "name" ? "m.name COLLATE tributary_base" : "m.created_at")} ${direction(sort.order)}, m.ordinal`
  return storeCall(Effect.all({
    items: Effect.map(
      sql<MetricRecord>`SELECT ${sql.literal(metricColumns)} FROM metrics m JOIN datasets d ON d.id = m.dataset_id
        WHERE ${where} ORDER BY ${order} LIMIT ${query.limit} OFFSET ${query.offset}`,
      (rows) => rows.map(toMetric)
    ),
    totalItems: Effect.map(
      sql<{ total: number }>`SELECT count(*)::int AS total FROM metrics m JOIN datasets d ON d.id = m.dataset_id WHERE ${where}`,
      ([r]) => r!.total
    )
  }))
}

/**
 * @since 0.1.0
 * @category utils
 */
export const updateMetric = (state: SqlState, id: string, patch: MetricPatch) => {
  const { json, sql } = state
  const jsonOrKeep = (value: unknown, column: string) =>
    value === undefined ? sql.literal(column) : sql`${value === null ? null : json(value)}::jsonb`
  return storeCall(Effect.gen(function*() {
    const rows = yield* sql<{ id: string }>`UPDATE metrics SET
      name = coalesce(${patch.name ?? null}, name),
      measure = ${jsonOrKeep(patch.measure, "measure")},
      date = ${jsonOrKeep(patch.date, "date")},
      aggregation_function = coalesce(${patch.aggregationFunction ?? null}, aggregation_function),
      dimensions = ${jsonOrKeep(patch.dimensions, "dimensions")},
      filters = ${jsonOrKeep(patch.filters, "filters")},
      verification = ${jsonOrKeep(patch.verification, "verification")}
      WHERE id = ${id} RETURNING id`
    if (rows.length === 0) return Option.none()
    return yield* metric(state, id)
  }))
}

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteMetric = ({ sql }: SqlState, id: string) => storeCall(Effect.asVoid(sql`DELETE FROM metrics WHERE id = ${id}`))

/**
 * The port over the core's `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): MetricStoreService =>
  portOf<SqlState, MetricStoreService>(state, { createMetric, metric, listMetrics, updateMetric, deleteMetric })
