/**
 * v2 metric handlers: metrics, their values, dimension values, drilldown, lineage, usages
 * and verification. Decode, call one service, present.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import { pageView } from "../paging.js"
import { byId, change, changeOnce, serve } from "../handler.js"
import { respond } from "../envelope.js"
import { metricUsages } from "../../features/boards.js"
import {
  createMetric,
  deleteMetric,
  dimensionValues,
  drilldown,
  listMetrics,
  metricData,
  metricLineage,
  metricValues,
  setMetricVerification,
  updateMetric,
  visibleMetric
} from "../../features/metrics.js"
import type { Metric } from "../../features/metrics/store.js"

const listItem = (m: Metric) => ({
  id: m.id,
  name: m.name,
  sourceId: m.dataSourceId,
  dimensions: m.dimensions,
  supportsDrilldown: true,
  verificationInfo: { isVerified: m.verification.isVerified }
})

/** Custom metrics over a dataset are `event` metrics: values come from dated rows. */
const detail = (m: Metric) => ({
  ...listItem(m),
  type: "event" as const,
  measure: m.measure,
  date: m.date,
  aggregationFunction: m.aggregationFunction,
  filters: m.filters,
  availableGranularities: ["daily", "weekly", "monthly"],
  isAggregatable: m.aggregationFunction !== "avg",
  verificationInfo: m.verification
})

const respondDetail = (m: Metric) => respond("success", { data: detail(m) })

/**
 * @since 0.1.0
 * @category layers
 */
export const V2MetricsLive = HttpApiBuilder.group(TributaryApi, "v2Metrics", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      serve(
        (p) => listMetrics(p, urlParams),
        ({ found, ...page }) => respond("success", { data: pageView(found, page, listItem) })
      ))
    .handle("create", ({ headers, payload }) =>
      changeOnce({ key: headers["idempotency-key"], body: payload }, (p) => createMetric(p, payload), byId("metric"), respondDetail))
    .handle("get", ({ path }) =>
      serve((p) => visibleMetric(p, path.id), ({ metric }) => respondDetail(metric)))
    .handle("update", ({ path, payload }) =>
      change((p) => updateMetric(p, path.id, payload), byId("metric"), respondDetail))
    .handle("delete", ({ path }) =>
      change(
        (p) => deleteMetric(p, path.id),
        byId("metric"),
        (m) => respond("success", { data: { message: `Metric ${m.id} was deleted` } })
      ))
    .handle("dimensionValues", ({ payload }) =>
      serve((p) => dimensionValues(p, payload), (values) => respond("success", { data: { dimensionValues: values } })))
    .handle("drilldown", ({ payload, urlParams }) =>
      serve((p) => drilldown(p, urlParams, payload), (data) => respond("success", { data })))
    .handle("data", ({ payload }) =>
      serve((p) => metricData(p, payload), (data) => respond("success", { data })))
    .handle("values", ({ path, payload }) =>
      serve((p) => metricValues(p, path.id, payload), (data) => respond("success", { data })))
    .handle("getLineage", ({ path }) =>
      serve((p) => metricLineage(p, path.id), (data) => respond("success", { data })))
    .handle("usages", ({ path }) =>
      serve((p) => metricUsages(p, path.id), (items) => respond("success", { data: { items } })))
    .handle("getVerification", ({ path }) =>
      serve((p) => visibleMetric(p, path.id), ({ metric }) => respond("success", { data: metric.verification })))
    .handle("setVerification", ({ path, payload }) =>
      change(
        (p) => setMetricVerification(p, path.id, payload.isVerified),
        byId("metric"),
        (m) => respond("success", { data: m.verification })
      )))
