/**
 * The Postgres store's `MetricStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../clock.js"
import { type Metric } from "../Store.js"
import type { MetricStoreService } from "../ports/metrics.js"
import type { SqlState } from "./state.js"
import { storeCall, type MetricRecord, toMetric, metricColumns } from "./records.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): MetricStoreService => {
  const { sql, json, visibleTo, direction, byId } = state
  const port: MetricStoreService = {
    createMetric: (input) =>
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
      })),
    metric: (id) =>
      storeCall(Effect.map(
        sql<MetricRecord>`SELECT ${sql.literal(metricColumns)} FROM metrics m WHERE m.id = ${id}`,
        (rows) => byId(rows, toMetric)
      )),
    listMetrics: (query) => {
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
    },
    updateMetric: (id, patch) =>
      storeCall(Effect.gen(function*() {
        const jsonOrKeep = (value: unknown, column: string) =>
          value === undefined ? sql.literal(column) : sql`${value === null ? null : json(value)}::jsonb`
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
        return yield* port.metric(id)
      })),
    deleteMetric: (id) => storeCall(Effect.asVoid(sql`DELETE FROM metrics WHERE id = ${id}`))
  }
  return port
}
