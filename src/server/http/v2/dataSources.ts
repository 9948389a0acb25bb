/**
 * v2 data source handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { CurrentPrincipal } from "../../../api/security.js"
import { idempotent } from "../idempotency.js"
import { present } from "../wireErrors.js"
import { pageView } from "../paging.js"
import { serve } from "../handler.js"
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

/** API data sources are always healthy. */
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

/** @since 0.1.0 */
export const V2DataSourcesLive = HttpApiBuilder.group(TributaryApi, "v2DataSources", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      serve(
        (principal) => listDataSources(principal, urlParams),
        ({ found, ...page }) => respond("success", { data: pageView(found, page, listItem) })
      ))
    .handle("create", ({ headers, payload }) =>
      Effect.flatMap(CurrentPrincipal, (principal) =>
        idempotent(
          headers["idempotency-key"],
          { payload, accountId: headers["x-account-id"] },
          createDataSource(principal, {
            accountId: headers["x-account-id"],
            name: payload.name,
            timezone: payload.timezone,
            integrationKey: payload.integrationKey,
            connectionId: payload.connectionId
          }).pipe(Effect.flatMap(respondDetail))
        )).pipe(present))
    .handle("get", ({ path }) =>
      serve((p) => visibleDataSource(p, path.id), respondDetail))
    .handle("update", ({ path, payload }) =>
      serve((p) => updateDataSource(p, path.id, { name: payload.name }), respondDetail))
    .handle("delete", ({ path }) =>
      serve(
        (p) => deleteDataSource(p, path.id),
        (d) => respond("success", { data: { message: `Data source ${d.id} and all its datasets were deleted` } })
      ))
    .handle("purge", ({ headers, path }) =>
      Effect.flatMap(CurrentPrincipal, (principal) =>
        idempotent(
          headers["idempotency-key"],
          null,
          purgeDataSource(principal, path.id).pipe(
            Effect.flatMap(({ dataSource, datasetCount }) =>
              respond("success", {
                data: { message: `All data of data source ${dataSource.id} (${datasetCount} datasets) was removed` }
              })
            )
          )
        )).pipe(present))
    .handle("setTimezone", ({ path, payload }) =>
      serve((p) => setDataSourceTimezone(p, path.id, payload), respondDetail))
    .handle("getPermissions", ({ path }) =>
      serve((p) => visibleDataSource(p, path.id), (d) => respond("success", { data: d.permissions })))
    .handle("setPermissions", ({ path, payload }) =>
      serve((p) => setDataSourcePermissions(p, path.id, payload), (d) => respond("success", { data: d.permissions })))
    .handle("setSyncFrequency", ({ path, payload }) =>
      serve((p) => setDataSourceSyncInterval(p, path.id, payload.syncInterval), respondDetail))
    .handle("syncFrequencyOptions", ({ path }) =>
      serve(
        (p) => visibleDataSource(p, path.id),
        (d) => respond("success", { data: { items: syncFrequencyOptions(d.syncInterval) } })
      )))
