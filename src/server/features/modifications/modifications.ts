/**
 * Dataset modifications: calculated columns (formulas), filters, display names, data type
 * changes, order and visibility, compiled against a dataset's schema into one {@link Plan}
 * that every reader of rows applies (preview, `GET data`, metrics), so that they all see the
 * same rows.
 *
 * A row goes through the plan in this order:
 * 1. stored columns are read; a column with a data type change is converted;
 * 2. calculated columns are evaluated in dependency order (a formula sees converted values
 *    and the calculated columns it refers to), each then converted if it has a data type change;
 * 3. filters decide whether the row is kept (every column's filter must pass);
 * 4. hidden columns are dropped from what is shown (formulas and filters may still use them).
 * Display names, order and output formats change the schema view only: rows stay keyed by id.
 *
 * @since 0.1.0
 */
import { withArticle } from "../../../internal/text.js"
import type {
  ColumnFilter,
  DataTypeChange,
  FilterCondition,
  Modifications
} from "../../core/definitions/modifications.js"
import type { Column, ColumnType, RecordValue, Row } from "../../../records.js"
import { isIsoDateTime } from "../../../records.js"
import {
  checkFormula,
  evaluate,
  type Expr,
  type FormulaError,
  parseFormula,
  referencedColumns,
  type Typed
} from "./formula.js"
import {
  conversionsByPhysicalType,
  filterRules,
  type LogicalType,
  outputFormatsByLogicalType,
  physicalTypeOf,
  scalableLogicalTypes,
  scaleOptions
} from "./rules.js"
import {
  cellValue,
  compareValues,
  formatWallClock,
  MaxStringValue,
  numberOfText,
  textOf,
  type Value
} from "./values.js"


/**
 * A problem with a definition: the field (`formulas.total`, `filters.amount.conditions[0].type`)
 * and why; `position` (1-based) for formula errors.
 *
 * @since 0.1.0
 * @category errors
 */
export interface ModificationError {
  readonly field: string
  readonly message: string
  readonly position?: number | undefined
}

/**
 * At most this many calculated columns per dataset.
 *
 * @since 0.1.0
 * @category defaults
 */
export const MaxFormulas = 50
/**
 * At most this many conditions per column filter.
 *
 * @since 0.1.0
 * @category defaults
 */
export const MaxConditions = 20
/**
 * At most this many values in an `in`/`not_in` condition.
 *
 * @since 0.1.0
 * @category defaults
 */
export const MaxInValues = 1000
/**
 * The longest calculated column id and display name.
 *
 * @since 0.1.0
 * @category defaults
 */
export const MaxNameLength = 255

/**
 * One column of the schema view.
 *
 * @since 0.1.0
 * @category models
 */
export interface ViewColumn {
  readonly id: string
  readonly displayName: string
  /** The type of the values rows carry (after a data type change). */
  readonly dataType: ColumnType
  /** The logical type: the data type change's output, or the column type. */
  readonly logicalType: LogicalType
  readonly order: number
  readonly visible: boolean
  readonly calculated: boolean
  /** The formula of a calculated column. */
  readonly formula: string | null
}

/**
 * A definition compiled against a schema.
 *
 * @since 0.1.0
 * @category models
 */
export interface Plan {
  /** Every column, stored and calculated, in display order. */
  readonly columns: ReadonlyArray<ViewColumn>
  /** The visible columns, in display order. */
  readonly visibleColumns: ReadonlyArray<ViewColumn>
  /** A column of the view by id. */
  readonly column: (id: string) => ViewColumn | undefined
  /** True when rows differ from the stored ones (formulas, filters or data type changes). */
  readonly changesRows: boolean
  /** True when some rows may be dropped (there are filters). */
  readonly filters: boolean
  /** A stored row with every column of the view (converted, calculated), hidden ones included. */
  readonly evaluate: (row: Row) => Row
  /** Whether an evaluated row passes the filters. */
  readonly keep: (evaluated: Row) => boolean
  /** An evaluated row with only the visible columns. */
  readonly visible: (evaluated: Row) => Row
  /** A stored row as readers show it: evaluated, filtered (undefined when dropped), visible columns. */
  readonly read: (row: Row) => Row | undefined
  /** The definition as the modification routes answer it: `order` and `visibility` cover every column. */
  readonly expanded: Modifications
}

