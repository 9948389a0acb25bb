/**
 * v2 metrics: custom metrics defined over a dataset's rows (`/v2/metrics`), their values,
 * dimension values, drilldown rows, lineage, usages and verification.
 *
 * Metric ids are `<sourceId>|<metricKey>` (e.g. `12|custom_query_3`); in a path the `|` is
 * URL-encoded (`12%7Ccustom_query_3`).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { PlainText, UuidAnyCase } from "../common.js"
import { Forbidden, Unprocessable } from "../errors.js"
import { DataResponse, IdempotencyHeaders, Name, PageParams, PageResponse, Pagination, SortOrder } from "./common.js"
import { ColumnType, VerificationDetail } from "./datasets.js"
import { LineageNode, VerificationUpdate } from "./datasetSettings.js"

/**
 * @since 0.1.0
 * @category defaults
 */
export const AggregationFunctions = ["sum", "avg", "min", "max", "count"] as const

/**
 * Filter operators. `ANY_OF`/`NONE_OF` take one or more values, the comparisons exactly one,
 * `IS_EMPTY`/`IS_NOT_EMPTY` none.
 *
 * @since 0.1.0
 * @category defaults
 */
export const FilterOperators = [
  "ANY_OF",
  "NONE_OF",
  "EQUALS",
  "NOT_EQUALS",
  "CONTAINS",
  "NOT_CONTAINS",
  "STARTS_WITH",
  "ENDS_WITH",
  "GREATER_THAN",
  "GREATER_THAN_OR_EQUAL",
  "LESS_THAN",
  "LESS_THAN_OR_EQUAL",
  "IS_EMPTY",
  "IS_NOT_EMPTY"
] as const

/**
 * A metric id: `<sourceId>|<metricKey>`.
 *
 * @since 0.1.0
 * @category models
 */
export const MetricId = Schema.String.pipe(
  Schema.pattern(/^[1-9][0-9]{0,15}\|[A-Za-z0-9_@.-]{1,200}$/, {
    message: () => "must be a metric id: <sourceId>|<metricKey>"
  })
).annotations({ description: "`<sourceId>|<metricKey>`; URL-encode the `|` in paths", examples: ["12|custom_query_3"] })

/**
 * `{id}` of a metric.
 *
 * @since 0.1.0
 * @category models
 */
export const MetricIdPath = Schema.Struct({ id: MetricId })

/**
 * A column a metric uses, with the name it shows.
 *
 * @since 0.1.0
 * @category models
 */
export const MetricColumn = Schema.Struct({
  id: PlainText.pipe(Schema.minLength(1, { message: () => "column id must not be empty" })),
  displayName: PlainText.pipe(Schema.maxLength(255))
}).annotations({ identifier: "MetricColumn" })

/**
 * @since 0.1.0
 * @category models
 */
export const AggregationFunction = Schema.Literal(...AggregationFunctions).annotations({ identifier: "AggregationFunction" })

/**
 * @since 0.1.0
 * @category models
 */
export const FilterOperator = Schema.Literal(...FilterOperators).annotations({ identifier: "FilterOperator" })

/**
 * @since 0.1.0
 * @category models
 */
export const MetricFilterCondition = Schema.Struct({
  field: Schema.String,
  operator: FilterOperator,
  values: Schema.Array(Schema.String).pipe(Schema.maxItems(1000))
}).annotations({ identifier: "MetricFilterCondition" })

/**
 * A metric's own filters (lower-case logical operator, as the service takes them).
 *
 * @since 0.1.0
 * @category models
 */
export const MetricFilters = Schema.Struct({
  logicalOperator: Schema.Literal("and", "or"),
  conditions: Schema.Array(MetricFilterCondition).pipe(Schema.maxItems(100))
}).annotations({ identifier: "MetricFilters" })

/**
 * @since 0.1.0
 * @category models
 */
export const AppliedFilterCondition = Schema.Struct({
  type: Schema.Literal("dimension", "unit"),
  ...MetricFilterCondition.fields
}).annotations({ identifier: "AppliedFilterCondition" })

