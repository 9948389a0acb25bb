/**
 * v2 dataset handlers: datasets, their rows and their ingestions.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../api/index.js"
import { CurrentPrincipal } from "../../api/security.js"
import { idempotent } from "../idempotency.js"
import { listPage, pageOf, sortedBy } from "../paging.js"
import { respond } from "../request.js"
import {
  checkSchema,
  createDataset,
  deleteDataset,
  duplicateDataset,
  listVisibleDatasets,
  purgeDataset,
  updateDataset,
  visibleDataset
} from "../services/datasets.js"
import { getIngestion, ingest, listIngestions } from "../services/ingestions.js"
import { Store, type Dataset, type Ingestion } from "../store/Store.js"
import { activeStatus } from "./dataSources.js"

/** Storage cap reported per dataset (1 GiB), as the service does. */
const maxDatasetBytes = 1024 * 1024 * 1024

const ingestionItem = (i: Ingestion) => ({
  id: i.id,
  status: i.status,
  initiatedAt: i.initiatedAt,
  initiatedBy: i.initiatedBy,
  duration: i.duration
})

/** Terminal ingestions carry a summary; pending ones do not yet. */
const ingestionDetail = (i: Ingestion) => ({
  ...ingestionItem(i),
  summary: i.datasetStats === null ? null : {
    ingestion: {
      receivedRecordCount: i.counts.received,
      appendedRecordCount: i.counts.appended,
      overwrittenRecordCount: i.counts.overwritten,
      rejectedRecordCount: i.counts.rejected
    },
    dataset: i.datasetStats
  },
  errors: i.status === "failed"
    ? [{ code: "ingestion_failed", field: null, message: i.failure, record: null }]
    : i.status === "purged"
    ? [{ code: "purged", field: null, message: "the dataset was purged before the ingestion was processed", record: null }]
    : i.problems.length > 0
    ? i.problems
    : null
})

const listItem = (d: Dataset) =>
  Effect.gen(function*() {
    const store = yield* Store
    const [latest] = yield* store.ingestionsOfDataset(d.id)
    return {
      id: d.id,
      name: d.name,
      dataSourceId: d.dataSourceId,
      createdAt: d.createdAt,
      lastActivityAt: latest?.initiatedAt ?? null,
      timezone: d.timezone,
      ingestionSupported: true,
      statusInfo: activeStatus,
      verificationInfo: { isVerified: d.verification.isVerified },
      ingestionInfo: latest === undefined ? null : { lastIngestionAt: latest.initiatedAt, lastStatus: latest.status }
    }
  })

const detail = (d: Dataset) =>
  Effect.gen(function*() {
    const store = yield* Store
    const item = yield* listItem(d)
    const stats = yield* store.datasetStats(d.id)
    const ingestions = yield* store.ingestionsOfDataset(d.id)
    const lastSuccess = ingestions.find((i) => i.status === "success")
    return {
      ...item,
      columnCount: d.schema.length,
      rowCount: stats.rowCount,
      size: stats.size,
      maxSize: maxDatasetBytes,
      syncInterval: d.syncInterval,
      managedBy: d.createdBy,
      ingestionInfo: ingestions[0] === undefined ? null : {
        initiatedAt: ingestions[0].initiatedAt,
        lastSuccessfulIngestionAt: lastSuccess?.initiatedAt ?? null,
        status: ingestions[0].status
      },
      verificationInfo: d.verification
    }
  })

export const respondDetail = (d: Dataset) => Effect.flatMap(detail(d), (data) => respond("success", { data }))

/** The schema as the service shows it: display name = id, order = position. */
export const schemaColumns = (d: Dataset) =>
  d.schema.map((column, order) => ({ id: column.id, displayName: column.id, dataType: column.dataType, order, visible: true }))

const statistics = (ingestions: ReadonlyArray<Ingestion>) => {
  const finished = ingestions.filter((i) => i.status === "success" || i.status === "failed")
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
}

