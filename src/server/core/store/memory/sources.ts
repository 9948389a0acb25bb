/**
 * The memory store's `SourceStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { Clock, Effect, Option } from "effect"
import { isoTimestamp } from "../../clock.js"
import { newDataset } from "../entities.js"
import { type DataSource, type Dataset } from "../Store.js"
import type { SourceStoreService } from "../ports/sources.js"
import { type MemoryState, StoredRows, noRows, listOf } from "./state.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): SourceStoreService => {
  const {
    dataSources, datasets, storedRows, entityIds, datasetsByNumber, removeDataset, purge,
    dataSourceActivity, withActivity
  } = state
  const port: SourceStoreService = {
    createDataSource: (input) =>
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
      }),
    dataSource: (id) => Effect.sync(() => Option.map(Option.fromNullable(dataSources.get(id)), withActivity)),
    listDataSources: (query) =>
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
      }),
    updateDataSource: (id, patch) =>
      Effect.sync(() => {
        const dataSource = dataSources.get(id)
        if (dataSource === undefined) return Option.none()
        const updated = { ...dataSource, ...patch }
        dataSources.set(id, updated)
        return Option.some(withActivity(updated))
      }),
    deleteDataSource: (id) =>
      Effect.sync(() => {
        dataSources.delete(id)
        for (const dataset of [...datasets.values()]) {
          if (dataset.dataSourceId === id) removeDataset(dataset.id)
        }
      }),
    purgeDataSource: (id) =>
      Effect.sync(() => {
        const ids = [...datasets.values()].filter((d) => d.dataSourceId === id).map((d) => d.id)
        ids.forEach(purge)
        return ids.length
      }),
    createDataset: (input) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const dataset = newDataset(input, now, entityIds())
        datasets.set(dataset.id, dataset)
        datasetsByNumber.set(dataset.number, dataset.id)
        storedRows.set(dataset.id, noRows())
        return dataset
      }),
    dataset: (id) =>
      Effect.sync(() => Option.fromNullable(datasets.get(typeof id === "number" ? datasetsByNumber.get(id) ?? "" : id))),
    listDatasets: (query) =>
      Effect.sync(() =>
        listOf(
          datasets.values(),
          query,
          (d) => d.activity?.lastIngestionAt ?? null,
          (d) =>
            (query.dataSourceId === undefined || d.dataSourceId === query.dataSourceId) &&
            (query.accountId === undefined || dataSources.get(d.dataSourceId)?.accountId === query.accountId)
        )
      ),
    updateDataset: (id, patch) =>
      Effect.sync(() => {
        const dataset = datasets.get(id)
        if (dataset === undefined) return Option.none()
        const updated = { ...dataset, ...patch }
        datasets.set(id, updated)
        return Option.some(updated)
      }),
    updateDatasetsOfDataSource: (dataSourceId, patch) =>
      Effect.sync(() => {
        for (const dataset of datasets.values()) {
          if (dataset.dataSourceId === dataSourceId) datasets.set(dataset.id, { ...dataset, ...patch })
        }
      }),
    duplicateDataset: (id, name, createdBy) =>
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
        const source = storedRows.get(id)!
        storedRows.set(copy.id, new StoredRows(source))
        return Option.some(copy)
      }),
    deleteDataset: (id) => Effect.sync(() => removeDataset(id)),
    purgeDataset: (id) => Effect.sync(() => purge(id))
  }
  return port
}
