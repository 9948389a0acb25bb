/**
 * The reference server's storage, behind one service interface.
 *
 * Two implementations pass the same conformance suite (`test/server/store.test.ts`): the
 * embedded default keeps everything in memory (`MemoryStore`), the durable one keeps it in
 * Postgres (`SqlStore`) so that several server processes share it. Lists are queries (filter,
 * sort and page in; items and total out), so that neither implementation hands out whole
 * collections. Visibility rules are the services' to decide, but a list takes the viewer so
 * that the store can filter by them before it pages.
 *
 * @since 0.1.0
 */
import { Context, Data, type Effect, type Option } from "effect"
import type { Column, Row } from "../../records.js"
import type { Principal, Role } from "../../api/security.js"

/** @since 0.1.0 */
export type AccountType = "organization" | "agency" | "client"

/** @since 0.1.0 */
export interface Organization {
  readonly id: number
  readonly name: string
}

/** @since 0.1.0 */
export interface Account {
  readonly id: number
  readonly organizationId: number
  readonly name: string
  readonly accountType: AccountType
}

/** @since 0.1.0 */
export interface User {
  readonly id: number
  readonly organizationId: number
  readonly name: string
  readonly email: string
  readonly role: Role
}

/**
 * Who may see a data source or dataset.
 *
 * @since 0.1.0
 */
export interface Permissions {
  readonly accessLevel: "everyone" | "selectedUsers" | "private"
  readonly accessList: ReadonlyArray<{ readonly id: number; readonly name: string }> | null
}

/** @since 0.1.0 */
export interface Creator {
  readonly id: number
  readonly name: string
}

/** @since 0.1.0 */
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
}

/** @since 0.1.0 */
export interface Verification {
  readonly isVerified: boolean
  readonly verifiedAt: string | null
  readonly verifiedBy: Creator | null
}

/** @since 0.1.0 */
export interface DatasetMetadata {
  readonly description: string | null
  readonly synonyms: ReadonlyArray<string> | null
  readonly defaultTimeDimension: string | null
}

/** @since 0.1.0 */
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
 */
export type DatasetRef = string | number

/** @since 0.1.0 */
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
  readonly rowCount: number
  /** Bytes of the stored rows as JSON. */
  readonly size: number
  readonly activity: DatasetActivity | null
}

/**
 * What a new data source or dataset starts with beyond its required fields.
 *
 * @since 0.1.0
 */
export const defaultPermissions: Permissions = { accessLevel: "everyone", accessList: null }
/** @since 0.1.0 */
export const unverified: Verification = { isVerified: false, verifiedAt: null, verifiedBy: null }
/** @since 0.1.0 */
export const emptyMetadata: DatasetMetadata = { description: null, synonyms: null, defaultTimeDimension: null }

/**
 * `queued` -> `processing` -> `success` | `failed` | `purged`.
 *
 * @since 0.1.0
 */
export type IngestionStatus = "queued" | "processing" | "success" | "failed" | "purged"

/** @since 0.1.0 */
export interface IngestionProblem {
  readonly code: string
  readonly field: string | null
  readonly message: string
  /** The offending record, as sent. */
  readonly record: unknown
}

/** @since 0.1.0 */
export interface IngestionCounts {
  readonly received: number
  readonly appended: number
  readonly overwritten: number
  readonly rejected: number
}

/** @since 0.1.0 */
export interface DatasetStats {
  readonly columnCount: number
  readonly rowCount: number
  /** Bytes of the stored rows as JSON. */
  readonly size: number
}

/** @since 0.1.0 */
export const statsOf = (dataset: Dataset): DatasetStats => ({
  columnCount: dataset.schema.length,
  rowCount: dataset.rowCount,
  size: dataset.size
})

/** @since 0.1.0 */
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
 * An ingestion a worker holds under a lease: no other worker takes it until the lease ends.
 *
 * @since 0.1.0
 */
export interface ClaimedIngestion {
  readonly ingestion: Ingestion
  readonly records: ReadonlyArray<unknown>
  /** Who holds the lease; completing needs the same owner. */
  readonly owner: string
}

/**
 * What processing decided for an ingestion's records, against the dataset as it is when the
 * rows are written: the columns to add, the rows to write and the records rejected.
 *
 * @since 0.1.0
 */
export interface IngestionDecision {
  readonly newColumns: ReadonlyArray<Column>
  readonly rows: ReadonlyArray<Row>
  readonly problems: ReadonlyArray<IngestionProblem>
}

/**
 * The user a list is shown to: lists hold only what this user may see (see `canSee`).
 *
 * @since 0.1.0
 */
