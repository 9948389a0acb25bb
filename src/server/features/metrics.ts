/**
 * Custom metrics: define one over a dataset, read its values, its dimension values and the
 * rows behind it (drilldown), its lineage and verification.
 *
 * The figures are computed by the pure core (`analytics/metrics.ts`) over the rows that
 * {@link metricRows} reads: one place decides what rows a metric sees.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Either, Option } from "effect"
import type { Principal } from "../../api/security.js"
import type { Column, Row } from "../../records.js"
import {
  type AppliedFilters,
  checkDefinition,
  compileApplied,
  distinctDimensionValues,
  type MetricDefinition,
  metricValues as computeValues,
  type Period,
  rowsInPeriod,
  type RowPredicate,
  sortRows
} from "./analytics/metrics.js"
import type { AggregationFunction, ColumnRef, FilterGroup } from "./metrics/definitions.js"
import type { Granularity } from "./analytics/zonedTime.js"
import { requireRole } from "../core/permissions.js"
import { now } from "../core/clock.js"
import { InvalidField, NotFound } from "../core/errors.js"
import { type PageRequest, sliceOf, sortOf } from "../core/paging.js"
import {
  type Dataset,
  type DatasetRef,
  type SortOrder,
  unverified
} from "../core/store/Store.js"
import { IngestionStore } from "../core/store/ports/ingestions.js"
import { type Metric, type MetricPatch, MetricStore } from "./metrics/store.js"
import { SourceStore } from "../core/store/ports/sources.js"
import { canSee } from "../core/permissions.js"
import { visibleDataset } from "../core/catalog/datasets.js"
import { planOf } from "./modifications/rows.js"
import { periodOfDateRange } from "./analytics/dateRange.js"

const invalid = (field: string, message: string) => Effect.fail(new InvalidField({ field, message }))

/**
 * The time zone a dataset's dates are read in: its own, else UTC.
 *
 * @since 0.1.0
 * @category utils
 */
export const timeZoneOf = (dataset: Dataset): string => dataset.timezone ?? "UTC"

/**
 * The columns a metric over `dataset` may use: stored and calculated, hidden ones included
 * (formulas and filters may use them too).
 *
 * @since 0.1.0
 * @category utils
 */
export const metricColumns = (dataset: Dataset): ReadonlyArray<Column> => {
  return planOf(dataset).columns.map((c): Column => ({ id: c.id, dataType: c.dataType }))
}

/**
 * The columns and rows a metric over `dataset` reads: the one place that decides them. Rows
 * go through the dataset's stored modifications (`planOf`, as for every reader of rows:
 * calculated columns evaluated, filtered rows dropped,
 * data type changes applied). All rows are read into memory (see docs/decisions.md on the cost).
 *
 * @since 0.1.0
 * @category utils
 */
export const metricRows = (dataset: Dataset) =>
  Effect.gen(function*() {
    const store = yield* IngestionStore
    const page = yield* store.rows(dataset.id, { offset: 0, limit: Number.MAX_SAFE_INTEGER })
    const plan = planOf(dataset)
    const columns = metricColumns(dataset)
    if (!plan.changesRows) return { columns, rows: page.items as ReadonlyArray<Row> }
    const rows: Array<Row> = []
    for (const stored of page.items) {
      const evaluated = plan.evaluate(stored)
      if (plan.keep(evaluated)) rows.push(evaluated)
    }
    return { columns, rows }
  })

/**
 * A metric the principal may see (the one of a dataset it may see), with its dataset;
 * `NotFound` otherwise.
 *
 * @since 0.1.0
 * @category utils
 */
export const visibleMetric = (principal: Principal, id: string) =>
  Effect.gen(function*() {
    const store = yield* MetricStore
    const metric = yield* store.metric(id)
    if (Option.isNone(metric) || metric.value.organizationId !== principal.organizationId) {
      return yield* new NotFound({ resource: "Metric", id })
    }
    const dataset = yield* visibleDataset(principal, metric.value.datasetId).pipe(
      Effect.catchTag("NotFound", () => new NotFound({ resource: "Metric", id }))
    )
    return { metric: metric.value, dataset }
  })

const editableMetric = (principal: Principal, id: string, action: string) =>
  Effect.tap(visibleMetric(principal, id), () => requireRole(principal, "editor", action))