/** @since 0.1.0 @category models */
export type Compiled =
  | { readonly _tag: "Plan"; readonly plan: Plan }
  | { readonly _tag: "Invalid"; readonly errors: ReadonlyArray<ModificationError> }

const hasOwn = (record: object, key: string) => Object.prototype.hasOwnProperty.call(record, key)

/** Own entries only, so that `__proto__` or `constructor` keys are data like any other. */
const entries = <A>(record: Readonly<Record<string, A>>): ReadonlyArray<readonly [string, A]> =>
  Object.keys(record).map((k) => [k, record[k]!] as const)

const controlCharacters = /[\u0000-\u001f\u007f]/

// ---- data type changes ------------------------------------------------------------------

const pad2 = (n: number) => String(n).padStart(2, "0")

/** A text date in a day-first, month-first or year-first format as an ISO date. */
const textDate = (s: string, format: string | null): Value => {
  const t = s.trim()
  if (format === null || format === "ISO_8601") return isIsoDateTime(t) ? t : null
  const patterns: Record<string, [RegExp, number, number, number]> = {
    "YYYY-MM-DD": [/^(\d{4})-(\d{1,2})-(\d{1,2})$/, 1, 2, 3],
    "YYYY/MM/DD": [/^(\d{4})\/(\d{1,2})\/(\d{1,2})$/, 1, 2, 3],
    "DD/MM/YYYY": [/^(\d{1,2})\/(\d{1,2})\/(\d{4})$/, 3, 2, 1],
    "MM/DD/YYYY": [/^(\d{1,2})\/(\d{1,2})\/(\d{4})$/, 3, 1, 2],
    "DD.MM.YYYY": [/^(\d{1,2})\.(\d{1,2})\.(\d{4})$/, 3, 2, 1]
  }
  if (!hasOwn(patterns, format)) return null
  const [pattern, y, m, d] = patterns[format]!
  const match = pattern.exec(t)
  if (match === null) return null
  const iso = `${match[y]}-${pad2(Number(match[m]))}-${pad2(Number(match[d]))}`
  return isIsoDateTime(iso) ? iso : null
}

/** Converts a value of column type `from` as a data type change says; null when it cannot. */
const convert = (value: Value, from: ColumnType, change: DataTypeChange): Value => {
  if (value === null) return null
  const to = physicalTypeOf(change.outputLogicalType as LogicalType)
  if (from === to) return value
  switch (to) {
    case "string":
      return textOf(value)
    case "number":
      return typeof value === "string" ? numberOfText(value) : null
    case "datetime":
      if (typeof value === "number") {
        const millis = change.inputFormat === "UNIX_MILLISECONDS" ? value : value * 1000
        return formatWallClock(Math.round(millis), false, "Z") ?? null
      }
      return typeof value === "string" ? textDate(value, change.inputFormat) : null
  }
}

// ---- filters ------------------------------------------------------------------------------

const valueFits = (value: unknown, type: ColumnType): value is string | number =>
  type === "number"
    ? typeof value === "number" && Number.isFinite(value)
    : typeof value === "string" && (type === "string" || isIsoDateTime(value))

const describeType = (type: ColumnType) =>
  type === "number" ? "a number" : type === "datetime" ? "an ISO 8601 date or date-time" : "a string"

/** Why a condition's value does not fit its operator and column type; undefined when it does. */
const conditionProblem = (condition: FilterCondition, type: ColumnType): string | undefined => {
  const value = condition.value
  switch (condition.type) {
    case "is_null":
    case "is_not_null":
      return value === undefined || value === null ? undefined : `${condition.type} takes no value (null)`
    case "in":
    case "not_in":
      if (!Array.isArray(value) || value.length === 0 || value.length > MaxInValues) {
        return `${condition.type} needs a list of 1 to ${MaxInValues} values`
      }
      return value.every((v) => valueFits(v, type)) ? undefined : `every value must be ${describeType(type)}`
    case "between":
      if (!Array.isArray(value) || value.length !== 2) return "between needs [low, high]"
      return value.every((v) => valueFits(v, type)) ? undefined : `both bounds must be ${describeType(type)}`
    default:
      return valueFits(value, type) ? undefined : `${condition.type} needs ${describeType(type)}`
  }
}