export type Viewer = Pick<Principal, "userId" | "organizationId" | "role">

/** @since 0.1.0 */
export interface Slice {
  readonly offset: number
  readonly limit: number
}

/** @since 0.1.0 */
export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly totalItems: number
}

/** @since 0.1.0 */
export type SortOrder = "asc" | "desc"

/**
 * Fields the v2 lists of data sources and datasets sort by. Names compare
 * case-insensitively; missing values sort last either way.
 *
 * @since 0.1.0
 */
export type ListSortField = "name" | "createdAt" | "lastActivityAt"

/** @since 0.1.0 */
export interface ListQuery extends Slice {
  readonly viewer: Viewer
  /** Case-insensitive substring of the name. */
  readonly search?: string | undefined
  readonly sort?: { readonly by: ListSortField; readonly order: SortOrder } | undefined
}

/** @since 0.1.0 */
export interface DataSourceQuery extends ListQuery {
  readonly accountId?: number | undefined
}

/** @since 0.1.0 */
export interface DatasetQuery extends ListQuery {
  readonly dataSourceId?: number | undefined
  /** Datasets of the account's data sources. */
  readonly accountId?: number | undefined
}

/**
 * A page of stored rows, in storage order unless sorted by a column of the schema.
 *
 * @since 0.1.0
 */
export interface RowQuery extends Slice {
  readonly sort?: { readonly column: Column; readonly order: SortOrder } | undefined
}

/**
 * The store could not do what it was asked. `Unavailable`: the database cannot be reached
 * (a retry may succeed: 503); `Failed`: anything else (500).
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreError extends Data.TaggedError("StoreError")<{
  readonly reason: "Unavailable" | "Failed"
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * The same `Idempotency-Key` (same user and route) came with a different request body.
 *
 * @since 0.1.0
 * @category errors
 */
export class IdempotencyKeyReused extends Data.TaggedError("IdempotencyKeyReused")<{
  readonly key: string
}> {}

/** @since 0.1.0 */
export type DataSourcePatch = Partial<Pick<DataSource, "name" | "timezone" | "syncInterval" | "permissions">>

/** @since 0.1.0 */
export type DatasetPatch = Partial<
  Pick<Dataset, "name" | "timezone" | "syncInterval" | "permissions" | "verification" | "metadata" | "columnMetadata">
>

/** @since 0.1.0 */
export type NewDataSource = Omit<DataSource, "id" | "createdAt" | "lastActivityAt">

/** @since 0.1.0 */
export type NewDataset = Omit<Dataset, "id" | "number" | "createdAt" | "rowCount" | "size" | "activity">

/**
 * The store. Every method is atomic; who may do what is the services' concern.
 *
 * @since 0.1.0
 */
export interface StoreService {
  // Organizations, accounts, users and keys. The `ensure*` calls are idempotent (by name,
  // by organization and name, by organization and email, by key): seeding twice changes nothing.
  readonly ensureOrganization: (name: string) => Effect.Effect<Organization, StoreError>
  readonly ensureAccount: (
    organizationId: number,
    account: Pick<Account, "name" | "accountType">
  ) => Effect.Effect<Account, StoreError>
  readonly ensureUser: (
    organizationId: number,
    user: Pick<User, "name" | "email" | "role">
  ) => Effect.Effect<User, StoreError>
  readonly ensureApiKey: (key: string, userId: number) => Effect.Effect<void, StoreError>
  /** The key's user; their default account is the first account of their organization. */
  readonly principalByKey: (apiKey: string) => Effect.Effect<Option.Option<Principal>, StoreError>
  readonly accounts: (organizationId: number) => Effect.Effect<ReadonlyArray<Account>, StoreError>
  readonly account: (id: number) => Effect.Effect<Option.Option<Account>, StoreError>
  readonly users: (organizationId: number) => Effect.Effect<ReadonlyArray<User>, StoreError>

  // Data sources.
  readonly createDataSource: (input: NewDataSource) => Effect.Effect<DataSource, StoreError>
  readonly dataSource: (id: number) => Effect.Effect<Option.Option<DataSource>, StoreError>
  readonly listDataSources: (query: DataSourceQuery) => Effect.Effect<Page<DataSource>, StoreError>
  readonly updateDataSource: (
    id: number,
    patch: DataSourcePatch
  ) => Effect.Effect<Option.Option<DataSource>, StoreError>
  /** Deletes the data source with its datasets, rows and ingestions. */
  readonly deleteDataSource: (id: number) => Effect.Effect<void, StoreError>
  /** Removes the rows of each of its datasets (see `purgeDataset`); the number of datasets. */
  readonly purgeDataSource: (id: number) => Effect.Effect<number, StoreError>

