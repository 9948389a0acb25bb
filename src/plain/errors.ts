/**
 * The plain API's errors: `Error` subclasses a caller without Effect can catch, test with
 * `instanceof` and read fields of (`status`, `code`, `field`, `requestId`).
 *
 * Each is built from the typed failure once, at the edge (`toError`): its message is the
 * service's or the pipeline's own sentence, and nothing of the fiber that failed (no Effect
 * `Cause`, no span) reaches its stack or its properties. The error is made after the
 * caller's `await`, so its stack shows the caller's frames.
 *
 * @since 0.3.0
 */
import { Cause, Data, Option } from "effect"
import { isWireError, statusOf } from "../api/errors.js"

/**
 * One problem the service named in an error answer.
 *
 * @since 0.3.0
 * @category models
 */
export interface ErrorDetail {
  readonly code: string | null
  readonly field: string | null
  readonly message: string
}

/**
 * Every error the plain API rejects with. `code` is stable: the service's error code for an
 * answer of the service (`invalid_input`, `not_found`), else the kind of failure
 * (`transport`, `invalid_response`, `DeliveryError`, `CheckpointMismatch`...).
 *
 * @since 0.3.0
 * @category errors
 */
export class TributaryError extends Error {
  /** The HTTP status the service answered with, when it answered. */
  readonly status: number | undefined
  readonly code: string
  /** The field the problem concerns (`records[3]`, `title`), when the service named one. */
  readonly field: string | null
  /** The service's id of the request (quote it to its operators), when it answered. */
  readonly requestId: string | undefined
  constructor(
    message: string,
    fields: {
      readonly code: string
      readonly status?: number | undefined
      readonly field?: string | null | undefined
      readonly requestId?: string | undefined
    }
  ) {
    super(message)
    // Not enumerable, as `Error`'s own: the fields a caller inspects are the service's.
    Object.defineProperty(this, "name", { value: new.target.name, enumerable: false, configurable: true, writable: true })
    this.code = fields.code
    this.status = fields.status
    this.field = fields.field ?? null
    this.requestId = fields.requestId
  }
}

/**
 * The service answered with an error (after the client's retries, for the statuses it
 * retries): `status` and `requestId` are always set, `errors` lists every problem it named.
 *
 * @since 0.3.0
 * @category errors
 */
export class ApiError extends TributaryError {
  declare readonly status: number
  declare readonly requestId: string
  readonly errors: ReadonlyArray<ErrorDetail>
  constructor(message: string, fields: { readonly status: number; readonly requestId: string; readonly errors: ReadonlyArray<ErrorDetail> }) {
    const first = fields.errors[0]
    super(message, { code: first?.code ?? "error", status: fields.status, field: first?.field ?? null, requestId: fields.requestId })
    this.errors = fields.errors
  }
}

/**
 * The service could not be reached, or its answer could not be read, after every retry
 * (`code` `transport`), or it answered with what the contract does not allow
 * (`invalid_response`).
 *
 * @since 0.3.0
 * @category errors
 */
export class ConnectionError extends TributaryError {}

/**
 * A request does not fit its operation (a missing or mistyped field): nothing was sent.
 * `code` is `invalid_request`; the message names the part and the field.
 *
 * @since 0.3.0
 * @category errors
 */
export class InvalidRequestError extends TributaryError {}

/**
 * A request found not to fit its operation before it was sent (turned into an
 * `InvalidRequestError` at the edge).
 *
 * @since 0.3.0
 * @category errors
 */
export class InvalidRequest extends Data.TaggedError("InvalidRequest")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/**
 * A job stopped: `code` names why (`DeliveryError`, `CheckpointMismatch`, `DeadLetterLimit`,
 * `SchemaError`, `NdjsonReadError`, `KafkaError`, `PostgresError`...). What was delivered
 * before it stopped is committed: running the same job again resumes after it.
 *
 * @since 0.3.0
 * @category errors
 */
export class JobError extends TributaryError {}

/**
 * The plain error of a typed failure: an `ApiError` for an answer of the service, a
 * `ConnectionError` for transport and decoding failures, a `JobError` for a pipeline's.
 *
 * @since 0.3.0
 * @category utils
 */
export const fromFailure = (failure: unknown): TributaryError => {
  if (isWireError(failure)) {
    const errors = failure.errors.map((item): ErrorDetail => ({ code: item.code, field: item.field, message: item.message }))
    return new ApiError(errors[0]?.message ?? failure._tag, { status: statusOf[failure._tag], requestId: failure.requestId, errors })
  }
  const tagged = failure as { readonly _tag?: unknown; readonly message?: unknown; readonly reason?: unknown; readonly status?: unknown }
  const tag = typeof tagged?._tag === "string" ? tagged._tag : undefined
  const message = typeof tagged?.message === "string" && tagged.message !== ""
    ? tagged.message
    : typeof tagged?.reason === "string"
    ? tagged.reason
    : String(failure)
  if (tag === "InvalidRequest") return new InvalidRequestError(message, { code: "invalid_request" })
  if (tag === "RequestError" || tag === "ResponseError") return new ConnectionError(message, { code: "transport" })
  if (tag === "ParseError") {
    return new ConnectionError(`the service answered with what the contract does not allow: ${message.split("\n").slice(0, 3).join(" ")}`, {
      code: "invalid_response"
    })
  }
  return new JobError(message, { code: tag ?? "failed", status: typeof tagged?.status === "number" ? tagged.status : undefined })
}

/**
 * The plain error of a failed run's cause: its failure, the signal's reason when it was
 * aborted, or a plain `Error` with the defect's message (a defect is a bug or a misuse, such
 * as a bad setting).
 *
 * @since 0.3.0
 * @category utils
 */
export const toError = (cause: Cause.Cause<unknown>, signal?: AbortSignal | undefined): unknown => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return fromFailure(failure.value)
  if (Cause.isInterruptedOnly(cause)) {
    return signal?.aborted === true ? signal.reason : new TributaryError("the call was interrupted", { code: "interrupted" })
  }
  const defect = Cause.squash(cause)
  return new Error(defect instanceof Error ? defect.message : String(defect))
}
