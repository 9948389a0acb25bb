/**
 * Data sources: create, read, list, change, purge, delete (with everything in them).
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../../api/security.js"
import { isTimezone } from "../timezones.js"
import { requireRole } from "../permissions.js"
import { Forbidden, InvalidField, NotFound } from "../errors.js"
import { type PageRequest, sliceOf, sortOf } from "../paging.js"
import {
  type DataSource,
  type DataSourcePatch,
  defaultPermissions,
  type ListSortField,
  type SortOrder
} from "../store/Store.js"
import { SourceStore } from "../store/ports/sources.js"
import { canSee } from "../permissions.js"
import { requireRoomFor } from "./organization.js"
import { visibleAccount } from "./accounts.js"

/**
 * The connection a new data source syncs through, as the catalog needs it.
 *
 * @since 0.1.0
 * @category models
 */
export interface SyncedThrough {
  readonly id: number
  readonly integrationKey: string | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface CreateDataSource<E = never, R = never> {
  readonly accountId?: number | undefined
  readonly name: string
  readonly timezone?: string | undefined
  readonly integrationKey?: string | undefined
  /**
   * Finds the connection the data source syncs through (or fails, e.g. `NotFound`). Connections
   * are a feature (`features/connections.ts` gives this), which the core does not import: the
   * caller hands the lookup in, and it runs after the account, role, limit and time zone checks,
   * as a check of the catalog's own would.
   */
  readonly connection?: Effect.Effect<SyncedThrough, E, R> | undefined
}

const checkTimezone = (timezone: string) =>
  isTimezone(timezone)
    ? Effect.succeed(timezone)
    : Effect.fail(
      new InvalidField({
        field: "timezone",
        message: `Invalid timezone value "${timezone}": expected an IANA time zone such as Europe/Berlin or UTC`
      })
    )

/**
 * Creates an ingestion data source in the given (or the key's) account; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const createDataSource = <E = never, R = never>(principal: Principal, input: CreateDataSource<E, R>) =>
  Effect.gen(function*() {
    const account = yield* visibleAccount(principal, input.accountId)
    yield* requireRole(principal, "editor", "create data sources")
    yield* requireRoomFor(principal, "dataSources")
    const timezone = yield* checkTimezone(input.timezone ?? "UTC")
    const connection = input.connection === undefined ? undefined : yield* input.connection
    const store = yield* SourceStore
    return yield* store.createDataSource({
      organizationId: principal.organizationId,
      accountId: account.id,
      name: input.name,
      timezone,
      key: input.integrationKey ?? connection?.integrationKey ?? "ingestion",
      connectionId: connection?.id ?? null,
      createdBy: { id: principal.userId, name: principal.userName },
      syncInterval: null,
      permissions: defaultPermissions
    })
  })

/**
 * The data source `id` if the principal may see it; `NotFound` otherwise.
 *
 * @since 0.1.0
 * @category utils
 */
export const visibleDataSource = (principal: Principal, id: number) =>
  Effect.flatMap(SourceStore, (store) => store.dataSource(id)).pipe(
    Effect.flatMap((dataSource) =>
      Option.isSome(dataSource) && canSee(principal, dataSource.value)
        ? Effect.succeed(dataSource.value)
        : Effect.fail(new NotFound({ resource: "Data source", id }))
    )
  )

/**
 * A visible data source the principal may change: `NotFound`, then `Forbidden`.
 *
 * @since 0.1.0
 * @category utils
 */
export const editableDataSource = (principal: Principal, id: number) =>
  Effect.tap(visibleDataSource(principal, id), () => requireRole(principal, "editor", "change data sources"))

/**
 * The data sources of an account that the principal may see (v1: every one, in one list).
 *
 * @since 0.1.0
 * @category utils
 */
export const listDataSourcesOfAccount = (principal: Principal, accountId: number) =>
  Effect.gen(function*() {
    const account = yield* visibleAccount(principal, accountId)
    const store = yield* SourceStore
    const page = yield* store.listDataSources({ viewer: principal, accountId: account.id, offset: 0, limit: Number.MAX_SAFE_INTEGER })
    return page.items
  })

/**
 * @since 0.1.0
 * @category models
 */
export interface ListParams extends PageRequest {
  readonly search?: string | undefined
  readonly connectionId?: number | undefined
  readonly sortBy?: ListSortField | undefined
  readonly sortOrder?: SortOrder | undefined
}

/**
 * A page of the data sources of the principal's organization that the principal may see.
 *
 * @since 0.1.0
 * @category utils
 */
export const listDataSources = (principal: Principal, params: ListParams) =>
  Effect.gen(function*() {
    const store = yield* SourceStore
    const { page, pageSize, slice } = sliceOf(params)
    const found = yield* store.listDataSources({
      viewer: principal,
      search: params.search,
      connectionId: params.connectionId,
      sort: sortOf(params),
      ...slice
    })
    return { page, pageSize, found }
  })

/**
 * Nobody destroys what they cannot see: deleting or purging a data source that holds a
 * dataset hidden from the principal (private, or shared with others only) is `Forbidden`;
 * its creator or an admin can.
 */
const requireEveryDatasetVisible = (principal: Principal, dataSource: DataSource, action: string) =>
  Effect.gen(function*() {
    if (principal.role === "admin") return
    const store = yield* SourceStore
    const count = (viewer: Principal) =>
      Effect.map(store.listDatasets({ viewer, dataSourceId: dataSource.id, offset: 0, limit: 0 }), (page) => page.totalItems)
    // An admin of the organization sees every dataset.
    if ((yield* count({ ...principal, role: "admin" })) > (yield* count(principal))) {
      return yield* Effect.fail(new Forbidden({ role: principal.role, needed: "admin", action: `${action} holding datasets it cannot see` }))
    }
  })

/**
 * Deletes a data source with its datasets and rows; editors and admins only, and only when
 * every dataset in it is visible to the principal.
 *
 * @since 0.1.0
 * @category utils
 */
export const deleteDataSource = (principal: Principal, id: number) =>
  Effect.gen(function*() {
    const dataSource = yield* visibleDataSource(principal, id)
    yield* requireRole(principal, "editor", "delete data sources")
    yield* requireEveryDatasetVisible(principal, dataSource, "delete data sources")
    const store = yield* SourceStore
    yield* store.deleteDataSource(dataSource.id)
    return dataSource
  })

const changed = (id: number) =>
  Effect.flatMap(Option.match({
    onNone: () => Effect.fail(new NotFound({ resource: "Data source", id })),
    onSome: (dataSource: DataSource) => Effect.succeed(dataSource)
  }))

/**
 * Changes a data source's settings; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const updateDataSource = (principal: Principal, id: number, patch: DataSourcePatch) =>
  Effect.gen(function*() {
    const dataSource = yield* visibleDataSource(principal, id)
    yield* requireRole(principal, "editor", "change data sources")
    if (patch.timezone !== undefined) yield* checkTimezone(patch.timezone)
    const store = yield* SourceStore
    return yield* store.updateDataSource(dataSource.id, patch).pipe(changed(id))
  })

/**
 * Sets a data source's time zone; optionally its datasets' too, and optionally purges them.
 *
 * @since 0.1.0
 * @category utils
 */
export const setDataSourceTimezone = (
  principal: Principal,
  id: number,
  change: { readonly timezone: string; readonly applyToDatasets?: boolean | undefined; readonly purgeData?: boolean | undefined }
) =>
  Effect.gen(function*() {
    const updated = yield* updateDataSource(principal, id, { timezone: change.timezone })
    const store = yield* SourceStore
    if (change.applyToDatasets === true) yield* store.updateDatasetsOfDataSource(updated.id, { timezone: change.timezone })
    if (change.purgeData === true) yield* store.purgeDataSource(updated.id)
    return updated
  })

/**
 * Removes every row of every dataset of a data source; editors and admins only, and only
 * when every dataset in it is visible to the principal.
 *
 * @since 0.1.0
 * @category utils
 */
export const purgeDataSource = (principal: Principal, id: number) =>
  Effect.gen(function*() {
    const dataSource = yield* visibleDataSource(principal, id)
    yield* requireRole(principal, "editor", "purge data sources")
    yield* requireEveryDatasetVisible(principal, dataSource, "purge data sources")
    const store = yield* SourceStore
    const datasetCount = yield* store.purgeDataSource(dataSource.id)
    return { dataSource, datasetCount }
  })
