/**
 * v2 datasets: `/v2/datasets`, their rows and their ingestions.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { IngestRecord, MaxRecordsPerIngestion, PlainText, Timestamp, UuidId, UuidAnyCase } from "../common.js"
import { Forbidden, Unprocessable } from "../errors.js"
import {
  DataResponse,
  DatasetId,
  DatasetIdPath,
  IdempotencyHeaders,
  Name,
  PageParams,
  PageResponse,
  Pagination,
  SortOrder,
  StatusInfo,
  SyncInfo,
  UserRef
} from "./common.js"

/**
 * @since 0.1.0
 * @category models
 */
export const ColumnType = Schema.Literal("string", "number", "datetime")

/**
 * @since 0.1.0
 * @category models
 */
export const ColumnDefinition = Schema.Struct({
  id: PlainText.pipe(Schema.minLength(1, { message: () => "column id must not be empty" })),
  dataType: ColumnType
}).annotations({ identifier: "ColumnDefinition" })

/**
 * @since 0.1.0
 * @category models
 */
export const SchemaColumn = Schema.Struct({
  id: Schema.String,
  displayName: Schema.String,
  dataType: ColumnType,
  order: Schema.Int,
  visible: Schema.Boolean
}).annotations({ identifier: "SchemaColumn" })

/**
 * @since 0.1.0
 * @category models
 */
export const DatasetListItem = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  dataSourceId: Schema.NullOr(Schema.Int),
  createdAt: Schema.NullOr(Timestamp),
  lastActivityAt: Schema.NullOr(Timestamp),
  timezone: Schema.NullOr(Schema.String),
  ingestionSupported: Schema.Boolean,
  statusInfo: Schema.NullOr(StatusInfo),
  syncInfo: Schema.NullOr(SyncInfo),
  verificationInfo: Schema.NullOr(Schema.Struct({ isVerified: Schema.Boolean })),
  ingestionInfo: Schema.NullOr(
    Schema.Struct({ lastIngestionAt: Schema.NullOr(Timestamp), lastStatus: Schema.NullOr(Schema.String) })
  )
}).annotations({ identifier: "DatasetListItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const VerificationDetail = Schema.Struct({
  isVerified: Schema.Boolean,
  verifiedAt: Schema.NullOr(Timestamp),
  verifiedBy: Schema.NullOr(UserRef)
}).annotations({ identifier: "VerificationDetail" })

/**
 * @since 0.1.0
 * @category models
 */
export const DatasetDetail = Schema.Struct({
  ...DatasetListItem.fields,
  /** The dataset's v1 id: the same dataset in `/v1/datasets/{datasetId}` paths. */
  uuid: UuidId,
  columnCount: Schema.Int,
  rowCount: Schema.Int,
  size: Schema.NullOr(Schema.Int),
  maxSize: Schema.NullOr(Schema.Int),
  syncInterval: Schema.NullOr(Schema.Int),
  managedBy: Schema.NullOr(UserRef),
  ingestionInfo: Schema.NullOr(
    Schema.Struct({
      initiatedAt: Schema.NullOr(Timestamp),
      lastSuccessfulIngestionAt: Schema.NullOr(Timestamp),
      status: Schema.NullOr(Schema.String)
    })
  ),
  verificationInfo: Schema.NullOr(VerificationDetail)
}).annotations({ identifier: "DatasetDetail" })

/**
 * @since 0.1.0
 * @category models
 */
export const DatasetListParams = Schema.Struct({
  ...PageParams.fields,
  dataSourceId: Schema.optional(Schema.NumberFromString.pipe(Schema.int()).annotations({ jsonSchema: { type: "integer" } })),
  search: Schema.optional(Schema.String),
  sortBy: Schema.optional(Schema.Literal("name", "createdAt", "lastActivityAt")),
  sortOrder: Schema.optional(SortOrder)
})

/**
 * @since 0.1.0
 * @category models
 */