/** Whether a non-null cell passes a checked condition. Null cells pass `is_null` only. */
const passes = (cell: Value, condition: FilterCondition, type: ColumnType): boolean => {
  if (condition.type === "is_null") return cell === null
  if (condition.type === "is_not_null") return cell !== null
  if (cell === null) return false
  const value = condition.value as Value | ReadonlyArray<Value>
  const cmp = (v: unknown) => compareValues(cell, v as Value, type)
  switch (condition.type) {
    case "equals":
      return cmp(value) === 0
    case "not_equals":
      return cmp(value) !== 0
    case "contains":
      return String(cell).includes(value as string)
    case "not_contains":
      return !String(cell).includes(value as string)
    case "starts_with":
      return String(cell).startsWith(value as string)
    case "ends_with":
      return String(cell).endsWith(value as string)
    case "greater_than":
    case "after":
      return (cmp(value) ?? 0) > 0
    case "greater_than_or_equal":
    case "on_or_after":
      return (cmp(value) ?? -1) >= 0
    case "less_than":
    case "before":
      return (cmp(value) ?? 0) < 0
    case "less_than_or_equal":
    case "on_or_before":
      return (cmp(value) ?? 1) <= 0
    case "between": {
      const [low, high] = value as ReadonlyArray<Value>
      return (cmp(low) ?? -1) >= 0 && (cmp(high) ?? 1) <= 0
    }
    case "in":
      return (value as ReadonlyArray<Value>).some((v) => cmp(v) === 0)
    case "not_in":
      return !(value as ReadonlyArray<Value>).some((v) => cmp(v) === 0)
    default:
      return false
  }
}

/**
 * Whether a cell passes a column filter: all conditions (`AND`) or any (`OR`).
 *
 * @since 0.1.0
 * @category utils
 */
export const passesFilter = (cell: Value, filter: ColumnFilter, type: ColumnType): boolean =>
  filter.logicalOperator === "OR"
    ? filter.conditions.some((c) => passes(cell, c, type))
    : filter.conditions.every((c) => passes(cell, c, type))

// ---- compiling ------------------------------------------------------------------------------

interface Calculated {
  readonly id: string
  readonly formula: string
  readonly typed: Typed
  readonly type: ColumnType
}

/** The calculated columns in an order where each comes after those it reads, or the cycle. */
const dependencyOrder = (
  refs: ReadonlyMap<string, ReadonlyArray<string>>
): { readonly order: ReadonlyArray<string> } | { readonly cycle: ReadonlyArray<string> } => {
  // Kahn's algorithm over formula -> formula edges: no recursion, whatever the chain length.
  const waiting = new Map<string, number>()
  const readers = new Map<string, Array<string>>()
  for (const [id, reads] of refs) {
    const deps = reads.filter((r) => refs.has(r))
    waiting.set(id, deps.length)
    for (const d of deps) readers.set(d, [...(readers.get(d) ?? []), id])
  }
  const ready = [...refs.keys()].filter((id) => waiting.get(id) === 0)
  const order: Array<string> = []
  while (ready.length > 0) {
    const id = ready.shift()!
    order.push(id)
    for (const r of readers.get(id) ?? []) {
      const left = waiting.get(r)! - 1
      waiting.set(r, left)
      if (left === 0) ready.push(r)
    }
  }
  if (order.length === refs.size) return { order }
  return { cycle: [...refs.keys()].filter((id) => !order.includes(id)) }
}

