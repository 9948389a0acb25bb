/**
 * Datasets: create, read, list, change, copy, purge, delete; their rows.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../../api/security.js"
import type { Column } from "../../../records.js"
import { InvalidField, NotFound } from "../errors.js"
import { sliceOf, sortOf } from "../paging.js"
import {
  type Dataset,
  type DatasetPatch,
  type DatasetRef,
  defaultPermissions,
  emptyMetadata,
  unverified
} from "../store/Store.js"
import { SourceStore } from "../store/ports/sources.js"
import { canSee, requireRole } from "../permissions.js"
import { visibleAccount } from "./accounts.js"
import { type ListParams, visibleDataSource } from "./dataSources.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface CreateDataset {
  readonly dataSourceId: number | undefined
  readonly name: string
  readonly primaryKey: ReadonlyArray<string>
  /** Empty: the first ingestion defines the columns. */
  readonly schema: ReadonlyArray<Column>
  /** How the request names the primary-key field in errors (`primaryKeys` in v1, `primaryKey` in v2). */
  readonly primaryKeyField: string
}

const invalid = (field: string, message: string) => Effect.fail(new InvalidField({ field, message }))

/**
 * Checks a schema and key: unique column ids, no key column listed twice, and (with a
 * schema) key columns that are in it.
 */
const checkSchema = (input: CreateDataset) =>
  Effect.gen(function*() {
    const ids = input.schema.map((c) => c.id)
    const duplicate = ids.findIndex((id, i) => ids.indexOf(id) !== i)
    if (duplicate >= 0) return yield* invalid(`schema[${duplicate}].id`, `column "${ids[duplicate]}" is defined twice`)
    const key = input.primaryKey
    const repeated = key.findIndex((column, i) => key.indexOf(column) !== i)
    if (repeated >= 0) {
      return yield* invalid(`${input.primaryKeyField}[${repeated}]`, `primary-key column "${key[repeated]}" is listed twice`)
    }
    if (input.schema.length === 0) return
    const unknown = key.findIndex((column) => !ids.includes(column))
    if (unknown >= 0) {
      return yield* invalid(`${input.primaryKeyField}[${unknown}]`, `primary-key column "${key[unknown]}" is not in the schema`)
    }
  })

/**
 * Creates an empty dataset in a visible data source; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const createDataset = (principal: Principal, input: CreateDataset) =>
  Effect.gen(function*() {
    if (input.dataSourceId === undefined) {
      return yield* invalid("dataSourceId", "dataSourceId is required: a dataset belongs to a data source")
    }
    const dataSource = yield* visibleDataSource(principal, input.dataSourceId)
    yield* requireRole(principal, "editor", "create datasets")
    yield* checkSchema(input)
    const store = yield* SourceStore
    return yield* store.createDataset({
      organizationId: principal.organizationId,
      dataSourceId: dataSource.id,
      name: input.name,
      primaryKey: input.primaryKey,
      schema: input.schema,
      createdBy: { id: principal.userId, name: principal.userName },
      timezone: dataSource.timezone,
      syncInterval: null,
      permissions: defaultPermissions,
      verification: unverified,
      metadata: emptyMetadata,
      columnMetadata: {}
    })
  })

/**
 * The dataset `id` if the principal may see it; `NotFound` otherwise.
 *
 * @since 0.1.0
 * @category utils
 */
export const visibleDataset = (principal: Principal, id: DatasetRef) =>
  Effect.flatMap(SourceStore, (store) => store.dataset(id)).pipe(
    Effect.flatMap((dataset) =>
      Option.isSome(dataset) && canSee(principal, dataset.value)
        ? Effect.succeed(dataset.value)
        : Effect.fail(new NotFound({ resource: "Dataset", id }))
    )
  )

/**
 * A visible dataset the principal may change: `NotFound`, then `Forbidden`.
 *
 * @since 0.1.0
 * @category utils
 */
export const editableDataset = (principal: Principal, id: DatasetRef, action = "change datasets") =>
  Effect.tap(visibleDataset(principal, id), () => requireRole(principal, "editor", action))

/** Every dataset the principal may see within `scope` (v1 lists are not paged). */
const everyVisible = (principal: Principal, scope: { readonly dataSourceId: number } | { readonly accountId: number }) =>
  Effect.flatMap(SourceStore, (store) =>
    Effect.map(
      store.listDatasets({ viewer: principal, ...scope, offset: 0, limit: Number.MAX_SAFE_INTEGER }),
      (page) => page.items
    ))

/**
 * The datasets of a visible data source that the principal may see (v1: in one list).
 *
 * @since 0.1.0
 * @category utils
 */
export const listDatasetsOfDataSource = (principal: Principal, dataSourceId: number) =>
  Effect.flatMap(visibleDataSource(principal, dataSourceId), (dataSource) =>
    everyVisible(principal, { dataSourceId: dataSource.id }))

/**
 * The datasets of an account of the principal's organization that the principal may see (v1:
 * in one list); `NotFound` for another organization's account.
 *
 * @since 0.1.0
 * @category utils
 */
export const listDatasetsOfAccount = (principal: Principal, accountId: number) =>
  Effect.flatMap(visibleAccount(principal, accountId), (account) => everyVisible(principal, { accountId: account.id }))

/**
 * A page of the datasets the principal may see, optionally of one data source.
 *
 * @since 0.1.0
 * @category utils
 */
export const listDatasets = (principal: Principal, params: ListParams & { readonly dataSourceId?: number | undefined }) =>
  Effect.gen(function*() {
    const store = yield* SourceStore
    const { page, pageSize, slice } = sliceOf(params)
    const found = yield* store.listDatasets({
      viewer: principal,
      dataSourceId: params.dataSourceId,
      search: params.search,
      sort: sortOf(params),
      ...slice
    })
    return { page, pageSize, found }
  })

/**
 * Deletes a dataset and its rows; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const deleteDataset = (principal: Principal, id: DatasetRef) =>
  Effect.gen(function*() {
    const dataset = yield* editableDataset(principal, id, "delete datasets")
    const store = yield* SourceStore
    yield* store.deleteDataset(dataset.id)
    return dataset
  })

/**
 * Removes every row of a dataset and keeps the dataset; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const purgeDataset = (principal: Principal, id: DatasetRef) =>
  Effect.gen(function*() {
    const dataset = yield* editableDataset(principal, id, "purge datasets")
    const store = yield* SourceStore
    yield* store.purgeDataset(dataset.id)
    return dataset
  })

const updated = (id: DatasetRef) =>
  Effect.flatMap(Option.match({
    onNone: () => Effect.fail(new NotFound({ resource: "Dataset", id })),
    onSome: (dataset: Dataset) => Effect.succeed(dataset)
  }))

/**
 * Changes a dataset's settings; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const updateDataset = (principal: Principal, id: DatasetRef, patch: DatasetPatch) =>
  Effect.gen(function*() {
    const dataset = yield* editableDataset(principal, id)
    const store = yield* SourceStore
    return yield* store.updateDataset(dataset.id, patch).pipe(updated(id))
  })

/**
 * Copies a dataset with its schema, key, settings and rows; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const duplicateDataset = (principal: Principal, id: DatasetRef, name: string | undefined) =>
  Effect.gen(function*() {
    const dataset = yield* editableDataset(principal, id, "duplicate datasets")
    const store = yield* SourceStore
    return yield* store.duplicateDataset(dataset.id, name ?? `${dataset.name} (copy)`, {
      id: principal.userId,
      name: principal.userName
    }).pipe(updated(id))
  })