  // Datasets and their rows.
  readonly createDataset: (input: NewDataset) => Effect.Effect<Dataset, StoreError>
  /** By UUID (a string) or by number. */
  readonly dataset: (id: DatasetRef) => Effect.Effect<Option.Option<Dataset>, StoreError>
  readonly listDatasets: (query: DatasetQuery) => Effect.Effect<Page<Dataset>, StoreError>
  readonly updateDataset: (id: string, patch: DatasetPatch) => Effect.Effect<Option.Option<Dataset>, StoreError>
  /** The same change to every dataset of a data source. */
  readonly updateDatasetsOfDataSource: (
    dataSourceId: number,
    patch: Pick<DatasetPatch, "timezone">
  ) => Effect.Effect<void, StoreError>
  /** A new dataset in the same data source with the same schema, key, settings and rows. */
  readonly duplicateDataset: (
    id: string,
    name: string,
    createdBy: Creator
  ) => Effect.Effect<Option.Option<Dataset>, StoreError>
  /** Deletes the dataset with its rows and ingestions. */
  readonly deleteDataset: (id: string) => Effect.Effect<void, StoreError>
  /** Removes every row; queued ingestions of the dataset end as `purged`. */
  readonly purgeDataset: (id: string) => Effect.Effect<void, StoreError>
  readonly rows: (datasetId: string, query: RowQuery) => Effect.Effect<Page<Row>, StoreError>

  // Ingestions: recorded with their records, claimed by workers under a lease, completed once.
  /** Records an accepted ingestion (`queued`) with the records it carries. */
  readonly createIngestion: (
    input: Pick<Ingestion, "datasetId" | "initiatedBy">,
    records: ReadonlyArray<unknown>
  ) => Effect.Effect<Ingestion, StoreError>
  readonly ingestion: (id: string) => Effect.Effect<Option.Option<Ingestion>, StoreError>
  /** Newest first. */
  readonly listIngestions: (datasetId: string, slice: Slice) => Effect.Effect<Page<Ingestion>, StoreError>
  /** Every finished (`success` or `failed`) ingestion of a dataset, newest first, without records or problems. */
  readonly finishedIngestions: (
    datasetId: string
  ) => Effect.Effect<ReadonlyArray<Pick<Ingestion, "status" | "initiatedAt" | "duration">>, StoreError>
  /**
   * Takes the oldest queued ingestion (or one whose worker's lease ran out) for `owner`, and up
   * to `max - 1` more of the same dataset, oldest first, marking them `processing` until
   * `leaseMillis` from now. Empty when none is waiting.
   */
  readonly claimIngestions: (
    owner: string,
    leaseMillis: number,
    max: number
  ) => Effect.Effect<ReadonlyArray<ClaimedIngestion>, StoreError>
  /**
   * Ends claimed ingestions of one dataset, in order, in one step: under the dataset's lock,
   * `decide` checks each one's records against the dataset as the ones before left it; columns
   * and rows are written and each ingestion ends `success` with its own counts. The ids of those
   * ended; one whose lease was lost (or that is gone, or whose dataset is gone) is left out and
   * nothing of it is written.
   */
  readonly completeIngestions: (
    claims: ReadonlyArray<ClaimedIngestion>,
    decide: (dataset: Dataset, claim: ClaimedIngestion) => IngestionDecision
  ) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Ends a claimed ingestion as `failed` with the reason; false when the lease was lost. */
  readonly failIngestion: (claim: ClaimedIngestion, failure: string) => Effect.Effect<boolean, StoreError>
  /** Waits until an ingestion may be waiting: one was created, or a lease may have run out. */
  readonly awaitIngestions: Effect.Effect<void, StoreError>

  // Idempotency records.
  /**
   * Runs `execute` at most once for `scope` within `windowMillis`: a later call with the same
   * fingerprint gets the first call's answer (`replayed`), one with another fingerprint fails
   * with `IdempotencyKeyReused`, and one arriving while the first runs waits for its answer. A
   * failed `execute` keeps nothing. Answers must be plain JSON values (a durable store keeps them as JSON).
   */
  readonly once: <A, E, R>(
    request: { readonly key: string; readonly scope: string; readonly fingerprint: string; readonly windowMillis: number },
    execute: Effect.Effect<A, E, R>
  ) => Effect.Effect<{ readonly answer: A; readonly replayed: boolean }, E | IdempotencyKeyReused | StoreError, R>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class Store extends Context.Tag("tributary/server/Store")<Store, StoreService>() {}
