/**
 * Domain errors as wire errors: the one mapping. Handlers present a service call with
 * {@link present}; the key check and the ingest use case use it too.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type * as Wire from "../../api/errors.js"
import type {
  AccessDenied,
  Conflict,
  DomainError,
  Forbidden,
  IdempotencyKeyReused,
  InvalidField,
  LimitReached,
  NotFound,
  StoreError
} from "../core/errors.js"
import { failWith } from "./envelope.js"

/**
 * The wire errors a domain error can become, so that a handler's error type holds only the
 * errors its endpoint declares.
 *
 * @since 0.1.0
 * @category models
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
 * @category utils
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
 * @category utils
 */
export const present = <A, E extends DomainError, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, WireOf<E>, R> =>
  Effect.catchAll(effect, (error) => toWireError(error))