/**
 * Filters applied on top of a metric (drilldown, values, board blocks): groups of conditions,
 * upper-case logical operators.
 *
 * @since 0.1.0
 * @category models
 */
export const AppliedFilters = Schema.Struct({
  logicalOperator: Schema.Literal("AND", "OR"),
  groups: Schema.Array(
    Schema.Struct({
      logicalOperator: Schema.Literal("AND", "OR"),
      conditions: Schema.Array(AppliedFilterCondition).pipe(Schema.maxItems(100))
    })
  ).pipe(Schema.maxItems(20))
}).annotations({ identifier: "AppliedFilters" })

/**
 * @since 0.1.0
 * @category models
 */
export const MetricListItem = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  sourceId: Schema.NullOr(Schema.Int),
  dimensions: Schema.Array(MetricColumn),
  supportsDrilldown: Schema.Boolean,
  verificationInfo: Schema.NullOr(Schema.Struct({ isVerified: Schema.Boolean }))
}).annotations({ identifier: "MetricListItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const MetricDetail = Schema.Struct({
  ...MetricListItem.fields,
  type: Schema.Literal("event", "general", "current", "unknown"),
  measure: Schema.NullOr(MetricColumn),
  date: Schema.NullOr(MetricColumn),
  aggregationFunction: Schema.NullOr(AggregationFunction),
  filters: Schema.NullOr(MetricFilters),
  availableGranularities: Schema.Array(Schema.String),
  isAggregatable: Schema.Boolean,
  verificationInfo: Schema.NullOr(VerificationDetail)
}).annotations({ identifier: "MetricDetail" })

/**
 * @since 0.1.0
 * @category models
 */
export const MetricListParams = Schema.Struct({
  ...PageParams.fields,
  sourceId: Schema.optional(Schema.NumberFromString.pipe(Schema.int()).annotations({ jsonSchema: { type: "integer" } })),
  /** A substring of the name or the id. */
  search: Schema.optional(Schema.String),
  sortBy: Schema.optional(Schema.Literal("name", "createdAt")),
  sortOrder: Schema.optional(SortOrder)
})

/**
 * @since 0.1.0
 * @category models
 */
export const CreateMetricRequest = Schema.Struct({
  name: Name,
  /** The dataset's number (its v2 id), or its UUID. */
  datasetId: Schema.Union(
    Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(Number.MAX_SAFE_INTEGER)),
    UuidAnyCase
  ),
  measure: MetricColumn,
  date: MetricColumn,
  aggregationFunction: Schema.optional(AggregationFunction),
  dimensions: Schema.optional(Schema.Array(MetricColumn).pipe(Schema.maxItems(20))),
  filters: Schema.optional(MetricFilters)
}).annotations({ identifier: "CreateMetricRequest" })

/**
 * A partial change: `dimensions` replaces the whole list (`[]` clears); `filters` without
 * `conditions` keeps the stored conditions, `conditions: []` clears them.
 *
 * @since 0.1.0
 * @category models
 */
export const UpdateMetricRequest = Schema.Struct({
  name: Schema.optional(Name),
  measure: Schema.optional(MetricColumn),
  date: Schema.optional(MetricColumn),
  aggregationFunction: Schema.optional(AggregationFunction),
  dimensions: Schema.optional(Schema.Array(MetricColumn).pipe(Schema.maxItems(20))),
  filters: Schema.optional(
    Schema.Struct({
      logicalOperator: Schema.optional(Schema.Literal("and", "or")),
      conditions: Schema.optional(MetricFilters.fields.conditions)
    })
  )
}).annotations({ identifier: "UpdateMetricRequest" })

/**
 * A metric named by its data source and key (or full id).
 *
 * @since 0.1.0
 */
const MetricRef = {
  sourceId: Schema.Int,
  /** The metric key, or the full `<sourceId>|<metricKey>` id. */
  metricId: Schema.String
}

/**
 * Only the first metric and its first dimension are answered, as the service does.
 *
 * @since 0.1.0
 * @category models
 */
