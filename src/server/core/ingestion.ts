/**
 * Ingestion: accept at once, process in worker fibers, report the outcome.
 *
 * A POST only records the ingestion (`queued`) with its records. Workers claim queued
 * ingestions from the store under a lease (so that with a shared store any server process
 * finishes what another accepted, even if that one died), several of one dataset at a time,
 * check each record against the dataset schema ({@link decideIngestion}, a pure function) and
 * complete them: rows written (primary-key upsert), counts and per-record problems stored, in
 * one store step.
 *
 * A dataset's ingestions are applied in the order they were accepted (API-DECISIONS.md,
 * "Order"), and the stores keep that, not the workers: a claim takes a dataset's oldest pending
 * ingestions only while none of them is held, and a completion ends none while one accepted
 * before it is pending. So one batch of a dataset is in flight at a time, whichever worker or
 * process holds it; workers work on several datasets at once.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import { Cause, Effect, Layer, Option } from "effect"
import type { Principal } from "../../api/security.js"
import { checkRecord, type Column, type Row } from "../../records.js"
import { NotFound } from "./errors.js"
import { type PageLimits, sliceOf, type PageRequest } from "./paging.js"
import {
  type ClaimedIngestion,
  type Dataset,
  type DatasetRef,
  type IngestionDecision,
  type IngestionProblem,
  Store
} from "./store/Store.js"
import type { StoreError } from "./errors.js"
import { editableDataset, visibleDataset } from "./catalog/datasets.js"

/**
 * Accepts records for a dataset: the ingestion is recorded as `queued` and processed later.
 *
 * @since 0.1.0
 * @category utils
 */
export const ingest = (principal: Principal, datasetId: DatasetRef, records: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const dataset = yield* editableDataset(principal, datasetId, "ingest data")
    const store = yield* Store
    return yield* store.createIngestion(
      { datasetId: dataset.id, initiatedBy: { id: principal.userId, name: principal.userName } },
      records
    )
  })

/**
 * A page of the ingestions of a visible dataset, newest first.
 *
 * @since 0.1.0
 * @category utils
 */
export const listIngestions = (principal: Principal, datasetId: DatasetRef, params: PageRequest, limits?: PageLimits) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, datasetId)
    const store = yield* Store
    const { page, pageSize, slice } = sliceOf(params, limits)
    const found = yield* store.listIngestions(dataset.id, slice)
    return { page, pageSize, found }
  })

/**
 * Figures over the finished ingestions of a visible dataset: mean duration of the successful
 * ones, the outcome per day, the last success, the success rate.
 *
 * @since 0.1.0
 * @category utils
 */
export const ingestionStatistics = (principal: Principal, datasetId: DatasetRef) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, datasetId)
    const store = yield* Store
    const finished = yield* store.finishedIngestions(dataset.id)
    const successes = finished.filter((i) => i.status === "success")
    const byDay = new Map<string, Set<string>>()
    for (const i of finished) {
      const day = i.initiatedAt.slice(0, 10)
      byDay.set(day, (byDay.get(day) ?? new Set()).add(i.status))
    }
    return {
      avgSuccessDuration: successes.length === 0
        ? null
        : successes.reduce((sum, i) => sum + (i.duration ?? 0), 0) / successes.length,
      dailyStatistics: [...byDay].sort(([a], [b]) => a.localeCompare(b)).map(([date, statuses]) => ({
        date,
        status: statuses.size > 1 ? "partial" : [...statuses][0]!
      })),
      lastSuccessfulIngestionAt: successes[0]?.initiatedAt ?? null,
      successRate: finished.length === 0 ? null : successes.length / finished.length
    }
  })

/**
 * One ingestion of a visible dataset; `NotFound` when either is unknown.
 *
 * @since 0.1.0
 * @category utils
 */
export const getIngestion = (principal: Principal, datasetId: DatasetRef, ingestionId: string) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, datasetId)
    const store = yield* Store
    const ingestion = yield* store.ingestion(ingestionId)
    if (Option.isNone(ingestion) || ingestion.value.datasetId !== dataset.id) {
      return yield* Effect.fail(new NotFound({ resource: "Ingestion", id: ingestionId }))
    }
    return { dataset, ingestion: ingestion.value }
  })

