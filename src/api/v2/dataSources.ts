/**
 * v2 data sources: `/v2/data-sources`.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Timestamp } from "../common.js"
import { Forbidden, Unprocessable } from "../errors.js"
import {
  AccountHeaders,
  DataResponse,
  DataSourceIdPath,
  IdempotencyHeaders,
  Name,
  PageParams,
  PageResponse,
  Permissions,
  PermissionsUpdate,
  SortOrder,
  StatusInfo,
  SyncFrequencyOption,
  SyncFrequencyUpdate,
  UserRef
} from "./common.js"

/**
 * @since 0.1.0
 * @category models
 */
export const DataSourceListItem = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  integrationKey: Schema.NullOr(Schema.String),
  connectionId: Schema.NullOr(Schema.Int),
  createdAt: Schema.NullOr(Timestamp),
  lastActivityAt: Schema.NullOr(Timestamp),
  timezone: Schema.NullOr(Schema.String),
  statusInfo: StatusInfo
}).annotations({ identifier: "DataSourceListItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const DataSourceDetail = Schema.Struct({
  ...DataSourceListItem.fields,
  managedBy: Schema.NullOr(UserRef),
  syncInterval: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "DataSourceDetail" })

/**
 * @since 0.1.0
 * @category models
 */
export const DataSourceListParams = Schema.Struct({
  ...PageParams.fields,
  search: Schema.optional(Schema.String),
  connectionId: Schema.optional(Schema.NumberFromString.pipe(Schema.int()).annotations({ jsonSchema: { type: "integer" } })),
  sortBy: Schema.optional(Schema.Literal("name", "createdAt", "lastActivityAt")),
  sortOrder: Schema.optional(SortOrder)
})

/**
 * @since 0.1.0
 * @category models
 */
export const CreateDataSourceRequest = Schema.Struct({
  name: Name,
  timezone: Schema.optional(Schema.String),
  integrationKey: Schema.optional(Schema.String),
  /** The connection it syncs through (a visible one); its integration key is the default. */
  connectionId: Schema.optional(Schema.Int)
}).annotations({ identifier: "V2CreateDataSourceRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const UpdateDataSourceRequest = Schema.Struct({ name: Name }).annotations({
  identifier: "V2UpdateDataSourceRequest"
})

/**
 * @since 0.1.0
 * @category models
 */
export const TimezoneUpdate = Schema.Struct({
  timezone: Schema.String,
  applyToDatasets: Schema.optional(Schema.Boolean),
  purgeData: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "DataSourceTimezoneUpdate" })

const Detail = DataResponse(DataSourceDetail, "DataSourceDetailResponse")
const Message = DataResponse(Schema.Struct({ message: Schema.String }), "V2MessageResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2DataSources extends HttpApiGroup.make("v2DataSources")
  .add(
    HttpApiEndpoint.get("list", "/v2/data-sources")
      .setUrlParams(DataSourceListParams)
      .addSuccess(PageResponse(DataSourceListItem, "DataSourcePage"))
  )
  .add(
    HttpApiEndpoint.post("create", "/v2/data-sources")
      .setPayload(CreateDataSourceRequest)
      .setHeaders(AccountHeaders)
      .addSuccess(Detail)
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(HttpApiEndpoint.get("get", "/v2/data-sources/:id").setPath(DataSourceIdPath).addSuccess(Detail))
  .add(
    HttpApiEndpoint.patch("update", "/v2/data-sources/:id")
      .setPath(DataSourceIdPath)
      .setPayload(UpdateDataSourceRequest)
      .addSuccess(Detail)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.del("delete", "/v2/data-sources/:id").setPath(DataSourceIdPath).addSuccess(Message).addError(
      Forbidden
    )
  )
  .add(
    HttpApiEndpoint.post("purge", "/v2/data-sources/:id/purge")
      .setPath(DataSourceIdPath)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(Message)
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(
    HttpApiEndpoint.put("setTimezone", "/v2/data-sources/:id/timezone")
      .setPath(DataSourceIdPath)
      .setPayload(TimezoneUpdate)
      .addSuccess(Detail)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.get("getPermissions", "/v2/data-sources/:id/permissions")
      .setPath(DataSourceIdPath)
      .addSuccess(DataResponse(Permissions, "DataSourcePermissionsResponse"))
  )
  .add(
    HttpApiEndpoint.put("setPermissions", "/v2/data-sources/:id/permissions")
      .setPath(DataSourceIdPath)
      .setPayload(PermissionsUpdate)
      .addSuccess(DataResponse(Permissions, "DataSourcePermissionsResponse"))
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.put("setSyncFrequency", "/v2/data-sources/:id/sync-frequency")
      .setPath(DataSourceIdPath)
      .setPayload(SyncFrequencyUpdate)
      .addSuccess(Detail)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.get("syncFrequencyOptions", "/v2/data-sources/:id/sync-frequency-options")
      .setPath(DataSourceIdPath)
      .addSuccess(DataResponse(Schema.Struct({ items: Schema.Array(SyncFrequencyOption) }), "SyncFrequencyOptions"))
  )
  .annotate(OpenApi.Title, "v2 data sources")
{}
