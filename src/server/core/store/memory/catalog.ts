/**
 * The memory store's `CatalogStore` port, over the store's shared state: one function per
 * method, each taking the state first; `make` assembles them.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import type { Principal } from "../../../../api/security.js"
import { isoTimestamp } from "../../clock.js"
import { matchesSearch, sortedBy } from "../order.js"
import {
  type Account,
  type AccountPatch,
  type AccountQuery,
  defaultLimits,
  defaultPlan,
  emptyOrganizationProfile,
  type Invoice,
  type Limits,
  type Organization,
  type OrganizationProfile,
  type Plan,
  type Slice,
  type User,
  type UserMetadata,
  type UserPatch,
  type UserQuery
} from "../Store.js"
import { portOf } from "../Stores.js"
import type { CatalogStoreService } from "../ports/catalog.js"
import { type MemoryState, patchEntry, slice } from "./state.js"

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureOrganization = (state: MemoryState, seedKey: string) =>
  Effect.sync(() => {
    const known = state.seedKeys.get(seedKey)
    if (known !== undefined) return state.organizations.get(known)!
    const organization: Organization = {
      id: state.organizationIds(),
      name: seedKey,
      profile: emptyOrganizationProfile,
      plan: defaultPlan,
      limits: defaultLimits
    }
    state.organizations.set(organization.id, organization)
    state.seedKeys.set(seedKey, organization.id)
    return organization
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureAccount = (
  { accountIds, accounts }: MemoryState,
  organizationId: number,
  input: Pick<Account, "name" | "accountType">
) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const existing = [...accounts.values()].find((a) => a.organizationId === organizationId && a.name === input.name)
    const account: Account = existing === undefined
      ? {
        ...input,
        id: accountIds(),
        organizationId,
        companyName: null,
        websiteUrl: null,
        managedBy: null,
        createdAt: isoTimestamp(now)
      }
      : { ...existing, accountType: input.accountType }
    accounts.set(account.id, account)
    return account
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureUser = (
  { userIds, users }: MemoryState,
  organizationId: number,
  input: Pick<User, "name" | "email" | "role"> & {
    readonly timezone?: string | null | undefined
    readonly metadata?: UserMetadata | null | undefined
  }
) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const existing = [...users.values()].find((u) => u.organizationId === organizationId && u.email === input.email)
    const user: User = {
      name: input.name,
      email: input.email,
      role: input.role,
      timezone: input.timezone ?? existing?.timezone ?? null,
      metadata: input.metadata ?? existing?.metadata ?? null,
      id: existing?.id ?? userIds(),
      organizationId,
      createdAt: existing?.createdAt ?? isoTimestamp(now),
      isEmailVerified: existing?.isEmailVerified ?? true
    }
    users.set(user.id, user)
    return user
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureApiKey = (state: MemoryState, key: string, userId: number) =>
  Effect.sync(() => void state.keys.set(key, userId))

/**
 * @since 0.1.0
 * @category utils
 */
