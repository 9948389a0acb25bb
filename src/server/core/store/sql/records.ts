/**
 * The Postgres store's rows as the database holds them, and their conversion to the model;
 * shared by every port of the store.
 *
 * @since 0.1.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Redacted } from "effect"
import * as Pg from "pg"
import type { Column } from "../../../../records.js"
import type { Role } from "../../../../api/security.js"
import {
  type Account,
  type DataSource,
  type Dataset,
  type DatasetStats,
  type Ingestion,
  type IngestionStatus,
  type Organization,
  type User
} from "../Store.js"
import { StoreError } from "../../errors.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface SqlStoreOptions {
  /** `postgres://user:password@host:port/database`. */
  readonly url: Redacted.Redacted
  /** The Postgres schema that holds the tables (created if missing). */
  readonly schema?: string | undefined
  readonly maxConnections?: number | undefined
}

/**
 * The default schema.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultSchema = "tributary"

/**
 * @since 0.1.0
 * @category utils
 */
export const ingestionChannel = "tributary_ingestions"

/**
 * Arbitrary, fixed: the advisory lock that start-ups take turns on.
 *
 * @since 0.1.0
 * @category utils
 */
export const migrationLock = 7_236_110_411

/**
 * SQLSTATE classes of requests the database refused for what they are (syntax, data,
 * constraints): the server's own failure, 500. Anything else (connections refused, reset,
 * terminated, a database shutting down) may pass: 503, retryable.
 *
 * @since 0.1.0
 * @category utils
 */
export const requestFaultClasses = new Set(["22", "23", "42"])

/**
 * @since 0.1.0
 * @category utils
 */
export const toStoreError = (error: SqlError): StoreError => {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  const failed = typeof code === "string" && requestFaultClasses.has(code.slice(0, 2))
  const detail = error.cause instanceof Error ? error.cause.message : String(error.cause)
  return new StoreError({
    reason: failed ? "Failed" : "Unavailable",
    message: `${error.message}: ${detail}`,
    cause: error.cause
  })
}

/**
 * Maps the SQL errors of a store call to `StoreError`, once, at the edge.
 *
 * @since 0.1.0
 * @category utils
 */
export const storeCall = <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | StoreError, R> =>
  Effect.catchIf(
    effect,
    (e): e is SqlError => (e as { _tag?: unknown })._tag === "SqlError",
    (e) => Effect.fail(toStoreError(e))
  ) as Effect.Effect<A, Exclude<E, SqlError> | StoreError, R>

// ---- rows of the tables, as they come out of pg ---------------------------------------------

/**
 * @since 0.1.0
 * @category models
 */
export interface DataSourceRecord {
  readonly id: number
  readonly organization_id: number
  readonly account_id: number
  readonly name: string
  readonly timezone: string
  readonly created_at: string
  readonly key: string
  readonly created_by: DataSource["createdBy"]
  readonly sync_interval: number | null
  readonly permissions: DataSource["permissions"]
  readonly last_activity_at: string | null
  readonly connection_id: number | null
}

/**
 * @since 0.1.0
 * @category utils
 */
export const toDataSource = (r: DataSourceRecord): DataSource => ({
  connectionId: r.connection_id,
  id: r.id,
  organizationId: r.organization_id,
  accountId: r.account_id,
  name: r.name,
  timezone: r.timezone,
  createdAt: r.created_at,
  key: r.key,
  createdBy: r.created_by,
  syncInterval: r.sync_interval,
  permissions: r.permissions,
  lastActivityAt: r.last_activity_at
})

/**
 * @since 0.1.0
 * @category models
 */
export interface DatasetRecord {
  readonly id: string
  readonly number: number
  readonly organization_id: number
  readonly data_source_id: number
  readonly name: string
  readonly created_at: string
  readonly primary_key: ReadonlyArray<string>
  readonly schema: ReadonlyArray<Column>
  readonly created_by: Dataset["createdBy"]
  readonly timezone: string | null
  readonly sync_interval: number | null
  readonly permissions: Dataset["permissions"]
  readonly verification: Dataset["verification"]
  readonly metadata: Dataset["metadata"]
  readonly column_metadata: Dataset["columnMetadata"]
  readonly modifications: Dataset["modifications"]
  readonly row_count: number
  readonly size: number
  readonly next_seq: number
  readonly last_success_at: string | null
  readonly last_ingestion_id: string | null
  readonly last_ingestion_at: string | null
  readonly last_status: IngestionStatus | null
}

/**
 * @since 0.1.0
 * @category utils
 */