const checkDataType = (
  field: string,
  change: DataTypeChange,
  from: ColumnType,
  errors: Array<ModificationError>
): void => {
  const conversion = conversionsByPhysicalType[from].find((c) => c.outputLogicalType === change.outputLogicalType)
  if (conversion === undefined) {
    const allowed = conversionsByPhysicalType[from].map((c) => c.outputLogicalType).join(", ")
    errors.push({
      field: `${field}.outputLogicalType`,
      message: `${withArticle(from)} column cannot become "${change.outputLogicalType}"; allowed: ${allowed}`
    })
    return
  }
  const formats = conversion.inputFormats
  if (!formats.some((f) => (f === null ? change.inputFormat === null : f.id === change.inputFormat))) {
    const ids = formats.filter((f) => f !== null).map((f) => f!.id)
    errors.push({
      field: `${field}.inputFormat`,
      message: ids.length === 0
        ? `${withArticle(from)} column becoming ${change.outputLogicalType} takes no input format (null)`
        : `unknown input format "${change.inputFormat}"; allowed: null, ${ids.join(", ")}`
    })
  }
  const output = change.outputFormat
  if (output !== null) {
    const logical = change.outputLogicalType as LogicalType
    const known = outputFormatsByLogicalType[logical]
    if (!known.some((f) => f.id === output.type)) {
      errors.push({
        field: `${field}.outputFormat.type`,
        message: `unknown output format "${output.type}" for ${logical}; allowed: ${known.map((f) => f.id).join(", ")}`
      })
    }
    if (output.scale !== null && output.scale !== "none") {
      if (!scaleOptions.some((s) => s.id === output.scale)) {
        errors.push({
          field: `${field}.outputFormat.scale`,
          message: `unknown scale "${output.scale}"; allowed: ${scaleOptions.map((s) => s.id).join(", ")}`
        })
      } else if (!scalableLogicalTypes.includes(logical)) {
        errors.push({ field: `${field}.outputFormat.scale`, message: `${logical} values cannot be scaled` })
      }
    }
  }
}

const formulaProblem = (field: string, error: FormulaError): ModificationError => ({
  field,
  message: `invalid formula at position ${error.position}: ${error.message}`,
  position: error.position
})

/**
 * Compiles a definition against a dataset's schema: the plan, or every problem found, each
 * naming its field. Checks: calculated column ids are new, non-blank, without control
 * characters; formulas parse and type-check (errors carry the position), give a number, text or
 * datetime, and do not refer to each other in a cycle; every other key names a column of the
 * view; filter operators are those of the column's type with fitting values; data type changes
 * are allowed conversions with known formats; `order` lists no column twice.
 *
 * @since 0.1.0
 * @category utils
 */
