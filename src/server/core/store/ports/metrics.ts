/**
 * The store's port for custom metrics (the metrics feature's own). Deleting a dataset (or its data
 * source) deletes its metrics.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "../../errors.js"
import type {
  Metric,
  MetricPatch,
  MetricQuery,
  NewMetric,
  Page
} from "../Store.js"

/**
 * Every method is atomic; who may do what is the services' concern.
 *
 * @since 0.1.0
 * @category models
 */
export interface MetricStoreService {
  /** A new metric; its key is unique in the store (`custom_query_<n>`). */
  readonly createMetric: (input: NewMetric) => Effect.Effect<Metric, StoreError>

  readonly metric: (id: string) => Effect.Effect<Option.Option<Metric>, StoreError>

  readonly listMetrics: (query: MetricQuery) => Effect.Effect<Page<Metric>, StoreError>

  readonly updateMetric: (id: string, patch: MetricPatch) => Effect.Effect<Option.Option<Metric>, StoreError>

  readonly deleteMetric: (id: string) => Effect.Effect<void, StoreError>
}

/**
 * @since 0.1.0
 * @category services
 */
export class MetricStore extends Context.Tag("tributary/server/MetricStore")<MetricStore, MetricStoreService>() {}
