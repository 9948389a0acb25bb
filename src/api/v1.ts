/**
 * The v1 API: 13 operations under `/v1`.
 *
 * Resources sit at the top level of the answer beside `requestId` and `status`.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import {
  IdempotencyHeaders,
  IngestRecord,
  PlainText,
  IntegerId,
  MaxRecordsPerIngestion,
  RequestId,
  Timestamp,
  TimezoneEntry,
  UuidAnyCase
} from "./common.js"
import { Forbidden, Unprocessable, withCommonErrors } from "./errors.js"
import { ApiKeyAuth } from "./security.js"

const Success = Schema.Literal("success")

/**
 * @since 0.1.0
 * @category models
 */
export const ValidateKeyResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  message: Schema.optional(Schema.String)
}).annotations({ identifier: "V1ValidateKeyResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const AccountType = Schema.Literal("organization", "agency", "client")

/**
 * @since 0.1.0
 * @category models
 */
export const Account = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  accountType: AccountType
}).annotations({ identifier: "V1Account" })

/**
 * @since 0.1.0
 * @category models
 */
export const AccountsResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  accounts: Schema.Array(Account)
}).annotations({ identifier: "V1AccountsResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const DataSource = Schema.Struct({
  id: Schema.Int,
  title: Schema.String,
  created: Timestamp,
  timezone: Schema.String,
  key: Schema.String,
  ingestionSupported: Schema.Boolean
}).annotations({ identifier: "V1DataSource" })

/**
 * @since 0.1.0
 * @category models
 */
export const DataSourcesResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  dataSources: Schema.Array(DataSource)
}).annotations({ identifier: "V1DataSourcesResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const TimezonesResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  timezones: Schema.Array(TimezoneEntry)
}).annotations({ identifier: "V1TimezonesResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const CreateDataSourceRequest = Schema.Struct({
  accountId: Schema.optional(Schema.Int),
  title: PlainText,
  timezone: Schema.optional(Schema.String)
}).annotations({ identifier: "V1CreateDataSourceRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const CreateDataSourceResponse = Schema.Struct({
  requestId: RequestId,
  status: Schema.Literal("processing"),
  id: Schema.Int,
  title: Schema.String,
  created: Timestamp,
  timezone: Schema.String,
  key: Schema.String
}).annotations({ identifier: "V1CreateDataSourceResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const MessageResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  message: Schema.String
}).annotations({ identifier: "V1MessageResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const Dataset = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  created: Timestamp,
  dataSourceId: Schema.Int,
  primaryKeys: Schema.Array(Schema.String)
}).annotations({ identifier: "V1Dataset" })

/**
 * `GET /v1/datasets/{datasetId}`: one dataset, flat beside the status as v1 answers are.
 *
 * @since 0.1.0
 * @category models
 */
export const DatasetResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  ...Dataset.fields
}).annotations({ identifier: "V1DatasetResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const DatasetsResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  datasets: Schema.Array(Dataset)
}).annotations({ identifier: "V1DatasetsResponse" })

/**
 * The spec marks every field optional; the server still needs `dataSourceId`, since a
 * dataset cannot exist outside a data source.
 *
 * @since 0.1.0
 * @category models
 */
export const CreateDatasetRequest = Schema.Struct({
  title: Schema.optional(PlainText),
  dataSourceId: Schema.optional(Schema.Int),
  primaryKeys: Schema.optional(Schema.Array(Schema.String))
}).annotations({ identifier: "V1CreateDatasetRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const CreateDatasetResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  id: Schema.String,
  title: Schema.String,
  created: Timestamp
}).annotations({ identifier: "V1CreateDatasetResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestRequest = Schema.Struct({
  records: Schema.Array(IngestRecord).pipe(
    Schema.minItems(1, { message: () => "at least 1 record is required" }),
    Schema.maxItems(MaxRecordsPerIngestion, {
      message: () => `at most ${MaxRecordsPerIngestion} records per ingestion`
    })
  )
}).annotations({ identifier: "V1IngestRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  ingestionId: Schema.String,
  message: Schema.String
}).annotations({ identifier: "V1IngestResponse" })

/**
 * `processing` until the ingestion ends, then `success`, or `error` when nothing could be
 * stored (the answer is still 200, with `errors` saying why).
 *
 * @since 0.1.0
 * @category models
 */
export const IngestionStatus = Schema.Literal("processing", "success", "error")

/**
 * @since 0.1.0
 * @category models
 */
