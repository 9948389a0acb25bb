/**
 * The memory store's `SourceStore` port, over the store's shared state: one function per
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
import { listOf, type MemoryState, noRows, patchEntry, StoredRows } from "./state.js"

/**
 * @since 0.1.0
 * @category utils
 */
export const createDataSource = ({ dataSources, entityIds }: MemoryState, input: NewDataSource) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const dataSource: DataSource = {
      ...input,
      connectionId: input.connectionId ?? null,
      id: entityIds(),
      createdAt: isoTimestamp(now),
      lastActivityAt: null
    }
    dataSources.set(dataSource.id, dataSource)
    return dataSource
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const dataSource = ({ dataSources, withActivity }: MemoryState, id: number) =>
  Effect.sync(() => Option.map(Option.fromNullable(dataSources.get(id)), withActivity))

/**
 * @since 0.1.0
 * @category utils
 */
export const listDataSources = ({ dataSourceActivity, dataSources, withActivity }: MemoryState, query: DataSourceQuery) =>
  Effect.sync(() => {
    const page = listOf(
      dataSources.values(),
      query,
      dataSourceActivity,
      (d) =>
        (query.accountId === undefined || d.accountId === query.accountId) &&
        (query.connectionId === undefined || d.connectionId === query.connectionId)
    )
    return { ...page, items: page.items.map(withActivity) }
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const updateDataSource = ({ dataSources, withActivity }: MemoryState, id: number, patch: DataSourcePatch) =>
  Effect.sync(() => Option.map(patchEntry(dataSources, id, patch), withActivity))

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteDataSource = ({ dataSources, datasets, removeDataset }: MemoryState, id: number) =>
  Effect.sync(() => {
    dataSources.delete(id)
    for (const dataset of [...datasets.values()]) {
      if (dataset.dataSourceId === id) removeDataset(dataset.id)
    }
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const purgeDataSource = ({ datasets, purge }: MemoryState, id: number) =>
  Effect.sync(() => {
    const ids = [...datasets.values()].filter((d) => d.dataSourceId === id).map((d) => d.id)
    ids.forEach(purge)
    return ids.length
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const createDataset = ({ datasets, datasetsByNumber, entityIds, storedRows }: MemoryState, input: NewDataset) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const dataset = newDataset(input, now, entityIds())
    datasets.set(dataset.id, dataset)
    datasetsByNumber.set(dataset.number, dataset.id)
    storedRows.set(dataset.id, noRows())
    return dataset
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const dataset = ({ datasets, datasetsByNumber }: MemoryState, id: DatasetRef) =>
  Effect.sync(() => Option.fromNullable(datasets.get(typeof id === "number" ? datasetsByNumber.get(id) ?? "" : id)))

/**
 * @since 0.1.0
 * @category utils
 */
export const listDatasets = ({ dataSources, datasets }: MemoryState, query: DatasetQuery) =>
  Effect.sync(() =>
    listOf(
      datasets.values(),
      query,
      (d) => d.activity?.lastIngestionAt ?? null,
      (d) =>
        (query.dataSourceId === undefined || d.dataSourceId === query.dataSourceId) &&
        (query.accountId === undefined || dataSources.get(d.dataSourceId)?.accountId === query.accountId)
    )
  )

/**
 * @since 0.1.0
 * @category utils
 */
export const updateDataset = ({ datasets }: MemoryState, id: string, patch: DatasetPatch) =>
  Effect.sync(() => patchEntry(datasets, id, patch))

/**
 * @since 0.1.0
 * @category utils
 */
export const updateDatasetsOfDataSource = (
  { datasets }: MemoryState,
  dataSourceId: number,
  patch: Pick<DatasetPatch, "timezone">
) =>
  Effect.sync(() => {
    for (const dataset of datasets.values()) {
      if (dataset.dataSourceId === dataSourceId) datasets.set(dataset.id, { ...dataset, ...patch })
    }
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const duplicateDataset = (
  { datasets, datasetsByNumber, entityIds, storedRows }: MemoryState,
  id: string,
  name: string,
  createdBy: Creator
) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const dataset = datasets.get(id)
    if (dataset === undefined) return Option.none()
    const copy: Dataset = {
      ...dataset,
      id: randomUUID(),
      number: entityIds(),
      name,
      createdBy,
      createdAt: isoTimestamp(now),
      activity: null
    }
    datasets.set(copy.id, copy)
    datasetsByNumber.set(copy.number, copy.id)
    storedRows.set(copy.id, new StoredRows(storedRows.get(id)!))
    return Option.some(copy)
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteDataset = (state: MemoryState, id: string) => Effect.sync(() => state.removeDataset(id))

/**
 * @since 0.1.0
 * @category utils
 */
export const purgeDataset = (state: MemoryState, id: string) => Effect.sync(() => state.purge(id))

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): SourceStoreService =>
  portOf<MemoryState, SourceStoreService>(state, {
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
