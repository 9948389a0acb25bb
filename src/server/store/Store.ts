/**
 * The reference server's storage, behind one service interface.
 *
 * The embedded default keeps everything in memory (`MemoryStore`); a durable
 * implementation provides the same interface.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
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
export interface DataSource {
  readonly id: number
  readonly organizationId: number
  readonly accountId: number
  readonly name: string
  readonly timezone: string
  readonly createdAt: string
  /** Kind marker; data sources made through the API are `ingestion`. */
  readonly key: string
  readonly createdBy: { readonly id: number; readonly name: string }
  readonly syncInterval: number | null
  readonly permissions: Permissions
}

/** @since 0.1.0 */
export interface Verification {
  readonly isVerified: boolean
  readonly verifiedAt: string | null
  readonly verifiedBy: { readonly id: number; readonly name: string } | null
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
  /** A display type set after creation (`currency`, `duration`, `percentage`, ...). */
  readonly displayType: string | null
}

/** @since 0.1.0 */
export interface Dataset {
  readonly id: string
  readonly organizationId: number
  readonly dataSourceId: number
  readonly name: string
  readonly createdAt: string
  readonly primaryKey: ReadonlyArray<string>
  /** Column definitions; empty until given at creation or inferred from the first records. */
  readonly schema: ReadonlyArray<Column>
  readonly createdBy: { readonly id: number; readonly name: string }
  readonly timezone: string | null
  readonly syncInterval: number | null
  readonly permissions: Permissions
  readonly verification: Verification
  readonly metadata: DatasetMetadata
  /** By column id; columns without an entry have none. */
  readonly columnMetadata: Readonly<Record<string, ColumnMetadata>>
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
export interface Ingestion {
  readonly id: string
  readonly datasetId: string
  readonly status: IngestionStatus
  readonly initiatedAt: string
  readonly initiatedBy: { readonly id: number; readonly name: string }
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
 * What processing did to a dataset: rows written and columns added.
 *
 * @since 0.1.0
 */
export interface AppliedRows {
  readonly appended: number
  readonly overwritten: number
  readonly stats: DatasetStats
}

/**
 * The store. Every method is atomic; visibility and permission checks are the services'
 * job, not the store's.
 *
 * @since 0.1.0
 */
export interface StoreService {
  readonly principalByKey: (apiKey: string) => Effect.Effect<Option.Option<Principal>>
  readonly organization: (id: number) => Effect.Effect<Option.Option<Organization>>
  readonly accounts: (organizationId: number) => Effect.Effect<ReadonlyArray<Account>>
  readonly account: (id: number) => Effect.Effect<Option.Option<Account>>
  readonly users: (organizationId: number) => Effect.Effect<ReadonlyArray<User>>

  readonly createDataSource: (input: Omit<DataSource, "id" | "createdAt">) => Effect.Effect<DataSource>
  readonly dataSource: (id: number) => Effect.Effect<Option.Option<DataSource>>
  readonly dataSourcesOfAccount: (accountId: number) => Effect.Effect<ReadonlyArray<DataSource>>
  readonly dataSourcesOfOrganization: (organizationId: number) => Effect.Effect<ReadonlyArray<DataSource>>
  readonly updateDataSource: (
    id: number,
    patch: Partial<Pick<DataSource, "name" | "timezone" | "syncInterval" | "permissions">>
  ) => Effect.Effect<DataSource>
  /** Deletes the data source with its datasets, rows and ingestions. */
  readonly deleteDataSource: (id: number) => Effect.Effect<void>

  readonly createDataset: (input: Omit<Dataset, "id" | "createdAt">) => Effect.Effect<Dataset>
  readonly dataset: (id: string) => Effect.Effect<Option.Option<Dataset>>
  readonly datasetsOfDataSource: (dataSourceId: number) => Effect.Effect<ReadonlyArray<Dataset>>
  readonly datasetsOfOrganization: (organizationId: number) => Effect.Effect<ReadonlyArray<Dataset>>
  readonly updateDataset: (
    id: string,
    patch: Partial<
      Pick<
        Dataset,
        "name" | "timezone" | "syncInterval" | "permissions" | "verification" | "metadata" | "columnMetadata"
      >
    >
  ) => Effect.Effect<Dataset>
  /** A new dataset in the same data source with the same schema, key, settings and rows. */
  readonly duplicateDataset: (
    id: string,
    name: string,
    createdBy: { readonly id: number; readonly name: string }
  ) => Effect.Effect<Dataset>
  /** Deletes the dataset with its rows and ingestions. */
  readonly deleteDataset: (id: string) => Effect.Effect<void>
  /** Removes every row; pending ingestions of the dataset end as `purged`. */
  readonly purgeDataset: (id: string) => Effect.Effect<void>
  readonly datasetStats: (id: string) => Effect.Effect<DatasetStats>
  readonly rows: (datasetId: string) => Effect.Effect<ReadonlyArray<Row>>
  /**
   * Adds columns, then writes rows: with a primary key an existing row with the same key
   * is replaced (counted as overwritten), otherwise every row is appended.
   */
  readonly applyRows: (
    datasetId: string,
    newColumns: ReadonlyArray<Column>,
    rows: ReadonlyArray<Row>
  ) => Effect.Effect<AppliedRows>

  /** Records an accepted ingestion (`queued`) with the records it carries. */
  readonly createIngestion: (
    input: Pick<Ingestion, "datasetId" | "initiatedBy">,
    records: ReadonlyArray<unknown>
  ) => Effect.Effect<Ingestion>
  readonly ingestion: (id: string) => Effect.Effect<Option.Option<Ingestion>>
  /** Newest first. */
  readonly ingestionsOfDataset: (datasetId: string) => Effect.Effect<ReadonlyArray<Ingestion>>
  /** Hands out the records of a queued ingestion once; none after that, or once purged. */
  readonly takePendingRecords: (id: string) => Effect.Effect<Option.Option<ReadonlyArray<unknown>>>
  readonly updateIngestion: (
    id: string,
    patch: Partial<Omit<Ingestion, "id" | "datasetId">>
  ) => Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class Store extends Context.Tag("tributary/server/Store")<Store, StoreService>() {}
