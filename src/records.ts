/**
 * Record values and dataset schemas: the checks a record goes through before it is stored.
 *
 * Shared by the reference server (checking records while an ingestion is processed) and the
 * client pipeline (validating records against the destination schema before sending), so both
 * sides agree on what a valid record is. It runs once per record, so it uses plain `typeof`
 * checks instead of a Schema decode, and it never copies or coerces a value.
 *
 * @since 0.1.0
 */

/**
 * The data type of a dataset column, as in the v2 dataset schema.
 *
 * @since 0.1.0
 * @category models
 */
export type ColumnType = "string" | "number" | "datetime"

/**
 * One entry of a v2 dataset schema.
 *
 * @since 0.1.0
 * @category models
 */
export interface Column {
  readonly id: string
  readonly dataType: ColumnType
}

/**
 * A value a record may hold: a string (also an ISO 8601 date or date-time for a `datetime`
 * column), a finite number, an array of strings (a multi-valued dimension of a `string` column)
 * or `null` for "no value".
 *
 * @since 0.1.0
 * @category models
 */
export type RecordValue = string | number | ReadonlyArray<string> | null

/**
 * A record that passed {@link checkRecord}, keyed by column id.
 *
 * @since 0.1.0
 * @category models
 */
export type Row = Readonly<Record<string, RecordValue>>

/**
 * The codes of {@link RecordProblem}. They are part of the wire contract (ingestion `errors[].code`
 * and dead-letter reasons), so they must stay stable.
 *
 * @since 0.1.0
 * @category models
 */
export const RecordProblemCode = {
  NotAnObject: "not_an_object",
  InvalidType: "invalid_type",
  InvalidDatetime: "invalid_datetime",
  MissingPrimaryKey: "missing_primary_key",
  UnsupportedValue: "unsupported_value",
  UnknownColumn: "unknown_column",
  TooManyColumns: "too_many_columns",
  NestingTooDeep: "nesting_too_deep"
} as const

/**
 * How deep JSON may nest: request bodies, and each record of an ingest body on its own (its
 * nested values counted from the record). Deeper values are refused before anything walks
 * them: formatting or copying one of thousands of levels overflowed the stack.
 *
 * @since 0.1.0
 * @category defaults
 */
export const MaxJsonDepth = 64

const tooDeepKey = "\u0000tributary:nesting_too_deep"

/**
 * The JSON that stands in for a record nested deeper than {@link MaxJsonDepth}: the server
 * cuts such a record out of an ingest body before it is parsed and puts this in its place (an
 * object with one key no record has by accident, its value the record's byte offset in the
 * body), and {@link checkRecord} rejects it with `nesting_too_deep`. Plain JSON, so that it
 * survives any store the ingestion waits in.
 *
 * @since 0.1.0
 * @category utils
 */
export const tooDeepRecordJson = (offset: number): string => `{${JSON.stringify(tooDeepKey)}:${offset}}`

/** The nesting depth of `value` (a scalar is 0), counted without recursion and up to `limit + 1`. */
const depthOf = (value: unknown, limit: number): number => {
  let deepest = 0
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!
    if (typeof current !== "object" || current === null) continue
    if (depth + 1 > deepest) deepest = depth + 1
    if (deepest > limit) return deepest
    for (const key in current) stack.push([(current as Record<string, unknown>)[key], depth + 1])
  }
  return deepest
}

/**
 * @since 0.1.0
 * @category models
 */
export type RecordProblemCode = (typeof RecordProblemCode)[keyof typeof RecordProblemCode]

/**
 * Why a record was rejected. `field` is the offending column, or `null` when the record as a whole
 * is wrong (`not_an_object`).
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordProblem {
  readonly code: RecordProblemCode
  readonly field: string | null
  readonly message: string
}

/**
 * The outcome of {@link checkRecord}. A valid record comes back as its `row` (the same object,
 * not a copy) together with the columns it adds to the dataset, in key order.
 *
 * @since 0.1.0
 * @category models
 */
export type RecordCheck =
  | { readonly _tag: "Valid"; readonly row: Row; readonly newColumns: ReadonlyArray<Column> }
  | { readonly _tag: "Invalid"; readonly problem: RecordProblem }

/**
 * Options of {@link checkRecord}.
 *
 * @since 0.1.0
 * @category models
 */
