/**
 * The Postgres store's `CatalogStore` port, over the store's shared state: one function per
 * method, each taking the state first; `make` assembles them.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import type { Principal, Role } from "../../../../api/security.js"
import { isoTimestamp } from "../../clock.js"
import {
  type Account,
  type AccountPatch,
  type AccountQuery,
  type Invoice,
  type Limits,
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
import type { SqlState } from "./state.js"
import { storeCall, type OrganizationRecord, toOrganization, type AccountRecord, toAccount, type UserRecord, toUser } from "./records.js"

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureOrganization = ({ organizationColumns, sql }: SqlState, seedKey: string) =>
  storeCall(Effect.map(
    sql<OrganizationRecord>`INSERT INTO organizations (name, seed_key) VALUES (${seedKey}, ${seedKey})
      ON CONFLICT (seed_key) DO UPDATE SET seed_key = EXCLUDED.seed_key RETURNING ${organizationColumns}`,
    (rows) => toOrganization(rows[0]!)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureAccount = (
  { accountColumns, sql }: SqlState,
  organizationId: number,
  account: Pick<Account, "name" | "accountType">
) =>
  storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.map(
      sql<AccountRecord>`
        INSERT INTO accounts (organization_id, name, account_type, created_at)
        VALUES (${organizationId}, ${account.name}, ${account.accountType}, ${isoTimestamp(now)})
        ON CONFLICT (organization_id, name) DO UPDATE SET account_type = EXCLUDED.account_type
        RETURNING ${accountColumns}`,
      ([r]) => toAccount(r!)
    )))

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureUser = (
  { json, sql, userColumns }: SqlState,
  organizationId: number,
  user: Pick<User, "name" | "email" | "role"> & {
    readonly timezone?: string | null | undefined
    readonly metadata?: UserMetadata | null | undefined
  }
) =>
  storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.map(
      sql<UserRecord>`
        INSERT INTO users (organization_id, name, email, role, timezone, metadata, created_at)
        VALUES (${organizationId}, ${user.name}, ${user.email}, ${user.role}, ${user.timezone ?? null},
          ${user.metadata === undefined ? null : json(user.metadata)}::jsonb, ${isoTimestamp(now)})
        ON CONFLICT (organization_id, email) DO UPDATE SET name = EXCLUDED.name, role = EXCLUDED.role,
          timezone = ${user.timezone === undefined ? sql`users.timezone` : sql`EXCLUDED.timezone`},
          metadata = ${user.metadata === undefined ? sql`users.metadata` : sql`EXCLUDED.metadata`}
        RETURNING ${userColumns}`,
      ([r]) => toUser(r!)
    )))

/**
 * @since 0.1.0
 * @category utils
 */
