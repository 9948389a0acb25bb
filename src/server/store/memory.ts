/**
 * The embedded in-memory store: needs nothing else, forgets everything on exit.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { Effect, Layer, Option } from "effect"
import { primaryKeyOf, type Row } from "../../records.js"
import type { Principal } from "../../api/security.js"
import { isoTimestamp } from "../clock.js"
import type { Seed } from "../seed.js"
import {
  Store,
  type Account,
  type DataSource,
  type Dataset,
  type DatasetStats,
  type Ingestion,
  type Organization,
  type StoreService,
  type User
} from "./Store.js"

interface StoredRows {
  /** Rows by primary-key string; without a primary key, by insertion number. */
  readonly rows: Map<string, Row>
  /** Each row's size as JSON, by the same key: an overwrite must not serialize the old row again. */
  readonly sizes: Map<string, number>
  bytes: number
  appendCounter: number
}

const noRows = (): StoredRows => ({ rows: new Map(), sizes: new Map(), bytes: 0, appendCounter: 0 })

/**
 * Builds a memory store holding the seed's organizations, accounts, users and keys.
 *
 * @since 0.1.0
 */
export const make = (seed: Seed): StoreService => {
  const organizations = new Map<number, Organization>()
  const accounts = new Map<number, Account>()
  const users = new Map<number, User>()
  const principals = new Map<string, Principal>()
  const dataSources = new Map<number, DataSource>()
  const datasets = new Map<string, Dataset>()
  const storedRows = new Map<string, StoredRows>()
  const ingestions = new Map<string, Ingestion>()
  const pending = new Map<string, ReadonlyArray<unknown>>()
  const counter = () => {
    let next = 1
    return () => next++
  }
  const organizationIds = counter()
  const accountIds = counter()
  const userIds = counter()
  const dataSourceIds = counter()

  for (const org of seed.organizations) {
    const organization: Organization = { id: organizationIds(), name: org.name }
    organizations.set(organization.id, organization)
    const orgAccounts = org.accounts.map((a): Account => ({
      id: accountIds(),
      organizationId: organization.id,
      name: a.name,
      accountType: a.accountType
    }))
    for (const account of orgAccounts) accounts.set(account.id, account)
    for (const u of org.users) {
      const user: User = { id: userIds(), organizationId: organization.id, name: u.name, email: u.email, role: u.role }
      users.set(user.id, user)
      for (const key of u.apiKeys) {
        principals.set(key, {
          userId: user.id,
          userName: user.name,
          organizationId: organization.id,
          role: user.role,
          defaultAccountId: orgAccounts[0]!.id
        })
      }
    }
  }

  const statsOf = (dataset: Dataset): DatasetStats => {
    const stored = storedRows.get(dataset.id)
    return { columnCount: dataset.schema.length, rowCount: stored?.rows.size ?? 0, size: stored?.bytes ?? 0 }
  }

  const removeDataset = (id: string) => {
    datasets.delete(id)
    storedRows.delete(id)
    for (const ingestion of ingestions.values()) {
      if (ingestion.datasetId === id) {
        ingestions.delete(ingestion.id)
        pending.delete(ingestion.id)
      }
    }
  }

  const service: StoreService = {
    principalByKey: (apiKey) => Effect.sync(() => Option.fromNullable(principals.get(apiKey))),
    organization: (id) => Effect.sync(() => Option.fromNullable(organizations.get(id))),
    accounts: (organizationId) =>
      Effect.sync(() => [...accounts.values()].filter((a) => a.organizationId === organizationId)),
    account: (id) => Effect.sync(() => Option.fromNullable(accounts.get(id))),
    users: (organizationId) => Effect.sync(() => [...users.values()].filter((u) => u.organizationId === organizationId)),

    createDataSource: (input) =>
      Effect.sync(() => {
        const dataSource: DataSource = { ...input, id: dataSourceIds(), createdAt: isoTimestamp() }
        dataSources.set(dataSource.id, dataSource)
        return dataSource
      }),
    dataSource: (id) => Effect.sync(() => Option.fromNullable(dataSources.get(id))),
    dataSourcesOfAccount: (accountId) =>
      Effect.sync(() => [...dataSources.values()].filter((d) => d.accountId === accountId)),
    dataSourcesOfOrganization: (organizationId) =>
      Effect.sync(() => [...dataSources.values()].filter((d) => d.organizationId === organizationId)),
    updateDataSource: (id, patch) =>
      Effect.sync(() => {
        const updated = { ...dataSources.get(id)!, ...patch }
        dataSources.set(id, updated)
        return updated
      }),
    deleteDataSource: (id) =>
      Effect.sync(() => {
        dataSources.delete(id)
        for (const dataset of [...datasets.values()]) {
          if (dataset.dataSourceId === id) removeDataset(dataset.id)
        }
      }),

    createDataset: (input) =>
      Effect.sync(() => {
        const dataset: Dataset = { ...input, id: randomUUID(), createdAt: isoTimestamp() }
        datasets.set(dataset.id, dataset)
        storedRows.set(dataset.id, noRows())
        return dataset
      }),
    dataset: (id) => Effect.sync(() => Option.fromNullable(datasets.get(id))),
    datasetsOfDataSource: (dataSourceId) =>
      Effect.sync(() => [...datasets.values()].filter((d) => d.dataSourceId === dataSourceId)),
    datasetsOfOrganization: (organizationId) =>
      Effect.sync(() => [...datasets.values()].filter((d) => d.organizationId === organizationId)),
    updateDataset: (id, patch) =>
      Effect.sync(() => {
        const updated = { ...datasets.get(id)!, ...patch }
        datasets.set(id, updated)
        return updated
      }),
    duplicateDataset: (id, name, createdBy) =>
      Effect.sync(() => {
        const copy: Dataset = { ...datasets.get(id)!, id: randomUUID(), name, createdBy, createdAt: isoTimestamp() }
        datasets.set(copy.id, copy)
        const source = storedRows.get(id)!
        storedRows.set(copy.id, {
          rows: new Map(source.rows),
          sizes: new Map(source.sizes),
          bytes: source.bytes,
          appendCounter: source.appendCounter
        })
        return copy
      }),
    deleteDataset: (id) => Effect.sync(() => removeDataset(id)),
    purgeDataset: (id) =>
      Effect.sync(() => {
        storedRows.set(id, noRows())
        for (const ingestion of ingestions.values()) {
          if (ingestion.datasetId === id && pending.has(ingestion.id)) {
            pending.delete(ingestion.id)
            ingestions.set(ingestion.id, { ...ingestion, status: "purged" })
          }
        }
      }),
    datasetStats: (id) =>
      Effect.sync(() => {
        const dataset = datasets.get(id)
        return dataset ? statsOf(dataset) : { columnCount: 0, rowCount: 0, size: 0 }
      }),
    rows: (datasetId) => Effect.sync(() => [...(storedRows.get(datasetId)?.rows.values() ?? [])]),
    applyRows: (datasetId, newColumns, rows) =>
      Effect.sync(() => {
        const dataset = datasets.get(datasetId)!
        const updated: Dataset = newColumns.length > 0
          ? { ...dataset, schema: [...dataset.schema, ...newColumns] }
          : dataset
        datasets.set(datasetId, updated)
        const stored = storedRows.get(datasetId)!
        let appended = 0
        let overwritten = 0
        for (const row of rows) {
          const key = updated.primaryKey.length > 0
            ? primaryKeyOf(row, updated.primaryKey)
            : String(stored.appendCounter++)
          const previousSize = stored.sizes.get(key)
          if (previousSize === undefined) {
            appended++
          } else {
            overwritten++
            stored.bytes -= previousSize
          }
          const size = Buffer.byteLength(JSON.stringify(row))
          stored.rows.set(key, row)
          stored.sizes.set(key, size)
          stored.bytes += size
        }
        return { appended, overwritten, stats: statsOf(updated) }
      }),

    createIngestion: (input, records) =>
      Effect.sync(() => {
        const ingestion: Ingestion = {
          ...input,
          id: randomUUID(),
          status: "queued",
          initiatedAt: isoTimestamp(),
          duration: null,
          counts: { received: records.length, appended: 0, overwritten: 0, rejected: 0 },
          datasetStats: null,
          problems: [],
          failure: null
        }
        ingestions.set(ingestion.id, ingestion)
        pending.set(ingestion.id, records)
        return ingestion
      }),
    ingestion: (id) => Effect.sync(() => Option.fromNullable(ingestions.get(id))),
    ingestionsOfDataset: (datasetId) =>
      Effect.sync(() => [...ingestions.values()].filter((i) => i.datasetId === datasetId).reverse()),
    takePendingRecords: (id) =>
      Effect.sync(() => {
        const records = pending.get(id)
        pending.delete(id)
        return Option.fromNullable(records)
      }),
    updateIngestion: (id, patch) =>
      Effect.sync(() => {
        const ingestion = ingestions.get(id)
        if (ingestion) ingestions.set(id, { ...ingestion, ...patch })
      })
  }
  return service
}

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = (seed: Seed): Layer.Layer<Store> => Layer.sync(Store, () => make(seed))
