/**
 * The reference server's stored model: the entities, the queries and the changes the core's
 * store ports (`ports/`) take and give.
 *
 * The ports split the way the domain does (catalog; data sources and datasets; rows,
 * ingestions and idempotency), each a Context Tag, and callers depend on the ones they use. The
 * features keep their own models and ports beside them (`features/<feature>/store.ts`):
 * nothing here knows of them.
 * Two implementations pass the same conformance suite (`test/server/store.test.ts`): the
 * embedded default keeps everything in memory (`memory.ts`), the durable one keeps it in
 * Postgres (`sql.ts`) so that several server processes share it; each provides every port
 * (`Stores.ts`). Lists are queries (filter, sort and page in; items and total out), so that
 * neither implementation hands out whole collections. Visibility rules are the services' to
 * decide, but a list takes the viewer so that the store can filter by them before it pages.
 *
 * @since 0.1.0
 */
import type { Column, Row } from "../../../records.js"
import type { Principal, Role } from "../../../api/security.js"
import type { Modifications } from "../definitions/modifications.js"

/**
 * @since 0.1.0
 * @category models
 */
export type AccountType = "organization" | "agency" | "client"

/**
 * @since 0.1.0
 * @category models
 */
export interface Organization {
  readonly id: number
  readonly name: string
  /** What the organization says about itself (`PATCH /v2/organization`). */
  readonly profile: OrganizationProfile
  /** From the seed only: the API cannot change them. */
  readonly plan: Plan
  readonly limits: Limits
}

/**
 * @since 0.1.0
 * @category models
 */