/** The definition's checks against what the metric reads; the definition's own filter. */
const checked = (columns: ReadonlyArray<Column>, dataset: Dataset, definition: MetricDefinition) =>
  Either.match(checkDefinition(columns, timeZoneOf(dataset), definition), {
    onLeft: (error) => Effect.fail(error),
    onRight: (keep) => Effect.succeed(keep)
  })

/**
 * @since 0.1.0
 * @category models
 */
export interface CreateMetric {
  readonly name: string
  readonly datasetId: DatasetRef
  readonly measure: ColumnRef
  readonly date: ColumnRef
  readonly aggregationFunction?: AggregationFunction | undefined
  readonly dimensions?: ReadonlyArray<ColumnRef> | undefined
  readonly filters?: FilterGroup | undefined
}

/**
 * Defines a metric over a visible dataset that has received data; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const createMetric = (principal: Principal, input: CreateMetric) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, input.datasetId)
    yield* requireRole(principal, "editor", "create metrics")
    // As the service: a dataset that never received data has nothing to define a metric on.
    if (dataset.activity?.lastSuccessAt == null) {
      return yield* invalid("datasetId", `dataset ${input.datasetId} has not received any data yet; ingest rows before defining a metric on it`)
    }
    const definition: MetricDefinition = {
      measure: input.measure,
      date: input.date,
      aggregationFunction: input.aggregationFunction ?? "sum",
      dimensions: input.dimensions ?? [],
      filters: input.filters ?? null
    }
    yield* checked(metricColumns(dataset), dataset, definition)
    const store = yield* MetricStore
    return yield* store.createMetric({
      ...definition,
      organizationId: principal.organizationId,
      dataSourceId: dataset.dataSourceId,
      datasetId: dataset.id,
      name: input.name,
      verification: unverified,
      createdBy: { id: principal.userId, name: principal.userName }
    })
  })

/**
 * @since 0.1.0
 * @category models
 */
export interface UpdateMetric {
  readonly name?: string | undefined
  readonly measure?: ColumnRef | undefined
  readonly date?: ColumnRef | undefined
  readonly aggregationFunction?: AggregationFunction | undefined
  readonly dimensions?: ReadonlyArray<ColumnRef> | undefined
  readonly filters?: {
    readonly logicalOperator?: FilterGroup["logicalOperator"] | undefined
    readonly conditions?: FilterGroup["conditions"] | undefined
  } | undefined
}

const storedOrNotFound = (id: string) =>
  Effect.flatMap(Option.match({
    onNone: () => Effect.fail(new NotFound({ resource: "Metric", id })),
    onSome: (metric: Metric) => Effect.succeed(metric)
  }))

/**
 * Changes a metric: fields left out keep their value, `dimensions` replaces the list, filters
 * without `conditions` keep the stored ones (`[]` clears). The result is checked as a new
 * definition would be.
 *
 * @since 0.1.0
 * @category utils
 */
export const updateMetric = (principal: Principal, id: string, change: UpdateMetric) =>
  Effect.gen(function*() {
    const { dataset, metric } = yield* editableMetric(principal, id, "change metrics")
    const filters: FilterGroup | null = change.filters === undefined ? metric.filters : {
      logicalOperator: change.filters.logicalOperator ?? metric.filters?.logicalOperator ?? "and",
      conditions: change.filters.conditions ?? metric.filters?.conditions ?? []
    }
    const definition: MetricDefinition = {
      measure: change.measure ?? metric.measure,
      date: change.date ?? metric.date,
      aggregationFunction: change.aggregationFunction ?? metric.aggregationFunction,
      dimensions: change.dimensions ?? metric.dimensions,
      filters: filters !== null && filters.conditions.length === 0 ? null : filters
    }
    yield* checked(metricColumns(dataset), dataset, definition)
    const patch: MetricPatch = { ...definition, ...(change.name === undefined ? {} : { name: change.name }) }
    const store = yield* MetricStore
    return yield* store.updateMetric(metric.id, patch).pipe(storedOrNotFound(id))
  })

