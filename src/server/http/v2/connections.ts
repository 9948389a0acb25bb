/**
 * v2 connection handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import { pageView } from "../paging.js"
import { byId, change, serve } from "../handler.js"
import { respond } from "../envelope.js"
import {
  deleteConnection,
  listConnections,
  renameConnection,
  setConnectionPermissions,
  visibleConnection
} from "../../features/connections.js"
import type { Connection } from "../../features/connections/store.js"

const listItem = (c: Connection) => ({
  id: c.id,
  name: c.name,
  integrationKey: c.integrationKey,
  managedBy: c.managedBy,
  sharedWithAccounts: c.sharedWithAccounts,
  statusInfo: c.status === "active"
    ? { status: "active", reason: null, description: null, userAction: null }
    : {
      status: "error",
      reason: "invalidCredentials",
      description: "The integration refused the connection's credentials",
      userAction: "Reconnect the account"
    }
})

const detail = (c: Connection) => ({
  ...listItem(c),
  accessLevel: c.permissions.accessLevel,
  accessList: c.permissions.accessList,
  createdAt: c.createdAt,
  dataSourcesCount: c.dataSourcesCount
})

const permissionsOf = (c: Connection) => ({ ...c.permissions, sharedWithAccounts: c.sharedWithAccounts })

/**
 * @since 0.1.0
 * @category layers
 */
export const V2ConnectionsLive = HttpApiBuilder.group(TributaryApi, "v2Connections", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      serve(
        (p) => listConnections(p, urlParams),
        ({ found, ...page }) => respond("success", { data: pageView(found, page, listItem) })
      ))
    .handle("get", ({ path }) =>
      serve((p) => visibleConnection(p, path.id), (c) => respond("success", { data: detail(c) })))
    .handle("update", ({ path, payload }) =>
      change((p) => renameConnection(p, path.id, payload.name), byId("connection"), (c) => respond("success", { data: detail(c) })))
    .handle("delete", ({ path }) =>
      change(
        (p) => deleteConnection(p, path.id),
        byId("connection"),
        (c) => respond("success", { data: { message: `Connection ${c.id} was deleted` } })
      ))
    .handle("getPermissions", ({ path }) =>
      serve((p) => visibleConnection(p, path.id), (c) => respond("success", { data: permissionsOf(c) })))
    .handle("setPermissions", ({ path, payload }) =>
      change(
        (p) => setConnectionPermissions(p, path.id, payload),
        byId("connection"),
        (c) => respond("success", { data: permissionsOf(c) })
      )))
