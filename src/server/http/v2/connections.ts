/**
 * v2 connection handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { CurrentPrincipal } from "../../../api/security.js"
import { present } from "../wireErrors.js"
import { pageView } from "../paging.js"
import { respond } from "../envelope.js"
import { deleteConnection, listConnections, renameConnection, setConnectionPermissions } from "../../features/connections.js"
import { visibleConnection } from "../../core/catalog/connections.js"
import type { Connection } from "../../core/store/Store.js"

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

/** @since 0.1.0 */
export const V2ConnectionsLive = HttpApiBuilder.group(TributaryApi, "v2Connections", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => listConnections(p, urlParams)),
        Effect.flatMap(({ found, ...page }) => respond("success", { data: pageView(found, page, listItem) })),
        present
      ))
    .handle("get", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleConnection(p, path.id)),
        Effect.flatMap((c) => respond("success", { data: detail(c) })),
        present
      ))
    .handle("update", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => renameConnection(p, path.id, payload.name)),
        Effect.flatMap((c) => respond("success", { data: detail(c) })),
        present
      ))
    .handle("delete", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => deleteConnection(p, path.id)),
        Effect.flatMap((c) => respond("success", { data: { message: `Connection ${c.id} was deleted` } })),
        present
      ))
    .handle("getPermissions", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleConnection(p, path.id)),
        Effect.flatMap((c) => respond("success", { data: permissionsOf(c) })),
        present
      ))
    .handle("setPermissions", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => setConnectionPermissions(p, path.id, payload)),
        Effect.flatMap((c) => respond("success", { data: permissionsOf(c) })),
        present
      )))
