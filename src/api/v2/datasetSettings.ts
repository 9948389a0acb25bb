/**
 * v2 dataset settings: metadata, column metadata, time zone, permissions, verification,
 * sync frequency, sync history and lineage of one dataset (`/v2/datasets/{id}/...`).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Timestamp } from "../common.js"
import { Forbidden } from "../errors.js"
import {
  DataResponse,
  DatasetIdPath,
  PageParams,
  PageResponse,
  Permissions,
  PermissionsUpdate,
  SyncFrequencyOption,
  SyncFrequencyUpdate
} from "./common.js"
import { DatasetDetail, VerificationDetail } from "./datasets.js"

/**
 * Dataset metadata: a description, synonyms, and the default time dimension (the id of a
 * `datetime` column).
 *
 * @since 0.1.0
 * @category models
 */
export const DatasetMetadata = Schema.Struct({
  description: Schema.NullOr(Schema.String),
  synonyms: Schema.NullOr(Schema.Array(Schema.String)),
  defaultTimeDimension: Schema.NullOr(Schema.String)
}).annotations({ identifier: "DatasetMetadata" })

/**
 * A partial metadata update: fields left out keep their value, `null` clears one.
 *
 * @since 0.1.0
 * @category models
 */
export const DatasetMetadataUpdate = Schema.Struct({
  description: Schema.optional(Schema.NullOr(Schema.String)),
  synonyms: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  defaultTimeDimension: Schema.optional(Schema.NullOr(Schema.String))
}).annotations({ identifier: "DatasetMetadataUpdate" })

/**
 * @since 0.1.0
 * @category models
 */
export const ConceptType = Schema.Literal("measure", "dimension", "timeDimension").annotations({
  identifier: "ConceptType"
})

/**
 * @since 0.1.0
 * @category models
 */
export const ColumnMetadataItem = Schema.Struct({
  id: Schema.String,
  displayName: Schema.String,
  description: Schema.NullOr(Schema.String),
  conceptType: Schema.NullOr(ConceptType),
  synonyms: Schema.NullOr(Schema.Array(Schema.String))
}).annotations({ identifier: "ColumnMetadataItem" })

/**
 * One entry per schema column.
 *
 * @since 0.1.0
 * @category models
 */
export const ColumnMetadataList = Schema.Struct({ items: Schema.Array(ColumnMetadataItem) }).annotations({
  identifier: "ColumnMetadataList"
})

/**
 * A change to one column's metadata: fields left out keep their value, `null` clears one.
 *
 * @since 0.1.0
 * @category models
 */
export const ColumnMetadataChange = Schema.Struct({
  id: Schema.String,
  description: Schema.optional(Schema.NullOr(Schema.String)),
  conceptType: Schema.optional(Schema.NullOr(ConceptType)),
  synonyms: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
}).annotations({ identifier: "ColumnMetadataChange" })

/**
 * @since 0.1.0
 * @category models
 */
export const ColumnMetadataUpdate = Schema.Struct({
  columns: Schema.Array(ColumnMetadataChange).pipe(
    Schema.minItems(1, { message: () => "at least 1 column is required" })
  )
}).annotations({ identifier: "ColumnMetadataUpdate" })

/**
 * `purgeData: true` also removes every stored row.
 *
 * @since 0.1.0
 * @category models
 */
export const DatasetTimezoneUpdate = Schema.Struct({
  timezone: Schema.String,
  purgeData: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "DatasetTimezoneUpdate" })

/**
 * @since 0.1.0
 * @category models
 */
export const VerificationUpdate = Schema.Struct({ isVerified: Schema.Boolean }).annotations({
  identifier: "VerificationUpdate"
})

/**
 * @since 0.1.0
 * @category models
 */
export const SyncHistoryItem = Schema.Struct({
  id: Schema.String,
  initiatedAt: Schema.NullOr(Timestamp),
  status: Schema.String,
  type: Schema.NullOr(Schema.String),
  duration: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.Struct({ title: Schema.String, description: Schema.NullOr(Schema.String) }))
}).annotations({ identifier: "SyncHistoryItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const DailyStatistic = Schema.Struct({ date: Schema.String, status: Schema.String }).annotations({
  identifier: "DailyStatistic"
})

/**
 * @since 0.1.0
 * @category models
 */
