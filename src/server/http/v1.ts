/**
 * v1 handlers: decode -> service -> v1 shape. No logic of their own.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../api/index.js"
import { timezones } from "../core/timezones.js"
import * as Ingest from "./ingest.js"
import { byId, change, datasetByNumber, serve } from "./handler.js"
import { respond } from "./envelope.js"
import { listAccounts } from "../core/catalog/accounts.js"
import { createDataSource, deleteDataSource, listDataSourcesOfAccount } from "../core/catalog/dataSources.js"
import {
  createDataset,
  deleteDataset,
  listDatasetsOfAccount,
  listDatasetsOfDataSource,
  purgeDataset,
  visibleDataset
} from "../core/catalog/datasets.js"
import { getIngestion, listIngestions } from "../core/ingestion.js"
import { type DataSource, type Dataset, type DatasetStats, type Ingestion, statsOf } from "../core/store/Store.js"

const dataSourceV1 = (d: DataSource) => ({
  id: d.id,
  title: d.name,
  created: d.createdAt,
  timezone: d.timezone,
  key: d.key,
  ingestionSupported: true
})

const datasetV1 = (d: Dataset) => ({
  id: d.id,
  title: d.name,
  created: d.createdAt,
  dataSourceId: d.dataSourceId,
  primaryKeys: d.primaryKey
})

/** `failed` is v1's `error`; queued and processing are both `processing`. */
const statusV1 = (ingestion: Ingestion) =>
  ingestion.status === "success" ? "success" as const : ingestion.status === "queued" || ingestion.status === "processing"
  ? "processing" as const
  : "error" as const

const bytesPerMegabyte = 1024 * 1024

const ingestionDetailV1 = (ingestion: Ingestion, current: DatasetStats) => {
  const stats = ingestion.datasetStats ?? current
  const status = statusV1(ingestion)
  const failure = ingestion.status === "purged"
    ? "the dataset was purged before the ingestion was processed"
    : ingestion.failure
  return {
    ingestionId: ingestion.id,
    timestamp: ingestion.initiatedAt,
    metrics: {
      datasetMetrics: {
        columnsCount: stats.columnCount,
        datasetSizeMB: stats.size / bytesPerMegabyte,
        totalDatasetRecordsCount: stats.rowCount
      },
      ingestionMetrics: {
        receivedRecordsCount: ingestion.counts.received,
        appendedRecordsCount: ingestion.counts.appended,
        rejectedRecordsCount: ingestion.counts.rejected,
        overwrittenRecordsCount: ingestion.counts.overwritten
      }
    },
    ...(status === "error"
      ? { errors: [{ code: "ingestion_failed", message: failure ?? "the ingestion failed", field: null, type: "ingestion" }] }
      : ingestion.problems.length > 0
      ? { errors: ingestion.problems.map((p) => ({ code: p.code, message: p.message, field: p.field, type: "validation" })) }
      : {}),
    status
  }
}

/**
 * @since 0.1.0
 * @category layers
 */
export const V1AuthLive = HttpApiBuilder.group(TributaryApi, "v1Auth", (handlers) =>
  handlers.handle("validateKey", () => respond("success", { message: "The API key is valid" })))

/**
 * @since 0.1.0
 * @category layers
 */
export const V1AccountsLive = HttpApiBuilder.group(TributaryApi, "v1Accounts", (handlers) =>
  handlers
    .handle("listAccounts", () =>
      serve(listAccounts, (accounts) =>
          respond("success", {
            accounts: accounts.map((a) => ({ id: a.id, name: a.name, accountType: a.accountType }))
          })
        ))
    .handle("listTimezones", () => respond("success", { timezones: timezones() }))
    .handle("listDataSources", ({ path }) =>
      serve(
        (principal) => listDataSourcesOfAccount(principal, path.accountId),
        (dataSources) => respond("success", { dataSources: dataSources.map(dataSourceV1) })
      ))
    .handle("listDatasets", ({ path }) =>
      serve(
        (principal) => listDatasetsOfAccount(principal, path.accountId),
        (datasets) => respond("success", { datasets: datasets.map(datasetV1) })
      )))

/**
 * @since 0.1.0
 * @category layers
 */
export const V1DataSourcesLive = HttpApiBuilder.group(TributaryApi, "v1DataSources", (handlers) =>
  handlers
    .handle("createDataSource", ({ payload }) =>
      change((principal) =>
          createDataSource(principal, { accountId: payload.accountId, name: payload.title, timezone: payload.timezone }),
        byId("dataSource"),
        (d) =>
          respond("processing", { id: d.id, title: d.name, created: d.createdAt, timezone: d.timezone, key: d.key })
        ))
    .handle("deleteDataSource", ({ path }) =>
      change(
        (principal) => deleteDataSource(principal, path.dataSourceId),
        byId("dataSource"),
        (d) => respond("success", { message: `Data source ${d.id} and all its datasets were deleted` })
      ))
    .handle("listDatasets", ({ path }) =>
      serve(
        (principal) => listDatasetsOfDataSource(principal, path.dataSourceId),
        (datasets) => respond("success", { datasets: datasets.map(datasetV1) })
      )))

/** v1 ingestion lists: pages from 1, 100 ingestions by default. */
const v1IngestionPages = { defaultSize: 100, max: Number.MAX_SAFE_INTEGER, first: 1 }

/**
 * @since 0.1.0
 * @category layers
 */
export const V1DatasetsLive = HttpApiBuilder.group(TributaryApi, "v1Datasets", (handlers) =>
  handlers
    .handle("createDataset", ({ payload }) =>
      change((principal) =>
          createDataset(principal, {
            dataSourceId: payload.dataSourceId,
            name: payload.title ?? "",
            primaryKey: payload.primaryKeys ?? [],
            schema: [],
            primaryKeyField: "primaryKeys"
          }),
        datasetByNumber,
        (d) => respond("success", { id: d.id, title: d.name, created: d.createdAt })))
    .handle("getDataset", ({ path }) =>
      serve((principal) => visibleDataset(principal, path.datasetId), (d) => respond("success", datasetV1(d))))
    .handle("deleteDataset", ({ path }) =>
      change(
        (principal) => deleteDataset(principal, path.datasetId),
        datasetByNumber,
        (d) => respond("success", { message: `Dataset ${d.id} and its data were deleted` })
      ))
    .handle("purgeDataset", ({ path }) =>
      change(
        (principal) => purgeDataset(principal, path.datasetId),
        datasetByNumber,
        (d) => respond("success", { message: `All rows of dataset ${d.id} were removed` })
      ))
    // Idempotency-Key is a v2 feature; v1 accepts it too, as an extension.
    .handle("ingest", ({ headers, path, payload }) =>
      Ingest.handle("v1", { datasetId: path.datasetId, payload, idempotencyKey: headers["idempotency-key"] }))
    .handle("listIngestions", ({ path, urlParams }) =>
      serve((principal) => listIngestions(principal, path.datasetId, urlParams, v1IngestionPages), ({ found, page, pageSize }) =>
          respond("success", {
            ingestions: found.items.map((i) => ({ ingestionId: i.id, timestamp: i.initiatedAt, status: statusV1(i) })),
            pagination: { page, pageSize, totalItems: found.totalItems }
          })
        ))
    .handle("getIngestion", ({ path }) =>
      serve((principal) => getIngestion(principal, path.datasetId, path.ingestionId), ({ dataset, ingestion }) => {
          const { status, ...detail } = ingestionDetailV1(ingestion, statsOf(dataset))
          return respond(status, detail)
        })))