export const ensureApiKey = ({ sql }: SqlState, key: string, userId: number) =>
  storeCall(Effect.asVoid(
    sql`INSERT INTO api_keys (key, user_id) VALUES (${key}, ${userId})
      ON CONFLICT (key) DO UPDATE SET user_id = EXCLUDED.user_id`
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const principalByKey = ({ byId, sql }: SqlState, apiKey: string) =>
  storeCall(Effect.map(
    sql<{ user_id: number; user_name: string; organization_id: number; role: Role; default_account_id: number }>`
      SELECT u.id AS user_id, u.name AS user_name, u.organization_id, u.role,
        (SELECT min(a.id) FROM accounts a WHERE a.organization_id = u.organization_id) AS default_account_id
      FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key = ${apiKey}`,
    (rows) =>
      byId(rows, (r): Principal => ({
        userId: r.user_id,
        userName: r.user_name,
        organizationId: r.organization_id,
        role: r.role,
        defaultAccountId: r.default_account_id
      }))
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const accounts = ({ accountColumns, sql }: SqlState, organizationId: number) =>
  storeCall(Effect.map(
    sql<AccountRecord>`SELECT ${accountColumns} FROM accounts WHERE organization_id = ${organizationId} ORDER BY id`,
    (rows) => rows.map(toAccount)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const account = ({ accountColumns, byId, sql }: SqlState, id: number) =>
  storeCall(Effect.map(
    sql<AccountRecord>`SELECT ${accountColumns} FROM accounts WHERE id = ${id}`,
    (rows) => byId(rows, toAccount)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const users = ({ sql, userColumns }: SqlState, organizationId: number) =>
  storeCall(Effect.map(
    sql<UserRecord>`SELECT ${userColumns} FROM users WHERE organization_id = ${organizationId} ORDER BY id`,
    (rows) => rows.map(toUser)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const organization = ({ byId, organizationColumns, sql }: SqlState, id: number) =>
  storeCall(Effect.map(
    sql<OrganizationRecord>`SELECT ${organizationColumns} FROM organizations WHERE id = ${id}`,
    (rows) => byId(rows, toOrganization)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const setOrganizationPlan = (
  { json, sql }: SqlState,
  id: number,
  { invoices, limits, plan }: { readonly plan: Plan; readonly limits: Limits; readonly invoices: ReadonlyArray<Invoice> }
) =>
  storeCall(Effect.asVoid(
    sql`UPDATE organizations SET plan = ${json(plan)}::jsonb, limits = ${json(limits)}::jsonb,
      invoices = ${json(invoices)}::jsonb WHERE id = ${id}`
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const updateOrganization = (
  { byId, json, organizationColumns, sql }: SqlState,
  id: number,
  patch: { readonly name?: string | undefined; readonly profile?: OrganizationProfile | undefined }
) =>
  storeCall(Effect.map(
    sql<OrganizationRecord>`UPDATE organizations SET
      name = coalesce(${patch.name ?? null}, name),
      profile = coalesce(${patch.profile === undefined ? null : json(patch.profile)}::jsonb, profile)
      WHERE id = ${id} RETURNING ${organizationColumns}`,
    (rows) => byId(rows, toOrganization)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const invoices = ({ sql }: SqlState, organizationId: number, { limit, offset }: Slice) =>
  storeCall(Effect.all({
    items: Effect.map(
      sql<{ invoice: Invoice }>`SELECT i.invoice FROM organizations o,
        jsonb_array_elements(o.invoices) WITH ORDINALITY AS i(invoice, n)
        WHERE o.id = ${organizationId} ORDER BY i.n LIMIT ${limit} OFFSET ${offset}`,
      (rows) => rows.map((r) => r.invoice)
    ),
    totalItems: Effect.map(
      sql<{ total: number }>`SELECT coalesce(jsonb_array_length(invoices), 0)::int AS total FROM organizations
        WHERE id = ${organizationId}`,
      (rows) => rows[0]?.total ?? 0
    )
  }))

/**
 * @since 0.1.0
 * @category utils
 */
export const usage = ({ sql }: SqlState, organizationId: number) =>
  storeCall(Effect.map(
    sql<{ users: number; data_sources: number; accounts: number }>`SELECT
      (SELECT count(*)::int FROM users WHERE organization_id = ${organizationId}) AS users,
      (SELECT count(*)::int FROM data_sources WHERE organization_id = ${organizationId}) AS data_sources,
      (SELECT count(*)::int FROM accounts WHERE organization_id = ${organizationId}) AS accounts`,
    ([r]) => ({ users: r!.users, dataSources: r!.data_sources, accounts: r!.accounts })
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const createAccount = ({ accountColumns, json, sql }: SqlState, input: Omit<Account, "id" | "createdAt">) =>
  storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.map(
      sql<AccountRecord>`INSERT INTO accounts
        (organization_id, name, account_type, company_name, website_url, managed_by, created_at)
        VALUES (${input.organizationId}, ${input.name}, ${input.accountType}, ${input.companyName},
          ${input.websiteUrl}, ${input.managedBy === null ? null : json(input.managedBy)}::jsonb, ${isoTimestamp(now)})
        RETURNING ${accountColumns}`,
      ([r]) => toAccount(r!)
    )))

/**
 * @since 0.1.0
 * @category utils
 */
export const listAccounts = ({ accountColumns, direction, pageOf, searchIn, sql }: SqlState, query: AccountQuery) => {
  const where = sql`organization_id = ${query.organizationId} AND ${searchIn("accounts", query.search)}`
  const sort = query.sort
  const order = sort === undefined ? sql.literal("id") : sql`${
    sql.literal(
      sort.by === "name"
        ? "name COLLATE tributary_base"
        : sort.by === "website"
        ? "website_url COLLATE tributary_base"
        : "(managed_by->>'name') COLLATE tributary_base"
    )
  } ${direction(sort.order)}, id`
  return pageOf("accounts", accountColumns, where, order, query, toAccount)
}

/**
 * @since 0.1.0
 * @category utils
 */
export const updateAccount = ({ accountColumns, byId, json, sql }: SqlState, id: number, patch: AccountPatch) =>
  storeCall(Effect.map(
    sql<AccountRecord>`UPDATE accounts SET
      name = coalesce(${patch.name ?? null}, name),
      website_url = ${patch.websiteUrl === undefined ? sql`website_url` : sql`${patch.websiteUrl}`},
      managed_by = ${
      patch.managedBy === undefined ? sql`managed_by` : sql`${patch.managedBy === null ? null : json(patch.managedBy)}::jsonb`
    }
      WHERE id = ${id} RETURNING ${accountColumns}`,
    (rows) => byId(rows, toAccount)
  ))

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteAccount = ({ sql }: SqlState, id: number) =>
  storeCall(sql.withTransaction(Effect.gen(function*() {
    // Counted and deleted under the account's row lock, so two deletes do not both count.
    yield* sql`SELECT id FROM accounts WHERE id = ${id} FOR UPDATE`
    const [held] = yield* sql<{ total: number }>`SELECT count(*)::int AS total FROM data_sources WHERE account_id = ${id}`
    if (held!.total === 0) yield* sql`DELETE FROM accounts WHERE id = ${id}`
    return { dataSources: held!.total }
  })))

/**
 * @since 0.1.0
 * @category utils
 */
export const user = ({ byId, sql, userColumns }: SqlState, id: number) =>
  storeCall(Effect.map(sql<UserRecord>`SELECT ${userColumns} FROM users WHERE id = ${id}`, (rows) => byId(rows, toUser)))

/**
 * @since 0.1.0
 * @category utils
 */
export const createUser = ({ byId, json, sql, userColumns }: SqlState, input: Omit<User, "id" | "createdAt">) =>
  storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.map(
      sql<UserRecord>`INSERT INTO users
        (organization_id, name, email, role, timezone, metadata, created_at, email_verified)
        SELECT ${input.organizationId}, ${input.name}, ${input.email}, ${input.role}, ${input.timezone},
          ${input.metadata === null ? null : json(input.metadata)}::jsonb, ${isoTimestamp(now)}, ${input.isEmailVerified}
        WHERE NOT EXISTS (SELECT 1 FROM users
          WHERE organization_id = ${input.organizationId} AND lower(email) = lower(${input.email}))
        ON CONFLICT (organization_id, email) DO NOTHING
        RETURNING ${userColumns}`,
      (rows) => byId(rows, toUser)
    )))

/**
 * @since 0.1.0
 * @category utils
 */
export const listUsers = ({ direction, pageOf, sql, userColumns }: SqlState, query: UserQuery) => {
  const where = sql`organization_id = ${query.organizationId}
    AND ${query.role === undefined ? sql`true` : sql`role = ${query.role}`}
    AND ${
    query.search === undefined
      ? sql`true`
      : sql`(strpos(lower(name), lower(${query.search})) > 0 OR strpos(lower(email), lower(${query.search})) > 0)`
  }`
  const sort = query.sort
  const order = sort === undefined ? sql.literal("id") : sql`${
    sql.literal(sort.by === "createdAt" ? "created_at" : `${sort.by} COLLATE tributary_base`)
  } ${direction(sort.order)}, id`
  return pageOf("users", userColumns, where, order, query, toUser)
}

/**
 * @since 0.1.0
 * @category utils
 */
export const updateUser = ({ guardLastAdmin, json, sql, userColumns }: SqlState, id: number, patch: UserPatch) =>
  guardLastAdmin(id, patch.role !== undefined && patch.role !== "admin", () =>
    Effect.map(
      sql<UserRecord>`UPDATE users SET
        name = coalesce(${patch.name ?? null}, name),
        role = coalesce(${patch.role ?? null}, role),
        timezone = ${patch.timezone === undefined ? sql`timezone` : sql`${patch.timezone}`},
        metadata = ${patch.metadata === undefined ? sql`metadata` : sql`${patch.metadata === null ? null : json(patch.metadata)}::jsonb`}
        WHERE id = ${id} RETURNING ${userColumns}`,
      ([r]) => toUser(r!)
    ))

/**
 * @since 0.1.0
 * @category utils
 */
export const deleteUser = ({ guardLastAdmin, sql }: SqlState, id: number) =>
  guardLastAdmin(id, true, (user) => Effect.as(sql`DELETE FROM users WHERE id = ${id}`, user))

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): CatalogStoreService =>
  portOf<SqlState, CatalogStoreService>(state, {
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
