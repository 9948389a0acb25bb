/**
 * Ingestion: accept at once, process in a worker fiber, report the outcome.
 *
 * A POST only records the ingestion (`queued`) and hands its id to the worker; the
 * worker checks each record against the dataset schema, writes the valid ones
 * (primary-key upsert) and stores the counts and the per-record problems.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option, Queue } from "effect"
import type { Principal } from "../../api/security.js"
import { checkRecord, type Column, type Row } from "../../records.js"
import { requireRole } from "../auth.js"
import { notFound } from "../request.js"
import { Store, type IngestionProblem } from "../store/Store.js"
import { visibleDataset } from "./datasets.js"

/**
 * The queue of ingestion ids waiting for the worker.
 *
 * @since 0.1.0
 * @category tags
 */
export class IngestionQueue extends Context.Tag("tributary/server/IngestionQueue")<
  IngestionQueue,
  Queue.Queue<string>
>() {}

/**
 * Accepts records for a dataset: the ingestion is recorded as `queued` and processed later.
 *
 * @since 0.1.0
 */
export const ingest = (principal: Principal, datasetId: string, records: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, datasetId)
    yield* requireRole(principal, "editor", "ingest data")
    const store = yield* Store
    const queue = yield* IngestionQueue
    const ingestion = yield* store.createIngestion(
      { datasetId: dataset.id, initiatedBy: { id: principal.userId, name: principal.userName } },
      records
    )
    yield* Queue.offer(queue, ingestion.id)
    return ingestion
  })

/**
 * The ingestions of a visible dataset, newest first.
 *
 * @since 0.1.0
 */
export const listIngestions = (principal: Principal, datasetId: string) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, datasetId)
    const store = yield* Store
    return yield* store.ingestionsOfDataset(dataset.id)
  })

/**
 * One ingestion of a visible dataset; 404 when either is unknown.
 *
 * @since 0.1.0
 */
export const getIngestion = (principal: Principal, datasetId: string, ingestionId: string) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, datasetId)
    const store = yield* Store
    const ingestion = yield* store.ingestion(ingestionId)
    if (Option.isNone(ingestion) || ingestion.value.datasetId !== dataset.id) {
      return yield* notFound("Ingestion", ingestionId)
    }
    return ingestion.value
  })

/**
 * Processes one queued ingestion. An ingestion whose records are gone (purged) or whose
 * dataset was deleted meanwhile is left as it is or marked `failed`.
 *
 * @since 0.1.0
 */
export const processIngestion = (ingestionId: string) =>
  Effect.gen(function*() {
    const store = yield* Store
    const records = yield* store.takePendingRecords(ingestionId)
    if (Option.isNone(records)) return
    const ingestion = yield* store.ingestion(ingestionId)
    if (Option.isNone(ingestion)) return
    const started = Date.parse(ingestion.value.initiatedAt)
    const dataset = yield* store.dataset(ingestion.value.datasetId)
    if (Option.isNone(dataset)) {
      return yield* store.updateIngestion(ingestionId, {
        status: "failed",
        failure: "the dataset was deleted before the ingestion was processed",
        duration: Date.now() - started
      })
    }
    yield* store.updateIngestion(ingestionId, { status: "processing" })

    const { primaryKey } = dataset.value
    let schema: ReadonlyArray<Column> = dataset.value.schema
    const newColumns: Array<Column> = []
    const rows: Array<Row> = []
    const problems: Array<IngestionProblem> = []
    for (const record of records.value) {
      const check = checkRecord(record, { schema, primaryKey, addUnknownColumns: true })
      if (check._tag === "Invalid") {
        problems.push({ ...check.problem, record })
        continue
      }
      if (check.newColumns.length > 0) {
        newColumns.push(...check.newColumns)
        schema = [...schema, ...check.newColumns]
      }
      rows.push(check.row)
    }
    const applied = yield* store.applyRows(dataset.value.id, newColumns, rows)
    yield* store.updateIngestion(ingestionId, {
      status: "success",
      duration: Date.now() - started,
      counts: {
        received: records.value.length,
        appended: applied.appended,
        overwritten: applied.overwritten,
        rejected: problems.length
      },
      datasetStats: applied.stats,
      problems
    })
  })

/**
 * The queue and the worker fiber that drains it, for as long as the layer lives.
 *
 * @since 0.1.0
 * @category layers
 */
export const IngestionWorkerLive: Layer.Layer<IngestionQueue, never, Store> = Layer.scoped(
  IngestionQueue,
  Effect.gen(function*() {
    const queue = yield* Effect.acquireRelease(Queue.unbounded<string>(), Queue.shutdown)
    yield* Queue.take(queue).pipe(
      Effect.flatMap((id) =>
        processIngestion(id).pipe(
          Effect.catchAllCause((cause) =>
            Effect.zipRight(
              Effect.logError(`ingestion ${id} could not be processed`, cause),
              Effect.flatMap(Store, (store) =>
                store.updateIngestion(id, { status: "failed", failure: "the server failed while processing" }))
            )
          )
        )
      ),
      Effect.forever,
      Effect.forkScoped
    )
    return queue
  })
)
