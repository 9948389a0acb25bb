/**
 * The organization a key belongs to, as every creation sees it: the organization itself and
 * room under its limits. Its profile, activity log and billing are a feature
 * (`features/organization`); the limits are checked by the catalog's creations.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../../api/security.js"
import { LimitReached, NotFound } from "../errors.js"
import { CatalogStore } from "../store/ports/catalog.js"

/**
 * The principal's organization (it exists while its keys do; a missing one is `NotFound`).
 *
 * @since 0.1.0
 * @category utils
 */
export const ownOrganization = (principal: Pick<Principal, "organizationId">) =>
  Effect.flatMap(CatalogStore, (store) => store.organization(principal.organizationId)).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new NotFound({ resource: "Organization", id: principal.organizationId })),
      onSome: Effect.succeed
    }))
  )

/**
 * Counts of what the organization holds, with its limits.
 *
 * @since 0.1.0
 * @category utils
 */
export const usage = (principal: Principal) =>
  Effect.gen(function*() {
    const organization = yield* ownOrganization(principal)
    const counts = yield* Effect.flatMap(CatalogStore, (store) => store.usage(organization.id))
    return { counts, limits: organization.limits }
  })

/**
 * Fails with `LimitReached` when the organization already holds as many of `what` as its
 * limit allows. Checked before a creation: creations that race past the check together can
 * overshoot by their number.
 *
 * @since 0.1.0
 * @category utils
 */
export const requireRoomFor = (principal: Principal, what: "users" | "dataSources" | "accounts") =>
  Effect.flatMap(usage(principal), ({ counts, limits }) => {
    const allowed = limits[what]
    return allowed !== null && counts[what] >= allowed ? Effect.fail(new LimitReached({ limit: what, allowed })) : Effect.void
  })
