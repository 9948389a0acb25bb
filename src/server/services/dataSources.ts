/**
 * Data sources: create, read, delete (with everything in them).
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../api/security.js"
import { isTimezone } from "../../timezones.js"
import { canSee, requireRole } from "../auth.js"
import { invalidInput, notFound } from "../request.js"
import { defaultPermissions, Store, type StoreService } from "../store/Store.js"
import { visibleAccount } from "./accounts.js"

/** @since 0.1.0 */
export interface CreateDataSource {
  readonly accountId?: number | undefined
  readonly name: string
  readonly timezone?: string | undefined
  readonly integrationKey?: string | undefined
}

/**
 * Creates an ingestion data source in the given (or the key's) account; editors and admins only.
 *
 * @since 0.1.0
 */
export const createDataSource = (principal: Principal, input: CreateDataSource) =>
  Effect.gen(function*() {
    const account = yield* visibleAccount(principal, input.accountId)
    yield* requireRole(principal, "editor", "create data sources")
    const timezone = input.timezone ?? "UTC"
    if (!isTimezone(timezone)) {
      return yield* invalidInput("timezone", `Invalid timezone value "${timezone}": expected an IANA time zone such as Europe/Berlin or UTC`)
    }
    const store = yield* Store
    return yield* store.createDataSource({
      organizationId: principal.organizationId,
      accountId: account.id,
      name: input.name,
      timezone,
      key: input.integrationKey ?? "ingestion",
      createdBy: { id: principal.userId, name: principal.userName },
      syncInterval: null,
      permissions: defaultPermissions
    })
  })

/**
 * The data source `id` if the principal's organization holds it; 404 otherwise.
 *
 * @since 0.1.0
 */
export const visibleDataSource = (principal: Principal, id: number) =>
  Effect.flatMap(Store, (store) => store.dataSource(id)).pipe(
    Effect.flatMap((dataSource) =>
      Option.isSome(dataSource) && canSee(principal, dataSource.value)
        ? Effect.succeed(dataSource.value)
        : notFound("Data source", id)
    )
  )

/**
 * The data sources of an account.
 *
 * @since 0.1.0
 */
export const listDataSourcesOfAccount = (principal: Principal, accountId: number) =>
  Effect.gen(function*() {
    const account = yield* visibleAccount(principal, accountId)
    const store = yield* Store
    return yield* store.dataSourcesOfAccount(account.id)
  })

/**
 * Deletes a data source with its datasets and rows; editors and admins only.
 *
 * @since 0.1.0
 */
export const deleteDataSource = (principal: Principal, id: number) =>
  Effect.gen(function*() {
    const dataSource = yield* visibleDataSource(principal, id)
    yield* requireRole(principal, "editor", "delete data sources")
    const store = yield* Store
    yield* store.deleteDataSource(dataSource.id)
    return dataSource
  })

/**
 * The data sources of the principal's organization that the principal may see.
 *
 * @since 0.1.0
 */
export const listVisibleDataSources = (principal: Principal) =>
  Effect.flatMap(Store, (store) => store.dataSourcesOfOrganization(principal.organizationId)).pipe(
    Effect.map((dataSources) => dataSources.filter((d) => canSee(principal, d)))
  )

/**
 * Changes a data source's settings; editors and admins only.
 *
 * @since 0.1.0
 */
export const updateDataSource = (
  principal: Principal,
  id: number,
  patch: Parameters<StoreService["updateDataSource"]>[1]
) =>
  Effect.gen(function*() {
    const dataSource = yield* visibleDataSource(principal, id)
    yield* requireRole(principal, "editor", "change data sources")
    if (patch.timezone !== undefined && !isTimezone(patch.timezone)) {
      return yield* invalidInput("timezone", `Invalid timezone value "${patch.timezone}"`)
    }
    const store = yield* Store
    return yield* store.updateDataSource(dataSource.id, patch)
  })

/**
 * Removes every row of every dataset of a data source; editors and admins only.
 *
 * @since 0.1.0
 */
export const purgeDataSource = (principal: Principal, id: number) =>
  Effect.gen(function*() {
    const dataSource = yield* visibleDataSource(principal, id)
    yield* requireRole(principal, "editor", "purge data sources")
    const store = yield* Store
    const datasets = yield* store.datasetsOfDataSource(dataSource.id)
    yield* Effect.forEach(datasets, (dataset) => store.purgeDataset(dataset.id), { discard: true })
    return { dataSource, datasets }
  })
