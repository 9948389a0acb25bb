/**
 * Accounts a key may act on.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../../api/security.js"
import { requireRole } from "../permissions.js"
import { Conflict, InvalidField, NotFound } from "../errors.js"
import { type AccountPatch, type Slice } from "../store/Store.js"
import { CatalogStore } from "../store/ports/catalog.js"
import { requireRoomFor } from "./organization.js"
import { sortOf } from "../paging.js"

/**
 * Every account of the principal's organization.
 *
 * @since 0.1.0
 * @category utils
 */
export const listAccounts = (principal: Principal) => Effect.flatMap(CatalogStore, (store) => store.accounts(principal.organizationId))

/**
 * The account `accountId` (or the key's default account) if the principal's organization
 * holds it; `NotFound` otherwise, so other organizations' ids reveal nothing.
 *
 * @since 0.1.0
 * @category utils
 */
export const visibleAccount = (principal: Principal, accountId: number = principal.defaultAccountId) =>
  Effect.flatMap(CatalogStore, (store) => store.account(accountId)).pipe(
    Effect.flatMap((account) =>
      Option.isSome(account) && account.value.organizationId === principal.organizationId
        ? Effect.succeed(account.value)
        : Effect.fail(new NotFound({ resource: "Account", id: accountId }))
    )
  )

/**
 * @since 0.1.0
 * @category models
 */
export interface AccountListRequest {
  readonly search?: string | undefined
  readonly sortBy?: "name" | "website" | "managedBy" | undefined
  readonly sortOrder?: "asc" | "desc" | undefined
}

/**
 * A page of the organization's accounts (any role may read them).
 *
 * @since 0.1.0
 * @category utils
 */
export const listAccountPage = (principal: Principal, request: AccountListRequest, slice: Slice) =>
  Effect.flatMap(CatalogStore, (store) =>
    store.listAccounts({
      ...slice,
      organizationId: principal.organizationId,
      search: request.search,
      sort: sortOf(request)
    }))

/** The manager of an account: a user of the organization, by id (`field` names it in errors). */
const managerOf = (principal: Principal, id: number | null | undefined) =>
  Effect.gen(function*() {
    if (id === undefined || id === null) return id
    const user = yield* Effect.flatMap(CatalogStore, (store) => store.user(id))
    if (Option.isNone(user) || user.value.organizationId !== principal.organizationId) {
      return yield* new InvalidField({ field: "managedById", message: `user ${id} is not a user of the organization` })
    }
    return { id: user.value.id, name: user.value.name }
  })

const websiteOf = (url: string | null | undefined) => url === undefined ? undefined : url === null || url.trim() === "" ? null : url.trim()

/**
 * Creates a client account of the organization (admins only, within `limits.accounts`).
 *
 * @since 0.1.0
 * @category utils
 */
export const createAccount = (
  principal: Principal,
  input: { readonly name: string; readonly managedById?: number | undefined; readonly websiteUrl?: string | null | undefined }
) =>
  Effect.gen(function*() {
    yield* requireRole(principal, "admin", "create accounts")
    yield* requireRoomFor(principal, "accounts")
    const managedBy = yield* managerOf(principal, input.managedById)
    const store = yield* CatalogStore
    return yield* store.createAccount({
      organizationId: principal.organizationId,
      name: input.name.trim(),
      accountType: "client",
      companyName: null,
      websiteUrl: websiteOf(input.websiteUrl) ?? null,
      managedBy: managedBy ?? null
    })
  })

/**
 * Changes an account's name, manager or website (admins only).
 *
 * @since 0.1.0
 * @category utils
 */
export const updateAccount = (
  principal: Principal,
  id: number,
  patch: {
    readonly name?: string | undefined
    readonly managedById?: number | null | undefined
    readonly websiteUrl?: string | null | undefined
  }
) =>
  Effect.gen(function*() {
    const account = yield* visibleAccount(principal, id)
    yield* requireRole(principal, "admin", "change accounts")
    const managedBy = yield* managerOf(principal, patch.managedById)
    const store = yield* CatalogStore
    const changes: AccountPatch = {
      ...(patch.name === undefined ? {} : { name: patch.name.trim() }),
      ...(managedBy === undefined ? {} : { managedBy }),
      ...(patch.websiteUrl === undefined ? {} : { websiteUrl: websiteOf(patch.websiteUrl) ?? null })
    }
    const updated = yield* store.updateAccount(account.id, changes)
    return yield* Option.match(updated, {
      onNone: () => Effect.fail(new NotFound({ resource: "Account", id })),
      onSome: Effect.succeed
    })
  })

/**
 * Deletes an account (admins only). Refused while it holds data sources (they and their
 * datasets would go with it: delete or keep them first), and for the organization's last
 * account (keys act on an account when a request names none).
 *
 * @since 0.1.0
 * @category utils
 */
export const deleteAccount = (principal: Principal, id: number) =>
  Effect.gen(function*() {
    const account = yield* visibleAccount(principal, id)
    yield* requireRole(principal, "admin", "delete accounts")
    const store = yield* CatalogStore
    const all = yield* store.accounts(principal.organizationId)
    if (all.length <= 1) {
      return yield* new Conflict({
        code: "last_account",
        field: null,
        message: `account ${id} is the organization's only account and cannot be deleted`
      })
    }
    const { dataSources } = yield* store.deleteAccount(account.id)
    if (dataSources > 0) {
      return yield* new Conflict({
        code: "account_not_empty",
        field: null,
        message: `account ${id} still holds ${dataSources} data source(s); delete them first`
      })
    }
    return account
  })
