/**
 * The store's port for organizations, accounts, users and their API keys: who the caller is and
 * what they belong to. The `ensure*` calls are idempotent (by seed key, by organization and name,
 * by organization and email, by key): seeding twice changes nothing.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "../../errors.js"
import type { Principal } from "../../../../api/security.js"
import type {
  Account,
  AccountPatch,
  AccountQuery,
  Invoice,
  Limits,
  Organization,
  OrganizationProfile,
  Page,
  Plan,
  Slice,
  Usage,
  User,
  UserChange,
  UserMetadata,
  UserPatch,
  UserQuery
} from "../Store.js"

/**
 * Every method is atomic; who may do what is the services' concern.
 *
 * @since 0.1.0
 * @category models
 */
export interface CatalogStoreService {
  /**
   * The seed's organization known by `seedKey` (the name the seed gives it), made with that
   * name the first time. Found by the key, never by the name: a renamed organization is still
   * the seed's.
   */
  readonly ensureOrganization: (seedKey: string) => Effect.Effect<Organization, StoreError>

  readonly ensureAccount: (
    organizationId: number,
    account: Pick<Account, "name" | "accountType">
  ) => Effect.Effect<Account, StoreError>

  readonly ensureUser: (
    organizationId: number,
    user: Pick<User, "name" | "email" | "role"> & {
      readonly timezone?: string | null | undefined
      readonly metadata?: UserMetadata | null | undefined
    }
  ) => Effect.Effect<User, StoreError>

  readonly ensureApiKey: (key: string, userId: number) => Effect.Effect<void, StoreError>

  /** The key's user; their default account is the first account of their organization. */
  readonly principalByKey: (apiKey: string) => Effect.Effect<Option.Option<Principal>, StoreError>

  readonly accounts: (organizationId: number) => Effect.Effect<ReadonlyArray<Account>, StoreError>

  readonly account: (id: number) => Effect.Effect<Option.Option<Account>, StoreError>

  readonly users: (organizationId: number) => Effect.Effect<ReadonlyArray<User>, StoreError>

  readonly organization: (id: number) => Effect.Effect<Option.Option<Organization>, StoreError>

  /** Sets the seed's plan, limits and invoices (every start: the seed owns them). */
  readonly setOrganizationPlan: (
    id: number,
    plan: { readonly plan: Plan; readonly limits: Limits; readonly invoices: ReadonlyArray<Invoice> }
  ) => Effect.Effect<void, StoreError>

  readonly updateOrganization: (
    id: number,
    patch: { readonly name?: string | undefined; readonly profile?: OrganizationProfile | undefined }
  ) => Effect.Effect<Option.Option<Organization>, StoreError>

  /** Newest first. */
  readonly invoices: (organizationId: number, slice: Slice) => Effect.Effect<Page<Invoice>, StoreError>

  readonly usage: (organizationId: number) => Effect.Effect<Usage, StoreError>

  readonly createAccount: (
    input: Omit<Account, "id" | "createdAt">
  ) => Effect.Effect<Account, StoreError>

  readonly listAccounts: (query: AccountQuery) => Effect.Effect<Page<Account>, StoreError>

  readonly updateAccount: (id: number, patch: AccountPatch) => Effect.Effect<Option.Option<Account>, StoreError>

  /** Deletes the account unless it holds data sources: then nothing changes and their number comes back. */
  readonly deleteAccount: (id: number) => Effect.Effect<{ readonly dataSources: number }, StoreError>

  readonly user: (id: number) => Effect.Effect<Option.Option<User>, StoreError>

  /** None when the organization already has a user with that email. */
  readonly createUser: (
    input: Omit<User, "id" | "createdAt">
  ) => Effect.Effect<Option.Option<User>, StoreError>

  readonly listUsers: (query: UserQuery) => Effect.Effect<Page<User>, StoreError>

  /** Refused (`LastAdmin`) when it would demote the organization's last admin. */
  readonly updateUser: (id: number, patch: UserPatch) => Effect.Effect<UserChange<User>, StoreError>

  /** Deletes the user and their keys; refused (`LastAdmin`) for the organization's last admin. */
  readonly deleteUser: (id: number) => Effect.Effect<UserChange<User>, StoreError>
}

/**
 * @since 0.1.0
 * @category services
 */
export class CatalogStore extends Context.Tag("tributary/server/CatalogStore")<CatalogStore, CatalogStoreService>() {}