export const compile = (schema: ReadonlyArray<Column>, definition: Modifications): Compiled => {
  const errors: Array<ModificationError> = []
  const stored = new Map(schema.map((c) => [c.id, c]))

  // Formulas: parse, then type-check in dependency order.
  const formulaEntries = entries(definition.formulas)
  if (formulaEntries.length > MaxFormulas) {
    errors.push({ field: "formulas", message: `at most ${MaxFormulas} calculated columns` })
  }
  const parsed = new Map<string, { readonly formula: string; readonly expr: Expr }>()
  for (const [id, formula] of formulaEntries.slice(0, MaxFormulas)) {
    const field = `formulas.${id}`
    if (stored.has(id)) {
      errors.push({ field, message: `"${id}" is a stored column; a calculated column needs a new id` })
      continue
    }
    if (id.trim().length === 0 || id.length > MaxNameLength || controlCharacters.test(id)) {
      errors.push({ field, message: `a calculated column id must be 1 to ${MaxNameLength} characters, not blank, without control characters` })
      continue
    }
    const result = parseFormula(formula)
    if (result._tag === "FormulaError") {
      errors.push(formulaProblem(field, result.error))
      continue
    }
    parsed.set(id, { formula, expr: result.expr })
  }
  const refs = new Map([...parsed].map(([id, p]) => [id, referencedColumns(p.expr)]))
  const dependencies = dependencyOrder(refs)
  const calculated = new Map<string, Calculated>()
  const typeOfColumn = (id: string): ColumnType | undefined => {
    const change = hasOwn(definition.dataTypes, id) ? definition.dataTypes[id] : undefined
    const base = stored.get(id)?.dataType ?? calculated.get(id)?.type
    if (base === undefined) return undefined
    const to = change === undefined ? undefined : conversionsByPhysicalType[base].find((c) =>
      c.outputLogicalType === change.outputLogicalType
    )
    return to === undefined ? base : physicalTypeOf(to.outputLogicalType)
  }
  if ("cycle" in dependencies) {
    for (const id of dependencies.cycle) {
      const cyclic = parsed.get(id)!
      errors.push({
        field: `formulas.${id}`,
        message: `the formulas of ${dependencies.cycle.map((c) => `"${c}"`).join(", ")} refer to each other in a cycle`,
        position: 1 + cyclic.formula.indexOf("$")
      })
    }
  } else {
    for (const id of dependencies.order) {
      const { expr, formula } = parsed.get(id)!
      const checked = checkFormula(expr, (ref) => {
        // A reference to an invalid calculated column is reported there, not twice.
        if (formulaEntries.some(([f]) => f === ref) && !calculated.has(ref) && !stored.has(ref)) return "null"
        return typeOfColumn(ref)
      })
      const field = `formulas.${id}`
      if (checked._tag === "FormulaError") {
        errors.push(formulaProblem(field, checked.error))
        continue
      }
      const t = checked.typed.type
      if (t === "boolean" || t === "null") {
        errors.push({
          field,
          message: t === "boolean"
            ? "a formula must give a number, text or datetime, not a condition: wrap it in IF(condition, then, else)"
            : "a formula must give a number, text or datetime, not only NULL",
          position: 1
        })
        continue
      }
      calculated.set(id, { id, formula, typed: checked.typed, type: t })
    }
  }

  const known = (id: string) => stored.has(id) || hasOwn(definition.formulas, id)
  const unknownColumn = (field: string, id: string) =>
    errors.push({ field, message: `"${id.slice(0, 100)}" is not a column of the dataset or a calculated column` })

  // Data type changes (after formulas: a calculated column's type is its formula's).
  for (const [id, change] of entries(definition.dataTypes)) {
    const field = `dataTypes.${id}`
    if (!known(id)) {
      unknownColumn(field, id)
      continue
    }
    const from = stored.get(id)?.dataType ?? calculated.get(id)?.type
    if (from !== undefined) checkDataType(field, change, from, errors)
  }

  // Filters.
  for (const [id, filter] of entries(definition.filters)) {
    const field = `filters.${id}`
    if (!known(id)) {
      unknownColumn(field, id)
      continue
    }
    if (filter.conditions.length === 0 || filter.conditions.length > MaxConditions) {
      errors.push({ field: `${field}.conditions`, message: `a filter needs 1 to ${MaxConditions} conditions` })
      continue
    }
    const type = typeOfColumn(id)
    if (type === undefined) continue
    filter.conditions.forEach((condition, k) => {
      const at = `${field}.conditions[${k}]`
      if (!filterRules[type].includes(condition.type)) {
        errors.push({
          field: `${at}.type`,
          message: `"${condition.type}" is not a filter for ${withArticle(type)} column; allowed: ${filterRules[type].join(", ")}`
        })
        return
      }
      const problem = conditionProblem(condition, type)
      if (problem !== undefined) errors.push({ field: `${at}.value`, message: problem })
    })
  }

  // Display names, visibility, order.
  for (const [id, name] of entries(definition.displayNames)) {
    const field = `displayNames.${id}`
    if (!known(id)) unknownColumn(field, id)
    else if (name.trim().length === 0 || name.length > MaxNameLength || controlCharacters.test(name)) {
      errors.push({ field, message: `a display name must be 1 to ${MaxNameLength} characters, not blank, without control characters` })
    }
  }
  for (const [id] of entries(definition.visibility)) {
    if (!known(id)) unknownColumn(`visibility.${id}`, id)
  }
  const listed = new Set<string>()
  definition.order.forEach((id, k) => {
    if (!known(id)) unknownColumn(`order[${k}]`, id)
    else if (listed.has(id)) errors.push({ field: `order[${k}]`, message: `"${id}" is listed twice` })
    listed.add(id)
  })

  if (errors.length > 0) return { _tag: "Invalid", errors }
  return { _tag: "Plan", plan: makePlan(schema, definition, calculated, (dependencies as { order: ReadonlyArray<string> }).order) }
}

