/**
 * v2 dataset handlers: datasets, their rows and their ingestions. Decode, call one service,
 * present.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import * as Ingest from "../ingest.js"
import { pageView } from "../paging.js"
import { change, changeOnce, datasetByNumber, serve } from "../handler.js"
import { respond } from "../envelope.js"
import {
  createDataset,
  deleteDataset,
  duplicateDataset,
  listDatasets,
  purgeDataset,
  updateDataset,
  visibleDataset
} from "../../core/catalog/datasets.js"
import { getIngestion, ingestionStatistics, listIngestions } from "../../core/ingestion.js"
import type { ViewColumn } from "../../features/modifications/modifications.js"
import { datasetRows, planOf } from "../../features/modifications/rows.js"
import type { Dataset, Ingestion } from "../../core/store/Store.js"
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

/**
 * An ingestion as `GET /v2/datasets/:id/ingestions/:ingestionId` shows it: terminal ones carry
 * a summary; pending ones do not yet.
 *
 * @since 0.3.0
 * @category utils
 */
export const ingestionDetail = (i: Ingestion) => ({
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

const listItem = (d: Dataset) => ({
  id: d.number,
  name: d.name,
  dataSourceId: d.dataSourceId,
  createdAt: d.createdAt,
  lastActivityAt: d.activity?.lastIngestionAt ?? null,
  timezone: d.timezone,
  ingestionSupported: true,
  statusInfo: activeStatus,
  syncInfo: null,
  verificationInfo: { isVerified: d.verification.isVerified },
  ingestionInfo: d.activity === null ? null : { lastIngestionAt: d.activity.lastIngestionAt, lastStatus: d.activity.lastStatus }
})

const detail = (d: Dataset) => ({
  ...listItem(d),
  uuid: d.id,
  columnCount: d.schema.length,
  rowCount: d.rowCount,
  size: d.size,
  maxSize: maxDatasetBytes,
  syncInterval: d.syncInterval,
  managedBy: d.createdBy,
  ingestionInfo: d.activity === null ? null : {
    initiatedAt: d.activity.lastIngestionAt,
    lastSuccessfulIngestionAt: d.activity.lastSuccessAt,
    status: d.activity.lastStatus
  },
  verificationInfo: d.verification
})

/**
 * @since 0.1.0
 * @category utils
 */
export const respondDetail = (d: Dataset) => respond("success", { data: detail(d) })

/**
 * The schema view as the service shows it: stored and calculated columns with their display
 * names, types after any data type change, display order and visibility.
 *
 * @since 0.1.0
 * @category utils
 */
export const schemaColumns = (columns: ReadonlyArray<ViewColumn>) =>
  columns.map(({ dataType, displayName, id, order, visible }) => ({ id, displayName, dataType, order, visible }))

/**
 * @since 0.1.0
 * @category layers
 */
export const V2DatasetsLive = HttpApiBuilder.group(TributaryApi, "v2Datasets", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      serve(
        (p) => listDatasets(p, urlParams),
        ({ found, ...page }) => respond("success", { data: pageView(found, page, listItem) })
      ))
    .handle("create", ({ headers, payload }) =>
      changeOnce(
        { key: headers["idempotency-key"], body: payload },
        (p) =>
          createDataset(p, {
            dataSourceId: payload.dataSourceId,
            name: payload.name,
            primaryKey: payload.primaryKey ?? [],
            schema: payload.schema,
            primaryKeyField: "primaryKey"
          }),
        datasetByNumber,
        respondDetail
      ))
    .handle("get", ({ path }) =>
      serve((p) => visibleDataset(p, path.id), respondDetail))
    .handle("update", ({ path, payload }) =>
      change((p) => updateDataset(p, path.id, { name: payload.name }), datasetByNumber, respondDetail))
    .handle("delete", ({ path }) =>
      change(
        (p) => deleteDataset(p, path.id),
        datasetByNumber,
        (d) => respond("success", { data: { message: `Dataset ${d.number} and its data were deleted` } })
      ))
    .handle("purge", ({ headers, path }) =>
      changeOnce(
        { key: headers["idempotency-key"], body: null },
        (p) => purgeDataset(p, path.id),
        datasetByNumber,
        (d) => respond("success", { data: { message: `All rows of dataset ${d.number} were removed` } })
      ))
    .handle("duplicate", ({ headers, path, payload }) =>
      changeOnce({ key: headers["idempotency-key"], body: payload }, (p) => duplicateDataset(p, path.id, payload.name), datasetByNumber, respondDetail))
    .handle("getSchema", ({ path }) =>
      serve((p) => visibleDataset(p, path.id), (d) =>
          respond("success", { data: { items: schemaColumns(planOf(d).columns), primaryKey: d.primaryKey } })
        ))
    .handle("getData", ({ path, urlParams }) =>
      serve((p) => datasetRows(p, path.id, urlParams), ({ dataset, found, plan, ...page }) =>
          respond("success", {
            data: {
              ...pageView(found, page, (row) => row),
              // The columns the rows carry: hidden ones are left out of both.
              schema: schemaColumns(plan.visibleColumns),
              lastUpdatedAt: dataset.activity?.lastIngestionAt ?? null
            }
          })
        ))
    .handle("ingest", ({ headers, path, payload }) =>
      Ingest.handle("v2", { datasetId: path.id, payload, idempotencyKey: headers["idempotency-key"] }))
    .handle("listIngestions", ({ path, urlParams }) =>
      serve(
        (p) => listIngestions(p, path.id, urlParams),
        ({ found, ...page }) => respond("success", { data: pageView(found, page, ingestionItem) })
      ))
    .handle("getIngestion", ({ path }) =>
      serve(
        (p) => getIngestion(p, path.id, path.ingestionId),
        ({ ingestion }) => respond("success", { data: ingestionDetail(ingestion) })
      ))
    .handle("ingestionStatistics", ({ path }) =>
      serve((p) => ingestionStatistics(p, path.id), (data) => respond("success", { data }))))
