/**
 * v2 users of the organization (`/v2/users`) and the caller's own profile (`/v2/profile`).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { IntegerId, Timestamp } from "../common.js"
import { Conflict, Forbidden, Unprocessable } from "../errors.js"
import { Role } from "../security.js"
import { DataResponse, IdempotencyHeaders, Name, PageParams, PageResponse, SortOrder } from "./common.js"
import { OptionItem } from "./organization.js"

/**
 * @since 0.1.0
 * @category models
 */
export const UserListItem = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  email: Schema.String,
  role: Schema.String
}).annotations({ identifier: "UserListItem" })

/**
 * A profile's job data: `role` is the job role, not the user role.
 *
 * @since 0.1.0
 * @category models
 */
export const UserMetadata = Schema.Struct({
  department: Schema.NullOr(Schema.String),
  title: Schema.NullOr(Schema.String),
  role: Schema.NullOr(Schema.String)
}).annotations({ identifier: "UserMetadata" })

/**
 * @since 0.1.0
 * @category models
 */
export const UserDetail = Schema.Struct({
  ...UserListItem.fields,
  timezone: Schema.NullOr(Schema.String),
  createdAt: Schema.NullOr(Timestamp),
  lastSeenAt: Schema.NullOr(Timestamp),
  isAdminApproved: Schema.Boolean,
  isEmailVerified: Schema.Boolean,
  metadata: Schema.NullOr(UserMetadata)
}).annotations({ identifier: "UserDetail" })

/**
 * @since 0.1.0
 * @category models
 */
export const UserListParams = Schema.Struct({
  ...PageParams.fields,
  role: Schema.optional(Role),
  search: Schema.optional(Schema.String),
  sortBy: Schema.optional(Schema.Literal("name", "createdAt", "role")),
  sortOrder: Schema.optional(SortOrder)
})

/**
 * @since 0.1.0
 * @category models
 */
export const Email = Schema.String.pipe(
  Schema.maxLength(254, { message: () => "must be at most 254 characters" }),
  Schema.pattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: () => "must be an email address" })
)

/**
 * @since 0.1.0
 * @category models
 */
export const InviteUserRequest = Schema.Struct({ email: Email, role: Role, name: Schema.optional(Name) }).annotations({
  identifier: "InviteUserRequest"
})

/**
 * @since 0.1.0
 * @category models
 */
export const UpdateUserRequest = Schema.Struct({ name: Schema.optional(Name), role: Schema.optional(Role) }).annotations({
  identifier: "UpdateUserRequest"
})

/**
 * @since 0.1.0
 * @category models
 */
export const UserIdPath = Schema.Struct({ id: IntegerId })

const Detail = DataResponse(UserDetail, "UserDetailResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2Users extends HttpApiGroup.make("v2Users")
  .add(
    HttpApiEndpoint.get("list", "/v2/users")
      .setUrlParams(UserListParams)
      .addSuccess(PageResponse(UserListItem, "UserPage"))
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.post("create", "/v2/users")
      .setPayload(InviteUserRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(DataResponse(UserListItem, "UserListItemResponse"))
      .addError(Forbidden)
      .addError(Conflict)
      .addError(Unprocessable)
  )
  .add(HttpApiEndpoint.get("get", "/v2/users/:id").setPath(UserIdPath).addSuccess(Detail).addError(Forbidden))
  .add(
    HttpApiEndpoint.patch("update", "/v2/users/:id")
      .setPath(UserIdPath)
      .setPayload(UpdateUserRequest)
      .addSuccess(Detail)
      .addError(Forbidden)
      .addError(Conflict)
  )
  .add(
    HttpApiEndpoint.del("delete", "/v2/users/:id")
      .setPath(UserIdPath)
      .addSuccess(DataResponse(Schema.Struct({ message: Schema.String }), "V2MessageResponse"))
      .addError(Forbidden)
      .addError(Conflict)
  )
  .annotate(OpenApi.Title, "v2 users")
{}

/**
 * @since 0.1.0
 * @category models
 */
export const Profile = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  email: Schema.String,
  role: Schema.String,
  timezone: Schema.NullOr(Schema.String),
  createdAt: Schema.NullOr(Timestamp),
  isEmailVerified: Schema.Boolean,
  metadata: Schema.NullOr(UserMetadata),
  organization: Schema.Struct({ id: Schema.NullOr(Schema.Int), name: Schema.NullOr(Schema.String) }),
  account: Schema.NullOr(Schema.Struct({ id: Schema.Int, name: Schema.NullOr(Schema.String) }))
}).annotations({ identifier: "ProfileResponse" })

const ProfileText = Schema.String.pipe(Schema.maxLength(255, { message: () => "must be at most 255 characters" }))

/**
 * Any subset. `timezone: null` clears; in `metadata`, `""` (or null) clears a field.
 *
 * @since 0.1.0
 * @category models
 */
export const UpdateProfileRequest = Schema.Struct({
  name: Schema.optional(Name),
  timezone: Schema.optional(Schema.NullOr(Schema.String)),
  metadata: Schema.optional(Schema.Struct({
    department: Schema.optional(Schema.NullOr(ProfileText)),
    title: Schema.optional(Schema.NullOr(ProfileText)),
    role: Schema.optional(Schema.NullOr(ProfileText))
  }))
}).annotations({ identifier: "UpdateProfileRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const ProfileMetadataOptions = Schema.Struct({
  departments: Schema.Array(Schema.Struct({ value: Schema.String, label: Schema.String, roles: Schema.Array(OptionItem) }))
}).annotations({ identifier: "ProfileMetadataOptions" })

const ProfileAnswer = DataResponse(Profile, "ProfileDetailResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2Profile extends HttpApiGroup.make("v2Profile")
  .add(HttpApiEndpoint.get("get", "/v2/profile").addSuccess(ProfileAnswer))
  .add(HttpApiEndpoint.patch("update", "/v2/profile").setPayload(UpdateProfileRequest).addSuccess(ProfileAnswer))
  .add(
    HttpApiEndpoint.get("metadataOptions", "/v2/profile/metadata-options")
      .addSuccess(DataResponse(ProfileMetadataOptions, "ProfileMetadataOptionsResponse"))
  )
  .annotate(OpenApi.Title, "v2 profile")
{}
