/**
 * Datasets: create, read, delete, purge.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../api/security.js"
import type { Column } from "../../records.js"
import { canSee, requireRole } from "../auth.js"
import { invalidInput, notFound } from "../request.js"
import { defaultPermissions, emptyMetadata, Store, type StoreService, unverified } from "../store/Store.js"
import { visibleDataSource } from "./dataSources.js"

/** @since 0.1.0 */
export interface CreateDataset {
  readonly dataSourceId: number | undefined
  readonly name: string
  readonly primaryKey: ReadonlyArray<string>
  /** Empty: the first ingestion defines the columns. */
  readonly schema: ReadonlyArray<Column>
}

/**
 * Creates an empty dataset in a visible data source; editors and admins only.
 *
 * @since 0.1.0
 */
export const createDataset = (principal: Principal, input: CreateDataset) =>
  Effect.gen(function*() {
    if (input.dataSourceId === undefined) {
      return yield* invalidInput("dataSourceId", "dataSourceId is required: a dataset belongs to a data source")
    }
    const dataSource = yield* visibleDataSource(principal, input.dataSourceId)
    yield* requireRole(principal, "editor", "create datasets")
    const duplicate = input.primaryKey.find((key, i) => input.primaryKey.indexOf(key) !== i)
    if (duplicate !== undefined) {
      return yield* invalidInput("primaryKeys", `primary-key column "${duplicate}" is listed twice`)
    }
    const store = yield* Store
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
 * The dataset `id` if the principal's organization holds it; 404 otherwise.
 *
 * @since 0.1.0
 */
export const visibleDataset = (principal: Principal, id: string) =>
  Effect.flatMap(Store, (store) => store.dataset(id)).pipe(
    Effect.flatMap((dataset) =>
      Option.isSome(dataset) && canSee(principal, dataset.value)
        ? Effect.succeed(dataset.value)
        : notFound("Dataset", id)
    )
  )

/**
 * The datasets of a visible data source.
 *
 * @since 0.1.0
 */
export const listDatasetsOfDataSource = (principal: Principal, dataSourceId: number) =>
  Effect.gen(function*() {
    const dataSource = yield* visibleDataSource(principal, dataSourceId)
    const store = yield* Store
    return yield* store.datasetsOfDataSource(dataSource.id)
  })

/**
 * Deletes a dataset and its rows; editors and admins only.
 *
 * @since 0.1.0
 */
export const deleteDataset = (principal: Principal, id: string) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, id)
    yield* requireRole(principal, "editor", "delete datasets")
    const store = yield* Store
    yield* store.deleteDataset(dataset.id)
    return dataset
  })

/**
 * Removes every row of a dataset and keeps the dataset; editors and admins only.
 *
 * @since 0.1.0
 */
export const purgeDataset = (principal: Principal, id: string) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, id)
    yield* requireRole(principal, "editor", "purge datasets")
    const store = yield* Store
    yield* store.purgeDataset(dataset.id)
    return dataset
  })

/**
 * The datasets of the principal's organization that the principal may see.
 *
 * @since 0.1.0
 */
export const listVisibleDatasets = (principal: Principal) =>
  Effect.flatMap(Store, (store) => store.datasetsOfOrganization(principal.organizationId)).pipe(
    Effect.map((datasets) => datasets.filter((d) => canSee(principal, d)))
  )

/**
 * Checks a v2 schema: unique column ids, and primary-key columns that are in it.
 *
 * @since 0.1.0
 */
export const checkSchema = (schema: ReadonlyArray<Column>, primaryKey: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const ids = schema.map((c) => c.id)
    const duplicate = ids.findIndex((id, i) => ids.indexOf(id) !== i)
    if (duplicate >= 0) {
      return yield* invalidInput(`schema[${duplicate}].id`, `column "${ids[duplicate]}" is defined twice`)
    }
    const repeated = primaryKey.findIndex((key, i) => primaryKey.indexOf(key) !== i)
    if (repeated >= 0) {
      return yield* invalidInput(`primaryKey[${repeated}]`, `primary-key column "${primaryKey[repeated]}" is listed twice`)
    }
    const unknown = primaryKey.findIndex((key) => !ids.includes(key))
    if (unknown >= 0) {
      return yield* invalidInput(`primaryKey[${unknown}]`, `primary-key column "${primaryKey[unknown]}" is not in the schema`)
    }
  })

/**
 * Changes a dataset's settings; editors and admins only.
 *
 * @since 0.1.0
 */
export const updateDataset = (
  principal: Principal,
  id: string,
  patch: Parameters<StoreService["updateDataset"]>[1]
) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, id)
    yield* requireRole(principal, "editor", "change datasets")
    const store = yield* Store
    return yield* store.updateDataset(dataset.id, patch)
  })

/**
 * Copies a dataset with its schema, key, settings and rows; editors and admins only.
 *
 * @since 0.1.0
 */
export const duplicateDataset = (principal: Principal, id: string, name: string | undefined) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, id)
    yield* requireRole(principal, "editor", "duplicate datasets")
    const store = yield* Store
    return yield* store.duplicateDataset(dataset.id, name ?? `${dataset.name} (copy)`, {
      id: principal.userId,
      name: principal.userName
    })
  })