export const toDataset = (r: DatasetRecord): Dataset => ({
  id: r.id,
  number: r.number,
  organizationId: r.organization_id,
  dataSourceId: r.data_source_id,
  name: r.name,
  createdAt: r.created_at,
  primaryKey: r.primary_key,
  schema: r.schema,
  createdBy: r.created_by,
  timezone: r.timezone,
  syncInterval: r.sync_interval,
  permissions: r.permissions,
  verification: r.verification,
  metadata: r.metadata,
  columnMetadata: r.column_metadata,
  modifications: r.modifications,
  rowCount: r.row_count,
  size: r.size,
  activity: r.last_ingestion_id === null ? null : {
    lastIngestionId: r.last_ingestion_id,
    lastIngestionAt: r.last_ingestion_at!,
    lastStatus: r.last_status!,
    lastSuccessAt: r.last_success_at
  }
})

/**
 * @since 0.1.0
 * @category models
 */
export interface IngestionRecord {
  readonly id: string
  readonly dataset_id: string
  readonly status: IngestionStatus
  readonly initiated_at: string
  readonly initiated_by: Ingestion["initiatedBy"]
  readonly duration: number | null
  readonly counts: Ingestion["counts"]
  readonly dataset_stats: DatasetStats | null
  readonly problems: Ingestion["problems"]
  readonly failure: string | null
}

/**
 * @since 0.1.0
 * @category utils
 */
export const toIngestion = (r: IngestionRecord): Ingestion => ({
  id: r.id,
  datasetId: r.dataset_id,
  status: r.status,
  initiatedAt: r.initiated_at,
  initiatedBy: r.initiated_by,
  duration: r.duration,
  counts: r.counts,
  datasetStats: r.dataset_stats,
  problems: r.problems,
  failure: r.failure
})

/**
 * @since 0.1.0
 * @category models
 */
export interface OrganizationRecord {
  readonly id: number
  readonly name: string
  readonly profile: Organization["profile"]
  readonly plan: Organization["plan"]
  readonly limits: Organization["limits"]
}

/**
 * @since 0.1.0
 * @category utils
 */
export const toOrganization = (r: OrganizationRecord): Organization => ({
  id: r.id,
  name: r.name,
  profile: r.profile,
  plan: r.plan,
  limits: r.limits
})

/**
 * @since 0.1.0
 * @category models
 */
export interface AccountRecord {
  readonly id: number
  readonly organization_id: number
  readonly name: string
  readonly account_type: Account["accountType"]
  readonly company_name: string | null
  readonly website_url: string | null
  readonly managed_by: Account["managedBy"]
  readonly created_at: string | null
}

/**
 * @since 0.1.0
 * @category utils
 */
export const toAccount = (r: AccountRecord): Account => ({
  id: r.id,
  organizationId: r.organization_id,
  name: r.name,
  accountType: r.account_type,
  companyName: r.company_name,
  websiteUrl: r.website_url,
  managedBy: r.managed_by,
  createdAt: r.created_at
})

/**
 * @since 0.1.0
 * @category models
 */
export interface UserRecord {
  readonly id: number
  readonly organization_id: number
  readonly name: string
  readonly email: string
  readonly role: Role
  readonly timezone: string | null
  readonly created_at: string | null
  readonly metadata: User["metadata"]
  readonly email_verified: boolean
}

/**
 * @since 0.1.0
 * @category utils
 */
export const toUser = (r: UserRecord): User => ({
  id: r.id,
  organizationId: r.organization_id,
  name: r.name,
  email: r.email,
  role: r.role,
  timezone: r.timezone,
  createdAt: r.created_at,
  metadata: r.metadata,
  isEmailVerified: r.email_verified
})

/**
 * The ORDER BY of rows sorted by a column, as text (exported for the benchmark's raw SQL): the same text makes the sort index, so the
 * column name is an escaped literal, not a parameter. Values of another type than the column's
 * (none get in, but arrays of strings may sit in a string column) sort as missing: last.
 *
 * @since 0.1.0
 * @category utils
 */
export const sortKeyOf = (column: Column, order: "asc" | "desc"): string => {
  const key = Pg.escapeLiteral(column.id)
  const value = column.dataType === "number"
    ? `(CASE WHEN jsonb_typeof(data->${key}) = 'number' THEN (data->>${key})::float8 END)`
    : `((CASE WHEN jsonb_typeof(data->${key}) = 'string' THEN data->>${key} END) COLLATE tributary_base)`
  return `${value} ${order === "desc" ? "DESC" : "ASC"} NULLS LAST, seq`
}

/**
 * The items before the first that `keep` refuses.
 *
 * @since 0.1.0
 * @category utils
 */
export const takeWhile = <A>(items: ReadonlyArray<A>, keep: (a: A) => boolean): ReadonlyArray<A> => {
  const end = items.findIndex((a) => !keep(a))
  return end < 0 ? items : items.slice(0, end)
}

/**
 * The columns of an ingestion without its waiting records.
 *
 * @since 0.1.0
 * @category utils
 */
export const ingestionColumns = "id, dataset_id, status, initiated_at, initiated_by, duration, counts, dataset_stats, problems, failure"
