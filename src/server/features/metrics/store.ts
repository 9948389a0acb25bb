/**
 * The metrics feature's store port and its model: custom metrics over a dataset's rows, kept by
 * the store the core's ports are kept by (`memory.ts`, `sql.ts` beside this).
 *
 * A metric lives and dies with its dataset, which the core owns and knows nothing of metrics:
 * in memory this feature listens for a dataset's removal (`datasetRemoved` of the core's
 * memory state), in Postgres the cascade is the schema's (`metrics.dataset_id REFERENCES
 * datasets ON DELETE CASCADE`). Either way, deleting a dataset (or its data source) deletes its
 * metrics, and the core's code stays the same.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "../../core/errors.js"
import type { Creator, Dataset, Page, Slice, SortOrder, Verification, Viewer } from "../../core/store/Store.js"
import type { AggregationFunction, ColumnRef, FilterGroup } from "./definitions.js"

/**
 * A custom metric over a dataset's rows. Its id is `<dataSourceId>|<key>`; it is seen by
 * whoever sees its dataset.
 *
 * @since 0.1.0
 * @category models
 */
export interface Metric {
  readonly id: string
  readonly organizationId: number
  readonly dataSourceId: number
  readonly datasetId: Dataset["id"]
  readonly name: string
  readonly measure: ColumnRef
  readonly date: ColumnRef
  readonly aggregationFunction: AggregationFunction
  readonly dimensions: ReadonlyArray<ColumnRef>
  readonly filters: FilterGroup | null
  readonly verification: Verification
  readonly createdAt: string
  readonly createdBy: Creator
}

/**
 * @since 0.1.0
 * @category models
 */
export type NewMetric = Omit<Metric, "id" | "createdAt">

/**
 * @since 0.1.0
 * @category models
 */
export type MetricPatch = Partial<
  Pick<Metric, "name" | "measure" | "date" | "aggregationFunction" | "dimensions" | "filters" | "verification">
>

/**
 * Metrics the viewer may see (those of datasets it may see), in creation order unless sorted.
 *
 * @since 0.1.0
 * @category models
 */
export interface MetricQuery extends Slice {
  readonly viewer: Viewer
  readonly dataSourceId?: number | undefined
  readonly datasetId?: Dataset["id"] | undefined
  /** Case-insensitive substring of the name or the id. */
  readonly search?: string | undefined
  readonly sort?: { readonly by: "name" | "createdAt"; readonly order: SortOrder } | undefined
}

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
