/**
 * Users of the organization and the caller's own profile.
 *
 * Who may do what (research §4.4): admins list, invite, change and delete anyone; an editor
 * may invite viewers only (the least role, as the real service lets non-admins invite only
 * its plain `user` role); anyone may rename themselves; a role change always needs an admin;
 * the organization keeps at least one admin. Roles are read from the store on every request,
 * so a change applies to the user's keys at once.
 *
 * @since 0.1.0
 */
import { Effect, Either, Option } from "effect"
import type { Principal, Role } from "../../api/security.js"
import { withArticle } from "../../internal/text.js"
import { isTimezone } from "../core/timezones.js"
import { requireRole } from "../core/permissions.js"
import { AccessDenied, Conflict, Forbidden, InvalidField, NotFound } from "../core/errors.js"
import { mergeUserMetadata, type UserMetadataPatch } from "./organization/profiles.js"
import { type Slice, type User, type UserChange, type UserPatch } from "../core/store/Store.js"
import { CatalogStore } from "../core/store/ports/catalog.js"
import { requireRoomFor } from "../core/catalog/organization.js"
import { sortOf } from "../core/paging.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface UserListRequest {
  readonly role?: Role | undefined
  readonly search?: string | undefined
  readonly sortBy?: "name" | "createdAt" | "role" | undefined
  readonly sortOrder?: "asc" | "desc" | undefined
}

/**
 * A page of the organization's users (admins only).
 *
 * @since 0.1.0
 * @category utils
 */
export const listUsers = (principal: Principal, request: UserListRequest, slice: Slice) =>
  Effect.zipRight(
    requireRole(principal, "admin", "list users"),
    Effect.flatMap(CatalogStore, (store) =>
      store.listUsers({
        ...slice,
        organizationId: principal.organizationId,
        role: request.role,
        search: request.search,
        sort: sortOf(request)
      }))
  )

/** The user `id` of the principal's organization; `NotFound` for any other. */
const userOf = (principal: Principal, id: number) =>
  Effect.flatMap(CatalogStore, (store) => store.user(id)).pipe(
    Effect.flatMap((user) =>
      Option.isSome(user) && user.value.organizationId === principal.organizationId
        ? Effect.succeed(user.value)
        : Effect.fail(new NotFound({ resource: "User", id }))
    )
  )

/**
 * One user: the principal themselves, or anyone for an admin.
 *
 * @since 0.1.0
 * @category utils
 */
export const getUser = (principal: Principal, id: number) =>
  Effect.tap(userOf(principal, id), (user) =>
    user.id === principal.userId ? Effect.void : requireRole(principal, "admin", "read other users"))

/**
 * Invites a user by email (`limits.users` applies).
 *
 * @since 0.1.0
 * @category utils
 */
export const inviteUser = (principal: Principal, input: { readonly email: string; readonly role: Role; readonly name?: string | undefined }) =>
  Effect.gen(function*() {
    yield* requireRole(principal, "editor", "invite users")
    if (principal.role !== "admin" && input.role !== "viewer") {
      return yield* new AccessDenied({ field: "role", message: `${withArticle(principal.role)} may invite viewers only, not ${withArticle(input.role)}` })
    }
    yield* requireRoomFor(principal, "users")
    const email = input.email.trim()
    const store = yield* CatalogStore
    const created = yield* store.createUser({
      organizationId: principal.organizationId,
      name: input.name?.trim() ?? email.slice(0, email.indexOf("@")),
      email,
      role: input.role,
      timezone: null,
      metadata: null,
      isEmailVerified: false
    })
    return yield* Option.match(created, {
      onNone: () =>
        Effect.fail(new Conflict({ code: "duplicate_record", field: "email", message: `a user with the email ${email} already exists` })),
      onSome: Effect.succeed
    })
  })

const changed = (id: number, action: string) => (change: UserChange<User>): Effect.Effect<User, NotFound | Conflict> => {
  switch (change._tag) {
    case "Done":
      return Effect.succeed(change.value)
    case "Missing":
      return Effect.fail(new NotFound({ resource: "User", id }))
    case "LastAdmin":
      return Effect.fail(
        new Conflict({ code: "last_admin", field: "role", message: `user ${id} is the organization's last admin and cannot be ${action}` })
      )
  }
}

/**
 * Renames a user or changes their role.
 *
 * @since 0.1.0
 * @category utils
 */
export const updateUser = (principal: Principal, id: number, patch: { readonly name?: string | undefined; readonly role?: Role | undefined }) =>
  Effect.gen(function*() {
    const user = yield* userOf(principal, id)
    if (user.id !== principal.userId) yield* requireRole(principal, "admin", "change other users")
    if (patch.role !== undefined && patch.role !== user.role) {
      if (principal.role !== "admin") {
        return yield* new Forbidden({ role: principal.role, needed: "admin", action: "change roles" })
      }
    }
    const store = yield* CatalogStore
    const changes: UserPatch = {
      ...(patch.name === undefined ? {} : { name: patch.name.trim() }),
      ...(patch.role === undefined ? {} : { role: patch.role })
    }
    return yield* Effect.flatMap(store.updateUser(user.id, changes), changed(id, "demoted"))
  })

/**
 * Deletes a user with their keys (admins only; never the last admin).
 *
 * @since 0.1.0
 * @category utils
 */
export const deleteUser = (principal: Principal, id: number) =>
  Effect.gen(function*() {
    const user = yield* userOf(principal, id)
    yield* requireRole(principal, "admin", "delete users")
    const store = yield* CatalogStore
    return yield* Effect.flatMap(store.deleteUser(user.id), changed(id, "removed"))
  })

/**
 * The principal's own user.
 *
 * @since 0.1.0
 * @category utils
 */
export const profile = (principal: Principal) => userOf(principal, principal.userId)

/**
 * Changes the principal's own name, time zone or job metadata (any role).
 *
 * @since 0.1.0
 * @category utils
 */
export const updateProfile = (
  principal: Principal,
  patch: {
    readonly name?: string | undefined
    readonly timezone?: string | null | undefined
    readonly metadata?: UserMetadataPatch | undefined
  }
) =>
  Effect.gen(function*() {
    const user = yield* profile(principal)
    if (patch.timezone != null && !isTimezone(patch.timezone)) {
      return yield* new InvalidField({ field: "timezone", message: `"${patch.timezone}" is not a known IANA time zone` })
    }
    const metadata = patch.metadata === undefined ? undefined : yield* Either.mapLeft(
      mergeUserMetadata(user.metadata, patch.metadata),
      (error) => new InvalidField(error)
    )
    const changes: UserPatch = {
      ...(patch.name === undefined ? {} : { name: patch.name.trim() }),
      ...(patch.timezone === undefined ? {} : { timezone: patch.timezone }),
      ...(metadata === undefined ? {} : { metadata })
    }
    const store = yield* CatalogStore
    // No role in the patch: the change cannot touch the last admin.
    const change = yield* store.updateUser(user.id, changes)
    return change._tag === "Done" ? change.value : yield* new NotFound({ resource: "User", id: user.id })
  })
