/**
 * Datasets: create, read, delete, purge.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../api/security.js"
import type { Column } from "../../records.js"
import { requireRole } from "../auth.js"
import { invalidInput, notFound } from "../request.js"
import { defaultPermissions, emptyMetadata, Store, unverified } from "../store/Store.js"
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
      Option.isSome(dataset) && dataset.value.organizationId === principal.organizationId
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