export interface CheckRecordOptions {
  /** The dataset's current columns. Pass the same array for every record: its lookup is cached. */
  readonly schema: ReadonlyArray<Column>
  /** Primary-key column ids; these must hold a non-null value. Empty when there is none. */
  readonly primaryKey: ReadonlyArray<string>
  /** The most columns a dataset may have; defaults to {@link defaultMaxColumns}. */
  readonly maxColumns?: number | undefined
  /** Whether unknown keys add columns (inferred from their values) or reject the record. */
  readonly addUnknownColumns: boolean
}

/**
 * The most columns a dataset may have (the service's documented limit).
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultMaxColumns = 100

// Date, or date-time with minutes, optional seconds and fraction, and an optional offset
// (a local date-time is read in the dataset's time zone). Calendar days are checked separately.
const isoDateTimePattern =
  /^\d{4}-\d{2}-\d{2}(?:T(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)?)?$/

const daysInMonth = (year: number, month: number): number =>
  month === 2
    ? (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28
    : month === 4 || month === 6 || month === 9 || month === 11
    ? 30
    : 31

/**
 * Whether a year, month (1-12) and day of the month name a real day of the Gregorian calendar
 * (leap years included): the calendar part of {@link isIsoDateTime}, for readers that check
 * the rest of the text themselves.
 *
 * @since 0.1.0
 * @category guards
 */
export const isCalendarDay = (year: number, month: number, day: number): boolean =>
  month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month)

/**
 * Whether a string is an ISO 8601 date (`2026-11-01`) or date-time (`2026-11-01T10:00:00Z`,
 * `2026-11-01T10:00:00.123+02:00`, `2026-11-01T10:00`) on a real calendar day: `2026-02-30`
 * and `2026-13-01` are not. The `T` and `Z` must be upper case.
 *
 * @since 0.1.0
 * @category guards
 */
export const isIsoDateTime = (value: string): boolean => {
  // `test` and digits read in place: no match array for every value checked.
  if (!isoDateTimePattern.test(value)) return false
  return isCalendarDay(digits(value, 0, 4), digits(value, 5, 7), digits(value, 8, 10))
}

const digits = (text: string, from: number, to: number): number => {
  let n = 0
  for (let i = from; i < to; i++) n = n * 10 + text.charCodeAt(i) - 48
  return n
}

// A loop, not `every`: no closure for every array value checked.
const allStrings = (values: ReadonlyArray<unknown>): boolean => {
  for (let i = 0; i < values.length; i++) if (typeof values[i] !== "string") return false
  return true
}

// The shape of a value, or undefined for a value no column accepts.
type ValueKind = "null" | "string" | "number" | "strings"

const kindOf = (value: unknown): ValueKind | undefined => {
  switch (typeof value) {
    case "string":
      return "string"
    case "number":
      return Number.isFinite(value) ? "number" : undefined
    case "object":
      if (value === null) return "null"
      return Array.isArray(value) && allStrings(value) ? "strings" : undefined
    default:
      return undefined
  }
}

/**
 * The column type a first-seen value implies: `datetime` for a string that {@link isIsoDateTime}
 * accepts, `string` for other strings and arrays of strings, `number` for finite numbers.
 * `undefined` when the value does not tell (`null`) or no column accepts it.
 *
 * @since 0.1.0
 * @category utils
 */
export const inferColumnType = (value: unknown): ColumnType | undefined => {
  switch (kindOf(value)) {
    case "string":
      return isIsoDateTime(value as string) ? "datetime" : "string"
    case "strings":
      return "string"
    case "number":
      return "number"
    default:
      return undefined
  }
}

// Which value shapes a column type takes (null is allowed everywhere outside primary keys).
const accepts = (columnType: ColumnType, kind: ValueKind): boolean => {
  switch (columnType) {
    case "string":
      return kind === "string" || kind === "strings"
    case "number":
      return kind === "number"
    case "datetime":
      return kind === "string"
  }
}