export const CreateDatasetRequest = Schema.Struct({
  name: Name,
  dataSourceId: Schema.Int,
  schema: Schema.Array(ColumnDefinition).pipe(
    Schema.minItems(1, { message: () => "at least one column is required" }),
    Schema.maxItems(100, { message: () => "at most 100 columns" })
  ),
  primaryKey: Schema.optional(Schema.Array(Schema.String))
}).annotations({ identifier: "V2CreateDatasetRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const UpdateDatasetRequest = Schema.Struct({ name: Name }).annotations({ identifier: "V2UpdateDatasetRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const DuplicateDatasetRequest = Schema.Struct({ name: Schema.optional(Name) }).annotations({
  identifier: "DuplicateDatasetRequest"
})

/**
 * @since 0.1.0
 * @category models
 */
export const DatasetSchema = Schema.Struct({
  items: Schema.Array(SchemaColumn),
  /** Absent for datasets that cannot have one (research §4.9); ours always carry it, empty without a key. */
  primaryKey: Schema.optional(Schema.NullOr(Schema.Array(Schema.String)))
}).annotations({ identifier: "DatasetSchema" })

/**
 * Stored rows; `pageSize` up to 1000 (default 200), as on the service's row endpoints.
 *
 * @since 0.1.0
 * @category models
 */
export const DataParams = Schema.Struct({
  ...PageParams.fields,
  sortBy: Schema.optional(Schema.String),
  sortOrder: Schema.optional(SortOrder)
})

/**
 * @since 0.1.0
 * @category models
 */
export const DatasetRows = Schema.Struct({
  items: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  pagination: Pagination,
  schema: Schema.Array(SchemaColumn),
  lastUpdatedAt: Schema.NullOr(Timestamp)
}).annotations({ identifier: "DatasetRows" })

/**
 * Records to ingest. Each item is checked when the ingestion is processed, so a
 * non-object record is rejected on its own rather than failing the request.
 *
 * @since 0.1.0
 * @category models
 */
export const IngestRequest = Schema.Struct({
  records: Schema.Array(IngestRecord).pipe(
    Schema.minItems(1, { message: () => "at least 1 record is required" }),
    Schema.maxItems(MaxRecordsPerIngestion, { message: () => `at most ${MaxRecordsPerIngestion} records per ingestion` })
  )
}).annotations({ identifier: "V2IngestRequest" })

/**
 * `queued` -> `processing` -> `success` | `failed` | `purged`.
 *
 * @since 0.1.0
 * @category models
 */
export const IngestionStatus = Schema.Literal("queued", "processing", "success", "failed", "purged")

/**
 * @since 0.1.0
 * @category models
 */
export const IngestAccepted = Schema.Struct({
  ingestionId: Schema.String,
  status: IngestionStatus,
  message: Schema.String
}).annotations({ identifier: "IngestAccepted" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestionListItem = Schema.Struct({
  id: Schema.String,
  status: IngestionStatus,
  initiatedAt: Schema.NullOr(Timestamp),
  initiatedBy: Schema.NullOr(UserRef),
  duration: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "IngestionListItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestionError = Schema.Struct({
  code: Schema.NullOr(Schema.String),
  field: Schema.NullOr(Schema.String),
  message: Schema.NullOr(Schema.String),
  record: Schema.Unknown
}).annotations({ identifier: "IngestionError" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestionDetail = Schema.Struct({
  ...IngestionListItem.fields,
  summary: Schema.NullOr(
    Schema.Struct({
      ingestion: Schema.NullOr(
        Schema.Struct({
          receivedRecordCount: Schema.Int,
          appendedRecordCount: Schema.Int,
          overwrittenRecordCount: Schema.Int,
          rejectedRecordCount: Schema.Int
        })
      ),
      dataset: Schema.NullOr(
        Schema.Struct({ columnCount: Schema.Int, rowCount: Schema.Int, size: Schema.Int })
      )
    })
  ),
  errors: Schema.NullOr(Schema.Array(IngestionError))
}).annotations({ identifier: "IngestionDetail" })

/**
 * @since 0.1.0
 * @category models
 */
export const IngestionStatistics = Schema.Struct({
  avgSuccessDuration: Schema.NullOr(Schema.Number),
  dailyStatistics: Schema.NullOr(Schema.Array(Schema.Struct({ date: Schema.String, status: Schema.String }))),
  lastSuccessfulIngestionAt: Schema.NullOr(Timestamp),
  successRate: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "IngestionStatistics" })

const Detail = DataResponse(DatasetDetail, "DatasetDetailResponse")
const Message = DataResponse(Schema.Struct({ message: Schema.String }), "DatasetMessageResponse")
/**
 * `/v2/datasets/:id/ingestions/:ingestionId`'s parameters.
 *
 * @since 0.3.0
 * @category models
 */
export const IngestionPath = Schema.Struct({ id: DatasetId, ingestionId: UuidAnyCase })

/**
 * The answer to `GET /v2/datasets/:id/ingestions/:ingestionId`.
 *
 * @since 0.3.0
 * @category models
 */
export const IngestionDetailResponse = DataResponse(IngestionDetail, "IngestionDetailResponse")

/**
 * The answer to `GET /v2/datasets/:id/schema`.
 *
 * @since 0.3.0
 * @category models
 */
export const DatasetSchemaResponse = DataResponse(DatasetSchema, "DatasetSchemaResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2Datasets extends HttpApiGroup.make("v2Datasets")
  .add(
    HttpApiEndpoint.get("list", "/v2/datasets")
      .setUrlParams(DatasetListParams)
      .addSuccess(PageResponse(DatasetListItem, "DatasetPage"))
  )
  .add(
    HttpApiEndpoint.post("create", "/v2/datasets")
      .setPayload(CreateDatasetRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(Detail)
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(HttpApiEndpoint.get("get", "/v2/datasets/:id").setPath(DatasetIdPath).addSuccess(Detail))
  .add(
    HttpApiEndpoint.patch("update", "/v2/datasets/:id")
      .setPath(DatasetIdPath)
      .setPayload(UpdateDatasetRequest)
      .addSuccess(Detail)
      .addError(Forbidden)
  )
  .add(HttpApiEndpoint.del("delete", "/v2/datasets/:id").setPath(DatasetIdPath).addSuccess(Message).addError(Forbidden))
  .add(
    HttpApiEndpoint.post("purge", "/v2/datasets/:id/purge")
      .setPath(DatasetIdPath)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(Message)
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(
    HttpApiEndpoint.post("duplicate", "/v2/datasets/:id/duplicate")
      .setPath(DatasetIdPath)
      .setPayload(DuplicateDatasetRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(Detail)
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(
    HttpApiEndpoint.get("getSchema", "/v2/datasets/:id/schema")
      .setPath(DatasetIdPath)
      .addSuccess(DatasetSchemaResponse)
  )
  .add(
    HttpApiEndpoint.get("getData", "/v2/datasets/:id/data")
      .setPath(DatasetIdPath)
      .setUrlParams(DataParams)
      .addSuccess(DataResponse(DatasetRows, "DatasetRowsResponse"))
  )
  .add(
    HttpApiEndpoint.post("ingest", "/v2/datasets/:id/data")
      .setPath(DatasetIdPath)
      .setPayload(IngestRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(DataResponse(IngestAccepted, "IngestAcceptedResponse"))
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(
    HttpApiEndpoint.get("listIngestions", "/v2/datasets/:id/ingestions")
      .setPath(DatasetIdPath)
      .setUrlParams(PageParams)
      .addSuccess(PageResponse(IngestionListItem, "IngestionPage"))
  )
  .add(
    HttpApiEndpoint.get("getIngestion", "/v2/datasets/:id/ingestions/:ingestionId")
      .setPath(IngestionPath)
      .addSuccess(IngestionDetailResponse)
  )
  .add(
    HttpApiEndpoint.get("ingestionStatistics", "/v2/datasets/:id/ingestion-statistics")
      .setPath(DatasetIdPath)
      .addSuccess(DataResponse(IngestionStatistics, "IngestionStatisticsResponse"))
  )
  .annotate(OpenApi.Title, "v2 datasets")
{}