const makePlan = (
  schema: ReadonlyArray<Column>,
  definition: Modifications,
  calculated: ReadonlyMap<string, Calculated>,
  evaluationOrder: ReadonlyArray<string>
): Plan => {
  const change = (id: string) => hasOwn(definition.dataTypes, id) ? definition.dataTypes[id] : undefined
  const defaultOrder = [...schema.map((c) => c.id), ...Object.keys(definition.formulas)]
  const order = [...definition.order, ...defaultOrder.filter((id) => !definition.order.includes(id))]
  const storedType = new Map(schema.map((c) => [c.id, c.dataType]))
  const columns: ReadonlyArray<ViewColumn> = order.map((id, position) => {
    const c = change(id)
    const base = storedType.get(id) ?? calculated.get(id)!.type
    const logical = (c?.outputLogicalType ?? base) as LogicalType
    return {
      id,
      displayName: hasOwn(definition.displayNames, id) ? definition.displayNames[id]! : id,
      dataType: physicalTypeOf(logical),
      logicalType: logical,
      order: position,
      visible: hasOwn(definition.visibility, id) ? definition.visibility[id]! : true,
      calculated: calculated.has(id),
      formula: calculated.get(id)?.formula ?? null
    }
  })
  const byId = new Map(columns.map((c) => [c.id, c]))
  const visibleColumns = columns.filter((c) => c.visible)
  const converted = schema.filter((c) => change(c.id) !== undefined)
  const filters = entries(definition.filters).map(([id, filter]) => ({ id, filter, type: byId.get(id)!.dataType }))
  const changesRows = calculated.size > 0 || filters.length > 0 || converted.length > 0

  const evaluateRow = (row: Row): Row => {
    if (!changesRows) return row
    const values = new Map<string, Value>()
    const out: Array<[string, RecordValue]> = []
    for (const column of schema) {
      const cell = hasOwn(row, column.id) ? row[column.id]! : null
      const c = change(column.id)
      if (c === undefined) {
        values.set(column.id, cellValue(cell))
        out.push([column.id, cell])
      } else {
        const v = convert(cellValue(cell), column.dataType, c) as string | number | null
        values.set(column.id, v)
        out.push([column.id, v])
      }
    }
    const read = (id: string): Value => values.get(id) ?? null
    for (const id of evaluationOrder) {
      const calc = calculated.get(id)!
      let v = evaluate(calc.typed, read)
      if (typeof v === "boolean" || (typeof v === "string" && v.length > MaxStringValue)) v = null
      const c = change(id)
      if (c !== undefined) v = convert(v, calc.type, c)
      values.set(id, v)
      out.push([id, v as string | number | null])
    }
    // fromEntries defines own properties: a column named `__proto__` stays a column.
    return Object.fromEntries(out)
  }
  const keep = (evaluated: Row): boolean =>
    filters.every(({ filter, id, type }) =>
      passesFilter(cellValue(hasOwn(evaluated, id) ? evaluated[id] : null), filter, type)
    )
  const hidden = columns.some((c) => !c.visible)
  const visible = (evaluated: Row): Row =>
    hidden
      ? Object.fromEntries(visibleColumns.filter((c) => hasOwn(evaluated, c.id)).map((c) => [c.id, evaluated[c.id]!]))
      : evaluated
  return {
    columns,
    visibleColumns,
    column: (id) => byId.get(id),
    changesRows,
    filters: filters.length > 0,
    evaluate: evaluateRow,
    keep,
    visible,
    read: (row) => {
      const evaluated = evaluateRow(row)
      return keep(evaluated) ? visible(evaluated) : undefined
    },
    expanded: {
      ...definition,
      order,
      visibility: Object.fromEntries(columns.map((c) => [c.id, c.visible]))
    }
  }
}

/**
 * Applies a definition to a schema: the plan. For a definition already accepted, so a problem
 * can only come from the schema changing since (a later ingestion adding a column whose id a
 * calculated column took): such calculated columns are left out, the stored column wins.
 *
 * @since 0.1.0
 * @category utils
 */
export const applyModifications = (schema: ReadonlyArray<Column>, definition: Modifications): Compiled => {
  const compiled = compile(schema, definition)
  if (compiled._tag === "Plan") return compiled
  const stored = new Set(schema.map((c) => c.id))
  const shadowed = Object.keys(definition.formulas).filter((id) => stored.has(id))
  if (shadowed.length === 0) return compiled
  const formulas = Object.fromEntries(entries(definition.formulas).filter(([id]) => !stored.has(id)))
  return compile(schema, { ...definition, formulas })
}

/**
 * The sort key of a cell of an evaluated row, as the stores sort stored rows (see
 * `core/store/order.ts` and the Postgres store's `sortKeyOf`): numbers by value, strings
 * and datetimes by their text, and anything else (a multi-valued cell) as missing, so that a
 * page sorted in memory comes out as a page sorted by the store.
 *
 * @since 0.1.0
 * @category utils
 */
export const sortKey = (cell: RecordValue | undefined, type: ColumnType): string | number | null => {
  if (cell === undefined || cell === null) return null
  if (type === "number") return typeof cell === "number" ? cell : null
  return typeof cell === "string" ? cell : null
}