/** @since 0.1.0 */
export const V2DatasetsLive = HttpApiBuilder.group(TributaryApi, "v2Datasets", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const visible = (yield* listVisibleDatasets(principal)).filter((d) =>
          urlParams.dataSourceId === undefined || d.dataSourceId === urlParams.dataSourceId
        )
        return yield* respond("success", { data: yield* listPage(visible, urlParams, listItem) })
      }))
    .handle("create", ({ headers, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const primaryKey = payload.primaryKey ?? []
        return yield* idempotent(
          headers["idempotency-key"],
          payload,
          checkSchema(payload.schema, primaryKey).pipe(
            Effect.zipRight(
              createDataset(principal, { dataSourceId: payload.dataSourceId, name: payload.name, primaryKey, schema: payload.schema })
            ),
            Effect.flatMap(respondDetail)
          )
        )
      }))
    .handle("get", ({ path }) => CurrentPrincipal.pipe(Effect.flatMap((p) => visibleDataset(p, path.id)), Effect.flatMap(respondDetail)))
    .handle("update", ({ path, payload }) =>
      CurrentPrincipal.pipe(Effect.flatMap((p) => updateDataset(p, path.id, { name: payload.name })), Effect.flatMap(respondDetail)))
    .handle("delete", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => deleteDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: { message: `Dataset ${d.id} and its data were deleted` } }))
      ))
    .handle("purge", ({ headers, path }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        return yield* idempotent(
          headers["idempotency-key"],
          null,
          purgeDataset(principal, path.id).pipe(
            Effect.flatMap((d) => respond("success", { data: { message: `All rows of dataset ${d.id} were removed` } }))
          )
        )
      }))
    .handle("duplicate", ({ headers, path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        return yield* idempotent(
          headers["idempotency-key"],
          payload,
          duplicateDataset(principal, path.id, payload.name).pipe(Effect.flatMap(respondDetail))
        )
      }))
    .handle("getSchema", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: { items: schemaColumns(d), primaryKey: d.primaryKey } }))
      ))
    .handle("getData", ({ path, urlParams }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const dataset = yield* visibleDataset(principal, path.id)
        const store = yield* Store
        const rows = yield* store.rows(dataset.id)
        const column = urlParams.sortBy
        const sorted = sortedBy(
          rows,
          column === undefined ? undefined : (row) => {
            const value = row[column]
            return typeof value === "string" || typeof value === "number" ? value : null
          },
          urlParams.sortOrder
        )
        const [latest] = yield* store.ingestionsOfDataset(dataset.id)
        return yield* respond("success", {
          data: {
            ...pageOf(sorted, urlParams, { defaultSize: 200, max: 1000 }),
            schema: schemaColumns(dataset),
            lastUpdatedAt: latest?.initiatedAt ?? null
          }
        })
      }))
    .handle("ingest", ({ headers, path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        return yield* idempotent(
          headers["idempotency-key"],
          payload,
          ingest(principal, path.id, payload.records).pipe(
            Effect.flatMap((ingestion) =>
              respond("success", {
                data: {
                  ingestionId: ingestion.id,
                  status: ingestion.status,
                  message: `Data ingestion request accepted: ${ingestion.counts.received} records`
                }
              })
            )
          )
        )
      }))
    .handle("listIngestions", ({ path, urlParams }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => listIngestions(p, path.id)),
        Effect.flatMap((ingestions) => respond("success", { data: pageOf(ingestions.map(ingestionItem), urlParams) }))
      ))
    .handle("getIngestion", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => getIngestion(p, path.id, path.ingestionId)),
        Effect.flatMap((i) => respond("success", { data: ingestionDetail(i) }))
      ))
    .handle("ingestionStatistics", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => listIngestions(p, path.id)),
        Effect.flatMap((ingestions) => respond("success", { data: statistics(ingestions) }))
      )))