/**
 * Deletes a metric; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const deleteMetric = (principal: Principal, id: string) =>
  Effect.gen(function*() {
    const { metric } = yield* editableMetric(principal, id, "delete metrics")
    const store = yield* MetricStore
    yield* store.deleteMetric(metric.id)
    return metric
  })

/**
 * Marks a metric verified (by the principal, now) or not; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const setMetricVerification = (principal: Principal, id: string, isVerified: boolean) =>
  Effect.gen(function*() {
    const { metric } = yield* editableMetric(principal, id, "verify metrics")
    const verification = isVerified
      ? { isVerified: true, verifiedAt: yield* now, verifiedBy: { id: principal.userId, name: principal.userName } }
      : unverified
    const store = yield* MetricStore
    return yield* store.updateMetric(metric.id, { verification }).pipe(storedOrNotFound(id))
  })

/**
 * @since 0.1.0
 * @category models
 */
export interface MetricListParams extends PageRequest {
  readonly sourceId?: number | undefined
  readonly search?: string | undefined
  readonly sortBy?: "name" | "createdAt" | undefined
  readonly sortOrder?: SortOrder | undefined
}

/**
 * A page of the metrics the principal may see, optionally of one data source.
 *
 * @since 0.1.0
 * @category utils
 */
export const listMetrics = (principal: Principal, params: MetricListParams) =>
  Effect.gen(function*() {
    const store = yield* MetricStore
    const { page, pageSize, slice } = sliceOf(params)
    const found = yield* store.listMetrics({
      viewer: principal,
      dataSourceId: params.sourceId,
      search: params.search,
      sort: sortOf(params),
      ...slice
    })
    return { page, pageSize, found }
  })

/**
 * The metrics built on a dataset that the principal may see (for the dataset's lineage).
 *
 * @since 0.1.0
 * @category utils
 */
export const metricsOfDataset = (principal: Principal, dataset: Dataset) =>
  Effect.flatMap(MetricStore, (store) =>
    store.listMetrics({ viewer: principal, datasetId: dataset.id, offset: 0, limit: Number.MAX_SAFE_INTEGER })).pipe(
      Effect.map((page) => page.items)
    )

/**
 * A metric named by its data source and key (or its full id), as the dimension-values and
 * drilldown bodies name it.
 *
 * @since 0.1.0
 * @category utils
 */
export const referencedMetric = (principal: Principal, ref: { readonly sourceId: number; readonly metricId: string }, field: string) =>
  Effect.gen(function*() {
    const id = ref.metricId.includes("|") ? ref.metricId : `${ref.sourceId}|${ref.metricId}`
    if (!id.startsWith(`${ref.sourceId}|`)) {
      return yield* invalid(`${field}.metricId`, `metric ${ref.metricId.slice(0, 100)} is not a metric of data source ${ref.sourceId}`)
    }
    return yield* visibleMetric(principal, id)
  })

const definitionOf = (metric: Metric): MetricDefinition => metric

/** The upper-case logical operators of applied filters, as the core takes them. */
const appliedFilters = (filters: WireAppliedFilters): AppliedFilters => ({
  logicalOperator: filters.logicalOperator === "AND" ? "and" : "or",
  groups: filters.groups.map((g) => ({
    logicalOperator: g.logicalOperator === "AND" ? "and" : "or",
    conditions: g.conditions
  }))
})

/**
 * @since 0.1.0
 * @category models
 */
export interface WireAppliedFilters {
  readonly logicalOperator: "AND" | "OR"
  readonly groups: ReadonlyArray<{
    readonly logicalOperator: "AND" | "OR"
    readonly conditions: AppliedFilters["groups"][number]["conditions"]
  }>
}

/**
 * What a metric reads, checked: the rows, the columns, the definition's filter and the
 * extra filters asked for.
 */
const metricInput = (metric: Metric, dataset: Dataset, filters: WireAppliedFilters | undefined) =>
  Effect.gen(function*() {
    const { columns, rows } = yield* metricRows(dataset)
    const keep = yield* checked(columns, dataset, definitionOf(metric))
    let extra: RowPredicate | undefined
    if (filters !== undefined) {
      extra = yield* Either.match(compileApplied(columns, timeZoneOf(dataset), appliedFilters(filters), "filters"), {
        onLeft: (error) => Effect.fail(error),
        onRight: (test) => Effect.succeed(test)
      })
    }
    const test = extra
    const all: RowPredicate = test === undefined ? keep : (row) => keep(row) && test(row)
    return { columns, rows, keep, all, timeZone: timeZoneOf(dataset) }
  })