const isPlainObject = (value: unknown): value is Readonly<Record<string, unknown>> => {
  if (typeof value !== "object" || value === null) return false
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

/**
 * A schema for records that have none yet (a v1 dataset's first ingestion). A column is added
 * when a key first holds a value that implies a type, so columns come in first-seen order and a
 * key that is only ever `null` gets none. For records that {@link checkRecord} accepts, these are
 * the columns, in the same order, that it adds with `addUnknownColumns` from an empty schema.
 * Non-object records and values no column accepts are skipped; rejecting them is
 * {@link checkRecord}'s job.
 *
 * @since 0.1.0
 * @category utils
 */
export const inferSchema = (records: Iterable<unknown>): ReadonlyArray<Column> => {
  const types = new Map<string, ColumnType>()
  for (const record of records) {
    if (!isPlainObject(record)) continue
    for (const key of Object.keys(record)) {
      if (types.has(key)) continue
      const type = inferColumnType(record[key])
      if (type !== undefined) types.set(key, type)
    }
  }
  return Array.from(types, ([id, dataType]) => ({ id, dataType }))
}

// Keyed by the schema array itself: callers check many records against one schema.
const columnTypesCache = new WeakMap<ReadonlyArray<Column>, ReadonlyMap<string, ColumnType>>()

const columnTypesOf = (schema: ReadonlyArray<Column>): ReadonlyMap<string, ColumnType> => {
  let types = columnTypesCache.get(schema)
  if (types === undefined) {
    types = new Map(schema.map((column) => [column.id, column.dataType]))
    columnTypesCache.set(schema, types)
  }
  return types
}

const previewLength = 40

const truncate = (text: string): string =>
  text.length > previewLength ? `${text.slice(0, previewLength - 1)}…` : text

const json = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? typeof value
  } catch {
    // Cyclic or BigInt-holding values cannot come from JSON, but a caller may build them; and
    // `String` of a deeply nested array recurses as deep as it nests.
    return "(not shown)"
  }
}

// What a message shows of a value: its JSON type and a truncated rendering.
const describe = (value: unknown): string => {
  if (value === null) return "null"
  if (Array.isArray(value)) return `array ${truncate(json(value))}`
  switch (typeof value) {
    case "string":
      return `string ${truncate(JSON.stringify(value))}`
    case "object":
      return `object ${truncate(json(value))}`
    case "undefined":
    case "function":
    case "symbol":
      return typeof value
    default:
      return `${typeof value} ${truncate(String(value))}`
  }
}

const invalid = (code: RecordProblemCode, field: string | null, message: string): RecordCheck => ({
  _tag: "Invalid",
  problem: { code, field, message }
})

const unsupported = (field: string, value: unknown): RecordCheck =>
  invalid(
    RecordProblemCode.UnsupportedValue,
    field,
    `unsupported value ${describe(value)}: expected a string, a finite number, an array of strings or null`
  )

const noColumns: ReadonlyArray<Column> = []

