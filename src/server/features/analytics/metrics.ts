/**
 * What a metric computes from a dataset's rows: the definition's checks, filters, the rows of
 * a period, values per bucket and dimension value, distinct dimension values and drilldown
 * pages. Pure: the rows come in, the answers go out; no store, no clock, no I/O.
 *
 * One implementation for both stores: the rows a metric reads may hold calculated columns and
 * be filtered by the dataset's modifications, which are evaluated by our own code, not SQL.
 *
 * @since 0.1.0
 */
import { Either } from "effect"
import type {
  AggregationFunction,
  ColumnRef,
  FilterCondition,
  FilterGroup,
  FilterOperator,
  LogicalOperator
} from "../metrics/definitions.js"
import type { Column, RecordValue, Row } from "../../../records.js"
import { InvalidField } from "../../core/errors.js"
import { sortedBy } from "../../core/store/order.js"
import type { SortOrder } from "../../core/store/Store.js"
import {
  bucketStart,
  formatLocalDate,
  formatZoned,
  type Granularity,
  instantOf,
  type LocalDate,
  localDateAt,
  nextBucketStart,
  startOfLocalDate
} from "./zonedTime.js"

/**
 * Filters applied on top of a metric (drilldown, values, board blocks): groups of conditions.
 *
 * @since 0.1.0
 * @category models
 */
