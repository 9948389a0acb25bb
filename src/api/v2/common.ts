/**
 * Shapes shared by the v2 groups: the `data` envelope, pages and paging parameters.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { IdempotencyHeaders, IntegerId, Name, RequestId, UuidId } from "../common.js"

export { IdempotencyHeaders, Name }

/**
 * A v2 success answer: the payload nested under `data`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const DataResponse = <S extends Schema.Schema.Any>(data: S, identifier: string) =>
  Schema.Struct({ requestId: RequestId, status: Schema.Literal("success"), data }).annotations({ identifier })

/**
 * @since 0.1.0
 * @category models
 */
export const Pagination = Schema.Struct({
  page: Schema.Int,
  pageSize: Schema.Int,
  totalItems: Schema.Int
}).annotations({ identifier: "Pagination" })

/**
 * A v2 list answer: `data.items` and `data.pagination`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const PageResponse = <S extends Schema.Schema.Any>(item: S, identifier: string) =>
  DataResponse(Schema.Struct({ items: Schema.Array(item), pagination: Pagination }), identifier)

/**
 * Paging query: `page` from 0, `pageSize` from 1 (the server clamps it to 100).
 *
 * Both stay optional on the Type side so callers may omit them; the server applies the
 * defaults (0 and 25).
 *
 * @since 0.1.0
 * @category models
 */
export const PageParams = Schema.Struct({
  page: Schema.optional(
    Schema.NumberFromString.pipe(
      Schema.int({ message: () => "page must be an integer" }),
      Schema.greaterThanOrEqualTo(0, { message: () => "page must be 0 or more" })
    ).annotations({ jsonSchema: { type: "integer", minimum: 0, default: 0 } })
  ),
  pageSize: Schema.optional(
    Schema.NumberFromString.pipe(
      Schema.int({ message: () => "pageSize must be an integer" }),
      Schema.greaterThanOrEqualTo(1, { message: () => "pageSize must be 1 or more" })
    ).annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: 100, default: 25 } })
  )
})

/**
 * Default and maximum `pageSize` of v2 lists.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DefaultPageSize = 25
/**
 * @since 0.1.0
 * @category defaults
 */
export const MaxPageSize = 100

/**
 * Sorting query of v2 lists.
 *
 * @since 0.1.0
 * @category models
 */
export const SortOrder = Schema.Literal("asc", "desc")

/**
 * @since 0.1.0
 * @category models
 */
export const UserRef = Schema.Struct({ id: Schema.Int, name: Schema.String }).annotations({ identifier: "UserRef" })

/**
 * The state of a dataset's scheduled syncs; null for datasets filled through the API, which
 * have none.
 *
 * @since 0.1.0
 * @category models
 */
export const SyncInfo = Schema.Struct({
  initiatedAt: Schema.NullOr(Schema.String),
  lastSuccessfulSyncAt: Schema.NullOr(Schema.String),
  status: Schema.NullOr(Schema.String),
  type: Schema.NullOr(Schema.String)
}).annotations({ identifier: "SyncInfo" })

/**
 * @since 0.1.0
 * @category models
 */
export const StatusInfo = Schema.Struct({
  status: Schema.String,
  statusCode: Schema.NullOr(Schema.String),
  errorType: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String),
  description: Schema.NullOr(Schema.String),
  userAction: Schema.NullOr(Schema.String)
}).annotations({ identifier: "StatusInfo" })

/**
 * Who may see a data source or dataset: `everyone`, `private`, or `selectedUsers` with an
 * `accessList`.
 *
 * @since 0.1.0
 * @category models
 */
export const Permissions = Schema.Struct({
  accessLevel: Schema.Literal("everyone", "selectedUsers", "private"),
  accessList: Schema.NullOr(Schema.Array(UserRef))
}).annotations({ identifier: "Permissions" })

/**
 * @since 0.1.0
 * @category models
 */
export const PermissionsUpdate = Schema.Struct({
  accessLevel: Schema.Literal("everyone", "selectedUsers", "private"),
  accessList: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({ id: Schema.Int }))))
}).annotations({ identifier: "PermissionsUpdate" })

/**
 * Sync intervals the service accepts, in minutes.
 *
 * @since 0.1.0
 * @category defaults
 */
export const SyncIntervals = [1, 15, 60, 240, 360, 480, 1440] as const

/**
 * @since 0.1.0
 * @category models
 */
export const SyncFrequencyOption = Schema.Struct({
  syncInterval: Schema.Int,
  label: Schema.String,
  isDefault: Schema.Boolean,
  isSelected: Schema.Boolean,
  availability: Schema.String
}).annotations({ identifier: "SyncFrequencyOption" })

/**
 * @since 0.1.0
 * @category models
 */
export const SyncFrequencyUpdate = Schema.Struct({ syncInterval: Schema.Int }).annotations({
  identifier: "SyncFrequencyUpdate"
})

/**
 * The optional `x-account-id` header: act on another account of the organization.
 *
 * @since 0.1.0
 * @category models
 */
export const AccountHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255))),
  // As path ids: `2.0`, `1e1`, `-1`, `0` and ` 2` are not account ids.
  "x-account-id": Schema.optional(IntegerId)
})

/**
 * `{id}` of v2 data sources: an integer.
 *
 * @since 0.1.0
 * @category models
 */
export const DataSourceIdPath = Schema.Struct({ id: IntegerId })

const digits = /^[1-9][0-9]{0,15}$/

/**
 * A dataset id in a v2 path: its number (the v2 id), or its UUID (its v1 id), so that an id
 * either API handed out names the same dataset here. Decodes to a number or a (lower-case) UUID.
 *
 * @since 0.1.0
 * @category models
 */
export const DatasetId = Schema.transform(
  Schema.String.pipe(
    Schema.filter((s) => digits.test(s) || Schema.is(UuidId)(s), {
      message: () => "must be a dataset number (positive integer in decimal digits) or a dataset UUID"
    })
  ),
  Schema.Union(
    Schema.Int.pipe(
      Schema.positive({ message: () => "must be positive" }),
      Schema.lessThanOrEqualTo(Number.MAX_SAFE_INTEGER, { message: () => "is too large for an id" })
    ),
    UuidId
  ),
  { strict: true, decode: (s) => digits.test(s) ? Number(s) : s.toLowerCase(), encode: (id) => String(id) }
).annotations({
  jsonSchema: { oneOf: [{ type: "integer", minimum: 1 }, { type: "string", format: "uuid" }] }
})

/**
 * `{id}` of v2 datasets: a number, or the dataset's UUID (see `DatasetId`).
 *
 * @since 0.1.0
 * @category models
 */
export const DatasetIdPath = Schema.Struct({ id: DatasetId })