/**
 * Checks one record against a dataset schema. Keys are checked in the record's key order and the
 * first problem is reported, so the outcome is deterministic; primary-key columns absent from the
 * record are reported after all present keys, in primary-key order.
 *
 * - `not_an_object`: the record is not a plain object (field `null`).
 * - `nesting_too_deep`: a value nested deeper than {@link MaxJsonDepth} levels (field: its key),
 *   or the stand-in for a record cut out for it ({@link tooDeepRecordJson}, field `null`).
 * - `unsupported_value`: a boolean, nested object, array with a non-string element, non-finite
 *   number or `undefined`.
 * - `invalid_type`: a supported value of the wrong type (`expected number, got string "12"`).
 * - `invalid_datetime`: a string in a `datetime` column that is not an ISO 8601 date or date-time.
 * - `missing_primary_key`: a primary-key column is absent, `null` or `undefined`.
 * - `unknown_column`: a key not in the schema while `addUnknownColumns` is off.
 * - `too_many_columns`: a new column would take the dataset past `maxColumns` (field: that key).
 *
 * With `addUnknownColumns`, an unknown key adds a column of the type its value implies
 * ({@link inferColumnType}); one holding `null` adds none.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkRecord = (record: unknown, options: CheckRecordOptions): RecordCheck => {
  if (!isPlainObject(record)) {
    return invalid(RecordProblemCode.NotAnObject, null, `expected a record object, got ${describe(record)}`)
  }
  const tooDeepAt = record[tooDeepKey]
  if (typeof tooDeepAt === "number") {
    return invalid(
      RecordProblemCode.NestingTooDeep,
      null,
      `the record (at byte ${tooDeepAt} of the body) nests deeper than ${MaxJsonDepth} levels`
    )
  }
  const { addUnknownColumns, primaryKey, schema } = options
  const columnTypes = columnTypesOf(schema)
  const maxColumns = options.maxColumns ?? defaultMaxColumns
  let newColumns: Array<Column> | undefined
  // for-in over a plain object (see isPlainObject) visits its own keys without building an array.
  for (const key in record) {
    const value = record[key]
    if ((value === null || value === undefined) && primaryKey.includes(key)) {
      return invalid(RecordProblemCode.MissingPrimaryKey, key, `primary-key column "${key}" is ${describe(value)}`)
    }
    const columnType = columnTypes.get(key)
    if (columnType === undefined && !addUnknownColumns) {
      return invalid(RecordProblemCode.UnknownColumn, key, `column "${key}" is not in the dataset schema`)
    }
    const kind = kindOf(value)
    if (kind === undefined) {
      // Checked before the value is described: describing walks it.
      if (typeof value === "object" && value !== null && depthOf(value, MaxJsonDepth - 1) >= MaxJsonDepth) {
        return invalid(RecordProblemCode.NestingTooDeep, key, `the value of "${key}" nests deeper than ${MaxJsonDepth} levels`)
      }
      return unsupported(key, value)
    }
    if (columnType === undefined) {
      const dataType = inferColumnType(value)
      if (dataType === undefined) continue // null: nothing to learn the column's type from yet
      newColumns ??= []
      if (schema.length + newColumns.length >= maxColumns) {
        return invalid(
          RecordProblemCode.TooManyColumns,
          key,
          `adding column "${key}" would take the dataset past ${maxColumns} columns`
        )
      }
      newColumns.push({ id: key, dataType })
      continue
    }
    if (kind === "null") continue
    if (!accepts(columnType, kind)) {
      return invalid(RecordProblemCode.InvalidType, key, `expected ${columnType}, got ${describe(value)}`)
    }
    if (columnType === "datetime" && !isIsoDateTime(value as string)) {
      return invalid(
        RecordProblemCode.InvalidDatetime,
        key,
        `expected an ISO 8601 date or date-time, got ${describe(value)}`
      )
    }
  }
  for (const key of primaryKey) {
    if (!Object.hasOwn(record, key)) {
      return invalid(RecordProblemCode.MissingPrimaryKey, key, `primary-key column "${key}" is missing`)
    }
  }
  return { _tag: "Valid", row: record as Row, newColumns: newColumns ?? noColumns }
}

// UTF-8 bytes of a code unit sequence; `escape` adds what JSON.stringify's string escapes take.
const utf8Bytes = (text: string, escape: boolean): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) {
      // `"` `\` and \b \t \n \f \r take two bytes; other control characters are \u00XX.
      bytes += !escape ? 1 : c === 0x22 || c === 0x5c ? 2 : c >= 0x20 ? 1 : c >= 8 && c <= 13 && c !== 11 ? 2 : 6
    } else if (c < 0x800) {
      bytes += 2
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4
      i++
    } else if (escape && c >= 0xd800 && c <= 0xdfff) {
      bytes += 6 // a lone surrogate is written \uDXXX
    } else {
      bytes += 3
    }
  }
  return bytes
}

const valueJsonBytes = (value: unknown): number => {
  if (typeof value === "string") return utf8Bytes(value, true) + 2
  if (Array.isArray(value) && allStrings(value)) {
    let bytes = value.length === 0 ? 2 : value.length + 1 // brackets and commas
    for (let i = 0; i < value.length; i++) bytes += utf8Bytes(value[i] as string, true) + 2
    return bytes
  }
  // A finite number's JSON text is its `String` (ASCII); non-finite ones are written `null`.
  if (typeof value === "number") return Number.isFinite(value) ? String(value).length : 4
  if (value === null) return 4
  // Anything a caller built by hand: JSON's own text is plain ASCII or already escaped.
  const text = JSON.stringify(value)
  return text === undefined ? 0 : utf8Bytes(text, false)
}

/**
 * The UTF-8 byte length of `JSON.stringify(row)`, counted without building the text (the
 * stores keep every row's size for `datasetSizeMB`; stringifying each stored row was the
 * largest single cost of processing an ingestion).
 *
 * @since 0.1.0
 * @category utils
 */
export const rowJsonBytes = (row: Row): number => {
  let bytes = 2
  let first = true
  for (const key in row) {
    const value = row[key]
    if (value === undefined) continue
    bytes += (first ? 0 : 1) + utf8Bytes(key, true) + 3 + valueJsonBytes(value)
    first = false
  }
  return bytes
}

/**
 * A stable string key of a row's primary-key values, for upsert maps: the JSON text of the values
 * in primary-key order, so `1` and `"1"` stay distinct.
 *
 * @since 0.1.0
 * @category utils
 */
export const primaryKeyOf = (row: Row, primaryKey: ReadonlyArray<string>): string => {
  // The same text as `JSON.stringify(primaryKey.map(...))`, built without the array and the
  // closure: 7 instead of 14 µs per 100 rows, once per stored row.
  let key = "["
  for (let i = 0; i < primaryKey.length; i++) {
    if (i > 0) key += ","
    key += JSON.stringify(row[primaryKey[i]!] ?? null) ?? "null"
  }
  return `${key}]`
}