export const principalByKey = ({ accounts, keys, users }: MemoryState, apiKey: string) =>
  Effect.sync(() => {
    const user = users.get(keys.get(apiKey) ?? -1)
    if (user === undefined) return Option.none()
    let defaultAccountId = Infinity
    for (const account of accounts.values()) {
      if (account.organizationId === user.organizationId && account.id < defaultAccountId) {
        defaultAccountId = account.id
      }
    }
    return Option.some<Principal>({
      userId: user.id,
      userName: user.name,
      organizationId: user.organizationId,
      role: user.role,
      defaultAccountId
    })
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const accounts = (state: MemoryState, organizationId: number) =>
  Effect.sync(() => state.ofOrganization(state.accounts.values(), organizationId))

/**
 * @since 0.1.0
 * @category utils
 */
export const account = (state: MemoryState, id: number) => Effect.sync(() => Option.fromNullable(state.accounts.get(id)))

/**
 * @since 0.1.0
 * @category utils
 */
export const users = (state: MemoryState, organizationId: number) =>
  Effect.sync(() => state.ofOrganization(state.users.values(), organizationId))

/**
 * @since 0.1.0
 * @category utils
 */
export const organization = (state: MemoryState, id: number) =>
  Effect.sync(() => Option.fromNullable(state.organizations.get(id)))

/**
 * @since 0.1.0
 * @category utils
 */
export const setOrganizationPlan = (
  { invoices, organizations }: MemoryState,
  id: number,
  { invoices: list, limits, plan }: { readonly plan: Plan; readonly limits: Limits; readonly invoices: ReadonlyArray<Invoice> }
) =>
  Effect.sync(() => {
    const organization = organizations.get(id)
    if (organization === undefined) return
    organizations.set(id, { ...organization, plan, limits })
    invoices.set(id, list)
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const updateOrganization = (
  { organizations }: MemoryState,
  id: number,
  patch: { readonly name?: string | undefined; readonly profile?: OrganizationProfile | undefined }
) =>
  Effect.sync(() => {
    const organization = organizations.get(id)
    if (organization === undefined) return Option.none()
    const updated = { ...organization, name: patch.name ?? organization.name, profile: patch.profile ?? organization.profile }
    organizations.set(id, updated)
    return Option.some(updated)
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const invoices = (state: MemoryState, organizationId: number, range: Slice) =>
  Effect.sync(() => slice(state.invoices.get(organizationId) ?? [], range))

/**
 * @since 0.1.0
 * @category utils
 */
export const usage = ({ accounts, dataSources, ofOrganization, users }: MemoryState, organizationId: number) =>
  Effect.sync(() => ({
    users: ofOrganization(users.values(), organizationId).length,
    dataSources: ofOrganization(dataSources.values(), organizationId).length,
    accounts: ofOrganization(accounts.values(), organizationId).length
  }))

/**
 * @since 0.1.0
 * @category utils
 */
export const createAccount = ({ accountIds, accounts }: MemoryState, input: Omit<Account, "id" | "createdAt">) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const account: Account = { ...input, id: accountIds(), createdAt: isoTimestamp(now) }
    accounts.set(account.id, account)
    return account
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const listAccounts = ({ accounts, ofOrganization }: MemoryState, query: AccountQuery) =>
  Effect.sync(() => {
    const matching = ofOrganization(accounts.values(), query.organizationId)
      .filter((a) => matchesSearch(a.name, query.search))
    const sort = query.sort
    const sorted = sort === undefined ? matching : sortedBy(
      matching,
      (a) => sort.by === "name" ? a.name : sort.by === "website" ? a.websiteUrl : a.managedBy?.name ?? null,
      sort.order
    )
    return slice(sorted, query)
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const updateAccount = ({ accounts }: MemoryState, id: number, patch: AccountPatch) =>
  Effect.sync(() => patchEntry(accounts, id, patch))

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteAccount = ({ accounts, dataSources }: MemoryState, id: number) =>
  Effect.sync(() => {
    const held = [...dataSources.values()].filter((d) => d.accountId === id).length
    if (held === 0) accounts.delete(id)
    return { dataSources: held }
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const user = (state: MemoryState, id: number) => Effect.sync(() => Option.fromNullable(state.users.get(id)))

/**
 * @since 0.1.0
 * @category utils
 */
export const createUser = ({ userIds, users }: MemoryState, input: Omit<User, "id" | "createdAt">) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const taken = [...users.values()].some((u) =>
      u.organizationId === input.organizationId && u.email.toLowerCase() === input.email.toLowerCase()
    )
    if (taken) return Option.none()
    const user: User = { ...input, id: userIds(), createdAt: isoTimestamp(now) }
    users.set(user.id, user)
    return Option.some(user)
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const listUsers = ({ ofOrganization, users }: MemoryState, query: UserQuery) =>
  Effect.sync(() => {
    const matching = ofOrganization(users.values(), query.organizationId).filter((u) =>
      (query.role === undefined || u.role === query.role) &&
      (matchesSearch(u.name, query.search) || matchesSearch(u.email, query.search))
    )
    const sort = query.sort
    const sorted = sort === undefined ? matching : sortedBy(matching, (u) => u[sort.by], sort.order)
    return slice(sorted, query)
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const updateUser = ({ guardLastAdmin, users }: MemoryState, id: number, patch: UserPatch) =>
  Effect.sync(() =>
    guardLastAdmin(id, () => patch.role !== undefined && patch.role !== "admin", (user) => {
      const updated = { ...user, ...patch }
      users.set(id, updated)
      return updated
    })
  )

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteUser = ({ guardLastAdmin, keys, users }: MemoryState, id: number) =>
  Effect.sync(() =>
    guardLastAdmin(id, () => true, (user) => {
      users.delete(id)
      for (const [key, owner] of keys) if (owner === id) keys.delete(key)
      return user
    })
  )

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): CatalogStoreService =>
  portOf<MemoryState, CatalogStoreService>(state, {
    ensureOrganization,
    ensureAccount,
    ensureUser,
    ensureApiKey,
    principalByKey,
    accounts,
    account,
    users,
    organization,
    setOrganizationPlan,
    updateOrganization,
    invoices,
    usage,
    createAccount,
    listAccounts,
    updateAccount,
    deleteAccount,
    user,
    createUser,
    listUsers,
    updateUser,
    deleteUser
  })