export const SyncStatistics = Schema.Struct({
  avgSuccessDuration: Schema.NullOr(Schema.Number),
  dailyStatistics: Schema.Array(DailyStatistic),
  lastSuccessfulUpdateAt: Schema.NullOr(Timestamp),
  successRate: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "SyncStatistics" })

/**
 * @since 0.1.0
 * @category models
 */
export const LineageNode = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  type: Schema.Literal("dataSource", "dataset", "mergedDataset", "basicMetric", "customMetric")
}).annotations({ identifier: "LineageNode" })

/**
 * What a dataset is built from (`parents`) and what is built on it (`children`).
 *
 * @since 0.1.0
 * @category models
 */
export const DatasetLineage = Schema.Struct({
  id: Schema.Int,
  parents: Schema.Array(LineageNode),
  children: Schema.Array(LineageNode)
}).annotations({ identifier: "DatasetLineage" })

const Detail = DataResponse(DatasetDetail, "DatasetDetailResponse")
const Metadata = DataResponse(DatasetMetadata, "DatasetMetadataResponse")
const Columns = DataResponse(ColumnMetadataList, "ColumnMetadataResponse")
const PermissionsAnswer = DataResponse(Permissions, "DatasetPermissionsResponse")
const Verification = DataResponse(VerificationDetail, "VerificationDetailResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2DatasetSettings extends HttpApiGroup.make("v2DatasetSettings")
  .add(HttpApiEndpoint.get("getMetadata", "/v2/datasets/:id/metadata").setPath(DatasetIdPath).addSuccess(Metadata))
  .add(
    HttpApiEndpoint.patch("updateMetadata", "/v2/datasets/:id/metadata")
      .setPath(DatasetIdPath)
      .setPayload(DatasetMetadataUpdate)
      .addSuccess(Metadata)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.get("getColumnMetadata", "/v2/datasets/:id/column-metadata").setPath(DatasetIdPath).addSuccess(
      Columns
    )
  )
  .add(
    HttpApiEndpoint.patch("updateColumnMetadata", "/v2/datasets/:id/column-metadata")
      .setPath(DatasetIdPath)
      .setPayload(ColumnMetadataUpdate)
      .addSuccess(Columns)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.put("setTimezone", "/v2/datasets/:id/timezone")
      .setPath(DatasetIdPath)
      .setPayload(DatasetTimezoneUpdate)
      .addSuccess(Detail)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.get("getPermissions", "/v2/datasets/:id/permissions").setPath(DatasetIdPath).addSuccess(
      PermissionsAnswer
    )
  )
  .add(
    HttpApiEndpoint.put("setPermissions", "/v2/datasets/:id/permissions")
      .setPath(DatasetIdPath)
      .setPayload(PermissionsUpdate)
      .addSuccess(PermissionsAnswer)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.get("getVerification", "/v2/datasets/:id/verification").setPath(DatasetIdPath).addSuccess(
      Verification
    )
  )
  .add(
    HttpApiEndpoint.put("setVerification", "/v2/datasets/:id/verification")
      .setPath(DatasetIdPath)
      .setPayload(VerificationUpdate)
      .addSuccess(Verification)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.put("setSyncFrequency", "/v2/datasets/:id/sync-frequency")
      .setPath(DatasetIdPath)
      .setPayload(SyncFrequencyUpdate)
      .addSuccess(Detail)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.get("syncFrequencyOptions", "/v2/datasets/:id/sync-frequency-options")
      .setPath(DatasetIdPath)
      .addSuccess(DataResponse(Schema.Struct({ items: Schema.Array(SyncFrequencyOption) }), "SyncFrequencyOptions"))
  )
  .add(
    HttpApiEndpoint.get("syncHistory", "/v2/datasets/:id/sync-history")
      .setPath(DatasetIdPath)
      .setUrlParams(PageParams)
      .addSuccess(PageResponse(SyncHistoryItem, "SyncHistoryPage"))
  )
  .add(
    HttpApiEndpoint.get("syncStatistics", "/v2/datasets/:id/sync-history/statistics")
      .setPath(DatasetIdPath)
      .addSuccess(DataResponse(SyncStatistics, "SyncStatisticsResponse"))
  )
  .add(
    HttpApiEndpoint.get("getLineage", "/v2/datasets/:id/lineage")
      .setPath(DatasetIdPath)
      .addSuccess(DataResponse(DatasetLineage, "DatasetLineageResponse"))
  )
  .annotate(OpenApi.Title, "v2 dataset settings")
{}
