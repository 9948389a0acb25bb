/**
 * Domain errors of the reference server's services, and their one mapping to wire errors.
 *
 * Services fail with these (and the store's `StoreError`); handlers present them with
 * {@link present}, the only place that knows which status and code each one gets.
 *
 * @since 0.1.0
 */
import { Data, Effect } from "effect"
import type * as Wire from "../../api/errors.js"
import { failWith } from "../http/envelope.js"
import type { IdempotencyKeyReused, StoreError } from "./store/Store.js"

/**
 * A resource that does not exist, or that the caller may not see (the two look the same,
 * so that ids reveal nothing).
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Data.TaggedError("NotFound")<{
  readonly resource: string
  readonly id: string | number
}> {}

/**
 * The caller's role does not allow the action.
 *
 * @since 0.1.0
 * @category errors
 */
export class Forbidden extends Data.TaggedError("Forbidden")<{
  readonly role: string
  readonly needed: string
  readonly action: string
}> {}

/**
 * A request field whose value the service cannot take.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidField extends Data.TaggedError("InvalidField")<{
  readonly field: string
  readonly message: string
}> {}

/**
 * The request cannot be done in the resource's present state (an email already taken, the
 * last admin, an account that still holds data sources); `code` names the case.
 *
 * @since 0.1.0
 * @category errors
 */
export class Conflict extends Data.TaggedError("Conflict")<{
  readonly code: string
  readonly field: string | null
  readonly message: string
}> {}

/**
 * The caller's role may act, but not with these values (an editor inviting an admin).
 *
 * @since 0.1.0
 * @category errors
 */
export class AccessDenied extends Data.TaggedError("AccessDenied")<{
  readonly field: string
  readonly message: string
}> {}

/**
 * A creation past one of the organization's limits (`limits.users`, `limits.dataSources`,
 * `limits.accounts` of the seed).
 *
 * @since 0.1.0
 * @category errors
 */
export class LimitReached extends Data.TaggedError("LimitReached")<{
  readonly limit: "users" | "dataSources" | "accounts"
  readonly allowed: number
}> {}

/** @since 0.1.0 */
export type DomainError =
  | NotFound
  | Forbidden
  | InvalidField
  | Conflict
  | AccessDenied
  | LimitReached
  | IdempotencyKeyReused
  | StoreError

/**
 * The wire errors a domain error can become, so that a handler's error type holds only the
 * errors its endpoint declares.
 *
 * @since 0.1.0
 */
export type WireOf<E> = E extends NotFound ? Wire.NotFound
  : E extends Forbidden ? Wire.Forbidden
  : E extends InvalidField ? Wire.BadRequest
  : E extends Conflict ? Wire.Conflict
  : E extends AccessDenied | LimitReached ? Wire.Forbidden
  : E extends IdempotencyKeyReused ? Wire.Unprocessable
  : E extends StoreError ? Wire.ServiceUnavailable | Wire.InternalServerError
  : never

/**
 * The wire error for a domain error.
 *
 * @since 0.1.0
 */
export const toWireError = <E extends DomainError>(error: E): Effect.Effect<never, WireOf<E>> => {
  const wire = (): Effect.Effect<never, Wire.WireError> => {
  switch (error._tag) {
    case "NotFound":
      return failWith("NotFound", { code: "not_found", message: `${error.resource} ${error.id} does not exist` })
    case "Forbidden":
      return failWith("Forbidden", {
        code: "forbidden",
        message: `a ${error.role} key may not ${error.action}; it needs the ${error.needed} role or higher`
      })
    case "InvalidField":
      return failWith("BadRequest", { code: "invalid_input", field: error.field, message: error.message })
    case "Conflict":
      return failWith("Conflict", { code: error.code, field: error.field, message: error.message })
    case "AccessDenied":
      return failWith("Forbidden", { code: "access_denied", field: error.field, message: error.message })
    case "LimitReached": {
      const what = { users: "users", dataSources: "data sources", accounts: "accounts" }[error.limit]
      return failWith("Forbidden", {
        code: "limit_reached",
        message: `the organization's limit of ${error.allowed} ${what} (limits.${error.limit}) is reached`
      })
    }
    case "IdempotencyKeyReused":
      return failWith("Unprocessable", {
        code: "idempotency_key_reused",
        field: "Idempotency-Key",
        message: `the Idempotency-Key "${error.key}" was used with a different request body`
      })
    case "StoreError":
      return error.reason === "Unavailable"
        ? Effect.zipRight(
          Effect.logWarning("store unavailable", error.message),
          failWith("ServiceUnavailable", {
            code: "service_unavailable",
            message: "the server's storage is unavailable; retry the request later"
          })
        )
        : Effect.zipRight(
          Effect.logError("store failed", error.message, error.cause),
          failWith("InternalServerError", { code: "internal_error", message: "the server failed; the request may be retried" })
        )
  }
  }
  return wire() as Effect.Effect<never, WireOf<E>>
}

/**
 * Presents a service call: its domain errors become wire errors.
 *
 * @since 0.1.0
 */
export const present = <A, E extends DomainError, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, WireOf<E>, R> =>
  Effect.catchAll(effect, (error) => toWireError(error))
