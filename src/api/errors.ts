/**
 * Wire errors: the spec's error envelope and one schema per HTTP status.
 *
 * Every error answer of both API versions is the same body:
 * `{ requestId, status: "error", errors: [{ code, message, field, type }] }`.
 * The statuses differ, so each status gets its own schema. The `_tag` that tells them
 * apart exists on the decoded (Type) side only: it never reaches the wire or the OpenAPI
 * document, yet the server encodes each failure with its own status (same-shaped error
 * schemas would otherwise all take the first status of the union) and callers can
 * `Effect.catchTag` on both sides.
 *
 * @since 0.1.0
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"

/**
 * One problem in an error answer.
 *
 * `code` and `field` may be absent or null on the wire (the real service sends both
 * ways); decoding fills in `null` so callers always see the key.
 *
 * @since 0.1.0
 */
export const ErrorItem = Schema.Struct({
  code: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  message: Schema.String,
  field: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  type: Schema.optionalWith(Schema.String, { default: () => "error" })
}).annotations({ identifier: "ErrorItem" })

/** @since 0.1.0 */
export type ErrorItem = typeof ErrorItem.Type

/**
 * The error envelope shared by v1 and v2.
 *
 * @since 0.1.0
 */
export const ErrorEnvelope = Schema.Struct({
  requestId: Schema.String,
  status: Schema.Literal("error"),
  errors: Schema.Array(ErrorItem)
})

/** @since 0.1.0 */
export type ErrorEnvelope = typeof ErrorEnvelope.Type

const wireError = <const Tag extends string>(tag: Tag, status: number, description: string) =>
  ErrorEnvelope.pipe(Schema.attachPropertySignature("_tag", tag)).annotations({
    ...HttpApiSchema.annotations({ status, description }),
    identifier: tag
  })

/** 400: the request is malformed or a field is invalid. @since 0.1.0 */
export const BadRequest = wireError("BadRequest", 400, "Invalid input: malformed JSON or a field that does not validate")
/** 401: `x-api-key` is missing or unknown. @since 0.1.0 */
export const Unauthorized = wireError("Unauthorized", 401, "The x-api-key header is missing or invalid")
/** 403: the key lacks the permission for the target account or resource. @since 0.1.0 */
export const Forbidden = wireError("Forbidden", 403, "The key lacks permission for this operation")
/** 404: the route, or the resource, does not exist or is not visible to the key. @since 0.1.0 */
export const NotFound = wireError("NotFound", 404, "Not found, or not visible to this key")
/** 408: the request was not received in time (a body that stopped half way). @since 0.1.0 */
export const RequestTimeout = wireError("RequestTimeout", 408, "The request was not received in time; the connection is closed")
/** 409: a concurrent request with the same idempotency key is still running. @since 0.1.0 */
export const Conflict = wireError("Conflict", 409, "Conflict with the current state")
/** 413: the request body is over the server's limit. @since 0.1.0 */
export const PayloadTooLarge = wireError("PayloadTooLarge", 413, "The request body is over the size limit")
/** 415: a request body that is not `application/json`. @since 0.1.0 */
export const UnsupportedMediaType = wireError("UnsupportedMediaType", 415, "The request body is not application/json")
/** 422: an idempotency key was reused with a different request. @since 0.1.0 */
export const Unprocessable = wireError("Unprocessable", 422, "Idempotency key reused with a different request")
/** 429: too many requests; the `Retry-After` header says when to try again. @since 0.1.0 */
export const TooManyRequests = wireError("TooManyRequests", 429, "Rate limited; retry after the Retry-After seconds")
/** 431: the request's headers are over the server's limit. @since 0.1.0 */
export const HeadersTooLarge = wireError("HeadersTooLarge", 431, "The request headers are over the size limit")
/** 500: the server failed. @since 0.1.0 */
export const InternalServerError = wireError("InternalServerError", 500, "The server failed; safe to retry")
/** 503: the server is unavailable for a moment. @since 0.1.0 */
export const ServiceUnavailable = wireError("ServiceUnavailable", 503, "Temporarily unavailable; safe to retry")

