/**
 * v2 data source handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../api/index.js"
import { CurrentPrincipal } from "../../api/security.js"
import { idempotent } from "../idempotency.js"
import { listPage } from "../paging.js"
import { respond } from "../request.js"
import {
  createDataSource,
  deleteDataSource,
  listVisibleDataSources,
  purgeDataSource,
  updateDataSource,
  visibleDataSource
} from "../services/dataSources.js"
import { resolvePermissions, syncFrequencyOptions, checkSyncInterval } from "../services/settings.js"
import { Store, type DataSource } from "../store/Store.js"

/** API data sources are always healthy. */
export const activeStatus = {
  status: "active",
  statusCode: "active",
  errorType: null,
  reason: null,
  description: null,
  userAction: null
} as const

/** The newest ingestion time over the data source's datasets. */
const lastActivityAt = (dataSource: DataSource) =>
  Effect.gen(function*() {
    const store = yield* Store
    const datasets = yield* store.datasetsOfDataSource(dataSource.id)
    const times = yield* Effect.forEach(datasets, (d) =>
      Effect.map(store.ingestionsOfDataset(d.id), (ingestions) => ingestions[0]?.initiatedAt ?? null))
    return times.reduce<string | null>((latest, t) => (t !== null && (latest === null || t > latest) ? t : latest), null)
  })

const listItem = (d: DataSource) =>
  Effect.map(lastActivityAt(d), (lastActivity) => ({
    id: d.id,
    name: d.name,
    integrationKey: d.key,
    connectionId: null,
    createdAt: d.createdAt,
    lastActivityAt: lastActivity,
    timezone: d.timezone,
    statusInfo: activeStatus
  }))

const detail = (d: DataSource) =>
  Effect.map(listItem(d), (item) => ({
    ...item,
    accountId: d.accountId,
    managedBy: d.createdBy,
    syncInterval: d.syncInterval
  }))

const respondDetail = (d: DataSource) => Effect.flatMap(detail(d), (data) => respond("success", { data }))

/** @since 0.1.0 */
export const V2DataSourcesLive = HttpApiBuilder.group(TributaryApi, "v2DataSources", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        // Only API data sources exist here: a connection filter matches none of them.
        const visible = urlParams.connectionId === undefined ? yield* listVisibleDataSources(principal) : []
        return yield* respond("success", { data: yield* listPage(visible, urlParams, listItem) })
      }))
    .handle("create", ({ headers, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        return yield* idempotent(
          headers["idempotency-key"],
          { payload, accountId: headers["x-account-id"] },
          createDataSource(principal, {
            accountId: headers["x-account-id"],
            name: payload.name,
            timezone: payload.timezone,
            integrationKey: payload.integrationKey
          }).pipe(Effect.flatMap(respondDetail))
        )
      }))
    .handle("get", ({ path }) => CurrentPrincipal.pipe(Effect.flatMap((p) => visibleDataSource(p, path.id)), Effect.flatMap(respondDetail)))
    .handle("update", ({ path, payload }) =>
      CurrentPrincipal.pipe(Effect.flatMap((p) => updateDataSource(p, path.id, { name: payload.name })), Effect.flatMap(respondDetail)))
    .handle("delete", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => deleteDataSource(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: { message: `Data source ${d.id} and all its datasets were deleted` } }))
      ))
    .handle("purge", ({ headers, path }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        return yield* idempotent(
          headers["idempotency-key"],
          null,
          purgeDataSource(principal, path.id).pipe(
            Effect.flatMap(({ dataSource, datasets }) =>
              respond("success", {
                data: { message: `All data of data source ${dataSource.id} (${datasets.length} datasets) was removed` }
              })
            )
          )
        )
      }))
    .handle("setTimezone", ({ path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const updated = yield* updateDataSource(principal, path.id, { timezone: payload.timezone })
        const store = yield* Store
        if (payload.applyToDatasets === true || payload.purgeData === true) {
          const datasets = yield* store.datasetsOfDataSource(updated.id)
          yield* Effect.forEach(datasets, (dataset) =>
            Effect.zipRight(
              payload.applyToDatasets === true ? store.updateDataset(dataset.id, { timezone: payload.timezone }) : Effect.void,
              payload.purgeData === true ? store.purgeDataset(dataset.id) : Effect.void
            ), { discard: true })
        }
        return yield* respondDetail(updated)
      }))
    .handle("getPermissions", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataSource(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: d.permissions }))
      ))
    .handle("setPermissions", ({ path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const permissions = yield* resolvePermissions(principal, payload)
        const updated = yield* updateDataSource(principal, path.id, { permissions })
        return yield* respond("success", { data: updated.permissions })
      }))
    .handle("setSyncFrequency", ({ path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const syncInterval = yield* checkSyncInterval(payload.syncInterval)
        return yield* respondDetail(yield* updateDataSource(principal, path.id, { syncInterval }))
      }))
    .handle("syncFrequencyOptions", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataSource(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: { items: syncFrequencyOptions(d.syncInterval) } }))
      )))
