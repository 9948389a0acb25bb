/**
 * The shape of a handler, once: the request's principal into one service call, its result
 * into the answer, domain errors into wire errors. Handlers that do only that are one line.
 * A mutation says what it changed ({@link change}): the activity log records that, and only
 * that, when the answer is a success (`activity.ts`); a read says nothing and is not logged,
 * whatever its method.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { CurrentPrincipal, type Principal } from "../../api/security.js"
import type { DomainError } from "../core/errors.js"
import { type PageRequest, sliceOf } from "../core/paging.js"
import type { Page, Slice } from "../core/store/Store.js"
import { reportChange } from "./activity.js"
import type { Changed } from "./activityOf.js"
import { respond } from "./envelope.js"
import { idempotent } from "./idempotency.js"
import { pageView } from "./paging.js"
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

/**
 * A v2 list: the page `fetch` finds for the request's slice, each item shown by `item`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const servePage = <A, B, E extends DomainError, R>(
  request: PageRequest,
  fetch: (principal: Principal, slice: Slice) => Effect.Effect<Page<A>, E, R>,
  item: (a: A) => B
) => {
  const { page, pageSize, slice } = sliceOf(request)
  return serve((p) => fetch(p, slice), (found) => respond("success", { data: pageView(found, { page, pageSize }, item) }))
}

/** The call, reporting what its result says it changed. */
const reporting = <A, E, R>(call: Effect.Effect<A, E, R>, changed: (a: A) => Changed) =>
  Effect.tap(call, (a) => reportChange(changed(a)))

/**
 * {@link serve} for a mutation: `changed` names what the call's result changed, for the
 * activity log.
 *
 * @since 0.1.0
 * @category combinators
 */
export const change = <A, E extends DomainError, R, B>(
  call: (principal: Principal) => Effect.Effect<A, E, R>,
  changed: (a: A) => Changed,
  view: (a: A) => Effect.Effect<B>
) => serve((p) => reporting(call(p), changed), view)

/**
 * {@link change} run at most once per `Idempotency-Key` (`idempotency.ts`; `body` is what a
 * reuse of the key must repeat). A replay runs nothing, so reports nothing.
 *
 * @since 0.1.0
 * @category combinators
 */
export const changeOnce = <A, E extends DomainError, R, B>(
  idempotency: { readonly key: string | undefined; readonly body: unknown },
  call: (principal: Principal) => Effect.Effect<A, E, R>,
  changed: (a: A) => Changed,
  view: (a: A) => Effect.Effect<B>
) =>
  present(Effect.flatMap(
    CurrentPrincipal,
    (p) => idempotent(idempotency.key, idempotency.body, Effect.flatMap(reporting(call(p), changed), view))
  ))

/**
 * What a change of a resource of `resourceType` is about: the resource `idOf` its result names.
 *
 * @since 0.1.0
 * @category constructors
 */
export const changed = <A>(resourceType: string, idOf: (a: A) => string | number | null) => (a: A): Changed => ({
  resourceType,
  resourceId: idOf(a)
})

/**
 * What a change of a resource of `resourceType` is about: its result's `id`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const byId = (resourceType: string) => changed(resourceType, (a: { readonly id: string | number }) => a.id)

/**
 * A changed dataset, named by its v2 number whichever version and id changed it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const datasetByNumber: (dataset: { readonly number: number }) => Changed = changed("dataset", (d) => d.number)