const checkDimension = (metric: Metric, dimension: string, field: string) =>
  metric.dimensions.some((d) => d.id === dimension)
    ? Effect.void
    : invalid(
      field,
      `"${dimension.slice(0, 100)}" is not a dimension of metric ${metric.id}; available: ${
        metric.dimensions.length === 0 ? "none" : metric.dimensions.map((d) => d.id).join(", ")
      }`
    )

/**
 * @since 0.1.0
 * @category models
 */
export interface ValuesRequest {
  readonly period?: Period | undefined
  readonly granularity?: Granularity | undefined
  readonly dimensionId?: string | undefined
  readonly filters?: WireAppliedFilters | undefined
}

/**
 * A metric's values over a period: the total, and per bucket (and dimension value).
 *
 * @since 0.1.0
 * @category utils
 */
export const metricValues = (principal: Principal, id: string, request: ValuesRequest) =>
  Effect.gen(function*() {
    const { dataset, metric } = yield* visibleMetric(principal, id)
    if (request.dimensionId !== undefined) yield* checkDimension(metric, request.dimensionId, "dimensionId")
    const input = yield* metricInput(metric, dataset, request.filters)
    const values = computeValues(input.rows, metric, input.all, input.timeZone, {
      period: request.period,
      granularity: request.granularity,
      dimension: request.dimensionId
    })
    return {
      metricId: metric.id,
      aggregationFunction: metric.aggregationFunction,
      timezone: input.timeZone,
      granularity: request.granularity ?? null,
      dimensionId: request.dimensionId ?? null,
      ...values
    }
  })

/**
 * What the official CLI's `metric data` asks: a metric, a date range of days, optionally the
 * data source or dataset it must be of, the dimensions to break down by (the first is
 * answered, as for values) and filters.
 *
 * @since 0.1.0
 * @category models
 */
export interface MetricDataRequest {
  readonly metricId: string
  readonly dateRange: { readonly from: string; readonly to: string; readonly granularity: Granularity }
  readonly dataSourceId?: number | undefined
  readonly datasetId?: DatasetRef | undefined
  readonly dimensions?: ReadonlyArray<string> | undefined
  readonly filters?: WireAppliedFilters | undefined
}

/**
 * A metric's values over a range of days (`today`, `30daysAgo`, `2026-01-01`, in the data's
 * time zone): the values of {@link metricValues} for the period the range names.
 *
 * @since 0.1.0
 * @category utils
 */
export const metricData = (principal: Principal, request: MetricDataRequest) =>
  Effect.gen(function*() {
    const { dataset, metric } = yield* visibleMetric(principal, request.metricId)
    if (request.dataSourceId !== undefined && metric.dataSourceId !== request.dataSourceId) {
      return yield* invalid("metricId", `metric ${metric.id} is not a metric of data source ${request.dataSourceId}`)
    }
    if (request.datasetId !== undefined) {
      const named = yield* visibleDataset(principal, request.datasetId)
      if (named.id !== dataset.id) return yield* invalid("metricId", `metric ${metric.id} is not a metric of dataset ${request.datasetId}`)
    }
    const period = yield* Either.match(periodOfDateRange(request.dateRange, yield* Clock.currentTimeMillis, timeZoneOf(dataset)), {
      onLeft: ({ field, message }) => invalid(`dateRange.${field}`, message),
      onRight: (p) => Effect.succeed(p)
    })
    const dimension = request.dimensions?.[0]
    if (dimension !== undefined) yield* checkDimension(metric, dimension, "dimensions[0]")
    const input = yield* metricInput(metric, dataset, request.filters)
    const values = computeValues(input.rows, metric, input.all, input.timeZone, {
      period,
      granularity: request.dateRange.granularity,
      dimension
    })
    return {
      metricId: metric.id,
      aggregationFunction: metric.aggregationFunction,
      timezone: input.timeZone,
      granularity: request.dateRange.granularity,
      dimensionId: dimension ?? null,
      ...values
    }
  })