export const DimensionValuesRequest = Schema.Struct({
  metrics: Schema.Array(
    Schema.Struct({ ...MetricRef, dimensionIds: Schema.Array(Schema.String).pipe(Schema.minItems(1)) })
  ).pipe(Schema.minItems(1, { message: () => "at least one metric is required" }))
}).annotations({ identifier: "DimensionValuesRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const DimensionValues = Schema.Struct({ dimensionValues: Schema.Array(Schema.String) }).annotations({
  identifier: "DimensionValues"
})

/**
 * A period in Unix seconds, both ends included; `startTimestamp` ≤ `endTimestamp`.
 *
 * @since 0.1.0
 * @category models
 */
export const Period = Schema.Struct({
  startTimestamp: Schema.Int,
  endTimestamp: Schema.Int
}).pipe(
  Schema.filter((p) => p.startTimestamp <= p.endTimestamp || {
    path: ["endTimestamp"],
    message: "endTimestamp must not be before startTimestamp"
  })
).annotations({ identifier: "Period" })

/**
 * @since 0.1.0
 * @category models
 */
export const DrilldownRequest = Schema.Struct({
  ...MetricRef,
  period: Period,
  /** Limit the columns to the date, the measure and these dimensions. */
  dimensionIds: Schema.optional(Schema.Array(Schema.String)),
  filters: Schema.optional(AppliedFilters)
}).annotations({ identifier: "DrilldownRequest" })

/**
 * `pageSize` up to 1000 (default 200), as on the service's row endpoints.
 *
 * @since 0.1.0
 * @category models
 */
export const DrilldownParams = Schema.Struct({
  ...PageParams.fields,
  sortBy: Schema.optional(Schema.String),
  sortOrder: Schema.optional(SortOrder)
})

/**
 * @since 0.1.0
 * @category models
 */
export const DrilldownColumn = Schema.Struct({
  id: Schema.String,
  displayName: Schema.String,
  dataType: ColumnType
}).annotations({ identifier: "DrilldownColumn" })

/**
 * @since 0.1.0
 * @category models
 */
export const DrilldownPage = Schema.Struct({
  items: Schema.NullOr(Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))),
  schema: Schema.NullOr(Schema.Struct({ items: Schema.Array(DrilldownColumn) })),
  pagination: Pagination
}).annotations({ identifier: "DrilldownPage" })

/**
 * @since 0.1.0
 * @category models
 */
export const Granularity = Schema.Literal("daily", "weekly", "monthly").annotations({ identifier: "Granularity" })

/**
 * What values to read: a period (all rows without one), a granularity (one value for the
 * whole period without one), a dimension to break values down by, and filters on top.
 *
 * @since 0.1.0
 * @category models
 */
export const MetricValuesRequest = Schema.Struct({
  period: Schema.optional(Period),
  granularity: Schema.optional(Granularity),
  dimensionId: Schema.optional(Schema.String),
  filters: Schema.optional(AppliedFilters)
}).annotations({ identifier: "MetricValuesRequest" })

/**
 * The official CLI's `metric data` body, served beside the specification's routes: a range of
 * days (`today`, `yesterday`, `<n>daysAgo`, `YYYY-MM-DD`, in the data's time zone) and a
 * granularity; the first of `dimensions` breaks the values down.
 *
 * @since 0.1.0
 * @category models
 */
export const MetricDataRequest = Schema.Struct({
  metricId: Schema.String,
  dateRange: Schema.Struct({ from: Schema.String, to: Schema.String, granularity: Granularity }),
  datasetId: Schema.optional(Schema.Union(Schema.Int, Schema.String)),
  dataSourceId: Schema.optional(Schema.Int),
  dimensions: Schema.optional(Schema.Array(Schema.String)),
  filters: Schema.optional(AppliedFilters)
}).annotations({ identifier: "MetricDataRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const MetricValueItem = Schema.Struct({
  date: Schema.NullOr(Schema.String),
  start: Schema.NullOr(Schema.String),
  end: Schema.NullOr(Schema.String),
  dimensionValue: Schema.NullOr(Schema.String),
  value: Schema.NullOr(Schema.Number),
  rowCount: Schema.Int
}).annotations({ identifier: "MetricValueItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const MetricValues = Schema.Struct({
  metricId: Schema.String,
  aggregationFunction: AggregationFunction,
  timezone: Schema.String,
  granularity: Schema.NullOr(Granularity),
  dimensionId: Schema.NullOr(Schema.String),
  total: Schema.Struct({ value: Schema.NullOr(Schema.Number), rowCount: Schema.Int }),
  items: Schema.Array(MetricValueItem)
}).annotations({ identifier: "MetricValues" })

