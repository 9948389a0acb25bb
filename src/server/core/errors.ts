/**
 * Domain errors of the reference server: what services and stores fail with. They know
 * nothing of HTTP; `http/wireErrors.ts` is the one place that knows which status and code
 * each one gets.
 *
 * @since 0.1.0
 */
import { Data } from "effect"

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

/**
 * The store could not do what it was asked. `Unavailable`: the database cannot be reached
 * (a retry may succeed: 503); `Failed`: anything else (500).
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreError extends Data.TaggedError("StoreError")<{
  readonly reason: "Unavailable" | "Failed"
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * The same `Idempotency-Key` (same user and route) came with a different request body.
 *
 * @since 0.1.0
 * @category errors
 */
export class IdempotencyKeyReused extends Data.TaggedError("IdempotencyKeyReused")<{
  readonly key: string
}> {}

/**
 * @since 0.1.0
 * @category errors
 */
export type DomainError =
  | NotFound
  | Forbidden
  | InvalidField
  | Conflict
  | AccessDenied
  | LimitReached
  | IdempotencyKeyReused
  | StoreError
