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
import { Cause, Context, Effect, Layer, Option, Tracer } from "effect"
import type { Principal } from "../../api/security.js"
import { checkRecord, type Column, type Row } from "../../records.js"
import { NotFound } from "./errors.js"
import { type PageLimits, sliceOf, type PageRequest } from "./paging.js"
import {
  type ClaimedIngestion,
  type Dataset,
  type DatasetRef,
  type DecidedGroup,
  type IngestionDecision,
  type IngestionProblem
} from "./store/Store.js"
import { type Stores } from "./store/Stores.js"
import { IngestionStore } from "./store/ports/ingestions.js"
import { SourceStore } from "./store/ports/sources.js"
import type { StoreError } from "./errors.js"
import { editableDataset, visibleDataset } from "./catalog/datasets.js"

/**
 * Accepts records for a dataset: the ingestion is recorded as `queued` and processed later,
 * with the `traceparent` of the request when it was traced.
 *
 * @since 0.1.0
 * @category utils
 */
export const ingest = (
  principal: Principal,
  datasetId: DatasetRef,
  records: ReadonlyArray<unknown>,
  traceparent?: string | undefined
) =>
  // Steps chained, not a generator: this runs once per ingest request.
  Effect.flatMap(editableDataset(principal, datasetId, "ingest data"), (dataset) =>
    Effect.flatMap(IngestionStore, (store) =>
      store.createIngestion(
        { datasetId: dataset.id, initiatedBy: { id: principal.userId, name: principal.userName }, traceparent },
        records
      )))

/**
 * A page of the ingestions of a visible dataset, newest first.
 *
 * @since 0.1.0
 * @category utils
 */
