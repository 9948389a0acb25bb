/**
 * v2 connections: the credentials data sources of an integration sync through
 * (`/v2/connections`). Connections are seeded; the API reads, renames, shares and deletes them.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { IntegerId, Timestamp } from "../common.js"
import { Forbidden } from "../errors.js"
import { DataResponse, Name, PageParams, PageResponse, Permissions, PermissionsUpdate, UserRef } from "./common.js"

/**
 * @since 0.1.0
 * @category models
 */
export const ConnectionStatusInfo = Schema.Struct({
  status: Schema.String,
  reason: Schema.NullOr(Schema.String),
  description: Schema.NullOr(Schema.String),
  userAction: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ConnectionStatusInfo" })

/**
 * @since 0.1.0
 * @category models
 */
export const ConnectionListItem = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  integrationKey: Schema.NullOr(Schema.String),
  managedBy: Schema.NullOr(UserRef),
  sharedWithAccounts: Schema.Boolean,
  statusInfo: ConnectionStatusInfo
}).annotations({ identifier: "ConnectionListItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const ConnectionDetail = Schema.Struct({
  ...ConnectionListItem.fields,
  accessLevel: Permissions.fields.accessLevel,
  accessList: Permissions.fields.accessList,
  createdAt: Schema.NullOr(Timestamp),
  dataSourcesCount: Schema.Int
}).annotations({ identifier: "ConnectionDetail" })

/**
 * @since 0.1.0
 * @category models
 */
export const ConnectionPermissions = Schema.Struct({
  ...Permissions.fields,
  sharedWithAccounts: Schema.Boolean
}).annotations({ identifier: "ConnectionPermissions" })

/**
 * The sharing flag is replaced on every call, as on the service.
 *
 * @since 0.1.0
 * @category models
 */
export const ConnectionPermissionsUpdate = Schema.Struct({
  ...PermissionsUpdate.fields,
  sharedWithAccounts: Schema.Boolean
}).annotations({ identifier: "ConnectionPermissionsUpdate" })

const ConnectionPath = Schema.Struct({ id: IntegerId })
const Detail = DataResponse(ConnectionDetail, "ConnectionDetailResponse")
const PermissionsAnswer = DataResponse(ConnectionPermissions, "ConnectionPermissionsResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2Connections extends HttpApiGroup.make("v2Connections")
  .add(
    HttpApiEndpoint.get("list", "/v2/connections")
      .setUrlParams(Schema.Struct({ ...PageParams.fields, search: Schema.optional(Schema.String) }))
      .addSuccess(PageResponse(ConnectionListItem, "ConnectionPage"))
  )
  .add(HttpApiEndpoint.get("get", "/v2/connections/:id").setPath(ConnectionPath).addSuccess(Detail))
  .add(
    HttpApiEndpoint.patch("update", "/v2/connections/:id")
      .setPath(ConnectionPath)
      .setPayload(Schema.Struct({ name: Name }).annotations({ identifier: "UpdateConnectionRequest" }))
      .addSuccess(Detail)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.del("delete", "/v2/connections/:id")
      .setPath(ConnectionPath)
      .addSuccess(DataResponse(Schema.Struct({ message: Schema.String }), "ConnectionMessageResponse"))
      .addError(Forbidden)
  )
  .add(HttpApiEndpoint.get("getPermissions", "/v2/connections/:id/permissions").setPath(ConnectionPath).addSuccess(PermissionsAnswer))
  .add(
    HttpApiEndpoint.put("setPermissions", "/v2/connections/:id/permissions")
      .setPath(ConnectionPath)
      .setPayload(ConnectionPermissionsUpdate)
      .addSuccess(PermissionsAnswer)
      .addError(Forbidden)
  )
  .annotate(OpenApi.Title, "v2 connections")
{}