export const IngestionListItem = Schema.Struct({
  ingestionId: Schema.String,
  timestamp: Timestamp,
  status: IngestionStatus
}).annotations({ identifier: "V1IngestionListItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const Pagination = Schema.Struct({
  page: Schema.Int,
  pageSize: Schema.Int,
  totalItems: Schema.Int
}).annotations({ identifier: "V1Pagination" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestionsResponse = Schema.Struct({
  requestId: RequestId,
  status: Success,
  ingestions: Schema.Array(IngestionListItem),
  pagination: Pagination
}).annotations({ identifier: "V1IngestionsResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const DatasetMetrics = Schema.Struct({
  columnsCount: Schema.Int,
  datasetSizeMB: Schema.Number,
  totalDatasetRecordsCount: Schema.Int
}).annotations({ identifier: "V1DatasetMetrics" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestionMetrics = Schema.Struct({
  receivedRecordsCount: Schema.Int,
  appendedRecordsCount: Schema.Int,
  rejectedRecordsCount: Schema.Int,
  overwrittenRecordsCount: Schema.Int
}).annotations({ identifier: "V1IngestionMetrics" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestionProblem = Schema.Struct({
  code: Schema.NullOr(Schema.String),
  message: Schema.String,
  field: Schema.NullOr(Schema.String),
  type: Schema.String
}).annotations({ identifier: "V1IngestionProblem" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestionDetailResponse = Schema.Struct({
  requestId: RequestId,
  status: IngestionStatus,
  ingestionId: Schema.String,
  timestamp: Timestamp,
  metrics: Schema.Struct({ datasetMetrics: DatasetMetrics, ingestionMetrics: IngestionMetrics }),
  errors: Schema.optional(Schema.Array(IngestionProblem))
}).annotations({ identifier: "V1IngestionDetailResponse" })

const PageParams = Schema.Struct({
  page: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)).annotations({
      jsonSchema: { type: "integer", minimum: 1, default: 1 }
    })
  ),
  pageSize: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)).annotations({
      jsonSchema: { type: "integer", minimum: 1, default: 100 }
    })
  )
})

const accountPath = Schema.Struct({ accountId: IntegerId })
const dataSourcePath = Schema.Struct({ dataSourceId: IntegerId })
/**
 * The `{datasetId}` of v1 dataset paths.
 *
 * @since 0.1.0
 * @category models
 */
export const DatasetPath = Schema.Struct({ datasetId: UuidAnyCase })

/**
 * @since 0.1.0
 * @category api
 */
export class V1Auth extends HttpApiGroup.make("v1Auth")
  .add(HttpApiEndpoint.get("validateKey", "/v1/auth/validate-key").addSuccess(ValidateKeyResponse))
  .annotate(OpenApi.Title, "v1 auth")
{}

/**
 * @since 0.1.0
 * @category api
 */
export class V1Accounts extends HttpApiGroup.make("v1Accounts")
  .add(HttpApiEndpoint.get("listAccounts", "/v1/accounts").addSuccess(AccountsResponse))
  .add(HttpApiEndpoint.get("listTimezones", "/v1/accounts/timezones").addSuccess(TimezonesResponse))
  .add(
    HttpApiEndpoint.get("listDataSources", "/v1/accounts/:accountId/data-sources")
      .setPath(accountPath)
      .addSuccess(DataSourcesResponse)
      .addError(Forbidden)
  )
  .add(
    // Not in the spec; the official v1 client calls it (the real service has it).
    HttpApiEndpoint.get("listDatasets", "/v1/accounts/:accountId/datasets")
      .setPath(accountPath)
      .addSuccess(DatasetsResponse)
  )
  .annotate(OpenApi.Title, "v1 accounts")
{}

/**
 * @since 0.1.0
 * @category api
 */
export class V1DataSources extends HttpApiGroup.make("v1DataSources")
  .add(
    HttpApiEndpoint.post("createDataSource", "/v1/data-sources")
      .setPayload(CreateDataSourceRequest)
      .addSuccess(CreateDataSourceResponse)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.del("deleteDataSource", "/v1/data-sources/:dataSourceId")
      .setPath(dataSourcePath)
      .addSuccess(MessageResponse)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.get("listDatasets", "/v1/data-sources/:dataSourceId/datasets")
      .setPath(dataSourcePath)
      .addSuccess(DatasetsResponse)
  )
  .annotate(OpenApi.Title, "v1 data sources")
{}

/**
 * @since 0.1.0
 * @category api
 */
export class V1Datasets extends HttpApiGroup.make("v1Datasets")
  .add(
    HttpApiEndpoint.post("createDataset", "/v1/datasets")
      .setPayload(CreateDatasetRequest)
      .addSuccess(CreateDatasetResponse)
      .addError(Forbidden)
  )
  .add(
    // Not in the spec; the official v1 client calls it (the real service has it).
    HttpApiEndpoint.get("getDataset", "/v1/datasets/:datasetId")
      .setPath(DatasetPath)
      .addSuccess(DatasetResponse)
  )
  .add(
    HttpApiEndpoint.del("deleteDataset", "/v1/datasets/:datasetId")
      .setPath(DatasetPath)
      .addSuccess(MessageResponse)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.post("purgeDataset", "/v1/datasets/:datasetId/purge")
      .setPath(DatasetPath)
      .addSuccess(MessageResponse)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.post("ingest", "/v1/datasets/:datasetId/data")
      .setPath(DatasetPath)
      .setPayload(IngestRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(IngestResponse)
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(
    HttpApiEndpoint.get("listIngestions", "/v1/datasets/:datasetId/ingestions")
      .setPath(DatasetPath)
      .setUrlParams(PageParams)
      .addSuccess(IngestionsResponse)
  )
  .add(
    HttpApiEndpoint.get("getIngestion", "/v1/datasets/:datasetId/ingestions/:ingestionId")
      .setPath(Schema.Struct({ datasetId: UuidAnyCase, ingestionId: UuidAnyCase }))
      .addSuccess(IngestionDetailResponse)
  )
  .annotate(OpenApi.Title, "v1 datasets")
{}

/**
 * The v1 API. Errors every route may answer: 400 (decode), 401 (key), 404 (route or
 * resource), 413 (body), 429 (rate limit), 500 and 503.
 *
 * @since 0.1.0
 * @category api
 */
export class V1Api extends withCommonErrors(HttpApi.make("v1")
  .add(V1Auth)
  .add(V1Accounts)
  .add(V1DataSources)
  .add(V1Datasets)
  .middleware(ApiKeyAuth))
{}
