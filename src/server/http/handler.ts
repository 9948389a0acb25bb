/**
 * The shape of a handler, once: the request's principal into one service call, its result
 * into the answer, domain errors into wire errors. Handlers that do only that are one line.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { CurrentPrincipal, type Principal } from "../../api/security.js"
import type { DomainError } from "../core/errors.js"
import { present } from "./wireErrors.js"

/**
 * Calls `call` with the principal of the request being served and answers with `view` of its
 * result; the call's domain errors become wire errors ({@link present}).
 *
 * @since 0.1.0
 * @category combinators
 */
export const serve = <A, E extends DomainError, R, B>(
  call: (principal: Principal) => Effect.Effect<A, E, R>,
  view: (a: A) => Effect.Effect<B>
) => present(Effect.flatMap(Effect.flatMap(CurrentPrincipal, call), view))
