/**
 * The memory store's `CatalogStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import type { Principal } from "../../../../api/security.js"
import { isoTimestamp } from "../../clock.js"
import { matchesSearch, sortedBy } from "../order.js"
import {
  type Account,
  defaultLimits,
  defaultPlan,
  emptyOrganizationProfile,
  type Organization,
  type User
} from "../Store.js"
import type { CatalogStoreService } from "../ports/catalog.js"
import { type MemoryState, slice } from "./state.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): CatalogStoreService => {
  const {
    organizations, seedKeys, accounts, users, keys, dataSources, invoices, organizationIds,
    accountIds, userIds, ofOrganization, guardLastAdmin
  } = state
  const port: CatalogStoreService = {
    ensureOrganization: (seedKey) =>
      Effect.sync(() => {
        const known = seedKeys.get(seedKey)
        if (known !== undefined) return organizations.get(known)!
        const organization: Organization = {
          id: organizationIds(),
          name: seedKey,
          profile: emptyOrganizationProfile,
          plan: defaultPlan,
          limits: defaultLimits
        }
        organizations.set(organization.id, organization)
        seedKeys.set(seedKey, organization.id)
        return organization
      }),
    ensureAccount: (organizationId, input) =>
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
      }),
    ensureUser: (organizationId, input) =>
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
      }),
    ensureApiKey: (key, userId) => Effect.sync(() => void keys.set(key, userId)),
    principalByKey: (apiKey) =>
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
      }),
    accounts: (organizationId) =>
      Effect.sync(() => [...accounts.values()].filter((a) => a.organizationId === organizationId)),
    account: (id) => Effect.sync(() => Option.fromNullable(accounts.get(id))),
    users: (organizationId) =>
      Effect.sync(() => [...users.values()].filter((u) => u.organizationId === organizationId)),
    organization: (id) => Effect.sync(() => Option.fromNullable(organizations.get(id))),
    setOrganizationPlan: (id, { invoices: list, limits, plan }) =>
      Effect.sync(() => {
        const organization = organizations.get(id)
        if (organization === undefined) return
        organizations.set(id, { ...organization, plan, limits })
        invoices.set(id, list)
      }),
    updateOrganization: (id, patch) =>
      Effect.sync(() => {
        const organization = organizations.get(id)
        if (organization === undefined) return Option.none()
        const updated = { ...organization, name: patch.name ?? organization.name, profile: patch.profile ?? organization.profile }
        organizations.set(id, updated)
        return Option.some(updated)
      }),
    invoices: (organizationId, range) => Effect.sync(() => slice(invoices.get(organizationId) ?? [], range)),
    usage: (organizationId) =>
      Effect.sync(() => ({
        users: ofOrganization(users.values(), organizationId).length,
        dataSources: ofOrganization(dataSources.values(), organizationId).length,
        accounts: ofOrganization(accounts.values(), organizationId).length
      })),
    createAccount: (input) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const account: Account = { ...input, id: accountIds(), createdAt: isoTimestamp(now) }
        accounts.set(account.id, account)
        return account
      }),
    listAccounts: (query) =>
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
      }),
    updateAccount: (id, patch) =>
      Effect.sync(() => {
        const account = accounts.get(id)
        if (account === undefined) return Option.none()
        const updated = { ...account, ...patch }
        accounts.set(id, updated)
        return Option.some(updated)
      }),
    deleteAccount: (id) =>
      Effect.sync(() => {
        const held = [...dataSources.values()].filter((d) => d.accountId === id).length
        if (held === 0) accounts.delete(id)
        return { dataSources: held }
      }),
    user: (id) => Effect.sync(() => Option.fromNullable(users.get(id))),
    createUser: (input) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const taken = [...users.values()].some((u) =>
          u.organizationId === input.organizationId && u.email.toLowerCase() === input.email.toLowerCase()
        )
        if (taken) return Option.none()
        const user: User = { ...input, id: userIds(), createdAt: isoTimestamp(now) }
        users.set(user.id, user)
        return Option.some(user)
      }),
    listUsers: (query) =>
      Effect.sync(() => {
        const matching = ofOrganization(users.values(), query.organizationId).filter((u) =>
          (query.role === undefined || u.role === query.role) &&
          (matchesSearch(u.name, query.search) || matchesSearch(u.email, query.search))
        )
        const sort = query.sort
        const sorted = sort === undefined ? matching : sortedBy(matching, (u) => u[sort.by], sort.order)
        return slice(sorted, query)
      }),
    updateUser: (id, patch) =>
      Effect.sync(() =>
        guardLastAdmin(id, () => patch.role !== undefined && patch.role !== "admin", (user) => {
          const updated = { ...user, ...patch }
          users.set(id, updated)
          return updated
        })
      ),
    deleteUser: (id) =>
      Effect.sync(() =>
        guardLastAdmin(id, () => true, (user) => {
          users.delete(id)
          for (const [key, owner] of keys) if (owner === id) keys.delete(key)
          return user
        })
      )
  }
  return port
}
