/**
 * The memory store's `MetricStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../clock.js"
import { canSee } from "../../permissions.js"
import { sortedBy } from "../order.js"
import { type Metric } from "../Store.js"
import type { MetricStoreService } from "../ports/metrics.js"
import { type MemoryState, slice } from "./state.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): MetricStoreService => {
  const { datasets, metrics, metricKeys } = state
  const port: MetricStoreService = {
    createMetric: (input) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const metric: Metric = {
          ...input,
          id: `${input.dataSourceId}|custom_query_${metricKeys()}`,
          createdAt: isoTimestamp(now)
        }
        metrics.set(metric.id, metric)
        return metric
      }),
    metric: (id) => Effect.sync(() => Option.fromNullable(metrics.get(id))),
    listMetrics: (query) =>
      Effect.sync(() => {
        const search = query.search?.toLowerCase()
        const matching = [...metrics.values()].filter((m) => {
          const dataset = datasets.get(m.datasetId)
          return dataset !== undefined && canSee(query.viewer, dataset) &&
            (query.dataSourceId === undefined || m.dataSourceId === query.dataSourceId) &&
            (query.datasetId === undefined || m.datasetId === query.datasetId) &&
            (search === undefined || m.name.toLowerCase().includes(search) || m.id.toLowerCase().includes(search))
        })
        const sort = query.sort
        return slice(sort === undefined ? matching : sortedBy(matching, (m) => m[sort.by], sort.order), query)
      }),
    updateMetric: (id, patch) =>
      Effect.sync(() => {
        const metric = metrics.get(id)
        if (metric === undefined) return Option.none()
        const updated = { ...metric, ...patch }
        metrics.set(id, updated)
        return Option.some(updated)
      }),
    deleteMetric: (id) => Effect.sync(() => void metrics.delete(id))
  }
  return port
}
