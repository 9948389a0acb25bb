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
import type * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"

/**
 * One problem in an error answer.
 *
 * `code` and `field` may be absent or null on the wire (the real service sends both
 * ways); decoding fills in `null` so callers always see the key.
 *
 * @since 0.1.0
 * @category models
 */
export const ErrorItem = Schema.Struct({
  code: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  message: Schema.String,
  field: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  type: Schema.optionalWith(Schema.String, { default: () => "error" })
}).annotations({ identifier: "ErrorItem" })

/**
 * @since 0.1.0
 * @category models
 */
export type ErrorItem = typeof ErrorItem.Type

/**
 * The error envelope shared by v1 and v2.
 *
 * @since 0.1.0
 * @category models
 */
export const ErrorEnvelope = Schema.Struct({
  requestId: Schema.String,
  status: Schema.Literal("error"),
  errors: Schema.Array(ErrorItem)
})

/**
 * @since 0.1.0
 * @category models
 */
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/**
 * Each wire error once: its HTTP status, the `type` its items carry (the spec's categories)
 * and what the OpenAPI document says of it. The schemas below, {@link statusOf} and
 * {@link typeOf} are all read from here.
 *
 * @since 0.1.0
 * @category errors
 */
export const wireErrors = {
  BadRequest: { status: 400, type: "validation", description: "Invalid input: malformed JSON or a field that does not validate" },
  Unauthorized: { status: 401, type: "authentication", description: "The x-api-key header is missing or invalid" },
  Forbidden: { status: 403, type: "permission", description: "The key lacks permission for this operation" },
  NotFound: { status: 404, type: "not_found", description: "Not found, or not visible to this key" },
  RequestTimeout: { status: 408, type: "request", description: "The request was not received in time; the connection is closed" },
  Conflict: { status: 409, type: "conflict", description: "Conflict with the current state" },
  PayloadTooLarge: { status: 413, type: "validation", description: "The request body is over the size limit" },
  UnsupportedMediaType: { status: 415, type: "validation", description: "The request body is not application/json" },
  Unprocessable: { status: 422, type: "idempotency", description: "Idempotency key reused with a different request" },
  TooManyRequests: { status: 429, type: "rate_limit", description: "Rate limited; retry after the Retry-After seconds" },
  HeadersTooLarge: { status: 431, type: "request", description: "The request headers are over the size limit" },
  InternalServerError: { status: 500, type: "server", description: "The server failed; safe to retry" },
  ServiceUnavailable: { status: 503, type: "server", description: "Temporarily unavailable; safe to retry" }
} as const

const wireError = <const Tag extends keyof typeof wireErrors>(tag: Tag) =>
  ErrorEnvelope.pipe(Schema.attachPropertySignature("_tag", tag)).annotations({
    ...HttpApiSchema.annotations({ status: wireErrors[tag].status, description: wireErrors[tag].description }),
    identifier: tag
  })

/**
 * 400: the request is malformed or a field is invalid.
 *
 * @since 0.1.0
 * @category errors
 */
export const BadRequest = wireError("BadRequest")
/**
 * 401: `x-api-key` is missing or unknown.
 *
 * @since 0.1.0
 * @category errors
 */
export const Unauthorized = wireError("Unauthorized")
/**
 * 403: the key lacks the permission for the target account or resource.
 *
 * @since 0.1.0
 * @category errors
 */
export const Forbidden = wireError("Forbidden")
/**
 * 404: the route, or the resource, does not exist or is not visible to the key.
 *
 * @since 0.1.0
 * @category errors
 */
export const NotFound = wireError("NotFound")
/**
 * 408: the request was not received in time (a body that stopped half way).
 *
 * @since 0.1.0
 * @category errors
 */
export const RequestTimeout = wireError("RequestTimeout")
/**
 * 409: a concurrent request with the same idempotency key is still running.
 *
 * @since 0.1.0
 * @category errors
 */
export const Conflict = wireError("Conflict")
/**
 * 413: the request body is over the server's limit.
 *
 * @since 0.1.0
 * @category errors
 */
export const PayloadTooLarge = wireError("PayloadTooLarge")
/**
 * 415: a request body that is not `application/json`.
 *
 * @since 0.1.0
 * @category errors
 */
export const UnsupportedMediaType = wireError("UnsupportedMediaType")
/**
 * 422: an idempotency key was reused with a different request.
 *
 * @since 0.1.0
 * @category errors
 */
export const Unprocessable = wireError("Unprocessable")
/**
 * 429: too many requests; the `Retry-After` header says when to try again.
 *
 * @since 0.1.0
 * @category errors
 */
export const TooManyRequests = wireError("TooManyRequests")
/**
 * 431: the request's headers are over the server's limit.
 *
 * @since 0.1.0
 * @category errors
 */
