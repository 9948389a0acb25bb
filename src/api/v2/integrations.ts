/**
 * v2 integrations: the catalog of services data can come from (`/v2/integrations`).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { IntegerId } from "../common.js"
import { DataResponse, PageParams, PageResponse, SortOrder } from "./common.js"

/**
 * @since 0.1.0
 * @category models
 */
export const IntegrationListItem = Schema.Struct({
  id: Schema.Int,
  key: Schema.String,
  name: Schema.String,
  supportsDatasets: Schema.Boolean
}).annotations({ identifier: "IntegrationListItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const IntegrationDetail = Schema.Struct({
  ...IntegrationListItem.fields,
  avatar: Schema.NullOr(Schema.String),
  categories: Schema.Array(Schema.String),
  description: Schema.NullOr(Schema.String),
  supportsMetricBuilder: Schema.Boolean
}).annotations({ identifier: "IntegrationDetail" })

/**
 * @since 0.1.0
 * @category models
 */
export const IntegrationListParams = Schema.Struct({
  ...PageParams.fields,
  /** A substring of the name or the key. */
  search: Schema.optional(Schema.String),
  sortBy: Schema.optional(Schema.Literal("name")),
  sortOrder: Schema.optional(SortOrder)
})

/**
 * @since 0.1.0
 * @category api
 */
export class V2Integrations extends HttpApiGroup.make("v2Integrations")
  .add(
    HttpApiEndpoint.get("list", "/v2/integrations")
      .setUrlParams(IntegrationListParams)
      .addSuccess(PageResponse(IntegrationListItem, "IntegrationPage"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v2/integrations/:id")
      .setPath(Schema.Struct({ id: IntegerId }))
      .addSuccess(DataResponse(IntegrationDetail, "IntegrationDetailResponse"))
  )
  .annotate(OpenApi.Title, "v2 integrations")
{}