export interface OrganizationAddress {
  readonly street: string | null
  readonly zip: string | null
  readonly city: string | null
  readonly state: string | null
  readonly country: string | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface OrganizationSettings {
  readonly dateFormat: string | null
  readonly numberFormat: string | null
  readonly firstDayOfWeek: string | null
  readonly calendar: string | null
  readonly fiscalYearStart: { readonly month: number; readonly day: number } | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface OrganizationMetadata {
  readonly industry: ReadonlyArray<string> | null
  readonly businessType: ReadonlyArray<string> | null
  readonly companySize: string | null
  readonly annualRevenue: string | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface OrganizationProfile {
  readonly companyName: string | null
  readonly websiteUrl: string | null
  readonly taxNumber: string | null
  readonly billingName: string | null
  readonly address: OrganizationAddress | null
  readonly settings: OrganizationSettings | null
  readonly metadata: OrganizationMetadata | null
}

/**
 * @since 0.1.0
 * @category defaults
 */
export const emptyOrganizationProfile: OrganizationProfile = {
  companyName: null,
  websiteUrl: null,
  taxNumber: null,
  billingName: null,
  address: null,
  settings: null,
  metadata: null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Plan {
  readonly name: string
  readonly status: string
  readonly billingPeriod: "monthly" | "quarterly" | "yearly" | null
  readonly billingEmail: string | null
}

/**
 * How many of each the organization may hold; null is unlimited.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  readonly users: number | null
  readonly dataSources: number | null
  readonly accounts: number | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Invoice {
  readonly invoiceId: string | null
  readonly date: string | null
  /** USD. */
  readonly amount: number
  readonly status: string
  readonly receiptNumber: string | null
  readonly downloadUrl: string | null
}

/**
 * The seed's plan when it names none; limits generous enough for any development use.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultPlan: Plan = { name: "Development", status: "active", billingPeriod: null, billingEmail: null }
/**
 * @since 0.1.0
 * @category defaults
 */
export const defaultLimits: Limits = { users: 1000, dataSources: 10_000, accounts: 1000 }

/**
 * @since 0.1.0
 * @category models
 */
export interface Account {
  readonly id: number
  readonly organizationId: number
  readonly name: string
  readonly accountType: AccountType
  readonly companyName: string | null
  readonly websiteUrl: string | null
  /** The user who manages the account (their name as it was when set). */
  readonly managedBy: Creator | null
  readonly createdAt: string | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface UserMetadata {
  readonly department: string | null
  readonly title: string | null
  readonly role: string | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface User {
  readonly id: number
  readonly organizationId: number
  readonly name: string
  readonly email: string
  readonly role: Role
  readonly timezone: string | null
  readonly createdAt: string | null
  readonly metadata: UserMetadata | null
  /** Seeded users are; invited ones are not until they confirm (which this server never sees). */
  readonly isEmailVerified: boolean
}

/**
 * @since 0.1.0
 * @category models
 */
export interface AccountQuery extends Slice {
  readonly organizationId: number
  readonly search?: string | undefined
  readonly sort?: { readonly by: "name" | "website" | "managedBy"; readonly order: SortOrder } | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface UserQuery extends Slice {
  readonly organizationId: number
  readonly role?: Role | undefined
  /** Case-insensitive substring of the name or email. */
  readonly search?: string | undefined
  readonly sort?: { readonly by: "name" | "createdAt" | "role"; readonly order: SortOrder } | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export type AccountPatch = Partial<Pick<Account, "name" | "websiteUrl" | "managedBy">>

/**
 * @since 0.1.0
 * @category models
 */
export type UserPatch = Partial<Pick<User, "name" | "role" | "timezone" | "metadata">>

/**
 * The outcome of a change that must leave the organization an admin: done, no such user, or
 * refused because it would remove or demote the last admin.
 *
 * @since 0.1.0
 * @category models
 */
export type UserChange<A> =
  | { readonly _tag: "Done"; readonly value: A }
  | { readonly _tag: "Missing" }
  | { readonly _tag: "LastAdmin" }

/**
 * @since 0.1.0
 * @category models
 */
export interface Usage {
  readonly users: number
  readonly dataSources: number
  readonly accounts: number
}

/**
 * Who may see a data source or dataset.
 *
 * @since 0.1.0
 * @category models
 */
export interface Permissions {
  readonly accessLevel: "everyone" | "selectedUsers" | "private"
  readonly accessList: ReadonlyArray<{ readonly id: number; readonly name: string }> | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Creator {
  readonly id: number
  readonly name: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DataSource {
  readonly id: number
  readonly organizationId: number
  readonly accountId: number
  readonly name: string
  readonly timezone: string
  readonly createdAt: string
  /** Kind marker; data sources made through the API are `ingestion`. */
  readonly key: string
  readonly createdBy: Creator
  readonly syncInterval: number | null
  readonly permissions: Permissions
  /** The newest ingestion into any of its datasets. */
  readonly lastActivityAt: string | null
  /** The connection it syncs through; null for data sources fed through the API alone. */
  readonly connectionId: number | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Verification {
  readonly isVerified: boolean
  readonly verifiedAt: string | null
  readonly verifiedBy: Creator | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DatasetMetadata {
  readonly description: string | null
  readonly synonyms: ReadonlyArray<string> | null
  readonly defaultTimeDimension: string | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ColumnMetadata {
  readonly description: string | null
  readonly conceptType: "measure" | "dimension" | "timeDimension" | null
  readonly synonyms: ReadonlyArray<string> | null
}

/**
 * The latest ingestion of a dataset, kept with the dataset so that lists and details need no
 * query per item.
 *
 * @since 0.1.0
 * @category models
 */
export interface DatasetActivity {
  readonly lastIngestionId: string
  readonly lastIngestionAt: string
  readonly lastStatus: IngestionStatus
  readonly lastSuccessAt: string | null
}

/**
 * How a request names a dataset: its UUID (the v1 id, `Dataset.id`) or its number (the v2 id,
 * `Dataset.number`). Every store looks a dataset up by either.
 *
 * @since 0.1.0
 * @category models
 */
export type DatasetRef = string | number

/**
 * @since 0.1.0
 * @category models
 */
export interface Dataset {
  /** The v1 id, a UUID; the store's own key for the dataset. */
  readonly id: string
  /** The v2 id: a number from the id space data sources draw from too. */
  readonly number: number
  readonly organizationId: number
  readonly dataSourceId: number
  readonly name: string
  readonly createdAt: string
  readonly primaryKey: ReadonlyArray<string>
  /** Column definitions; empty until given at creation or inferred from the first records. */
  readonly schema: ReadonlyArray<Column>
  readonly createdBy: Creator
  readonly timezone: string | null
  readonly syncInterval: number | null
  readonly permissions: Permissions
  readonly verification: Verification
  readonly metadata: DatasetMetadata
  /** By column id; columns without an entry have none. */
  readonly columnMetadata: Readonly<Record<string, ColumnMetadata>>
  /** Calculated columns, filters, display names, data types, order and visibility; none at creation. */
  readonly modifications: Modifications
  readonly rowCount: number
  /** Bytes of the stored rows as JSON. */
  readonly size: number
  readonly activity: DatasetActivity | null
}

/**
 * What a new data source or dataset starts with beyond its required fields.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultPermissions: Permissions = { accessLevel: "everyone", accessList: null }
/**
 * @since 0.1.0
 * @category defaults
 */
export const unverified: Verification = { isVerified: false, verifiedAt: null, verifiedBy: null }
/**
 * @since 0.1.0
 * @category defaults
 */
export const emptyMetadata: DatasetMetadata = { description: null, synonyms: null, defaultTimeDimension: null }

/**
 * `queued` -> `processing` -> `success` | `failed` | `purged`.
 *
 * @since 0.1.0
 * @category models
 */
export type IngestionStatus = "queued" | "processing" | "success" | "failed" | "purged"

/**
 * @since 0.1.0
 * @category models
 */
export interface IngestionProblem {
  readonly code: string
  readonly field: string | null
  readonly message: string
  /** The offending record, as sent. */
  readonly record: unknown
}

/**
 * @since 0.1.0
 * @category models
 */
export interface IngestionCounts {
  readonly received: number
  readonly appended: number
  readonly overwritten: number
  readonly rejected: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DatasetStats {
  readonly columnCount: number
  readonly rowCount: number
  /** Bytes of the stored rows as JSON. */
  readonly size: number
}

/**
 * @since 0.1.0
 * @category utils
 */
export const statsOf = (dataset: Dataset): DatasetStats => ({
  columnCount: dataset.schema.length,
  rowCount: dataset.rowCount,
  size: dataset.size
})

/**
 * @since 0.1.0
 * @category models
 */
export interface Ingestion {
  readonly id: string
  readonly datasetId: string
  readonly status: IngestionStatus
  readonly initiatedAt: string
  readonly initiatedBy: Creator
  /** Milliseconds from acceptance to the end of processing; null while pending. */
  readonly duration: number | null
  readonly counts: IngestionCounts
  /** Dataset figures right after this ingestion (null while pending). */
  readonly datasetStats: DatasetStats | null
  readonly problems: ReadonlyArray<IngestionProblem>
  /** Why a `failed` ingestion stored nothing. */
  readonly failure: string | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface NewIngestion extends Pick<Ingestion, "datasetId" | "initiatedBy"> {
  /** Milliseconds after acceptance before a worker may take it; none when absent. */
  readonly processingDelayMillis?: number | undefined
  /**
   * The W3C `traceparent` of the request that carried it, when that request was traced: the
   * span that processes it links to that trace.
   */
  readonly traceparent?: string | undefined
}

/**
 * An ingestion a worker holds under a lease: no other worker takes it until the lease ends.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClaimedIngestion {
  readonly ingestion: Ingestion
  readonly records: ReadonlyArray<unknown>
  /** Who holds the lease; completing needs the same owner. */
  readonly owner: string
  /** The accepting request's `traceparent`, when it was traced. */
  readonly traceparent: string | null
}

/**
 * What processing decided for an ingestion's records, against the dataset as it is when the
 * rows are written: the columns to add, the rows to write and the records rejected.
 *
 * @since 0.1.0
 * @category models
 */
export interface IngestionDecision {
  readonly newColumns: ReadonlyArray<Column>
  readonly rows: ReadonlyArray<Row>
  readonly problems: ReadonlyArray<IngestionProblem>
}

/**
 * A claimed ingestion with what was decided for its records.
 *
 * @since 0.1.0
 * @category models
 */
export interface DecidedIngestion {
  readonly claim: ClaimedIngestion
  readonly decision: IngestionDecision
}

/**
 * Claimed ingestions of one dataset, in acceptance order, each decided against the schema the
 * ones before it left, the first against `schema`: the dataset's schema when they were decided.
 *
 * @since 0.1.0
 * @category models
 */
export interface DecidedGroup {
  readonly schema: ReadonlyArray<Column>
  readonly decided: ReadonlyArray<DecidedIngestion>
}

/**
 * The user a list is shown to: lists hold only what this user may see (see `canSee`).
 *
 * @since 0.1.0
 * @category models
 */
export type Viewer = Pick<Principal, "userId" | "organizationId" | "role">

/**
 * @since 0.1.0
 * @category models
 */
export interface Slice {
  readonly offset: number
  readonly limit: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly totalItems: number
}

/**
 * @since 0.1.0
 * @category models
 */
export type SortOrder = "asc" | "desc"

/**
 * Fields the v2 lists of data sources and datasets sort by. Names compare
 * case-insensitively; missing values sort last either way.
 *
 * @since 0.1.0
 * @category models
 */
export type ListSortField = "name" | "createdAt" | "lastActivityAt"

/**
 * @since 0.1.0
 * @category models
 */
export interface ListQuery extends Slice {
  readonly viewer: Viewer
  /** Case-insensitive substring of the name. */
  readonly search?: string | undefined
  readonly sort?: { readonly by: ListSortField; readonly order: SortOrder } | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DataSourceQuery extends ListQuery {
  readonly accountId?: number | undefined
  readonly connectionId?: number | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DatasetQuery extends ListQuery {
  readonly dataSourceId?: number | undefined
  /** Datasets of the account's data sources. */
  readonly accountId?: number | undefined
}

/**
 * A page of stored rows, in storage order unless sorted by a column of the schema.
 *
 * @since 0.1.0
 * @category models
 */
export interface RowQuery extends Slice {
  readonly sort?: { readonly column: Column; readonly order: SortOrder } | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export type DataSourcePatch = Partial<Pick<DataSource, "name" | "timezone" | "syncInterval" | "permissions">>

/**
 * @since 0.1.0
 * @category models
 */
export type DatasetPatch = Partial<
  Pick<Dataset, | "name"
    | "timezone"
    | "syncInterval"
    | "permissions"
    | "verification"
    | "metadata"
    | "columnMetadata"
    | "modifications"
  >
>

/**
 * @since 0.1.0
 * @category models
 */
export type NewDataSource = Omit<DataSource, "id" | "createdAt" | "lastActivityAt" | "connectionId"> & {
  readonly connectionId?: number | null | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export type NewDataset = Omit<Dataset, "id" | "number" | "createdAt" | "rowCount" | "size" | "activity" | "modifications">