/**
 * @since 0.1.0
 * @category models
 */
export const MetricLineage = Schema.Struct({
  id: Schema.String,
  parents: Schema.Array(LineageNode),
  children: Schema.Array(LineageNode)
}).annotations({ identifier: "MetricLineage" })

/**
 * @since 0.1.0
 * @category models
 */
export const MetricUsage = Schema.Struct({
  referenceType: Schema.Literal("board", "alert", "goal", "report", "forecast", "scorecard", "calculatedMetric"),
  referenceId: Schema.String,
  referenceName: Schema.String,
  datablockName: Schema.NullOr(Schema.String)
}).annotations({ identifier: "MetricUsage" })

const Detail = DataResponse(MetricDetail, "MetricDetailResponse")
const Verification = DataResponse(VerificationDetail, "MetricVerificationResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2Metrics extends HttpApiGroup.make("v2Metrics")
  .add(
    HttpApiEndpoint.get("list", "/v2/metrics")
      .setUrlParams(MetricListParams)
      .addSuccess(PageResponse(MetricListItem, "MetricPage"))
  )
  .add(
    HttpApiEndpoint.post("create", "/v2/metrics")
      .setPayload(CreateMetricRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(Detail)
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(
    HttpApiEndpoint.post("dimensionValues", "/v2/metrics/dimensions/values")
      .setPayload(DimensionValuesRequest)
      .addSuccess(DataResponse(DimensionValues, "DimensionValuesResponse"))
  )
  .add(
    HttpApiEndpoint.post("drilldown", "/v2/metrics/drilldown")
      .setUrlParams(DrilldownParams)
      .setPayload(DrilldownRequest)
      .addSuccess(DataResponse(DrilldownPage, "DrilldownResponse"))
  )
  .add(
    HttpApiEndpoint.post("data", "/v2/metrics/data")
      .setPayload(MetricDataRequest)
      .addSuccess(DataResponse(MetricValues, "MetricDataResponse"))
  )
  .add(HttpApiEndpoint.get("get", "/v2/metrics/:id").setPath(MetricIdPath).addSuccess(Detail))
  .add(
    HttpApiEndpoint.patch("update", "/v2/metrics/:id")
      .setPath(MetricIdPath)
      .setPayload(UpdateMetricRequest)
      .addSuccess(Detail)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.del("delete", "/v2/metrics/:id")
      .setPath(MetricIdPath)
      .addSuccess(DataResponse(Schema.Struct({ message: Schema.String }), "MetricMessageResponse"))
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.post("values", "/v2/metrics/:id/values")
      .setPath(MetricIdPath)
      .setPayload(MetricValuesRequest)
      .addSuccess(DataResponse(MetricValues, "MetricValuesResponse"))
  )
  .add(
    HttpApiEndpoint.get("getLineage", "/v2/metrics/:id/lineage")
      .setPath(MetricIdPath)
      .addSuccess(DataResponse(MetricLineage, "MetricLineageResponse"))
  )
  .add(
    HttpApiEndpoint.get("usages", "/v2/metrics/:id/usages")
      .setPath(MetricIdPath)
      .addSuccess(DataResponse(Schema.Struct({ items: Schema.Array(MetricUsage) }), "MetricUsagesResponse"))
  )
  .add(HttpApiEndpoint.get("getVerification", "/v2/metrics/:id/verification").setPath(MetricIdPath).addSuccess(Verification))
  .add(
    HttpApiEndpoint.put("setVerification", "/v2/metrics/:id/verification")
      .setPath(MetricIdPath)
      .setPayload(VerificationUpdate)
      .addSuccess(Verification)
      .addError(Forbidden)
  )
  .annotate(OpenApi.Title, "v2 metrics")
{}
