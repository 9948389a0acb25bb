/**
 * v2 metric handlers: metrics, their values, dimension values, drilldown, lineage, usages
 * and verification. Decode, call one service, present.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { CurrentPrincipal } from "../../../api/security.js"
import { present } from "../wireErrors.js"
import { idempotent } from "../idempotency.js"
import { pageView } from "../paging.js"
import { respond } from "../envelope.js"
import { metricUsages } from "../../features/boards.js"
import {
  createMetric,
  deleteMetric,
  dimensionValues,
  drilldown,
  listMetrics,
  metricLineage,
  metricValues,
  setMetricVerification,
  updateMetric,
  visibleMetric
} from "../../features/metrics.js"
import type { Metric } from "../../core/store/Store.js"

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

/** @since 0.1.0 */
export const V2MetricsLive = HttpApiBuilder.group(TributaryApi, "v2Metrics", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => listMetrics(p, urlParams)),
        Effect.flatMap(({ found, ...page }) => respond("success", { data: pageView(found, page, listItem) })),
        present
      ))
    .handle("create", ({ headers, payload }) =>
      Effect.flatMap(CurrentPrincipal, (principal) =>
        idempotent(headers["idempotency-key"], payload, createMetric(principal, payload).pipe(Effect.flatMap(respondDetail))))
        .pipe(present))
    .handle("get", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleMetric(p, path.id)),
        Effect.flatMap(({ metric }) => respondDetail(metric)),
        present
      ))
    .handle("update", ({ path, payload }) =>
      CurrentPrincipal.pipe(Effect.flatMap((p) => updateMetric(p, path.id, payload)), Effect.flatMap(respondDetail), present))
    .handle("delete", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => deleteMetric(p, path.id)),
        Effect.flatMap((m) => respond("success", { data: { message: `Metric ${m.id} was deleted` } })),
        present
      ))
    .handle("dimensionValues", ({ payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => dimensionValues(p, payload)),
        Effect.flatMap((values) => respond("success", { data: { dimensionValues: values } })),
        present
      ))
    .handle("drilldown", ({ payload, urlParams }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => drilldown(p, urlParams, payload)),
        Effect.flatMap((data) => respond("success", { data })),
        present
      ))
    .handle("values", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => metricValues(p, path.id, payload)),
        Effect.flatMap((data) => respond("success", { data })),
        present
      ))
    .handle("getLineage", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => metricLineage(p, path.id)),
        Effect.flatMap((data) => respond("success", { data })),
        present
      ))
    .handle("usages", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => metricUsages(p, path.id)),
        Effect.flatMap((items) => respond("success", { data: { items } })),
        present
      ))
    .handle("getVerification", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleMetric(p, path.id)),
        Effect.flatMap(({ metric }) => respond("success", { data: metric.verification })),
        present
      ))
    .handle("setVerification", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => setMetricVerification(p, path.id, payload.isVerified)),
        Effect.flatMap((m) => respond("success", { data: m.verification })),
        present
      )))
