/**
 * Shapes shared by the v2 groups: the `data` envelope, pages and paging parameters.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { RequestId } from "../common.js"

/**
 * A v2 success answer: the payload nested under `data`.
 *
 * @since 0.1.0
 */
export const DataResponse = <S extends Schema.Schema.Any>(data: S, identifier: string) =>
  Schema.Struct({ requestId: RequestId, status: Schema.Literal("success"), data }).annotations({ identifier })

/** @since 0.1.0 */
export const Pagination = Schema.Struct({
  page: Schema.Int,
  pageSize: Schema.Int,
  totalItems: Schema.Int
}).annotations({ identifier: "Pagination" })

/**
 * A v2 list answer: `data.items` and `data.pagination`.
 *
 * @since 0.1.0
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

/** Default and maximum `pageSize` of v2 lists. @since 0.1.0 */
export const DefaultPageSize = 25
/** @since 0.1.0 */
export const MaxPageSize = 100

/**
 * The optional `Idempotency-Key` header (lower-case: that is how it is matched).
 *
 * @since 0.1.0
 */
export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)))
})