/**
 * The distinct values of the first dimension asked of the first metric, among the metric's
 * rows (only those are honoured, as on the service).
 *
 * @since 0.1.0
 * @category utils
 */
export const dimensionValues = (
  principal: Principal,
  request: {
    readonly metrics: ReadonlyArray<{ readonly sourceId: number; readonly metricId: string; readonly dimensionIds: ReadonlyArray<string> }>
  }
) =>
  Effect.gen(function*() {
    const first = request.metrics[0]!
    const { dataset, metric } = yield* referencedMetric(principal, first, "metrics[0]")
    const dimension = first.dimensionIds[0]!
    yield* checkDimension(metric, dimension, "metrics[0].dimensionIds[0]")
    const input = yield* metricInput(metric, dataset, undefined)
    return distinctDimensionValues(input.rows, dimension, input.keep)
  })

/** Drilldown pages: from 0, 200 rows by default, at most 1000, as on the service. */
const drilldownPages = { defaultSize: 200, max: 1000, first: 0 }

/**
 * @since 0.1.0
 * @category models
 */
export interface DrilldownRequest {
  readonly sourceId: number
  readonly metricId: string
  readonly period: Period
  readonly dimensionIds?: ReadonlyArray<string> | undefined
  readonly filters?: WireAppliedFilters | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DrilldownParams extends PageRequest {
  readonly sortBy?: string | undefined
  readonly sortOrder?: SortOrder | undefined
}

/**
 * A page of the rows behind a metric for a period, filtered and sorted, with the columns
 * shown (all of them, or the date, the measure and the dimensions asked for).
 *
 * @since 0.1.0
 * @category utils
 */
export const drilldown = (principal: Principal, params: DrilldownParams, request: DrilldownRequest) =>
  Effect.gen(function*() {
    const { dataset, metric } = yield* referencedMetric(principal, request, "metricId")
    for (const [i, dimension] of (request.dimensionIds ?? []).entries()) {
      yield* checkDimension(metric, dimension, `dimensionIds[${i}]`)
    }
    const input = yield* metricInput(metric, dataset, request.filters)
    const sortBy = params.sortBy
    const sortColumn = sortBy === undefined ? undefined : input.columns.find((c) => c.id === sortBy)
    if (sortBy !== undefined && sortColumn === undefined) {
      return yield* invalid("sortBy", `column "${sortBy.slice(0, 100)}" is not in the dataset schema`)
    }
    const rows = rowsInPeriod(input.rows, metric.date.id, input.timeZone, request.period, input.all).map((d) => d.row)
    const sorted = sortRows(rows, input.timeZone, sortColumn === undefined ? undefined : { column: sortColumn, order: params.sortOrder ?? "asc" })
    const { page, pageSize, slice } = sliceOf(params, drilldownPages)
    const shown = request.dimensionIds === undefined
      ? input.columns
      : input.columns.filter((c) =>
        c.id === metric.date.id || c.id === metric.measure.id || request.dimensionIds!.includes(c.id)
      )
    const names = new Map<string, string>([metric.date, metric.measure, ...metric.dimensions].map((c) => [c.id, c.displayName]))
    const items = sorted.slice(slice.offset, slice.offset + slice.limit).map((row) =>
      Object.fromEntries(shown.map((c) => [c.id, row[c.id] ?? null]))
    )
    return {
      items,
      schema: { items: shown.map((c) => ({ id: c.id, displayName: names.get(c.id) ?? c.id, dataType: c.dataType })) },
      pagination: { page, pageSize, totalItems: sorted.length }
    }
  })

/**
 * What a metric is built from: its dataset and the dataset's data source.
 *
 * @since 0.1.0
 * @category utils
 */
export const metricLineage = (principal: Principal, id: string) =>
  Effect.gen(function*() {
    const { dataset, metric } = yield* visibleMetric(principal, id)
    const store = yield* SourceStore
    const dataSource = yield* store.dataSource(dataset.dataSourceId)
    return {
      id: metric.id,
      parents: [
        { id: String(dataset.number), name: dataset.name, type: "dataset" as const },
        ...(Option.isSome(dataSource) && canSee(principal, dataSource.value)
          ? [{ id: String(dataSource.value.id), name: dataSource.value.name, type: "dataSource" as const }]
          : [])
      ],
      children: []
    }
  })
