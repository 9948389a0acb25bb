/**
 * The durable store: everything in Postgres (`@effect/sql-pg`), so that a restart keeps it
 * and several server processes on one database behave as one service.
 *
 * - Tables live in a schema of their own (`tributary` by default), created with the
 *   migrations at start-up; start-ups of several processes at once take turns on an advisory
 *   lock.
 * - Lists, rows pages and sorts are queries: filter, sort and page in SQL.
 * - The ingestion queue is the `ingestions` table, in `seq` order per dataset (the order of
 *   acceptance): a worker claims the oldest pending ingestion of a dataset, when it is queued
 *   (or its lease ran out) and due, with the ones after it, under `FOR UPDATE SKIP LOCKED`;
 *   a dataset whose oldest pending ingestion is held gives nothing, so one batch of a dataset
 *   is in flight at a time. It completes them in one transaction that holds the dataset's row
 *   lock, checks the leases are still its own and that nothing accepted before them is still
 *   pending, so that every accepted ingestion ends exactly once, in order, whichever process
 *   finishes it. A new ingestion is announced with `NOTIFY` (delivered at commit) so that
 *   idle workers of every process wake at once; they also look every second, for leases that
 *   ran out, and wake when the next delayed ingestion (`processing` fault) comes due.
 * - Idempotency: the claim is an insert into a table keyed by the request's scope, in the
 *   same transaction as the request's own writes. A second request with the same key waits on
 *   the first one's uncommitted row and then reads its answer: never two executions.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import * as PgClient from "@effect/sql-pg/PgClient"
import { createHash, randomUUID } from "node:crypto"
import { Clock, Config, Effect, Layer, Option, Queue, Redacted, Stream } from "effect"
import * as Pg from "pg"
import type { Column, Row } from "../../../records.js"
import type { Principal, Role } from "../../../api/security.js"
import { isoTimestamp } from "../clock.js"
import { migrations } from "./migrations.js"
import { newDataset, newIngestion, sameSchema } from "./entities.js"
import { keysOf, type RowLedger, writeRows } from "./rowLedger.js"
import {
  type Account,
  type ActivityEntry,
  type ClaimedIngestion,
  type Connection,
  type Invoice,
  type UserChange,
  type DataSource,
  type Dataset,
  type DatasetStats,
  type Ingestion,
  type IngestionStatus,
  type ListQuery,
  type Metric,
  type Organization,
  type Slice,
  type User
} from "./Store.js"
import { contextOf, type Stores, type StoreService } from "./Stores.js"
import { IdempotencyKeyReused, StoreError } from "../errors.js"

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

const ingestionChannel = "tributary_ingestions"

/** Arbitrary, fixed: the advisory lock that start-ups take turns on. */
const migrationLock = 7_236_110_411

/**
 * SQLSTATE classes of requests the database refused for what they are (syntax, data,
 * constraints): the server's own failure, 500. Anything else (connections refused, reset,
 * terminated, a database shutting down) may pass: 503, retryable.
 */
const requestFaultClasses = new Set(["22", "23", "42"])

const toStoreError = (error: SqlError): StoreError => {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  const failed = typeof code === "string" && requestFaultClasses.has(code.slice(0, 2))
  const detail = error.cause instanceof Error ? error.cause.message : String(error.cause)
  return new StoreError({
    reason: failed ? "Failed" : "Unavailable",
    message: `${error.message}: ${detail}`,
    cause: error.cause
  })
}

/** Maps the SQL errors of a store call to `StoreError`, once, at the edge. */
const storeCall = <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | StoreError, R> =>
  Effect.catchIf(
    effect,
    (e): e is SqlError => (e as { _tag?: unknown })._tag === "SqlError",
    (e) => Effect.fail(toStoreError(e))
  ) as Effect.Effect<A, Exclude<E, SqlError> | StoreError, R>

// ---- rows of the tables, as they come out of pg ---------------------------------------------

