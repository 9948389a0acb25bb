/**
 * The Postgres store's state: what every port of one store shares.
 *
 * @since 0.1.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import * as PgClient from "@effect/sql-pg/PgClient"
import { createHash } from "node:crypto"
import { Clock, Effect, Option, Queue, Stream } from "effect"
import { type ClaimedIngestion, type UserChange, type ListQuery, type Slice, type User } from "../Store.js"
import { StoreError } from "../../errors.js"
import { ingestionChannel, storeCall, type UserRecord, toUser } from "./records.js"

/**
 * The connection, the statements' fragments, the workers' wake-ups and the steps more than one
 * port takes: one state that every port of one Postgres store works on.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeState = Effect.gen(function*() {
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

  /**
   * `canSee` (`core/permissions.ts`) in SQL, over a table aliased `alias` whose `creator` column
   * holds who stands for the creator (a connection's manager does).
   */
  const visibleTo = (alias: string, viewer: ListQuery["viewer"], creator = "created_by"): Fragment => {
    const t = sql.literal(alias)
    return sql`${t}.organization_id = ${viewer.organizationId} AND (
      ${viewer.role} = 'admin'
      OR (${t}.${sql.literal(creator)}->>'id')::int = ${viewer.userId}
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

  const byId = <R, A>(rows: ReadonlyArray<R>, f: (r: R) => A) => Option.map(Option.fromNullable(rows[0]), f)

  /**
   * The payload is `queued <dataset>`, or `delayed <dataset>` for an ingestion that waits for a
   * `processing` delay. Never empty: the platform's listener passes on no notification without
   * a payload.
   */
  const announcement = (datasetId: string, delayed: boolean) => `${delayed ? "delayed" : "queued"} ${datasetId}`

  /** The NOTIFY of a new ingestion, for a statement inside the transaction that accepts it. */
  const notifyIngestion = (datasetId: string, delayed: boolean) =>
    sql`SELECT pg_notify(${ingestionChannel}, ${announcement(datasetId, delayed)})`

  // A new ingestion wakes one idle worker, not all, and none when a worker of this process works
  // on its dataset (that one claims again when done; a dataset's batches go one at a time): under
  // load on one dataset, woken workers would each claim nothing. Announcements while none waits
  // make one wake-up.
  const wakeUp = yield* Queue.sliding<void>(1)
  /** The dataset each worker of this process (by owner) holds a batch of. */
  const working = new Map<string, string>()
  const scope = yield* Effect.scope

  // Whether a delayed ingestion may be waiting to come due: until a look finds none, and again
  // once one is announced (`delayed.notices` tells a look whether one was, meanwhile) or a worker
  // waited a whole second (announcements may be lost). Without delays, workers woken by new
  // ingestions do not look for the next due time, and idle ones once a second.
  const delayed = { mayWait: true, notices: 0 }

  // Idle workers wake on a NOTIFY from any process, and look every second anyway: leases that
  // ran out announce nothing, and a listening connection that the database dropped hears
  // nothing more (the platform's listener keeps it) until the process restarts.
  /** What an announcement does to this process's workers, whoever made it. */
  const hear = (payload: string) => {
    const [kind, datasetId] = payload.split(" ")
    if (kind === "delayed") {
      delayed.mayWait = true
      delayed.notices++
    }
    for (const held of working.values()) if (held === datasetId) return Effect.void
    return Queue.offer(wakeUp, undefined)
  }

  yield* sql.listen(ingestionChannel).pipe(
    Stream.runForEach(hear),
    Effect.catchAll((error) => Effect.logDebug(`ingestion listener: ${error.message}`)),
    Effect.zipRight(Effect.sleep("1 second")),
    Effect.forever,
    Effect.forkScoped
  )

  // A NOTIFY takes a lock that every notifying transaction holds through its commit, the WAL
  // flush included: one per ingest request made the requests' commits go one at a time (under
  // bench:server-ingest, 3.1 backends on average waited for it; 177 -> 316 requests/s without
  // it). Announced after the ingestion's own commit instead, and coalesced: while one NOTIFY is
  // under way, the announcements made meanwhile wait and go in the next, one statement for all.
  const unannounced = new Set<string>()
  let announcing = false
  const announceWaiting: Effect.Effect<void> = Effect.suspend(() => {
    if (unannounced.size === 0) {
      announcing = false
      return Effect.void
    }
    const payloads = [...unannounced]
    unannounced.clear()
    return sql`SELECT pg_notify(${ingestionChannel}, p) FROM json_array_elements_text(${json(payloads)}::json) AS p`.pipe(
      // Not heard: the other processes' workers look every second anyway. Whatever went wrong,
      // the loop goes on, so that `announcing` is never left set with nothing under way.
      Effect.catchAllCause((cause) => Effect.logDebug("ingestion announcement failed", cause)),
      Effect.zipRight(announceWaiting)
    )
  })

  /**
   * Announces an ingestion whose acceptance has committed: this process's workers at once, the
   * other processes' with the next NOTIFY.
   */
  const announceIngestion = (datasetId: string, delayed: boolean) =>
    Effect.suspend(() => {
      const payload = announcement(datasetId, delayed)
      unannounced.add(payload)
      if (announcing) return hear(payload)
      announcing = true
      return Effect.zipRight(hear(payload), Effect.forkIn(announceWaiting, scope))
    })

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
  return {
    sql,
    json,
    datasetSelect,
    dataSourceSelect,
    visibleTo,
    searchIn,
    direction,
    listOrder,
    byId,
    notifyIngestion,
    announceIngestion,
    wakeUp,
    working,
    scope,
    delayed,
    holdsLease,
    finish,
    purgeWhere,
    sortIndexes,
    ensureSortIndex,
    pageOf,
    organizationColumns,
    accountColumns,
    userColumns,
    guardLastAdmin
  }
})

/**
 * @since 0.1.0
 * @category models
 */
export type SqlState = Effect.Effect.Success<typeof makeState>
