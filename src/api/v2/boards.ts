/**
 * v2 boards (databoards): the boards of the organization and the metrics their blocks show.
 * Served at `/v2/boards` and, as the service names them, `/v2/databoards`. Boards come from
 * the server's seed: the API has no route that makes one.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { IntegerId } from "../common.js"
import { DataResponse, PageParams, PageResponse, SortOrder } from "./common.js"
import { AppliedFilters, Granularity, MetricColumn } from "./metrics.js"

/**
 * @since 0.1.0
 * @category models
 */
export const BoardListItem = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  tags: Schema.Array(Schema.String),
  integrationKeys: Schema.Array(Schema.String)
}).annotations({ identifier: "BoardListItem" })

/**
 * @since 0.1.0
 * @category models
 */
export const BoardListParams = Schema.Struct({
  ...PageParams.fields,
  search: Schema.optional(Schema.String),
  sortBy: Schema.optional(Schema.Literal("name")),
  sortOrder: Schema.optional(SortOrder)
})

/**
 * The range a block shows: relative labels (`today`, `30daysAgo`) or dates, and a granularity.
 *
 * @since 0.1.0
 * @category models
 */
export const DateRange = Schema.Struct({
  from: Schema.String,
  to: Schema.String,
  granularity: Granularity
}).annotations({ identifier: "DateRange" })

/**
 * @since 0.1.0
 * @category models
 */
export const BlockMetric = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  // Every metric is built on a data source; its name is null when the caller may not see that source.
  sourceId: Schema.Int,
  sourceName: Schema.NullOr(Schema.String),
  dimensions: Schema.Array(MetricColumn),
  dateRange: DateRange,
  appliedFilters: Schema.NullOr(AppliedFilters)
}).annotations({ identifier: "BlockMetric" })

/**
 * @since 0.1.0
 * @category models
 */
export const Datablock = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  visualizationType: Schema.NullOr(Schema.String),
  metrics: Schema.Array(BlockMetric)
}).annotations({ identifier: "Datablock" })

/**
 * @since 0.1.0
 * @category models
 */
export const BoardMetrics = Schema.Struct({ datablocks: Schema.Array(Datablock) }).annotations({ identifier: "BoardMetrics" })

const BoardPath = Schema.Struct({ id: IntegerId })
const Page = PageResponse(BoardListItem, "BoardPage")
const Metrics = DataResponse(BoardMetrics, "BoardMetricsResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2Boards extends HttpApiGroup.make("v2Boards")
  .add(HttpApiEndpoint.get("list", "/v2/boards").setUrlParams(BoardListParams).addSuccess(Page))
  .add(HttpApiEndpoint.get("metrics", "/v2/boards/:id/metrics").setPath(BoardPath).addSuccess(Metrics))
  // The service's own names for the same routes.
  .add(HttpApiEndpoint.get("listDataboards", "/v2/databoards").setUrlParams(BoardListParams).addSuccess(Page))
  .add(HttpApiEndpoint.get("databoardMetrics", "/v2/databoards/:id/metrics").setPath(BoardPath).addSuccess(Metrics))
  .annotate(OpenApi.Title, "v2 boards")
{}