interface DataSourceRecord {
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

const toDataSource = (r: DataSourceRecord): DataSource => ({
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

interface DatasetRecord {
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

const toDataset = (r: DatasetRecord): Dataset => ({
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

interface IngestionRecord {
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

interface ConnectionRecord {
  readonly id: number
  readonly organization_id: number
  readonly name: string
  readonly integration_key: string | null
  readonly managed_by: Connection["managedBy"]
  readonly shared_with_accounts: boolean
  readonly permissions: Connection["permissions"]
  readonly created_at: string | null
  readonly status: Connection["status"]
  readonly data_sources_count: number
}

const toConnection = (r: ConnectionRecord): Connection => ({
  id: r.id,
  organizationId: r.organization_id,
  name: r.name,
  integrationKey: r.integration_key,
  managedBy: r.managed_by,
  sharedWithAccounts: r.shared_with_accounts,
  permissions: r.permissions,
  createdAt: r.created_at,
  status: r.status,
  dataSourcesCount: r.data_sources_count
})

interface MetricRecord {
  readonly id: string
  readonly organization_id: number
  readonly data_source_id: number
  readonly dataset_id: string
  readonly name: string
  readonly measure: Metric["measure"]
  readonly date: Metric["date"]
  readonly aggregation_function: Metric["aggregationFunction"]
  readonly dimensions: Metric["dimensions"]
  readonly filters: Metric["filters"]
  readonly verification: Metric["verification"]
  readonly created_at: string
  readonly created_by: Metric["createdBy"]
}

const toMetric = (r: MetricRecord): Metric => ({
  id: r.id,
  organizationId: r.organization_id,
  dataSourceId: r.data_source_id,
  datasetId: r.dataset_id,
  name: r.name,
  measure: r.measure,
  date: r.date,
  aggregationFunction: r.aggregation_function,
  dimensions: r.dimensions,
  filters: r.filters,
  verification: r.verification,
  createdAt: r.created_at,
  createdBy: r.created_by
})

const metricColumns = "m.id, m.organization_id, m.data_source_id, m.dataset_id, m.name, m.measure, m.date, " +
  "m.aggregation_function, m.dimensions, m.filters, m.verification, m.created_at, m.created_by"

const toIngestion = (r: IngestionRecord): Ingestion => ({
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

interface OrganizationRecord {
  readonly id: number
  readonly name: string
  readonly profile: Organization["profile"]
  readonly plan: Organization["plan"]
  readonly limits: Organization["limits"]
}

const toOrganization = (r: OrganizationRecord): Organization => ({
  id: r.id,
  name: r.name,
  profile: r.profile,
  plan: r.plan,
  limits: r.limits
})

interface AccountRecord {
  readonly id: number
  readonly organization_id: number
  readonly name: string
  readonly account_type: Account["accountType"]
  readonly company_name: string | null
  readonly website_url: string | null
  readonly managed_by: Account["managedBy"]
  readonly created_at: string | null
}

const toAccount = (r: AccountRecord): Account => ({
  id: r.id,
  organizationId: r.organization_id,
  name: r.name,
  accountType: r.account_type,
  companyName: r.company_name,
  websiteUrl: r.website_url,
  managedBy: r.managed_by,
  createdAt: r.created_at
})

interface UserRecord {
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

const toUser = (r: UserRecord): User => ({
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

interface ActivityRecord {
  readonly id: number
  readonly organization_id: number
  readonly action: string
  readonly created_at: string
  readonly is_system: boolean
  readonly resource_type: string | null
  readonly resource_id: string | null
  readonly user_ref: ActivityEntry["user"]
  readonly details: unknown
}

const toActivity = (r: ActivityRecord): ActivityEntry => ({
  id: r.id,
  organizationId: r.organization_id,
  action: r.action,
  createdAt: r.created_at,
  isSystem: r.is_system,
  resourceType: r.resource_type,
  resourceId: r.resource_id,
  user: r.user_ref,
  details: r.details
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

/** The items before the first that `keep` refuses. */
const takeWhile = <A>(items: ReadonlyArray<A>, keep: (a: A) => boolean): ReadonlyArray<A> => {
  const end = items.findIndex((a) => !keep(a))
  return end < 0 ? items : items.slice(0, end)
}

/** The columns of an ingestion without its waiting records. */
const ingestionColumns = "id, dataset_id, status, initiated_at, initiated_by, duration, counts, dataset_stats, problems, failure"

/**
 * Builds the store over a Postgres client whose connections use the store's schema.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.gen(function*() {
  const sql = yield* PgClient.PgClient

  const json = (value: unknown) => JSON.stringify(value)

  // ---- fragments --------------------------------------------------------------------------

  /** A dataset with its latest ingestion (one index probe per dataset). */
  const datasetSelect = sql`
    SELECT d.id, d.number, d.organization_id, d.data_source_id, d.name, d.created_at, d.primary_key, d.schema,
      d.created_by, d.timezone, d.sync_interval, d.permissions, d.verification, d.metadata,
      d.column_metadata, d.modifications, d.row_count::float8 AS row_count, d.size::float8 AS size,
      d.next_seq::float8 AS next_seq, d.last_success_at,
      l.id AS last_ingestion_id, l.initiated_at AS last_ingestion_at, l.status AS last_status
    FROM datasets d
    LEFT JOIN LATERAL (
      SELECT i.id, i.initiated_at, i.status FROM ingestions i WHERE i.dataset_id = d.id ORDER BY i.seq DESC LIMIT 1
    ) l ON true`

  /** A data source with the newest ingestion into any of its datasets. */
  const dataSourceSelect = sql`
    SELECT s.id, s.organization_id, s.account_id, s.name, s.timezone, s.created_at, s.key, s.created_by,
      s.sync_interval, s.permissions, s.connection_id,
      (SELECT max(l.initiated_at) FROM datasets d CROSS JOIN LATERAL (
        SELECT i.initiated_at FROM ingestions i WHERE i.dataset_id = d.id ORDER BY i.seq DESC LIMIT 1
      ) l WHERE d.data_source_id = s.id) AS last_activity_at
    FROM data_sources s`

  /** `canSee` (visibility.ts) in SQL, over a table aliased `alias`. */
  const visibleTo = (alias: string, viewer: ListQuery["viewer"]): Fragment => {
    const t = sql.literal(alias)
    return sql`${t}.organization_id = ${viewer.organizationId} AND (
      ${viewer.role} = 'admin'
      OR (${t}.created_by->>'id')::int = ${viewer.userId}
      OR ${t}.permissions->>'accessLevel' = 'everyone'
      OR (${t}.permissions->>'accessLevel' = 'selectedUsers'
        AND ${t}.permissions->'accessList' @> jsonb_build_array(jsonb_build_object('id', ${viewer.userId}::int))))`
  }

  const searchIn = (alias: string, search: string | undefined): Fragment =>
    search === undefined ? sql`true` : sql`strpos(lower(${sql.literal(alias)}.name), lower(${search})) > 0`

  const direction = (order: "asc" | "desc") => sql.literal(order === "desc" ? "DESC NULLS LAST" : "ASC NULLS LAST")

  const listOrder = (
    query: ListQuery,
    alias: string,
    lastActivity: string,
    storageOrder: string
  ): Fragment => {
    const sort = query.sort
    if (sort === undefined) return sql.literal(storageOrder)
    const value = sort.by === "name"
      ? sql.literal(`${alias}.name COLLATE tributary_base`)
      : sort.by === "createdAt"
      ? sql.literal(`${alias}.created_at`)
      : sql.literal(lastActivity)
    return sql`${value} ${direction(sort.order)}, ${sql.literal(storageOrder)}`
  }

  const connectionSelect = sql`
    SELECT c.id, c.organization_id, c.name, c.integration_key, c.managed_by, c.shared_with_accounts, c.permissions,
      c.created_at, c.status,
      (SELECT count(*)::int FROM data_sources s WHERE s.connection_id = c.id) AS data_sources_count
    FROM connections c`

  /** `canSee` for connections: their manager stands for the creator. */
  const visibleConnection = (viewer: ListQuery["viewer"]): Fragment =>
    sql`c.organization_id = ${viewer.organizationId} AND (
      ${viewer.role} = 'admin'
      OR (c.managed_by->>'id')::int = ${viewer.userId}
      OR c.permissions->>'accessLevel' = 'everyone'
      OR (c.permissions->>'accessLevel' = 'selectedUsers'
        AND c.permissions->'accessList' @> jsonb_build_array(jsonb_build_object('id', ${viewer.userId}::int))))`

  const byId = <R, A>(rows: ReadonlyArray<R>, f: (r: R) => A) => Option.map(Option.fromNullable(rows[0]), f)

  /**
   * The payload is `queued <dataset>`, or `delayed <dataset>` for an ingestion that waits for a
   * `processing` delay. Never empty: the platform's listener passes on no notification without
   * a payload.
   */
  const notifyIngestion = (datasetId: string, delayed: boolean) =>
    sql`SELECT pg_notify(${ingestionChannel}, ${`${delayed ? "delayed" : "queued"} ${datasetId}`})`

  // A new ingestion wakes one idle worker, not all, and none when a worker of this process works
  // on its dataset (that one claims again when done; a dataset's batches go one at a time): under
  // load on one dataset, woken workers would each claim nothing. Announcements while none waits
  // make one wake-up.
  const wakeUp = yield* Queue.sliding<void>(1)
  /** The dataset each worker of this process (by owner) holds a batch of. */
  const working = new Map<string, string>()
  const scope = yield* Effect.scope

  // Whether a delayed ingestion may be waiting to come due: until a look finds none, and again
  // once one is announced (`delayedNotices` tells a look whether one was, meanwhile) or a worker
  // waited a whole second (announcements may be lost). Without delays, workers woken by new
  // ingestions do not look for the next due time, and idle ones once a second.
  let delayedMayWait = true
  let delayedNotices = 0

  // Idle workers wake on a NOTIFY from any process, and look every second anyway: leases that
  // ran out announce nothing, and a listening connection that the database dropped hears
  // nothing more (the platform's listener keeps it) until the process restarts.
  yield* sql.listen(ingestionChannel).pipe(
    Stream.runForEach((payload) => {
      const [kind, datasetId] = payload.split(" ")
      if (kind === "delayed") {
        delayedMayWait = true
        delayedNotices++
      }
      for (const held of working.values()) if (held === datasetId) return Effect.void
      return Queue.offer(wakeUp, undefined)
    }),
    Effect.catchAll((error) => Effect.logDebug(`ingestion listener: ${error.message}`)),
    Effect.zipRight(Effect.sleep("1 second")),
    Effect.forever,
    Effect.forkScoped
  )

  const holdsLease = (claim: ClaimedIngestion) =>
    Effect.map(
      sql<{ id: string }>`SELECT id FROM ingestions
        WHERE id = ${claim.ingestion.id} AND status = 'processing' AND lease_owner = ${claim.owner}
        FOR UPDATE`,
      (rows) => rows.length > 0
    )

  const finish = (claim: ClaimedIngestion, set: Fragment) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`UPDATE ingestions SET ${set},
          duration = ${Math.max(0, now - Date.parse(claim.ingestion.initiatedAt))},
          records = NULL, lease_owner = NULL, lease_until = NULL
        WHERE id = ${claim.ingestion.id}`)

  const purgeWhere = (where: Fragment) =>
    sql.withTransaction(Effect.gen(function*() {
      const ids = yield* sql<{ id: string }>`SELECT id FROM datasets WHERE ${where} FOR UPDATE`
      if (ids.length === 0) return 0
      const list = json(ids.map((r) => r.id))
      const inList = sql`IN (SELECT jsonb_array_elements_text(${list}::jsonb)::uuid)`
      yield* sql`DELETE FROM dataset_rows WHERE dataset_id ${inList}`
      yield* sql`UPDATE datasets SET row_count = 0, size = 0 WHERE id ${inList}`
      yield* sql`UPDATE ingestions SET status = 'purged', records = NULL
        WHERE dataset_id ${inList} AND status = 'queued'`
      return ids.length
    }))

  /**
   * Sorted pages deep inside a large dataset need an index on the sort key: without one, every
   * read sorts all the dataset's rows (1.3 s for a page of a 1M-row dataset by a number column,
   * 5 s by a text column). The first sort by a column (name, type and direction) builds one in
   * the background (`CREATE INDEX CONCURRENTLY`, writes go on meanwhile); reads use it once it
   * is there. Only keys someone sorted by get an index, so ingestion pays only for those.
   */
  const sortIndexes = new Set<string>()
  const ensureSortIndex = (sortKey: string) =>
    Effect.suspend(() => {
      if (sortIndexes.has(sortKey)) return Effect.void
      sortIndexes.add(sortKey)
      const name = `dataset_rows_sort_${createHash("sha256").update(sortKey).digest("hex").slice(0, 24)}`
      return sql.unsafe(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON dataset_rows (dataset_id, ${sortKey})`).pipe(
        Effect.catchAll((error) =>
          Effect.zipRight(
            Effect.sync(() => sortIndexes.delete(sortKey)),
            Effect.logWarning(`could not build the sort index ${name}: ${error.message}`)
          )
        ),
        Effect.forkIn(scope),
        Effect.asVoid
      )
    })

  /** A page of `table`'s rows matching `where`, in `order`, with the total. */
  const pageOf = <R extends object, A>(
    table: string,
    columns: Fragment,
    where: Fragment,
    order: Fragment,
    { limit, offset }: Slice,
    to: (r: R) => A
  ) =>
    storeCall(Effect.all({
      items: Effect.map(
        sql<R>`SELECT ${columns} FROM ${sql.literal(table)} WHERE ${where} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`,
        (rows) => rows.map(to)
      ),
      totalItems: Effect.map(
        sql<{ total: number }>`SELECT count(*)::int AS total FROM ${sql.literal(table)} WHERE ${where}`,
        ([r]) => r!.total
      )
    }))

  const organizationColumns = sql.literal("id, name, profile, plan, limits")
  const accountColumns = sql.literal("id, organization_id, name, account_type, company_name, website_url, managed_by, created_at")
  const userColumns = sql.literal("id, organization_id, name, email, role, timezone, created_at, metadata, email_verified")
  const activityColumns = sql.literal(
    "id::float8 AS id, organization_id, action, created_at, is_system, resource_type, resource_id, user_ref, details"
  )

  /**
   * `change` unless it removes or demotes (`demotes`) the last admin of the user's organization.
   * The organization's admins are locked first, so that two such changes at once cannot both
   * pass the count.
   */
  const guardLastAdmin = <A>(
    id: number,
    demotes: boolean,
    change: (user: User) => Effect.Effect<A, SqlError>
  ): Effect.Effect<UserChange<A>, StoreError> =>
    storeCall(sql.withTransaction(Effect.gen(function*() {
      const [record] = yield* sql<UserRecord>`SELECT ${userColumns} FROM users WHERE id = ${id}`
      if (record === undefined) return { _tag: "Missing" } as const
      const user = toUser(record)
      if (user.role === "admin" && demotes) {
        const admins = yield* sql<{ id: number }>`SELECT id FROM users
          WHERE organization_id = ${user.organizationId} AND role = 'admin' ORDER BY id FOR UPDATE`
        if (admins.length <= 1) return { _tag: "LastAdmin" } as const
      }
      return { _tag: "Done", value: yield* change(user) } as const
    })))

  const service: StoreService = {
    ensureOrganization: (seedKey) =>
      storeCall(Effect.map(
        sql<OrganizationRecord>`INSERT INTO organizations (name, seed_key) VALUES (${seedKey}, ${seedKey})
          ON CONFLICT (seed_key) DO UPDATE SET seed_key = EXCLUDED.seed_key RETURNING ${organizationColumns}`,
        (rows) => toOrganization(rows[0]!)
      )),
    ensureAccount: (organizationId, account) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(
          sql<AccountRecord>`
            INSERT INTO accounts (organization_id, name, account_type, created_at)
            VALUES (${organizationId}, ${account.name}, ${account.accountType}, ${isoTimestamp(now)})
            ON CONFLICT (organization_id, name) DO UPDATE SET account_type = EXCLUDED.account_type
            RETURNING ${accountColumns}`,
          ([r]) => toAccount(r!)
        ))),
    ensureUser: (organizationId, user) =>
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
        ))),
    ensureApiKey: (key, userId) =>
      storeCall(Effect.asVoid(
        sql`INSERT INTO api_keys (key, user_id) VALUES (${key}, ${userId})
          ON CONFLICT (key) DO UPDATE SET user_id = EXCLUDED.user_id`
      )),
    principalByKey: (apiKey) =>
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
      )),
    accounts: (organizationId) =>
      storeCall(Effect.map(
        sql<AccountRecord>`SELECT ${accountColumns} FROM accounts WHERE organization_id = ${organizationId} ORDER BY id`,
        (rows) => rows.map(toAccount)
      )),
    account: (id) =>
      storeCall(Effect.map(
        sql<AccountRecord>`SELECT ${accountColumns} FROM accounts WHERE id = ${id}`,
        (rows) => byId(rows, toAccount)
      )),
    users: (organizationId) =>
      storeCall(Effect.map(
        sql<UserRecord>`SELECT ${userColumns} FROM users WHERE organization_id = ${organizationId} ORDER BY id`,
        (rows) => rows.map(toUser)
      )),

    organization: (id) =>
      storeCall(Effect.map(
        sql<OrganizationRecord>`SELECT ${organizationColumns} FROM organizations WHERE id = ${id}`,
        (rows) => byId(rows, toOrganization)
      )),
    setOrganizationPlan: (id, { invoices, limits, plan }) =>
      storeCall(Effect.asVoid(
        sql`UPDATE organizations SET plan = ${json(plan)}::jsonb, limits = ${json(limits)}::jsonb,
          invoices = ${json(invoices)}::jsonb WHERE id = ${id}`
      )),
    updateOrganization: (id, patch) =>
      storeCall(Effect.map(
        sql<OrganizationRecord>`UPDATE organizations SET
          name = coalesce(${patch.name ?? null}, name),
          profile = coalesce(${patch.profile === undefined ? null : json(patch.profile)}::jsonb, profile)
          WHERE id = ${id} RETURNING ${organizationColumns}`,
        (rows) => byId(rows, toOrganization)
      )),
    invoices: (organizationId, { limit, offset }) =>
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
      })),
    usage: (organizationId) =>
      storeCall(Effect.map(
        sql<{ users: number; data_sources: number; accounts: number }>`SELECT
          (SELECT count(*)::int FROM users WHERE organization_id = ${organizationId}) AS users,
          (SELECT count(*)::int FROM data_sources WHERE organization_id = ${organizationId}) AS data_sources,
          (SELECT count(*)::int FROM accounts WHERE organization_id = ${organizationId}) AS accounts`,
        ([r]) => ({ users: r!.users, dataSources: r!.data_sources, accounts: r!.accounts })
      )),
    createAccount: (input) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(
          sql<AccountRecord>`INSERT INTO accounts
            (organization_id, name, account_type, company_name, website_url, managed_by, created_at)
            VALUES (${input.organizationId}, ${input.name}, ${input.accountType}, ${input.companyName},
              ${input.websiteUrl}, ${input.managedBy === null ? null : json(input.managedBy)}::jsonb, ${isoTimestamp(now)})
            RETURNING ${accountColumns}`,
          ([r]) => toAccount(r!)
        ))),
    listAccounts: (query) => {
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
    },
    updateAccount: (id, patch) =>
      storeCall(Effect.map(
        sql<AccountRecord>`UPDATE accounts SET
          name = coalesce(${patch.name ?? null}, name),
          website_url = ${patch.websiteUrl === undefined ? sql`website_url` : sql`${patch.websiteUrl}`},
          managed_by = ${
          patch.managedBy === undefined ? sql`managed_by` : sql`${patch.managedBy === null ? null : json(patch.managedBy)}::jsonb`
        }
          WHERE id = ${id} RETURNING ${accountColumns}`,
        (rows) => byId(rows, toAccount)
      )),
    deleteAccount: (id) =>
      storeCall(sql.withTransaction(Effect.gen(function*() {
        // Counted and deleted under the account's row lock, so two deletes do not both count.
        yield* sql`SELECT id FROM accounts WHERE id = ${id} FOR UPDATE`
        const [held] = yield* sql<{ total: number }>`SELECT count(*)::int AS total FROM data_sources WHERE account_id = ${id}`
        if (held!.total === 0) yield* sql`DELETE FROM accounts WHERE id = ${id}`
        return { dataSources: held!.total }
      }))),
    user: (id) =>
      storeCall(Effect.map(sql<UserRecord>`SELECT ${userColumns} FROM users WHERE id = ${id}`, (rows) => byId(rows, toUser))),
    createUser: (input) =>
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
        ))),
    listUsers: (query) => {
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
    },
    updateUser: (id, patch) =>
      guardLastAdmin(id, patch.role !== undefined && patch.role !== "admin", () =>
        Effect.map(
          sql<UserRecord>`UPDATE users SET
            name = coalesce(${patch.name ?? null}, name),
            role = coalesce(${patch.role ?? null}, role),
            timezone = ${patch.timezone === undefined ? sql`timezone` : sql`${patch.timezone}`},
            metadata = ${patch.metadata === undefined ? sql`metadata` : sql`${patch.metadata === null ? null : json(patch.metadata)}::jsonb`}
            WHERE id = ${id} RETURNING ${userColumns}`,
          ([r]) => toUser(r!)
        )),
    deleteUser: (id) =>
      guardLastAdmin(id, true, (user) => Effect.as(sql`DELETE FROM users WHERE id = ${id}`, user)),
    recordActivity: (entry) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.asVoid(
          sql`INSERT INTO activity_log
            (organization_id, action, created_at, is_system, resource_type, resource_id, user_ref, details)
            VALUES (${entry.organizationId}, ${entry.action}, ${isoTimestamp(now)}, ${entry.isSystem}, ${entry.resourceType},
              ${entry.resourceId}, ${entry.user === null ? null : json(entry.user)}::jsonb,
              ${entry.details === null || entry.details === undefined ? null : json(entry.details)}::jsonb)`
        ))),
    activityLog: (query) => {
      const where = sql`organization_id = ${query.organizationId}
        AND ${query.resourceType === undefined ? sql`true` : sql`resource_type = ${query.resourceType}`}
        AND ${query.userId === undefined ? sql`true` : sql`(user_ref->>'id')::int = ${query.userId}`}
        AND ${query.from === undefined ? sql`true` : sql`created_at >= ${query.from}`}
        AND ${query.to === undefined ? sql`true` : sql`created_at <= ${query.to}`}
        AND ${
        query.search === undefined ? sql`true` : sql`(strpos(lower(action), lower(${query.search})) > 0
          OR strpos(lower(coalesce(resource_id, '')), lower(${query.search})) > 0
          OR strpos(lower(coalesce(user_ref->>'name', '')), lower(${query.search})) > 0)`
      }`
      return pageOf("activity_log", activityColumns, where, sql.literal("id DESC"), query, toActivity)
    },

    createDataSource: (input) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(
          sql<{ id: number }>`INSERT INTO data_sources
            (organization_id, account_id, name, timezone, created_at, key, created_by, sync_interval, permissions, connection_id)
            VALUES (${input.organizationId}, ${input.accountId}, ${input.name}, ${input.timezone}, ${isoTimestamp(now)},
              ${input.key}, ${json(input.createdBy)}::jsonb, ${input.syncInterval}, ${json(input.permissions)}::jsonb,
              ${input.connectionId ?? null})
            RETURNING id`,
          ([r]): DataSource => ({
            ...input,
            connectionId: input.connectionId ?? null,
            id: r!.id,
            createdAt: isoTimestamp(now),
            lastActivityAt: null
          })
        ))),
    dataSource: (id) =>
      storeCall(Effect.map(sql<DataSourceRecord>`${dataSourceSelect} WHERE s.id = ${id}`, (rows) => byId(rows, toDataSource))),
    listDataSources: (query) => {
      const where = sql`${visibleTo("s", query.viewer)} AND ${searchIn("s", query.search)}
        AND ${query.accountId === undefined ? sql`true` : sql`s.account_id = ${query.accountId}`}
        AND ${query.connectionId === undefined ? sql`true` : sql`s.connection_id = ${query.connectionId}`}`
      return storeCall(Effect.all({
        items: Effect.map(
          sql<DataSourceRecord>`SELECT * FROM (${dataSourceSelect}) s WHERE ${where}
            ORDER BY ${listOrder(query, "s", "s.last_activity_at", "s.id")}
            LIMIT ${query.limit} OFFSET ${query.offset}`,
          (rows) => rows.map(toDataSource)
        ),
        totalItems: Effect.map(sql<{ total: number }>`SELECT count(*)::int AS total FROM data_sources s WHERE ${where}`, ([r]) => r!.total)
      }))
    },
    updateDataSource: (id, patch) =>
      storeCall(Effect.gen(function*() {
        const rows = yield* sql<{ id: number }>`UPDATE data_sources SET
          name = coalesce(${patch.name ?? null}, name),
          timezone = coalesce(${patch.timezone ?? null}, timezone),
          sync_interval = ${patch.syncInterval === undefined ? sql`sync_interval` : sql`${patch.syncInterval}`},
          permissions = coalesce(${patch.permissions === undefined ? null : json(patch.permissions)}::jsonb, permissions)
          WHERE id = ${id} RETURNING id`
        if (rows.length === 0) return Option.none()
        return yield* service.dataSource(id)
      })),
    deleteDataSource: (id) => storeCall(Effect.asVoid(sql`DELETE FROM data_sources WHERE id = ${id}`)),
    purgeDataSource: (id) => storeCall(purgeWhere(sql`data_source_id = ${id}`)),

    createDataset: (input) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) => {
        // The number comes from the database's id space (the column's default), shared with data sources.
        const dataset = newDataset(input, now, 0)
        return Effect.map(
          sql<{ number: number }>`INSERT INTO datasets (id, organization_id, data_source_id, name, created_at, primary_key, schema,
              created_by, timezone, sync_interval, permissions, verification, metadata, column_metadata)
            VALUES (${dataset.id}, ${dataset.organizationId}, ${dataset.dataSourceId}, ${dataset.name}, ${dataset.createdAt},
              ${json(dataset.primaryKey)}::jsonb, ${json(dataset.schema)}::jsonb, ${json(dataset.createdBy)}::jsonb,
              ${dataset.timezone}, ${dataset.syncInterval}, ${json(dataset.permissions)}::jsonb,
              ${json(dataset.verification)}::jsonb, ${json(dataset.metadata)}::jsonb, ${json(dataset.columnMetadata)}::jsonb)
            RETURNING number`,
          ([r]): Dataset => ({ ...dataset, number: r!.number })
        )
      })),
    dataset: (id) =>
      storeCall(Effect.map(
        sql<DatasetRecord>`${datasetSelect} WHERE ${typeof id === "number" ? sql`d.number = ${id}` : sql`d.id = ${id}::uuid`}`,
        (rows) => byId(rows, toDataset)
      )),
    listDatasets: (query) => {
      const where = sql`${visibleTo("d", query.viewer)} AND ${searchIn("d", query.search)}
        AND ${query.dataSourceId === undefined ? sql`true` : sql`d.data_source_id = ${query.dataSourceId}`}
        AND ${
        query.accountId === undefined
          ? sql`true`
          : sql`d.data_source_id IN (SELECT id FROM data_sources WHERE account_id = ${query.accountId})`
      }`
      return storeCall(Effect.all({
        items: Effect.map(
          sql<DatasetRecord>`${datasetSelect} WHERE ${where}
            ORDER BY ${listOrder(query, "d", "l.initiated_at", "d.ordinal")}
            LIMIT ${query.limit} OFFSET ${query.offset}`,
          (rows) => rows.map(toDataset)
        ),
        totalItems: Effect.map(sql<{ total: number }>`SELECT count(*)::int AS total FROM datasets d WHERE ${where}`, ([r]) => r!.total)
      }))
    },
    updateDataset: (id, patch) =>
      storeCall(Effect.gen(function*() {
        const jsonOrKeep = (value: unknown, column: string) =>
          value === undefined ? sql.literal(column) : sql`${json(value)}::jsonb`
        const rows = yield* sql<{ id: string }>`UPDATE datasets SET
          name = coalesce(${patch.name ?? null}, name),
          timezone = ${patch.timezone === undefined ? sql`timezone` : sql`${patch.timezone}`},
          sync_interval = ${patch.syncInterval === undefined ? sql`sync_interval` : sql`${patch.syncInterval}`},
          permissions = ${jsonOrKeep(patch.permissions, "permissions")},
          verification = ${jsonOrKeep(patch.verification, "verification")},
          metadata = ${jsonOrKeep(patch.metadata, "metadata")},
          column_metadata = ${jsonOrKeep(patch.columnMetadata, "column_metadata")},
          modifications = ${jsonOrKeep(patch.modifications, "modifications")}
          WHERE id = ${id}::uuid RETURNING id`
        if (rows.length === 0) return Option.none()
        return yield* service.dataset(id)
      })),
    updateDatasetsOfDataSource: (dataSourceId, patch) =>
      storeCall(
        patch.timezone === undefined
          ? Effect.void
          : Effect.asVoid(sql`UPDATE datasets SET timezone = ${patch.timezone} WHERE data_source_id = ${dataSourceId}`)
      ),
    duplicateDataset: (id, name, createdBy) =>
      storeCall(sql.withTransaction(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const copyId = randomUUID()
        const copied = yield* sql`INSERT INTO datasets (id, organization_id, data_source_id, name, created_at, primary_key,
            schema, created_by, timezone, sync_interval, permissions, verification, metadata, column_metadata,
            modifications, row_count, size, next_seq)
          SELECT ${copyId}::uuid, organization_id, data_source_id, ${name}, ${isoTimestamp(now)}, primary_key, schema,
            ${json(createdBy)}::jsonb, timezone, sync_interval, permissions, verification, metadata, column_metadata,
            modifications, row_count, size, next_seq
          FROM datasets WHERE id = ${id}::uuid FOR SHARE
          RETURNING id`
        if (copied.length === 0) return Option.none()
        yield* sql`INSERT INTO dataset_rows (dataset_id, seq, key, data, size)
          SELECT ${copyId}::uuid, seq, key, data, size FROM dataset_rows WHERE dataset_id = ${id}::uuid`
        return yield* service.dataset(copyId)
      }))),
    deleteDataset: (id) => storeCall(Effect.asVoid(sql`DELETE FROM datasets WHERE id = ${id}::uuid`)),
    purgeDataset: (id) => storeCall(Effect.asVoid(purgeWhere(sql`id = ${id}::uuid`))),
    rows: (datasetId, query) => {
      const sortKey = query.sort === undefined ? "seq" : sortKeyOf(query.sort.column, query.sort.order)
      const order = sql.literal(sortKey)
      return storeCall(Effect.zipRight(query.sort === undefined ? Effect.void : ensureSortIndex(sortKey), Effect.all({
        items: Effect.map(
          query.sort === undefined
            // The page's seqs first, from the primary key alone (an index-only scan), then their
            // rows: skipping 1M rows costs 130 ms instead of the 420 ms of reading them on the way.
            // (A sort index holds an expression of `data`, which Postgres does not scan index-only.)
            ? sql<{ data: Row }>`SELECT data FROM dataset_rows WHERE dataset_id = ${datasetId}::uuid AND seq IN (
                SELECT seq FROM dataset_rows WHERE dataset_id = ${datasetId}::uuid
                ORDER BY seq LIMIT ${query.limit} OFFSET ${query.offset}
              ) ORDER BY seq`
            : sql<{ data: Row }>`SELECT data FROM dataset_rows WHERE dataset_id = ${datasetId}::uuid
                ORDER BY ${order} LIMIT ${query.limit} OFFSET ${query.offset}`,
          (rows) => rows.map((r) => r.data)
        ),
        totalItems: Effect.map(
          sql<{ total: number }>`SELECT row_count::float8 AS total FROM datasets WHERE id = ${datasetId}::uuid`,
          ([r]) => r?.total ?? 0
        )
      })))
    },

    ensureConnection: (input) =>
      storeCall(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const [row] = yield* sql<{ id: number }>`INSERT INTO connections
            (organization_id, name, integration_key, managed_by, shared_with_accounts, permissions, created_at, status)
          VALUES (${input.organizationId}, ${input.name}, ${input.integrationKey},
            ${input.managedBy === null ? null : json(input.managedBy)}::jsonb, ${input.sharedWithAccounts},
            ${json(input.permissions)}::jsonb, ${isoTimestamp(now)}, ${input.status})
          ON CONFLICT (organization_id, name) DO UPDATE SET name = excluded.name
          RETURNING id`
        return Option.getOrThrow(yield* service.connection(row!.id))
      })),
    connection: (id) =>
      storeCall(Effect.map(sql<ConnectionRecord>`${connectionSelect} WHERE c.id = ${id}`, (rows) => byId(rows, toConnection))),
    listConnections: (query) => {
      const where = sql`${visibleConnection(query.viewer)} AND ${searchIn("c", query.search)}`
      return storeCall(Effect.all({
        items: Effect.map(
          sql<ConnectionRecord>`${connectionSelect} WHERE ${where} ORDER BY c.id LIMIT ${query.limit} OFFSET ${query.offset}`,
          (rows) => rows.map(toConnection)
        ),
        totalItems: Effect.map(sql<{ total: number }>`SELECT count(*)::int AS total FROM connections c WHERE ${where}`, ([r]) => r!.total)
      }))
    },
    updateConnection: (id, patch) =>
      storeCall(Effect.gen(function*() {
        const rows = yield* sql<{ id: number }>`UPDATE connections SET
          name = coalesce(${patch.name ?? null}, name),
          shared_with_accounts = coalesce(${patch.sharedWithAccounts ?? null}, shared_with_accounts),
          permissions = coalesce(${patch.permissions === undefined ? null : json(patch.permissions)}::jsonb, permissions)
          WHERE id = ${id} RETURNING id`
        if (rows.length === 0) return Option.none()
        return yield* service.connection(id)
      })),
    deleteConnection: (id) =>
      storeCall(sql.withTransaction(Effect.asVoid(Effect.zipRight(
        sql`UPDATE data_sources SET connection_id = NULL WHERE connection_id = ${id}`,
        sql`DELETE FROM connections WHERE id = ${id}`
      )))),

    createMetric: (input) =>
      storeCall(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const [next] = yield* sql<{ n: number }>`SELECT nextval(pg_get_serial_sequence('metrics', 'ordinal'))::float8 AS n`
        const metric: Metric = { ...input, id: `${input.dataSourceId}|custom_query_${next!.n}`, createdAt: isoTimestamp(now) }
        yield* sql`INSERT INTO metrics (id, ordinal, organization_id, data_source_id, dataset_id, name, measure, date,
            aggregation_function, dimensions, filters, verification, created_at, created_by)
          VALUES (${metric.id}, ${next!.n}, ${metric.organizationId}, ${metric.dataSourceId}, ${metric.datasetId}, ${metric.name},
            ${json(metric.measure)}::jsonb, ${json(metric.date)}::jsonb, ${metric.aggregationFunction},
            ${json(metric.dimensions)}::jsonb, ${metric.filters === null ? null : json(metric.filters)}::jsonb,
            ${json(metric.verification)}::jsonb, ${metric.createdAt}, ${json(metric.createdBy)}::jsonb)`
        return metric
      })),
    metric: (id) =>
      storeCall(Effect.map(
        sql<MetricRecord>`SELECT ${sql.literal(metricColumns)} FROM metrics m WHERE m.id = ${id}`,
        (rows) => byId(rows, toMetric)
      )),
    listMetrics: (query) => {
      // Seen with their dataset: the dataset's visibility decides.
      const where = sql`${visibleTo("d", query.viewer)}
        AND ${query.dataSourceId === undefined ? sql`true` : sql`m.data_source_id = ${query.dataSourceId}`}
        AND ${query.datasetId === undefined ? sql`true` : sql`m.dataset_id = ${query.datasetId}`}
        AND ${
        query.search === undefined
          ? sql`true`
          : sql`(strpos(lower(m.name), lower(${query.search})) > 0 OR strpos(lower(m.id), lower(${query.search})) > 0)`
      }`
      const sort = query.sort
      const order = sort === undefined
        ? sql.literal("m.ordinal")
        : sql`${sql.literal(sort.by === "name" ? "m.name COLLATE tributary_base" : "m.created_at")} ${direction(sort.order)}, m.ordinal`
      return storeCall(Effect.all({
        items: Effect.map(
          sql<MetricRecord>`SELECT ${sql.literal(metricColumns)} FROM metrics m JOIN datasets d ON d.id = m.dataset_id
            WHERE ${where} ORDER BY ${order} LIMIT ${query.limit} OFFSET ${query.offset}`,
          (rows) => rows.map(toMetric)
        ),
        totalItems: Effect.map(
          sql<{ total: number }>`SELECT count(*)::int AS total FROM metrics m JOIN datasets d ON d.id = m.dataset_id WHERE ${where}`,
          ([r]) => r!.total
        )
      }))
    },
    updateMetric: (id, patch) =>
      storeCall(Effect.gen(function*() {
        const jsonOrKeep = (value: unknown, column: string) =>
          value === undefined ? sql.literal(column) : sql`${value === null ? null : json(value)}::jsonb`
        const rows = yield* sql<{ id: string }>`UPDATE metrics SET
          name = coalesce(${patch.name ?? null}, name),
          measure = ${jsonOrKeep(patch.measure, "measure")},
          date = ${jsonOrKeep(patch.date, "date")},
          aggregation_function = coalesce(${patch.aggregationFunction ?? null}, aggregation_function),
          dimensions = ${jsonOrKeep(patch.dimensions, "dimensions")},
          filters = ${jsonOrKeep(patch.filters, "filters")},
          verification = ${jsonOrKeep(patch.verification, "verification")}
          WHERE id = ${id} RETURNING id`
        if (rows.length === 0) return Option.none()
        return yield* service.metric(id)
      })),
    deleteMetric: (id) => storeCall(Effect.asVoid(sql`DELETE FROM metrics WHERE id = ${id}`)),

    createIngestion: (input, records) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const ingestion = newIngestion(input, records, now)
        const delay = input.processingDelayMillis
        return Effect.as(
          Effect.zipRight(
            sql`INSERT INTO ingestions (id, dataset_id, status, initiated_at, initiated_by, counts, records, process_after, traceparent)
              VALUES (${ingestion.id}, ${ingestion.datasetId}::uuid, 'queued', ${ingestion.initiatedAt},
                ${json(ingestion.initiatedBy)}::jsonb, ${json(ingestion.counts)}::jsonb, ${json(records)}::json,
                ${delay === undefined ? null : now + delay}, ${input.traceparent ?? null})`,
            // Inside a transaction (an idempotent request), delivered when it commits.
            notifyIngestion(ingestion.datasetId, delay !== undefined)
          ),
          ingestion
        )
      })),
    ingestion: (id) =>
      storeCall(Effect.map(
        sql<IngestionRecord>`SELECT ${sql.literal(ingestionColumns)} FROM ingestions WHERE id = ${id}::uuid`,
        (rows) => byId(rows, toIngestion)
      )),
    listIngestions: (datasetId, slice: Slice) =>
      storeCall(Effect.all({
        items: Effect.map(
          sql<IngestionRecord>`SELECT ${sql.literal(ingestionColumns)} FROM ingestions WHERE dataset_id = ${datasetId}::uuid
            ORDER BY seq DESC LIMIT ${slice.limit} OFFSET ${slice.offset}`,
          (rows) => rows.map(toIngestion)
        ),
        totalItems: Effect.map(
          sql<{ total: number }>`SELECT count(*)::int AS total FROM ingestions WHERE dataset_id = ${datasetId}::uuid`,
          ([r]) => r!.total
        )
      })),
    finishedIngestions: (datasetId) =>
      storeCall(sql<{ status: IngestionStatus; initiatedAt: string; duration: number | null }>`
        SELECT status, initiated_at AS "initiatedAt", duration FROM ingestions
        WHERE dataset_id = ${datasetId}::uuid AND status IN ('success', 'failed') ORDER BY seq DESC`),
    claimIngestions: (owner, leaseMillis, max) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const until = now + leaseMillis
        /** Whether a claim may take the ingestion `t` now: no live lease on it, and due. */
        const takeable = (t: string) => {
          const i = sql.literal(t)
          return sql`(${i}.status = 'queued' OR (${i}.status = 'processing' AND ${i}.lease_until < ${now}))
            AND (${i}.process_after IS NULL OR ${i}.process_after <= ${now})`
        }
        // `waiting`: the datasets with pending ingestions, one index probe each (a skip scan);
        // `heads`: the oldest pending ingestion of each; `first`: the head that can be taken
        // and waits longest, locked (a claim racing for it skips it, and then its dataset: the
        // head is the only one of a dataset that can be first); `run`: its dataset's pending
        // ingestions from it, in order; the claim takes them up to the first it cannot take.
        return Effect.map(
          sql<IngestionRecord & { records: ReadonlyArray<unknown>; seq: number; traceparent: string | null }>`
            WITH RECURSIVE waiting(dataset_id) AS (
              (SELECT dataset_id FROM ingestions WHERE status IN ('queued', 'processing') ORDER BY dataset_id LIMIT 1)
              UNION ALL
              SELECT (SELECT i.dataset_id FROM ingestions i
                WHERE i.status IN ('queued', 'processing') AND i.dataset_id > w.dataset_id ORDER BY i.dataset_id LIMIT 1)
              FROM waiting w WHERE w.dataset_id IS NOT NULL
            ), heads AS (
              SELECT h.id FROM waiting w CROSS JOIN LATERAL (
                SELECT i.id FROM ingestions i
                WHERE i.dataset_id = w.dataset_id AND i.status IN ('queued', 'processing') ORDER BY i.seq LIMIT 1
              ) h
            ), first AS (
              SELECT i.dataset_id, i.seq FROM ingestions i
              WHERE i.id IN (SELECT id FROM heads) AND ${takeable("i")}
              ORDER BY i.seq LIMIT 1 FOR UPDATE OF i SKIP LOCKED
            ), run AS (
              SELECT i.id, i.seq, ${takeable("i")} AS takeable FROM ingestions i JOIN first ON i.dataset_id = first.dataset_id
              WHERE i.status IN ('queued', 'processing') AND i.seq >= first.seq
              ORDER BY i.seq LIMIT ${max}
            ), picked AS (
              SELECT r.id FROM run r WHERE NOT EXISTS (SELECT 1 FROM run b WHERE NOT b.takeable AND b.seq <= r.seq)
            )
            UPDATE ingestions SET status = 'processing', lease_owner = ${owner}, lease_until = ${until}
            WHERE id IN (SELECT id FROM picked) AND ${takeable("ingestions")}
            RETURNING ${sql.literal(ingestionColumns)}, records, seq::float8 AS seq, traceparent`,
          (rows) => {
            if (rows.length === 0) working.delete(owner)
            else working.set(owner, rows[0]!.dataset_id)
            return [...rows].sort((a, b) => a.seq - b.seq).map((r): ClaimedIngestion => ({
              ingestion: toIngestion(r),
              records: r.records,
              owner,
              traceparent: r.traceparent
            }))
          }
        )
      })),
    completeIngestions: (group) =>
      storeCall(sql.withTransaction(Effect.gen(function*() {
        const claims = group.decided.map((d) => d.claim)
        if (claims.length === 0) return []
        const owner = claims[0]!.owner
        const held = new Map(
          (yield* sql<{ id: string; seq: number }>`SELECT id, seq::float8 AS seq FROM ingestions
            WHERE id IN (SELECT json_array_elements_text(${json(claims.map((c) => c.ingestion.id))}::json)::uuid)
              AND status = 'processing' AND lease_owner = ${owner}
            FOR UPDATE`).map((r) => [r.id, r.seq])
        )
        // In acceptance order: up to the first claim not held, and the held rest back to the queue.
        let mine = takeWhile(claims, (claim) => held.has(claim.ingestion.id))
        const requeue = (ended: ReadonlyArray<ClaimedIngestion>) => {
          const rest = claims.filter((claim) => held.has(claim.ingestion.id) && !ended.includes(claim))
          return rest.length === 0 ? Effect.void : Effect.asVoid(sql`UPDATE ingestions
            SET status = 'queued', lease_owner = NULL, lease_until = NULL
            WHERE id IN (SELECT json_array_elements_text(${json(rest.map((c) => c.ingestion.id))}::json)::uuid)`)
        }
        const [record] = mine.length === 0
          ? []
          : yield* sql<DatasetRecord>`${datasetSelect} WHERE d.id = ${mine[0]!.ingestion.datasetId}::uuid FOR UPDATE OF d`
        // Gone, or its schema is no longer the one the decisions were made against: decided again.
        if (record === undefined || !sameSchema(toDataset(record).schema, group.schema)) {
          yield* requeue([])
          return []
        }
        // Under the dataset's lock, which every completion takes: one accepted before the last of
        // these and still pending (its acceptance committed after the claim's snapshot was taken,
        // or its claim raced this one) ends first; these end only up to it, the rest is requeued.
        const last = Math.max(...mine.map((claim) => held.get(claim.ingestion.id)!))
        const [earlier] = yield* sql<{ seq: number | null }>`SELECT min(seq)::float8 AS seq FROM ingestions
          WHERE dataset_id = ${record.id}::uuid AND status IN ('queued', 'processing') AND seq < ${last}
            AND id NOT IN (SELECT json_array_elements_text(${json(mine.map((c) => c.ingestion.id))}::json)::uuid)`
        if (earlier?.seq != null) {
          const before = earlier.seq
          mine = takeWhile(mine, (claim) => held.get(claim.ingestion.id)! < before)
        }
        yield* requeue(mine)
        if (mine.length === 0) return []
        let dataset = toDataset(record)
        const decisions = group.decided.slice(0, mine.length).map(({ decision }) => {
          if (decision.newColumns.length > 0) dataset = { ...dataset, schema: [...dataset.schema, ...decision.newColumns] }
          return { ...decision, columnCount: dataset.schema.length }
        })
        // The stored sizes of every key the batch touches, in one query; later ingestions of
        // the batch see the rows of the earlier ones through the same map.
        const sizes = new Map<string, number>()
        const keys = decisions.flatMap((decision) => keysOf(decision.rows, dataset.primaryKey))
        if (keys.length > 0) {
          const found = yield* sql<{ key: string; size: number }>`SELECT key, size FROM dataset_rows
            WHERE dataset_id = ${dataset.id}::uuid AND key IN (SELECT jsonb_array_elements_text(${json(keys)}::jsonb))`
          for (const { key, size } of found) sizes.set(key, size)
        }
        const now = yield* Clock.currentTimeMillis
        let { rowCount, size } = toDataset(record)
        let nextSeq = record.next_seq
        // The batch's writes over the sizes read: one write per key (its first place kept), so
        // that the one INSERT below touches each row once.
        const rows = new Map<string, { seq: number; key: string | null; data: Row; size: number }>()
        const appended: Array<{ seq: number; key: null; data: Row; size: number }> = []
        const ledger: RowLedger = {
          sizeOf: (key) => sizes.get(key),
          put: (key, data, size) => {
            sizes.set(key, size)
            rows.set(key, { seq: rows.get(key)?.seq ?? nextSeq++, key, data, size })
          },
          append: (data, size) => void appended.push({ seq: nextSeq++, key: null, data, size })
        }
        const outcomes = mine.map((claim, i) => {
          const decision = decisions[i]!
          const written = writeRows(decision.rows, dataset.primaryKey, ledger)
          rowCount += written.rowDelta
          size += written.bytesDelta
          return {
            id: claim.ingestion.id,
            counts: {
              received: claim.records.length,
              appended: written.appended,
              overwritten: written.overwritten,
              rejected: decision.problems.length
            },
            dataset_stats: { columnCount: decision.columnCount, rowCount, size },
            problems: decision.problems,
            duration: Math.max(0, now - Date.parse(claim.ingestion.initiatedAt))
          }
        })
        const writes = [...rows.values(), ...appended]
        if (writes.length > 0) {
          yield* sql`INSERT INTO dataset_rows (dataset_id, seq, key, data, size)
            SELECT ${dataset.id}::uuid, w.seq, w.key, w.data, w.size
            FROM jsonb_to_recordset(${json(writes)}::jsonb) AS w(seq bigint, key text, data jsonb, size int)
            ON CONFLICT (dataset_id, key) WHERE key IS NOT NULL DO UPDATE SET data = EXCLUDED.data, size = EXCLUDED.size`
        }
        const newest = mine.reduce((latest, claim) =>
          claim.ingestion.initiatedAt > latest ? claim.ingestion.initiatedAt : latest, mine[0]!.ingestion.initiatedAt)
        yield* sql`UPDATE datasets SET schema = ${json(dataset.schema)}::jsonb, row_count = ${rowCount},
            size = ${size}, next_seq = ${nextSeq}, last_success_at = GREATEST(last_success_at, ${newest})
          WHERE id = ${dataset.id}::uuid`
        // json_to_recordset, not jsonb: the problems keep the records as sent, key order included.
        yield* sql`UPDATE ingestions i SET status = 'success', counts = o.counts::jsonb,
            dataset_stats = o.dataset_stats::jsonb, problems = o.problems, duration = o.duration,
            records = NULL, lease_owner = NULL, lease_until = NULL
          FROM json_to_recordset(${json(outcomes)}::json) AS o(id uuid, counts json, dataset_stats json, problems json, duration int)
          WHERE i.id = o.id`
        return mine.map((claim) => claim.ingestion.id)
      }))),
    failIngestion: (claim, failure) =>
      storeCall(sql.withTransaction(Effect.gen(function*() {
        if (!(yield* holdsLease(claim))) return false
        yield* finish(claim, sql`status = 'failed', failure = ${failure}`)
        return true
      }))),
    awaitIngestions: storeCall(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      let wait = 1_000
      if (delayedMayWait) {
        const notices = delayedNotices
        const [next] = yield* sql<{ due: number | null }>`SELECT min(process_after)::float8 AS due FROM ingestions
          WHERE status = 'queued' AND process_after IS NOT NULL AND process_after > ${now}`
        if (next?.due != null) wait = Math.min(wait, next.due - now)
        else if (delayedNotices === notices) delayedMayWait = false
      }
      const woken = yield* Effect.timeoutOption(Queue.take(wakeUp), wait)
      if (Option.isNone(woken)) delayedMayWait = true
    })),

    once: ({ fingerprint, key, scope, windowMillis }, execute) =>
      storeCall(sql.withTransaction(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* sql`DELETE FROM idempotency_keys WHERE scope = ${scope} AND stored_at < ${now - windowMillis}`
        // Waits while another transaction holds an uncommitted claim on the same scope.
        const claimed = yield* sql`INSERT INTO idempotency_keys (scope, fingerprint, stored_at)
          VALUES (${scope}, ${fingerprint}, ${now}) ON CONFLICT (scope) DO NOTHING RETURNING scope`
        if (claimed.length === 0) {
          const [existing] = yield* sql<{ fingerprint: string; answer: unknown }>`
            SELECT fingerprint, answer FROM idempotency_keys WHERE scope = ${scope}`
          if (existing === undefined || existing.answer === null) {
            return yield* Effect.fail(new StoreError({ reason: "Unavailable", message: "idempotency record changed meanwhile" }))
          }
          if (existing.fingerprint !== fingerprint) return yield* Effect.fail(new IdempotencyKeyReused({ key }))
          return { answer: existing.answer as any, replayed: true }
        }
        const answer = yield* execute
        const settledAt = yield* Clock.currentTimeMillis
        yield* sql`UPDATE idempotency_keys SET answer = ${json(answer)}::json, stored_at = ${settledAt} WHERE scope = ${scope}`
        return { answer, replayed: false }
      })))
  }
  return service
})

const schemaName = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * A Postgres client whose connections put `schema` first on their search path.
 *
 * @since 0.1.0
 * @category layers
 */
export const clientLayer = (options: SqlStoreOptions): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, StoreError> => {
  const schema = options.schema ?? defaultSchema
  if (!schemaName.test(schema)) {
    return Layer.fail(new StoreError({ reason: "Failed", message: `invalid schema name "${schema}": lower-case letters, digits and _` }))
  }
  return Layer.mapError(PgClient.layerFromPool({
    acquire: Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new Pg.Pool({
          connectionString: Redacted.value(options.url),
          max: options.maxConnections ?? 10,
          connectionTimeoutMillis: 5_000,
          options: `-c search_path=${schema}`,
          application_name: "tributary"
        })
        // An idle connection that the database drops is an 'error' event on the pool: without a
        // listener it would end the process. The next query opens a new connection instead.
        pool.on("error", () => undefined)
        return pool
      }),
      (pool) => Effect.promise(() => pool.end())
    )
  }), toStoreError)
}

/**
 * Creates the schema and runs the migrations, one process at a time.
 *
 * @since 0.1.0
 * @category utils
 */
export const migrate = (schema: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(${migrationLock})`
        yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`
        // The migrator would find out whether its table exists with a query that fails when it
        // does not, and a failed query ends the transaction this runs in: made here first.
        yield* sql`CREATE TABLE IF NOT EXISTS tributary_migrations (
          migration_id integer PRIMARY KEY,
          created_at timestamp with time zone NOT NULL DEFAULT now(),
          name text NOT NULL
        )`
        return yield* Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "tributary_migrations" })
      })
    ))

/**
 * The Postgres store: connects, migrates, and serves from the database at `url`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: SqlStoreOptions): Layer.Layer<Stores, StoreError> =>
  Layer.scopedContext(
    migrate(options.schema ?? defaultSchema).pipe(
      Effect.mapError((error) =>
        error._tag === "SqlError"
          ? toStoreError(error)
          : new StoreError({ reason: "Failed", message: `migrations failed: ${error.message}`, cause: error })
      ),
      Effect.zipRight(make),
      Effect.map(contextOf)
    )
  ).pipe(Layer.provide(clientLayer(options)))

/**
 * The Postgres store from `TRIBUTARY_DATABASE_URL` (and `TRIBUTARY_DATABASE_SCHEMA`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = Layer.unwrapEffect(
  Effect.map(
    Config.all({
      url: Config.redacted("TRIBUTARY_DATABASE_URL"),
      schema: Config.string("TRIBUTARY_DATABASE_SCHEMA").pipe(Config.withDefault(defaultSchema))
    }),
    layer
  )
)
