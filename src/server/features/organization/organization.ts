/**
 * The organization: its profile, usage against its limits, activity log and billing.
 *
 * @since 0.1.0
 */
import { Effect, Either, Option } from "effect"
import type { Principal } from "../../../api/security.js"
import { requireRole } from "../../core/permissions.js"
import { InvalidField } from "../../core/errors.js"
import { ownOrganization } from "../../core/catalog/organization.js"
import { type OrganizationPatch, mergeOrganization } from "./profiles.js"
import { type Slice } from "../../core/store/Store.js"
import { ActivityStore } from "../activity/store.js"
import { CatalogStore } from "../../core/store/ports/catalog.js"

/**
 * @since 0.1.0
 * @category utils
 */
export const getOrganization = (principal: Principal) =>
  Effect.zipRight(requireRole(principal, "admin", "read the organization"), ownOrganization(principal))

/**
 * Applies a patch to the organization (admins only; see `mergeOrganization` for the rules).
 *
 * @since 0.1.0
 * @category utils
 */
export const updateOrganization = (principal: Principal, patch: OrganizationPatch & { readonly name?: string | undefined }) =>
  Effect.gen(function*() {
    yield* requireRole(principal, "admin", "change the organization")
    const organization = yield* ownOrganization(principal)
    const profile = yield* Either.match(mergeOrganization(organization.profile, patch), {
      onLeft: (error) => Effect.fail(new InvalidField(error)),
      onRight: Effect.succeed
    })
    const store = yield* CatalogStore
    const updated = yield* store.updateOrganization(organization.id, { name: patch.name?.trim(), profile })
    return Option.getOrElse(updated, () => organization)
  })

/**
 * `dateFrom`/`dateTo` as API timestamps: a bare date is 00:00 UTC of that day; `dateTo` of
 * a bare date takes the whole day.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseDateBound = (field: string, value: string, end: boolean): Either.Either<string, InvalidField> => {
  const bare = /^\d{4}-\d{2}-\d{2}$/.test(value)
  const millis = Date.parse(bare ? `${value}T00:00:00Z` : value)
  if (Number.isNaN(millis) || !/^\d{4}-\d{2}-\d{2}/.test(value)) {
    return Either.left(new InvalidField({ field, message: `"${value}" is not an ISO 8601 date or timestamp` }))
  }
  const at = bare && end ? millis + 86_400_000 - 1 : millis
  return Either.right(`${new Date(at).toISOString().slice(0, 23)}${bare && end ? "999" : "000"}Z`)
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ActivityFilter {
  readonly resourceType?: string | undefined
  readonly userId?: number | undefined
  readonly search?: string | undefined
  readonly dateFrom?: string | undefined
  readonly dateTo?: string | undefined
}

/**
 * A page of the organization's activity log, newest first (admins only).
 *
 * @since 0.1.0
 * @category utils
 */
export const activityLog = (principal: Principal, filter: ActivityFilter, slice: Slice) =>
  Effect.gen(function*() {
    yield* requireRole(principal, "admin", "read the activity log")
    const from = filter.dateFrom === undefined ? undefined : yield* parseDateBound("dateFrom", filter.dateFrom, false)
    const to = filter.dateTo === undefined ? undefined : yield* parseDateBound("dateTo", filter.dateTo, true)
    const store = yield* ActivityStore
    return yield* store.activityLog({
      ...slice,
      organizationId: principal.organizationId,
      resourceType: filter.resourceType,
      userId: filter.userId,
      search: filter.search,
      from,
      to
    })
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const billing = (principal: Principal) =>
  Effect.zipRight(
    requireRole(principal, "admin", "read billing"),
    Effect.map(ownOrganization(principal), (organization) => organization.plan)
  )

/**
 * @since 0.1.0
 * @category utils
 */
export const invoices = (principal: Principal, slice: Slice) =>
  Effect.zipRight(
    requireRole(principal, "admin", "read invoices"),
    Effect.flatMap(CatalogStore, (store) => store.invoices(principal.organizationId, slice))
  )