export interface AppliedFilters {
  readonly logicalOperator: LogicalOperator
  readonly groups: ReadonlyArray<FilterGroup>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface MetricDefinition {
  readonly measure: ColumnRef
  readonly date: ColumnRef
  readonly aggregationFunction: AggregationFunction
  readonly dimensions: ReadonlyArray<ColumnRef>
  readonly filters: FilterGroup | null
}

/**
 * A row test.
 *
 * @since 0.1.0
 * @category models
 */
export type RowPredicate = (row: Row) => boolean

const invalid = (field: string, message: string) => Either.left(new InvalidField({ field, message }))

const columnIn = (columns: ReadonlyArray<Column>, id: string) => columns.find((c) => c.id === id)

const positive: Record<string, FilterOperator> = {
  NONE_OF: "ANY_OF",
  NOT_EQUALS: "EQUALS",
  NOT_CONTAINS: "CONTAINS",
  IS_NOT_EMPTY: "IS_EMPTY"
}

const orderingOperators: ReadonlyArray<FilterOperator> = ["GREATER_THAN", "GREATER_THAN_OR_EQUAL", "LESS_THAN", "LESS_THAN_OR_EQUAL"]
const textOperators: ReadonlyArray<FilterOperator> = ["CONTAINS", "STARTS_WITH", "ENDS_WITH"]

const isEmpty = (cell: RecordValue | undefined) =>
  cell === undefined || cell === null || cell === "" || (Array.isArray(cell) && cell.length === 0)

/** The scalars of a cell: an array of strings holds several (a multi-valued dimension). */
const scalarsOf = (cell: RecordValue | undefined): ReadonlyArray<string | number> =>
  cell === undefined || cell === null ? [] : Array.isArray(cell) ? cell : [cell as string | number]

/**
 * Compiles one condition against the columns: the field must be a column, the operator must
 * suit its type and the values must read as that type (numbers for `number` columns, ISO
 * dates for `datetime` ones, read in `timeZone`). A negated operator is the negation of its
 * positive one, so `NONE_OF` keeps rows without a value; a multi-valued cell passes a positive
 * operator when any of its values does.
 *
 * @since 0.1.0
 * @category utils
 */
export const compileCondition = (
  columns: ReadonlyArray<Column>,
  timeZone: string,
  condition: FilterCondition,
  path: string
): Either.Either<RowPredicate, InvalidField> => {
  const column = columnIn(columns, condition.field)
  if (column === undefined) return invalid(`${path}.field`, `column "${condition.field.slice(0, 100)}" is not in the dataset schema`)
  const { operator, values } = condition
  const base = positive[operator] ?? operator
  if (base === "IS_EMPTY") {
    if (values.length > 0) return invalid(`${path}.values`, `${operator} takes no values`)
    const test: RowPredicate = (row) => isEmpty(row[column.id])
    return Either.right(operator === base ? test : (row) => !test(row))
  }
  if (base === "ANY_OF" ? values.length === 0 : values.length !== 1) {
    return invalid(`${path}.values`, base === "ANY_OF" ? `${operator} needs at least one value` : `${operator} takes exactly one value`)
  }
  if (textOperators.includes(base) && column.dataType !== "string") {
    return invalid(`${path}.operator`, `${operator} applies to string columns; "${column.id}" is a ${column.dataType} column`)
  }
  if (orderingOperators.includes(base) && column.dataType === "string") {
    return invalid(`${path}.operator`, `${operator} applies to number and datetime columns; "${column.id}" is a string column`)
  }
  // Each value as the column's type: what cells are compared with.
  const operands: Array<string | number> = []
  for (const [i, value] of values.entries()) {
    if (column.dataType === "number") {
      const n = value.trim() === "" ? Number.NaN : Number(value)
      if (!Number.isFinite(n)) return invalid(`${path}.values[${i}]`, `"${value.slice(0, 100)}" is not a number`)
      operands.push(n)
    } else if (column.dataType === "datetime") {
      const at = instantOf(value, timeZone)
      if (at === undefined) return invalid(`${path}.values[${i}]`, `"${value.slice(0, 100)}" is not an ISO 8601 date or date-time`)
      operands.push(at)
    } else {
      operands.push(value)
    }
  }
  const asOperand = (scalar: string | number): string | number | undefined =>
    column.dataType === "datetime" ? (typeof scalar === "string" ? instantOf(scalar, timeZone) : undefined) : scalar
  const first = operands[0]!
  const matches = (x: string | number): boolean => {
    switch (base) {
      case "ANY_OF":
      case "EQUALS":
        return operands.includes(x)
      case "CONTAINS":
        return String(x).toLowerCase().includes(String(first).toLowerCase())
      case "STARTS_WITH":
        return String(x).toLowerCase().startsWith(String(first).toLowerCase())
      case "ENDS_WITH":
        return String(x).toLowerCase().endsWith(String(first).toLowerCase())
      case "GREATER_THAN":
        return x > first
      case "GREATER_THAN_OR_EQUAL":
        return x >= first
      case "LESS_THAN":
        return x < first
      case "LESS_THAN_OR_EQUAL":
        return x <= first
      default:
        return false
    }
  }
  const test: RowPredicate = (row) =>
    scalarsOf(row[column.id]).some((scalar) => {
      const x = asOperand(scalar)
      return x !== undefined && matches(x)
    })
  return Either.right(operator === base ? test : (row) => !test(row))
}

const join = (logicalOperator: LogicalOperator, tests: ReadonlyArray<RowPredicate>): RowPredicate =>
  tests.length === 0
    ? () => true
    : logicalOperator === "and"
    ? (row) => tests.every((t) => t(row))
    : (row) => tests.some((t) => t(row))

/** Compiles each part with its path and joins the tests with the logical operator. */
const compileJoined = <A>(
  logicalOperator: LogicalOperator,
  parts: ReadonlyArray<A>,
  compile: (part: A, path: string) => Either.Either<RowPredicate, InvalidField>,
  path: (i: number) => string
): Either.Either<RowPredicate, InvalidField> =>
  Either.map(Either.all(parts.map((part, i) => compile(part, path(i)))), (tests) => join(logicalOperator, tests))

/**
 * Compiles a group of conditions (an empty group keeps every row).
 *
 * @since 0.1.0
 * @category utils
 */
export const compileGroup = (
  columns: ReadonlyArray<Column>,
  timeZone: string,
  group: FilterGroup,
  path: string
): Either.Either<RowPredicate, InvalidField> =>
  compileJoined(
    group.logicalOperator,
    group.conditions,
    (c, at) => compileCondition(columns, timeZone, c, at),
    (i) => `${path}.conditions[${i}]`
  )

/**
 * Compiles applied filters: groups joined by the outer logical operator.
 *
 * @since 0.1.0
 * @category utils
 */
export const compileApplied = (
  columns: ReadonlyArray<Column>,
  timeZone: string,
  filters: AppliedFilters,
  path: string
): Either.Either<RowPredicate, InvalidField> =>
  compileJoined(
    filters.logicalOperator,
    filters.groups,
    (g, at) => compileGroup(columns, timeZone, g, at),
    (i) => `${path}.groups[${i}]`
  )

/**
 * Checks a definition against the dataset's columns: the measure is a column (a `number` one
 * unless the aggregation is `count`), the date a `datetime` column, the dimensions distinct
 * columns, and the filters compile. Gives the definition's own filter.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkDefinition = (
  columns: ReadonlyArray<Column>,
  timeZone: string,
  definition: MetricDefinition
): Either.Either<RowPredicate, InvalidField> => {
  const measure = columnIn(columns, definition.measure.id)
  if (measure === undefined) return invalid("measure.id", `column "${definition.measure.id.slice(0, 100)}" is not in the dataset schema`)
  if (definition.aggregationFunction !== "count" && measure.dataType !== "number") {
    return invalid(
      "measure.id",
      `${definition.aggregationFunction} needs a number column; "${measure.id}" is a ${measure.dataType} column (count takes any)`
    )
  }
  const date = columnIn(columns, definition.date.id)
  if (date === undefined) return invalid("date.id", `column "${definition.date.id.slice(0, 100)}" is not in the dataset schema`)
  if (date.dataType !== "datetime") return invalid("date.id", `"${date.id}" is a ${date.dataType} column; the date must be a datetime column`)
  const seen = new Set<string>()
  for (const [i, dimension] of definition.dimensions.entries()) {
    if (columnIn(columns, dimension.id) === undefined) {
      return invalid(`dimensions[${i}].id`, `column "${dimension.id.slice(0, 100)}" is not in the dataset schema`)
    }
    if (seen.has(dimension.id)) return invalid(`dimensions[${i}].id`, `dimension "${dimension.id}" is listed twice`)
    seen.add(dimension.id)
  }
  return definition.filters === null
    ? Either.right(() => true)
    : compileGroup(columns, timeZone, definition.filters, "filters")
}

/**
 * A period in Unix seconds, both ends included.
 *
 * @since 0.1.0
 * @category models
 */
export interface Period {
  readonly startTimestamp: number
  readonly endTimestamp: number
}

/** A row of a period with the instant of its date. */
interface DatedRow {
  readonly row: Row
  readonly at: number
}

/**
 * The rows behind a metric for a period: a date cell in the period (read in `timeZone`) and
 * passing `keep`. Rows without a readable date are in no period.
 *
 * @since 0.1.0
 * @category utils
 */
export const rowsInPeriod = (
  rows: Iterable<Row>,
  dateColumn: string,
  timeZone: string,
  period: Period | undefined,
  keep: RowPredicate
): ReadonlyArray<DatedRow> => {
  const out: Array<DatedRow> = []
  for (const row of rows) {
    const cell = row[dateColumn]
    if (typeof cell !== "string") continue
    const at = instantOf(cell, timeZone)
    if (at === undefined) continue
    const seconds = Math.floor(at / 1000)
    if (period !== undefined && (seconds < period.startTimestamp || seconds > period.endTimestamp)) continue
    if (keep(row)) out.push({ row, at })
  }
  return out
}

/**
 * The dimension values a row falls under: each value of a multi-valued cell once, `null`
 * for a row without a value.
 *
 * @since 0.1.0
 * @category utils
 */
export const dimensionValuesOf = (cell: RecordValue | undefined): ReadonlyArray<string | null> => {
  const scalars = scalarsOf(cell)
  return scalars.length === 0 ? [null] : [...new Set(scalars.map(String))]
}

/** Running figures of one bucket. */
class Accumulator {
  rowCount = 0
  measured = 0
  sum = 0
  min = Infinity
  max = -Infinity
  add(cell: RecordValue | undefined) {
    this.rowCount++
    if (cell === undefined || cell === null) return
    this.measured++
    if (typeof cell !== "number") return
    this.sum += cell
    if (cell < this.min) this.min = cell
    if (cell > this.max) this.max = cell
  }
  value(aggregation: AggregationFunction): number | null {
    if (aggregation === "count") return this.measured
    if (this.measured === 0) return null
    switch (aggregation) {
      case "sum":
        return this.sum
      case "avg":
        return this.sum / this.measured
      case "min":
        return this.min
      case "max":
        return this.max
    }
  }
}

/**
 * The value of a metric over some rows, as SQL would give it: `count` counts rows whose
 * measure has a value; `sum`, `avg`, `min` and `max` are null without any.
 *
 * @since 0.1.0
 * @category utils
 */
export const aggregate = (
  cells: Iterable<RecordValue | undefined>,
  aggregation: AggregationFunction
): { readonly value: number | null; readonly rowCount: number } => {
  const acc = new Accumulator()
  for (const cell of cells) acc.add(cell)
  return { value: acc.value(aggregation), rowCount: acc.rowCount }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ValuesQuery {
  readonly period?: Period | undefined
  /** Without one: a single bucket for the whole period. */
  readonly granularity?: Granularity | undefined
  /** Break the values down by this dimension's values. */
  readonly dimension?: string | undefined
  readonly filter?: RowPredicate | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ValueItem {
  /** The bucket's first local day; null for the whole period. */
  readonly date: string | null
  /** The bucket's bounds, ISO 8601 with the zone's offset; `end` excluded. Null when unbounded. */
  readonly start: string | null
  readonly end: string | null
  readonly dimensionValue: string | null
  readonly value: number | null
  readonly rowCount: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface MetricValues {
  readonly total: { readonly value: number | null; readonly rowCount: number }
  readonly items: ReadonlyArray<ValueItem>
}

const dayKey = (date: LocalDate) => date.year * 10_000 + date.month * 100 + date.day

/**
 * A metric's values: the total of the period, and one item per bucket (and dimension value)
 * that holds at least one row, in bucket order, then dimension value order (null last).
 *
 * @since 0.1.0
 * @category utils
 */
export const metricValues = (
  rows: Iterable<Row>,
  definition: MetricDefinition,
  keep: RowPredicate,
  timeZone: string,
  query: ValuesQuery
): MetricValues => {
  const extra = query.filter
  const dated = rowsInPeriod(rows, definition.date.id, timeZone, query.period, extra === undefined ? keep : (row) => keep(row) && extra(row))
  const measure = definition.measure.id
  const total = aggregate(dated.map((d) => d.row[measure]), definition.aggregationFunction)
  const buckets = new Map<string, { readonly start: LocalDate | null; readonly dimensionValue: string | null; readonly acc: Accumulator }>()
  for (const { at, row } of dated) {
    const start = query.granularity === undefined ? null : bucketStart(localDateAt(at, timeZone), query.granularity)
    const values = query.dimension === undefined ? [null] : dimensionValuesOf(row[query.dimension])
    for (const dimensionValue of values) {
      const key = JSON.stringify([start === null ? null : dayKey(start), dimensionValue])
      let bucket = buckets.get(key)
      if (bucket === undefined) {
        bucket = { start, dimensionValue, acc: new Accumulator() }
        buckets.set(key, bucket)
      }
      bucket.acc.add(row[measure])
    }
  }
  const period = query.period
  const items = [...buckets.values()]
    .sort((a, b) => {
      const byStart = (a.start === null ? 0 : dayKey(a.start)) - (b.start === null ? 0 : dayKey(b.start))
      if (byStart !== 0) return byStart
      if (a.dimensionValue === b.dimensionValue) return 0
      if (a.dimensionValue === null) return 1
      if (b.dimensionValue === null) return -1
      return a.dimensionValue < b.dimensionValue ? -1 : 1
    })
    .map(({ acc, dimensionValue, start }): ValueItem => {
      const bounds = start === null || query.granularity === undefined
        ? {
          date: null,
          start: period === undefined ? null : formatZoned(period.startTimestamp * 1000, timeZone),
          end: period === undefined ? null : formatZoned((period.endTimestamp + 1) * 1000, timeZone)
        }
        : {
          date: formatLocalDate(start),
          start: formatZoned(startOfLocalDate(start, timeZone), timeZone),
          end: formatZoned(startOfLocalDate(nextBucketStart(start, query.granularity), timeZone), timeZone)
        }
      return { ...bounds, dimensionValue, value: acc.value(definition.aggregationFunction), rowCount: acc.rowCount }
    })
  return { total, items }
}

/**
 * The distinct values of a dimension among the rows that `keep` keeps, sorted
 * (case-insensitively), without the empty value.
 *
 * @since 0.1.0
 * @category utils
 */
export const distinctDimensionValues = (rows: Iterable<Row>, dimension: string, keep: RowPredicate): ReadonlyArray<string> => {
  const values = new Set<string>()
  for (const row of rows) {
    if (!keep(row)) continue
    for (const value of dimensionValuesOf(row[dimension])) if (value !== null) values.add(value)
  }
  return sortedBy([...values], (v) => v, "asc")
}

/**
 * The value a cell sorts by: instants for `datetime` columns, numbers, strings (a multi-valued
 * cell by its values joined); null sorts last.
 *
 * @since 0.1.0
 * @category utils
 */
export const sortValueOf = (column: Column, timeZone: string) => (row: Row): string | number | null => {
  const cell = row[column.id]
  if (cell === undefined || cell === null) return null
  if (Array.isArray(cell)) return cell.join(", ")
  if (column.dataType === "datetime" && typeof cell === "string") return instantOf(cell, timeZone) ?? null
  return cell as string | number
}

/**
 * Rows sorted by a column (stable: ties keep storage order), or in storage order.
 *
 * @since 0.1.0
 * @category utils
 */
export const sortRows = (
  rows: ReadonlyArray<Row>,
  timeZone: string,
  sort: { readonly column: Column; readonly order: SortOrder } | undefined
): ReadonlyArray<Row> => sort === undefined ? rows : sortedBy(rows, sortValueOf(sort.column, timeZone), sort.order)