/** @since 0.1.0 */
export type BadRequest = typeof BadRequest.Type
/** @since 0.1.0 */
export type Unauthorized = typeof Unauthorized.Type
/** @since 0.1.0 */
export type Forbidden = typeof Forbidden.Type
/** @since 0.1.0 */
export type NotFound = typeof NotFound.Type
/** @since 0.1.0 */
export type RequestTimeout = typeof RequestTimeout.Type
/** @since 0.1.0 */
export type Conflict = typeof Conflict.Type
/** @since 0.1.0 */
export type PayloadTooLarge = typeof PayloadTooLarge.Type
/** @since 0.1.0 */
export type UnsupportedMediaType = typeof UnsupportedMediaType.Type
/** @since 0.1.0 */
export type Unprocessable = typeof Unprocessable.Type
/** @since 0.1.0 */
export type TooManyRequests = typeof TooManyRequests.Type
/** @since 0.1.0 */
export type HeadersTooLarge = typeof HeadersTooLarge.Type
/** @since 0.1.0 */
export type InternalServerError = typeof InternalServerError.Type
/** @since 0.1.0 */
export type ServiceUnavailable = typeof ServiceUnavailable.Type

/**
 * Any wire error, discriminated by `_tag`.
 *
 * @since 0.1.0
 */
export type WireError =
  | BadRequest
  | Unauthorized
  | Forbidden
  | NotFound
  | RequestTimeout
  | Conflict
  | PayloadTooLarge
  | UnsupportedMediaType
  | Unprocessable
  | TooManyRequests
  | HeadersTooLarge
  | InternalServerError
  | ServiceUnavailable

/**
 * The status each wire error is sent with.
 *
 * @since 0.1.0
 */
export const statusOf: { readonly [K in WireError["_tag"]]: number } = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  RequestTimeout: 408,
  Conflict: 409,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
  Unprocessable: 422,
  TooManyRequests: 429,
  HeadersTooLarge: 431,
  InternalServerError: 500,
  ServiceUnavailable: 503
}

/**
 * Whether `u` is a wire error (a declared error of the API, as raised on the server).
 *
 * @since 0.1.0
 */
export const isWireError = (u: unknown): u is WireError =>
  typeof u === "object" && u !== null && typeof (u as { _tag?: unknown })._tag === "string" &&
  (u as { _tag: string })._tag in statusOf && (u as { status?: unknown }).status === "error"

/**
 * The `type` each wire error carries in its items, per the spec's categories.
 *
 * @since 0.1.0
 */
export const typeOf: { readonly [K in WireError["_tag"]]: string } = {
  BadRequest: "validation",
  Unauthorized: "authentication",
  Forbidden: "permission",
  NotFound: "not_found",
  RequestTimeout: "request",
  Conflict: "conflict",
  PayloadTooLarge: "validation",
  UnsupportedMediaType: "validation",
  Unprocessable: "idempotency",
  TooManyRequests: "rate_limit",
  HeadersTooLarge: "request",
  InternalServerError: "server",
  ServiceUnavailable: "server"
}

/**
 * The most an error carries of what the client sent: messages quote values (a time zone, a
 * column name, a decode failure's `actual`), and a 1 MB value came back whole in a 1 MB error.
 * Any run of more than {@link maxEchoLength} characters without a space (a quoted value) is
 * cut to that length, then the message to {@link maxMessageLength} and the field to
 * {@link maxFieldLength}.
 *
 * @since 0.1.0
 */
export const maxEchoLength = 100
/** @since 0.1.0 */
export const maxMessageLength = 500
/** @since 0.1.0 */
export const maxFieldLength = 200

const longRun = new RegExp(`\\S{${maxEchoLength + 1},}`, "g")

const cut = (text: string, max: number) => {
  // The first few thousand characters hold everything that can remain.
  const head = text.length > 4 * max ? text.slice(0, 4 * max) : text
  const short = head.replace(longRun, (run) => `${run.slice(0, maxEchoLength)}…`)
  return short.length > max ? `${short.slice(0, max - 1)}…` : short
}

/**
 * Builds a wire error with a single problem; what it echoes is cut (see {@link maxEchoLength}).
 *
 * @since 0.1.0
 */
export const wireErrorOf = <Tag extends WireError["_tag"]>(
  tag: Tag,
  requestId: string,
  problem: { readonly code: string; readonly message: string; readonly field?: string | null }
): Extract<WireError, { readonly _tag: Tag }> =>
  ({
    _tag: tag,
    requestId,
    status: "error",
    errors: [{
      code: problem.code,
      message: cut(problem.message, maxMessageLength),
      field: problem.field == null ? null : cut(problem.field, maxFieldLength),
      type: typeOf[tag]
    }]
  }) as unknown as Extract<WireError, { readonly _tag: Tag }>
