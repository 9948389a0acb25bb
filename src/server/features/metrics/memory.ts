/**
 * The memory store's `MetricStore` port: the metrics of one memory store, beside the core's
 * state (`core/store/memory/state.ts`) they are made from. One function per method, each taking
 * the state first; `make` assembles them.
 *
 * A metric goes with its dataset: the state listens for the core's dataset removals
 * (`datasetRemoved`), so that the core need not know metrics exist.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../core/clock.js"
import { canSee } from "../../core/permissions.js"
import { sortedBy } from "../../core/store/order.js"
import { portOf } from "../../core/store/Stores.js"
import { type MemoryState, patchEntry, slice } from "../../core/store/memory/state.js"
import type { Metric, MetricPatch, MetricQuery, MetricStoreService, NewMetric } from "./store.js"

/**
 * The metrics of one memory store, with the core's state they belong to.
 *
 * @since 0.1.0
 * @category models
 */
export interface MetricsState {
  readonly core: MemoryState
  readonly metrics: Map<string, Metric>
  /** The `n` of the next `custom_query_<n>`. */
  readonly keys: () => number
}

/**
 * No metrics yet, over `core`; a dataset's removal removes its metrics.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeState = (core: MemoryState): MetricsState => {
  const metrics = new Map<string, Metric>()
  core.datasetRemoved.add((datasetId) => {
    for (const metric of metrics.values()) if (metric.datasetId === datasetId) metrics.delete(metric.id)
  })
  return { core, metrics, keys: core.counter() }
}

/**
 * @since 0.1.0
 * @category utils
 */
export const createMetric = ({ keys, metrics }: MetricsState, input: NewMetric) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const metric: Metric = {
      ...input,
      id: `${input.dataSourceId}|custom_query_${keys()}`,
      createdAt: isoTimestamp(now)
    }
    metrics.set(metric.id, metric)
    return metric
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const metric = (state: MetricsState, id: string) => Effect.sync(() => Option.fromNullable(state.metrics.get(id)))

/**
 * @since 0.1.0
 * @category utils
 */
export const listMetrics = ({ core, metrics }: MetricsState, query: MetricQuery) =>
  Effect.sync(() => {
    const search = query.search?.toLowerCase()
    const matching = [...metrics.values()].filter((m) => {
      const dataset = core.datasets.get(m.datasetId)
      return dataset !== undefined && canSee(query.viewer, dataset) &&
        (query.dataSourceId === undefined || m.dataSourceId === query.dataSourceId) &&
        (query.datasetId === undefined || m.datasetId === query.datasetId) &&
        (search === undefined || m.name.toLowerCase().includes(search) || m.id.toLowerCase().includes(search))
    })
    const sort = query.sort
    return slice(sort === undefined ? matching : sortedBy(matching, (m) => m[sort.by], sort.order), query)
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const updateMetric = ({ metrics }: MetricsState, id: string, patch: MetricPatch) =>
  Effect.sync(() => patchEntry(metrics, id, patch))

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteMetric = (state: MetricsState, id: string) => Effect.sync(() => void state.metrics.delete(id))

/**
 * The port over the core's `state`, with metrics of its own.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): MetricStoreService =>
  portOf<MetricsState, MetricStoreService>(makeState(state), {
    createMetric,
    metric,
    listMetrics,
    updateMetric,
    deleteMetric
  })
