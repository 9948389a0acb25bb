/**
 * The Postgres store's `IngestionStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { TransactionConnection } from "@effect/sql/SqlClient"
import { Clock, Effect, Option, Queue } from "effect"
import { primaryKeyOf, type Row } from "../../../../records.js"
import { newIngestion, sameSchema } from "../entities.js"
import { keysOf, type RowLedger, writeRows } from "../rowLedger.js"
import { type ClaimedIngestion, type IngestionStatus, type Slice } from "../Store.js"
import { IdempotencyKeyReused, StoreError } from "../../errors.js"
import type { IngestionStoreService } from "../ports/ingestions.js"
import type { SqlState } from "./state.js"
import { storeCall, type DatasetRecord, toDataset, type IngestionRecord, toIngestion, sortKeyOf, takeWhile, ingestionColumns } from "./records.js"

/**
 * How often a server sweeps the idempotency keys past their window, and how many it deletes at
 * most a sweep: without it a key stayed until its scope came again, and every ingest with a key
 * left a row for good.
 *
 * @since 0.3.0
 * @category defaults
 */
export const idempotencySweep = { everyMillis: 60_000, rows: 10_000 } as const

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): IngestionStoreService => {
  const {
    sql, json, datasetSelect, byId, notifyIngestion, announceIngestion, wakeUp, working, delayed, holdsLease, finish,
    ensureSortIndex
  } = state
  // When this server last swept the expired idempotency keys (each server on the database sweeps).
  let sweptAt = Number.NEGATIVE_INFINITY
  const sweepExpired = (now: number, windowMillis: number) =>
    Effect.suspend(() => {
      if (now - sweptAt < idempotencySweep.everyMillis) return Effect.void
      sweptAt = now
      return Effect.asVoid(sql`DELETE FROM idempotency_keys WHERE scope IN (
        SELECT scope FROM idempotency_keys WHERE stored_at < ${now - windowMillis} LIMIT ${idempotencySweep.rows})`)
    })
  const port: IngestionStoreService = {
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
    createIngestion: (input, records) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const ingestion = newIngestion(input, records, now)
        const delay = input.processingDelayMillis
        const insert = sql`INSERT INTO ingestions
            (id, dataset_id, status, initiated_at, initiated_by, counts, records, process_after, traceparent)
          VALUES (${ingestion.id}, ${ingestion.datasetId}::uuid, 'queued', ${ingestion.initiatedAt},
            ${json(ingestion.initiatedBy)}::jsonb, ${json(ingestion.counts)}::jsonb, ${json(records)}::json,
            ${delay === undefined ? null : now + delay}, ${input.traceparent ?? null})`
        return Effect.as(
          Effect.flatMap(Effect.serviceOption(TransactionConnection), (transaction) =>
            Option.isSome(transaction)
              // Inside a transaction (an idempotent request): announced in the same statement,
              // delivered when the transaction commits.
              ? sql`WITH accepted AS (${insert}) ${notifyIngestion(ingestion.datasetId, delay !== undefined)}`
              // Else announced once it has committed, without holding up the request for it.
              : Effect.zipRight(insert, announceIngestion(ingestion.datasetId, delay !== undefined))),
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
        // With it, in the same round trip (the dataset stays locked meanwhile, and ingest requests
        // wait for that lock), the stored sizes of every key these may write; later ingestions
        // of the batch see the rows of the earlier ones through the same map.
        const last = Math.max(...mine.map((claim) => held.get(claim.ingestion.id)!))
        const primaryKey = toDataset(record).primaryKey
        const keys = group.decided.slice(0, mine.length).flatMap(({ decision }) => keysOf(decision.rows, primaryKey))
        const [found] = yield* sql<{ earlier: number | null; sizes: ReadonlyArray<readonly [string, number]> }>`SELECT
          (SELECT min(seq)::float8 FROM ingestions
            WHERE dataset_id = ${record.id}::uuid AND status IN ('queued', 'processing') AND seq < ${last}
              AND id NOT IN (SELECT json_array_elements_text(${json(mine.map((c) => c.ingestion.id))}::json)::uuid)
          ) AS earlier,
          (SELECT coalesce(json_agg(json_build_array(key, size)), '[]') FROM dataset_rows
            WHERE dataset_id = ${record.id}::uuid AND key IN (SELECT jsonb_array_elements_text(${json(keys)}::jsonb))
          ) AS sizes`
        if (found?.earlier != null) {
          const before = found.earlier
          mine = takeWhile(mine, (claim) => held.get(claim.ingestion.id)! < before)
        }
        yield* requeue(mine)
        if (mine.length === 0) return []
        let dataset = toDataset(record)
        const decisions = group.decided.slice(0, mine.length).map(({ decision }) => {
          if (decision.newColumns.length > 0) dataset = { ...dataset, schema: [...dataset.schema, ...decision.newColumns] }
          return { ...decision, columnCount: dataset.schema.length }
        })
        const sizes = new Map<string, number>(found?.sizes ?? [])
        const now = yield* Clock.currentTimeMillis
        let { rowCount, size } = toDataset(record)
        let nextSeq = record.next_seq
        // The batch's writes over the sizes read: one write per key (its first place kept), so
        // that the one INSERT below touches each row once.
        const rows = new Map<string, { seq: number; key: string | null; data: Row; size: number }>()
        const appended: Array<{ seq: number; key: null; data: Row; size: number }> = []
        const ledger: RowLedger = {
          keyOf: primaryKeyOf,
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
        const newest = mine.reduce((latest, claim) =>
          claim.ingestion.initiatedAt > latest ? claim.ingestion.initiatedAt : latest, mine[0]!.ingestion.initiatedAt)
        // The rows, the dataset and the ingestions in one statement: as three, they were three
        // round trips with the dataset locked. The outcomes go through json_to_recordset, not
        // jsonb: the problems keep the records as sent, key order included.
        yield* sql`WITH written AS (
            INSERT INTO dataset_rows (dataset_id, seq, key, data, size)
            SELECT ${dataset.id}::uuid, w.seq, w.key, w.data, w.size
            FROM jsonb_to_recordset(${json(writes)}::jsonb) AS w(seq bigint, key text, data jsonb, size int)
            ON CONFLICT (dataset_id, key) WHERE key IS NOT NULL DO UPDATE SET data = EXCLUDED.data, size = EXCLUDED.size
          ), counted AS (
            UPDATE datasets SET schema = ${json(dataset.schema)}::jsonb, row_count = ${rowCount},
              size = ${size}, next_seq = ${nextSeq}, last_success_at = GREATEST(last_success_at, ${newest})
            WHERE id = ${dataset.id}::uuid
          )
          UPDATE ingestions i SET status = 'success', counts = o.counts::jsonb,
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
      if (delayed.mayWait) {
        const notices = delayed.notices
        const [next] = yield* sql<{ due: number | null }>`SELECT min(process_after)::float8 AS due FROM ingestions
          WHERE status = 'queued' AND process_after IS NOT NULL AND process_after > ${now}`
        if (next?.due != null) wait = Math.min(wait, next.due - now)
        else if (delayed.notices === notices) delayed.mayWait = false
      }
      const woken = yield* Effect.timeoutOption(Queue.take(wakeUp), wait)
      if (Option.isNone(woken)) delayed.mayWait = true
    })),
    once: ({ fingerprint, key, scope, windowMillis }, execute) =>
      storeCall(sql.withTransaction(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* sweepExpired(now, windowMillis)
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
  return port
}
