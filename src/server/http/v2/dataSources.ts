/**
 * v2 data source handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import { pageView } from "../paging.js"
import { byId, change, changeOnce, serve } from "../handler.js"
import { respond } from "../envelope.js"
import {
  createDataSource,
  deleteDataSource,
  listDataSources,
  purgeDataSource,
  setDataSourceTimezone,
  updateDataSource,
  visibleDataSource
} from "../../core/catalog/dataSources.js"
import { setDataSourcePermissions, setDataSourceSyncInterval, syncFrequencyOptions } from "../../features/settings.js"
import type { DataSource } from "../../core/store/Store.js"
import { visibleConnection } from "../../features/connections.js"

/**
 * API data sources are always healthy.
 *
 * @since 0.1.0
 * @category defaults
 */
export const activeStatus = {
  status: "active",
  statusCode: "active",
  errorType: null,
  reason: null,
  description: null,
  userAction: null
} as const

const listItem = (d: DataSource) => ({
  id: d.id,
  name: d.name,
  integrationKey: d.key,
  connectionId: d.connectionId,
  createdAt: d.createdAt,
  lastActivityAt: d.lastActivityAt,
  timezone: d.timezone,
  statusInfo: activeStatus
})

const detail = (d: DataSource) => ({
  ...listItem(d),
  managedBy: d.createdBy,
  syncInterval: d.syncInterval
})

const respondDetail = (d: DataSource) => respond("success", { data: detail(d) })

/**
 * @since 0.1.0
 * @category layers
 */
export const V2DataSourcesLive = HttpApiBuilder.group(TributaryApi, "v2DataSources", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      serve(
        (principal) => listDataSources(principal, urlParams),
        ({ found, ...page }) => respond("success", { data: pageView(found, page, listItem) })
      ))
    .handle("create", ({ headers, payload }) =>
      changeOnce(
        { key: headers["idempotency-key"], body: { payload, accountId: headers["x-account-id"] } },
        (p) =>
          createDataSource(p, {
            accountId: headers["x-account-id"],
            name: payload.name,
            timezone: payload.timezone,
            integrationKey: payload.integrationKey,
            connection: payload.connectionId === undefined ? undefined : visibleConnection(p, payload.connectionId)
          }),
        byId("dataSource"),
        respondDetail
      ))
    .handle("get", ({ path }) =>
      serve((p) => visibleDataSource(p, path.id), respondDetail))
    .handle("update", ({ path, payload }) =>
      change((p) => updateDataSource(p, path.id, { name: payload.name }), byId("dataSource"), respondDetail))
    .handle("delete", ({ path }) =>
      change(
        (p) => deleteDataSource(p, path.id),
        byId("dataSource"),
        (d) => respond("success", { data: { message: `Data source ${d.id} and all its datasets were deleted` } })
      ))
    .handle("purge", ({ headers, path }) =>
      changeOnce(
        { key: headers["idempotency-key"], body: null },
        (p) => purgeDataSource(p, path.id),
        ({ dataSource }) => ({ resourceType: "dataSource", resourceId: dataSource.id }),
        ({ dataSource, datasetCount }) =>
          respond("success", {
            data: { message: `All data of data source ${dataSource.id} (${datasetCount} datasets) was removed` }
          })
      ))
    .handle("setTimezone", ({ path, payload }) =>
      change((p) => setDataSourceTimezone(p, path.id, payload), byId("dataSource"), respondDetail))
    .handle("getPermissions", ({ path }) =>
      serve((p) => visibleDataSource(p, path.id), (d) => respond("success", { data: d.permissions })))
    .handle("setPermissions", ({ path, payload }) =>
      change((p) => setDataSourcePermissions(p, path.id, payload), byId("dataSource"), (d) => respond("success", { data: d.permissions })))
    .handle("setSyncFrequency", ({ path, payload }) =>
      change((p) => setDataSourceSyncInterval(p, path.id, payload.syncInterval), byId("dataSource"), respondDetail))
    .handle("syncFrequencyOptions", ({ path }) =>
      serve(
        (p) => visibleDataSource(p, path.id),
        (d) => respond("success", { data: { items: syncFrequencyOptions(d.syncInterval) } })
      )))