export const HeadersTooLarge = wireError("HeadersTooLarge")
/**
 * 500: the server failed.
 *
 * @since 0.1.0
 * @category errors
 */
export const InternalServerError = wireError("InternalServerError")
/**
 * 503: the server is unavailable for a moment.
 *
 * @since 0.1.0
 * @category errors
 */
export const ServiceUnavailable = wireError("ServiceUnavailable")

/**
 * @since 0.1.0
 * @category models
 */
export type BadRequest = typeof BadRequest.Type
/**
 * @since 0.1.0
 * @category models
 */
export type Unauthorized = typeof Unauthorized.Type
/**
 * @since 0.1.0
 * @category models
 */
export type Forbidden = typeof Forbidden.Type
/**
 * @since 0.1.0
 * @category models
 */
export type NotFound = typeof NotFound.Type
/**
 * @since 0.1.0
 * @category models
 */
export type RequestTimeout = typeof RequestTimeout.Type
/**
 * @since 0.1.0
 * @category models
 */
export type Conflict = typeof Conflict.Type
/**
 * @since 0.1.0
 * @category models
 */
export type PayloadTooLarge = typeof PayloadTooLarge.Type
/**
 * @since 0.1.0
 * @category models
 */
export type UnsupportedMediaType = typeof UnsupportedMediaType.Type
/**
 * @since 0.1.0
 * @category models
 */
export type Unprocessable = typeof Unprocessable.Type
/**
 * @since 0.1.0
 * @category models
 */
export type TooManyRequests = typeof TooManyRequests.Type
/**
 * @since 0.1.0
 * @category models
 */
export type HeadersTooLarge = typeof HeadersTooLarge.Type
/**
 * @since 0.1.0
 * @category errors
 */
export type InternalServerError = typeof InternalServerError.Type
/**
 * @since 0.1.0
 * @category models
 */
export type ServiceUnavailable = typeof ServiceUnavailable.Type

/**
 * Any wire error, discriminated by `_tag`.
 *
 * @since 0.1.0
 * @category errors
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
 * @category utils
 */
export const statusOf: { readonly [K in WireError["_tag"]]: number } = Object.fromEntries(
  Object.entries(wireErrors).map(([tag, error]) => [tag, error.status])
) as { readonly [K in WireError["_tag"]]: number }

/**
 * Whether `u` is a wire error (a declared error of the API, as raised on the server).
 *
 * @since 0.1.0
 * @category guards
 */
export const isWireError = (u: unknown): u is WireError =>
  typeof u === "object" && u !== null && typeof (u as { _tag?: unknown })._tag === "string" &&
  (u as { _tag: string })._tag in statusOf && (u as { status?: unknown }).status === "error"

/**
 * The `type` each wire error carries in its items, per the spec's categories.
 *
 * @since 0.1.0
 * @category utils
 */
export const typeOf: { readonly [K in WireError["_tag"]]: string } = Object.fromEntries(
  Object.entries(wireErrors).map(([tag, error]) => [tag, error.type])
) as { readonly [K in WireError["_tag"]]: string }

/**
 * The most an error carries of what the client sent: messages quote values (a time zone, a
 * column name, a decode failure's `actual`), and a 1 MB value came back whole in a 1 MB error.
 * Any run of more than {@link maxEchoLength} characters without a space (a quoted value) is
 * cut to that length, then the message to {@link maxMessageLength} and the field to
 * {@link maxFieldLength}.
 *
 * @since 0.1.0
 * @category defaults
 */
export const maxEchoLength = 100
/**
 * @since 0.1.0
 * @category defaults
 */
export const maxMessageLength = 500
/**
 * @since 0.1.0
 * @category defaults
 */
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
 * @category utils
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

/**
 * The errors every endpoint of an API may answer, whatever it does: a request that does not
 * decode (400), an unknown route or id (404), a request too slow, too large, of the wrong
 * media type or with headers too large (408, 413, 415, 431), rate limiting (429), and the
 * server's own failures (500, 503). v1 and v2 declare them once each, through this.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withCommonErrors = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): HttpApi.HttpApi<
  Id,
  Groups,
  | E
  | BadRequest
  | NotFound
  | RequestTimeout
  | PayloadTooLarge
  | UnsupportedMediaType
  | TooManyRequests
  | HeadersTooLarge
  | InternalServerError
  | ServiceUnavailable,
  R
> =>
  api
    .addError(BadRequest)
    .addError(NotFound)
    .addError(RequestTimeout)
    .addError(PayloadTooLarge)
    .addError(UnsupportedMediaType)
    .addError(TooManyRequests)
    .addError(HeadersTooLarge)
    .addError(InternalServerError)
    .addError(ServiceUnavailable)
