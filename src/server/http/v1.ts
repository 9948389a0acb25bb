/**
 * v1 handlers: decode -> service -> v1 shape. No logic of their own.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../api/index.js"
import { CurrentPrincipal } from "../../api/security.js"
import { timezones } from "../core/timezones.js"
import { present } from "./wireErrors.js"
import * as Ingest from "./ingest.js"
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

/** @since 0.1.0 */
export const V1AuthLive = HttpApiBuilder.group(TributaryApi, "v1Auth", (handlers) =>
  handlers.handle("validateKey", () => respond("success", { message: "The API key is valid" })))

/** @since 0.1.0 */
export const V1AccountsLive = HttpApiBuilder.group(TributaryApi, "v1Accounts", (handlers) =>
  handlers
    .handle("listAccounts", () =>
      CurrentPrincipal.pipe(
        Effect.flatMap(listAccounts),
        Effect.flatMap((accounts) =>
          respond("success", {
            accounts: accounts.map((a) => ({ id: a.id, name: a.name, accountType: a.accountType }))
          })
        ),
        present
      ))
    .handle("listTimezones", () => respond("success", { timezones: timezones() }))
    .handle("listDataSources", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => listDataSourcesOfAccount(principal, path.accountId)),
        Effect.flatMap((dataSources) => respond("success", { dataSources: dataSources.map(dataSourceV1) })),
        present
      ))
    .handle("listDatasets", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => listDatasetsOfAccount(principal, path.accountId)),
        Effect.flatMap((datasets) => respond("success", { datasets: datasets.map(datasetV1) })),
        present
      )))

/** @since 0.1.0 */
export const V1DataSourcesLive = HttpApiBuilder.group(TributaryApi, "v1DataSources", (handlers) =>
  handlers
    .handle("createDataSource", ({ payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) =>
          createDataSource(principal, { accountId: payload.accountId, name: payload.title, timezone: payload.timezone })
        ),
        Effect.flatMap((d) =>
          respond("processing", { id: d.id, title: d.name, created: d.createdAt, timezone: d.timezone, key: d.key })
        ),
        present
      ))
    .handle("deleteDataSource", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => deleteDataSource(principal, path.dataSourceId)),
        Effect.flatMap((d) => respond("success", { message: `Data source ${d.id} and all its datasets were deleted` })),
        present
      ))
    .handle("listDatasets", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => listDatasetsOfDataSource(principal, path.dataSourceId)),
        Effect.flatMap((datasets) => respond("success", { datasets: datasets.map(datasetV1) })),
        present
      )))

/** v1 ingestion lists: pages from 1, 100 ingestions by default. */
const v1IngestionPages = { defaultSize: 100, max: Number.MAX_SAFE_INTEGER, first: 1 }

/** @since 0.1.0 */
export const V1DatasetsLive = HttpApiBuilder.group(TributaryApi, "v1Datasets", (handlers) =>
  handlers
    .handle("createDataset", ({ payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) =>
          createDataset(principal, {
            dataSourceId: payload.dataSourceId,
            name: payload.title ?? "",
            primaryKey: payload.primaryKeys ?? [],
            schema: [],
            primaryKeyField: "primaryKeys"
          })
        ),
        Effect.flatMap((d) => respond("success", { id: d.id, title: d.name, created: d.createdAt })),
        present
      ))
    .handle("getDataset", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => visibleDataset(principal, path.datasetId)),
        Effect.flatMap((d) => respond("success", datasetV1(d))),
        present
      ))
    .handle("deleteDataset", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => deleteDataset(principal, path.datasetId)),
        Effect.flatMap((d) => respond("success", { message: `Dataset ${d.id} and its data were deleted` })),
        present
      ))
    .handle("purgeDataset", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => purgeDataset(principal, path.datasetId)),
        Effect.flatMap((d) => respond("success", { message: `All rows of dataset ${d.id} were removed` })),
        present
      ))
    // Idempotency-Key is a v2 feature; v1 accepts it too, as an extension.
    .handle("ingest", ({ headers, path, payload }) =>
      Ingest.handle("v1", { datasetId: path.datasetId, payload, idempotencyKey: headers["idempotency-key"] }))
    .handle("listIngestions", ({ path, urlParams }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => listIngestions(principal, path.datasetId, urlParams, v1IngestionPages)),
        Effect.flatMap(({ found, page, pageSize }) =>
          respond("success", {
            ingestions: found.items.map((i) => ({ ingestionId: i.id, timestamp: i.initiatedAt, status: statusV1(i) })),
            pagination: { page, pageSize, totalItems: found.totalItems }
          })
        ),
        present
      ))
    .handle("getIngestion", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => getIngestion(principal, path.datasetId, path.ingestionId)),
        Effect.flatMap(({ dataset, ingestion }) => {
          const { status, ...detail } = ingestionDetailV1(ingestion, statsOf(dataset))
          return respond(status, detail)
        }),
        present
      )))