export const listIngestions = (principal: Principal, datasetId: DatasetRef, params: PageRequest, limits?: PageLimits) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, datasetId)
    const store = yield* IngestionStore
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
    const store = yield* IngestionStore
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
    const store = yield* IngestionStore
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
export const decideIngestion = (dataset: Pick<Dataset, "schema" | "primaryKey">, records: ReadonlyArray<unknown>): IngestionDecision => {
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
 * Decides claimed ingestions of one dataset in order, each against the schema the ones before
 * it left, the first against `schema` (the dataset's as read): what the store is handed to
 * persist, with that schema.
 *
 * @since 0.1.0
 * @category utils
 */
export const decideGroup = (
  dataset: Pick<Dataset, "schema" | "primaryKey">,
  claims: ReadonlyArray<ClaimedIngestion>
): DecidedGroup => {
  let current = dataset
  const decided = claims.map((claim) => {
    const decision = decideIngestion(current, claim.records)
    if (decision.newColumns.length > 0) current = { ...current, schema: [...current.schema, ...decision.newColumns] }
    return { claim, decision }
  })
  return { schema: dataset.schema, decided }
}

/**
 * The span context of a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), to link to.
 */
const spanOf = (traceparent: string): Option.Option<Tracer.ExternalSpan> => {
  const [version, traceId, spanId, flags] = traceparent.split("-")
  if (version !== "00" || traceId?.length !== 32 || spanId?.length !== 16 || flags === undefined) return Option.none()
  return Option.some(Tracer.externalSpan({ traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 }))
}

/**
 * A span's `traceparent`, as stored with the ingestion its request carried.
 *
 * @since 0.1.0
 * @category utils
 */
export const traceparentOf = (span: Tracer.AnySpan): string =>
  `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

/**
 * Links from a processing span to the traces of the requests that carried its ingestions.
 */
const linksOf = (claims: ReadonlyArray<ClaimedIngestion>): Array<Tracer.SpanLink> =>
  claims.flatMap((claim) =>
    claim.traceparent === null ? [] : Option.match(spanOf(claim.traceparent), {
      onNone: () => [],
      onSome: (span) => [{ _tag: "SpanLink" as const, span, attributes: { "tributary.ingestion_id": claim.ingestion.id } }]
    })
  )

/**
 * The ingestion service: it decides what is stored of claimed ingestions, and the store
 * persists that.
 *
 * @since 0.1.0
 * @category models
 */
export interface IngestionService {
  /**
   * Processes claimed ingestions of one dataset: reads the dataset, decides them in order
   * ({@link decideGroup}) and hands the store the decisions, which it persists only if the
   * dataset's schema is still the one they were decided against (else they go back to the
   * queue, to be decided again). A defect while deciding or writing (one bad ingestion) is
   * retried one ingestion at a time, and the one that fails again ends `failed`: an accepted
   * ingestion always reaches a terminal state, and one bad ingestion does not fail the others.
   * In a span `ingestion.process` linked to the traces of the requests that carried them (a
   * link, not a child: those requests have ended, and one span serves several).
   */
  readonly process: (claims: ReadonlyArray<ClaimedIngestion>) => Effect.Effect<void, StoreError>
}

/**
 * @since 0.1.0
 * @category services
 */
export class Ingestions extends Context.Tag("tributary/server/Ingestions")<Ingestions, IngestionService>() {}

/**
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<IngestionService, never, IngestionStore | SourceStore> = Effect.map(
  Effect.all([IngestionStore, SourceStore]),
  ([store, sources]) => {
  const complete = (claims: ReadonlyArray<ClaimedIngestion>) =>
    Effect.flatMap(sources.dataset(claims[0]!.ingestion.datasetId), (dataset) =>
      Option.match(dataset, {
        // Gone with its ingestions: nothing left to end.
        onNone: () => Effect.void,
        onSome: (dataset) => Effect.suspend(() => store.completeIngestions(decideGroup(dataset, claims)))
      }))
  const process = (claims: ReadonlyArray<ClaimedIngestion>): Effect.Effect<void, StoreError> =>
    claims.length === 0 ? Effect.void : complete(claims).pipe(
      Effect.catchAllDefect((defect) =>
        claims.length > 1
          ? Effect.forEach(claims, (claim) => process([claim]), { discard: true })
          : Effect.zipRight(
            Effect.logError(`ingestion ${claims[0]?.ingestion.id} could not be processed`, Cause.die(defect)),
            Effect.forEach(claims, (claim) => store.failIngestion(claim, "the server failed while processing"), { discard: true })
          )
      ),
      Effect.asVoid
    )
  return {
    process: (claims) =>
      Effect.withSpan(process(claims), "ingestion.process", {
        root: true,
        links: linksOf(claims),
        attributes: {
          "tributary.dataset_id": claims[0]?.ingestion.datasetId ?? "",
          "tributary.ingestion_ids": claims.map((claim) => claim.ingestion.id).join(",")
        }
      })
  }
})

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Ingestions, never, Stores> = Layer.effect(Ingestions, make)

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
 * ingestion; batches share them. Up to 20, the Postgres workers fell behind a 16-connection
 * load once requests were accepted faster (0.9 s to drain after 8 s, bench:server-ingest);
 * up to 50, 0.1 s, and 63k instead of 58k records/s stored. The memory store's claims are
 * smaller anyway (about 13 under that load: what arrived since the last one).
 */
const claimBatch = 50

const workerLoop = (owner: string, leaseMillis: number) =>
  Effect.flatMap(Effect.all([IngestionStore, Ingestions]), ([store, ingestions]) => {
    const step = Effect.flatMap(
      store.claimIngestions(owner, leaseMillis, claimBatch),
      (claims) => claims.length === 0 ? store.awaitIngestions : ingestions.process(claims)
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
export const workersLayer = (options: WorkerOptions = defaultWorkerOptions): Layer.Layer<never, never, Stores> =>
  Layer.scopedDiscard(
    Effect.gen(function*() {
      const process = `${hostname()}:${globalThis.process.pid}:${randomUUID().slice(0, 8)}`
      for (let i = 0; i < options.workers; i++) {
        yield* Effect.forkScoped(workerLoop(`${process}:${i}`, options.leaseMillis))
      }
    })
  ).pipe(Layer.provide(layer))
