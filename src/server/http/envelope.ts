/**
 * Per-request context: the request id, and failing with a wire error that carries it.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { Effect, FiberRef } from "effect"
import { wireErrorOf, type WireError } from "../../api/errors.js"

/**
 * The id of the request being served; set once per request by the server middleware.
 *
 * @since 0.1.0
 * @category models
 */
export const CurrentRequestId: FiberRef.FiberRef<string> = FiberRef.unsafeMake("")

/**
 * @since 0.1.0
 * @category utils
 */
export const newRequestId = (): string => randomUUID()

/**
 * @since 0.1.0
 * @category defaults
 */
export const requestId: Effect.Effect<string> = FiberRef.get(CurrentRequestId)

/**
 * Fails with the wire error `tag`, stamped with the current request id.
 *
 * @since 0.1.0
 * @category utils
 */
export const failWith = <Tag extends WireError["_tag"]>(
  tag: Tag,
  problem: { readonly code: string; readonly message: string; readonly field?: string | null }
): Effect.Effect<never, Extract<WireError, { readonly _tag: Tag }>> =>
  Effect.flatMap(requestId, (id) => Effect.fail(wireErrorOf(tag, id, problem)))

/**
 * 404 `not_found` for a resource that is missing or not visible.
 *
 * @since 0.1.0
 * @category utils
 */
export const notFound = (what: string, id: string | number) =>
  failWith("NotFound", { code: "not_found", message: `${what} ${id} does not exist` })

/**
 * 400 `invalid_input` on `field`.
 *
 * @since 0.1.0
 * @category utils
 */
export const invalidInput = (field: string, message: string) =>
  failWith("BadRequest", { code: "invalid_input", field, message })

/**
 * Adds `requestId` and `status` to an answer body.
 *
 * @since 0.1.0
 * @category utils
 */
export const respond = <const Status extends string, A extends object>(
  status: Status,
  body: A
): Effect.Effect<{ readonly requestId: string; readonly status: Status } & A> =>
  Effect.map(requestId, (id) => ({ requestId: id, status, ...body }))