/**
 * Checks an ingestion's records against the dataset: the valid ones become rows, columns
 * the dataset lacks are added (their type inferred), the others are problems.
 *
 * @since 0.1.0
 * @category utils
 */
export const decideIngestion = (dataset: Dataset, records: ReadonlyArray<unknown>): IngestionDecision => {
  const { primaryKey } = dataset
  let schema: ReadonlyArray<Column> = dataset.schema
  const newColumns: Array<Column> = []
  const rows: Array<Row> = []
  const problems: Array<IngestionProblem> = []
  for (const record of records) {
    const check = checkRecord(record, { schema, primaryKey, addUnknownColumns: true })
    if (check._tag === "Invalid") {
      // A record nested too deep is not kept: showing or storing it walks every level.
      problems.push({ ...check.problem, record: check.problem.code === "nesting_too_deep" ? null : record })
      continue
    }
    if (check.newColumns.length > 0) {
      newColumns.push(...check.newColumns)
      schema = [...schema, ...check.newColumns]
    }
    rows.push(check.row)
  }
  return { newColumns, rows, problems }
}

/**
 * Processes claimed ingestions of one dataset in one store step. A defect while checking or
 * writing (one bad ingestion) is retried one ingestion at a time, and the one that fails again
 * ends `failed`: an accepted ingestion always reaches a terminal state, and one bad ingestion
 * does not fail the others.
 *
 * @since 0.1.0
 * @category utils
 */
export const processIngestions = (claims: ReadonlyArray<ClaimedIngestion>): Effect.Effect<void, StoreError, Store> =>
  Effect.flatMap(Store, (store) => {
    const complete = (batch: ReadonlyArray<ClaimedIngestion>) =>
      store.completeIngestions(batch, (dataset, claim) => decideIngestion(dataset, claim.records))
    return complete(claims).pipe(
      Effect.catchAllDefect((defect) =>
        claims.length > 1
          ? Effect.forEach(claims, (claim) => processIngestions([claim]), { discard: true })
          : Effect.zipRight(
            Effect.logError(`ingestion ${claims[0]?.ingestion.id} could not be processed`, Cause.die(defect)),
            Effect.forEach(claims, (claim) => store.failIngestion(claim, "the server failed while processing"), { discard: true })
          )
      ),
      Effect.asVoid
    )
  })

/**
 * @since 0.1.0
 * @category models
 */
export interface WorkerOptions {
  /** Worker fibers in this process. */
  readonly workers: number
  /** How long a claim lasts: after that, another worker (of any process) may take the ingestion. */
  readonly leaseMillis: number
}

/**
 * One server process's workers: at 1 for the memory store (one thread does the work either
 * way); a shared store gains from a few, each waiting on the database in turn (on different
 * datasets: a dataset's batches go one at a time).
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultWorkerOptions: WorkerOptions = { workers: 1, leaseMillis: 30_000 }

/**
 * Ingestions a worker takes at once (of one dataset): one store step for all of them. With
 * Postgres, one transaction per ingestion held the dataset's row lock 8 round trips per
 * ingestion; batches of up to 20 share them.
 */
const claimBatch = 20

const workerLoop = (owner: string, leaseMillis: number) =>
  Effect.flatMap(Store, (store) => {
    const step = Effect.flatMap(
      store.claimIngestions(owner, leaseMillis, claimBatch),
      (claims) => claims.length === 0 ? store.awaitIngestions : processIngestions(claims)
    )
    return step.pipe(
      // The store may be away for a while: nothing is lost (claims expire), so wait and go on.
      Effect.catchTag("StoreError", (error) =>
        Effect.zipRight(Effect.logWarning(`ingestion worker: ${error.message}; retrying in 1 s`), Effect.sleep("1 second"))),
      Effect.forever
    )
  })

/**
 * The worker fibers, for as long as the layer lives.
 *
 * @since 0.1.0
 * @category layers
 */
export const workersLayer = (options: WorkerOptions = defaultWorkerOptions): Layer.Layer<never, never, Store> =>
  Layer.scopedDiscard(
    Effect.gen(function*() {
      const process = `${hostname()}:${globalThis.process.pid}:${randomUUID().slice(0, 8)}`
      for (let i = 0; i < options.workers; i++) {
        yield* Effect.forkScoped(workerLoop(`${process}:${i}`, options.leaseMillis))
      }
    })
  )
