/**
 * The store's port for data sources and datasets: what data is kept where, with its settings.
 * Deleting one deletes what is kept under it: its rows and ingestions here, and what a feature
 * keeps under a dataset (the feature's own port sees to that: a listener on the memory state's
 * `datasetRemoved`, a foreign key with `ON DELETE CASCADE` in Postgres).
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "../../errors.js"
import type {
  Creator,
  DataSource,
  DataSourcePatch,
  DataSourceQuery,
  Dataset,
  DatasetPatch,
  DatasetQuery,
  DatasetRef,
  NewDataSource,
  NewDataset,
  Page
} from "../Store.js"

/**
 * Every method is atomic; who may do what is the services' concern.
 *
 * @since 0.1.0
 * @category models
 */
export interface SourceStoreService {
  readonly createDataSource: (input: NewDataSource) => Effect.Effect<DataSource, StoreError>

  readonly dataSource: (id: number) => Effect.Effect<Option.Option<DataSource>, StoreError>

  readonly listDataSources: (query: DataSourceQuery) => Effect.Effect<Page<DataSource>, StoreError>

  readonly updateDataSource: (
    id: number,
    patch: DataSourcePatch
  ) => Effect.Effect<Option.Option<DataSource>, StoreError>

  /** Deletes the data source with its datasets, rows and ingestions. */
  readonly deleteDataSource: (id: number) => Effect.Effect<void, StoreError>

  /** Removes the rows of each of its datasets (see `purgeDataset`); the number of datasets. */
  readonly purgeDataSource: (id: number) => Effect.Effect<number, StoreError>

  readonly createDataset: (input: NewDataset) => Effect.Effect<Dataset, StoreError>

  /** By UUID (a string) or by number. */
  readonly dataset: (id: DatasetRef) => Effect.Effect<Option.Option<Dataset>, StoreError>

  readonly listDatasets: (query: DatasetQuery) => Effect.Effect<Page<Dataset>, StoreError>

  readonly updateDataset: (id: string, patch: DatasetPatch) => Effect.Effect<Option.Option<Dataset>, StoreError>

  /** The same change to every dataset of a data source. */
  readonly updateDatasetsOfDataSource: (
    dataSourceId: number,
    patch: Pick<DatasetPatch, "timezone">
  ) => Effect.Effect<void, StoreError>

  /** A new dataset in the same data source with the same schema, key, settings and rows. */
  readonly duplicateDataset: (
    id: string,
    name: string,
    createdBy: Creator
  ) => Effect.Effect<Option.Option<Dataset>, StoreError>

  /** Deletes the dataset with its rows and ingestions. */
  readonly deleteDataset: (id: string) => Effect.Effect<void, StoreError>

  /** Removes every row; queued ingestions of the dataset end as `purged`. */
  readonly purgeDataset: (id: string) => Effect.Effect<void, StoreError>
}

/**
 * @since 0.1.0
 * @category services
 */
export class SourceStore extends Context.Tag("tributary/server/SourceStore")<SourceStore, SourceStoreService>() {}
