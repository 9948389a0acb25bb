/**
 * v2 accounts of the organization: `/v2/accounts` (research §1, the `x-account-id` model).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { IntegerId, Timestamp } from "../common.js"
import { Conflict, Forbidden, Unprocessable } from "../errors.js"
import { DataResponse, IdempotencyHeaders, Name, PageParams, PageResponse, SortOrder, UserRef } from "./common.js"

/**
 * @since 0.1.0
 * @category models
 */
export const AccountListItem = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  isSelfManaged: Schema.Boolean,
  managedBy: Schema.NullOr(UserRef)
}).annotations({ identifier: "AccountListItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const AccountDetail = Schema.Struct({
  ...AccountListItem.fields,
  companyName: Schema.NullOr(Schema.String),
  createdAt: Schema.NullOr(Timestamp),
  websiteUrl: Schema.NullOr(Schema.String)
}).annotations({ identifier: "AccountDetail" })

/**
 * @since 0.1.0
 * @category models
 */
export const AccountListParams = Schema.Struct({
  ...PageParams.fields,
  search: Schema.optional(Schema.String),
  sortBy: Schema.optional(Schema.Literal("name", "website", "managedBy")),
  sortOrder: Schema.optional(SortOrder)
})

const WebsiteUrl = Schema.String.pipe(Schema.maxLength(2048, { message: () => "must be at most 2048 characters" }))

/**
 * @since 0.1.0
 * @category models
 */
export const CreateAccountRequest = Schema.Struct({
  name: Name,
  managedById: Schema.optional(Schema.Int),
  websiteUrl: Schema.optional(Schema.NullOr(WebsiteUrl))
}).annotations({ identifier: "CreateAccountRequest" })

/**
 * `managedById: null` and `websiteUrl: null` (or `""`) clear.
 *
 * @since 0.1.0
 * @category models
 */
export const UpdateAccountRequest = Schema.Struct({
  name: Schema.optional(Name),
  managedById: Schema.optional(Schema.NullOr(Schema.Int)),
  websiteUrl: Schema.optional(Schema.NullOr(WebsiteUrl))
}).annotations({ identifier: "UpdateAccountRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const AccountIdPath = Schema.Struct({ id: IntegerId })

const Detail = DataResponse(AccountDetail, "AccountDetailResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2Accounts extends HttpApiGroup.make("v2Accounts")
  .add(
    HttpApiEndpoint.get("list", "/v2/accounts")
      .setUrlParams(AccountListParams)
      .addSuccess(PageResponse(AccountListItem, "AccountPage"))
  )
  .add(
    HttpApiEndpoint.post("create", "/v2/accounts")
      .setPayload(CreateAccountRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(Detail)
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(HttpApiEndpoint.get("get", "/v2/accounts/:id").setPath(AccountIdPath).addSuccess(Detail))
  .add(
    HttpApiEndpoint.patch("update", "/v2/accounts/:id")
      .setPath(AccountIdPath)
      .setPayload(UpdateAccountRequest)
      .addSuccess(Detail)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.del("delete", "/v2/accounts/:id")
      .setPath(AccountIdPath)
      .addSuccess(DataResponse(Schema.Struct({ message: Schema.String }), "V2MessageResponse"))
      .addError(Forbidden)
      .addError(Conflict)
  )
  .annotate(OpenApi.Title, "v2 accounts")
{}
