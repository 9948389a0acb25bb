/**
 * Postgres values as record values: the pure mapping from a column's type (its OID, as the
 * result's row description gives it) and a value's text form to a dataset column type and a
 * record value, or to the reason the service cannot take it.
 *
 * Every value is read in its text form (no driver parsing), so nothing is rounded or
 * reinterpreted before this module decides: the text of a `numeric(30,10)` is what the
 * database holds, digit for digit.
 *
 * | Postgres | column | value |
 * | --- | --- | --- |
 * | smallint, integer, bigint, oid, real, double precision, numeric | number | the number, when a double holds it exactly; otherwise a dead letter (`inexact_number`) |
 * | numeric/real/double NaN, ±Infinity | — | a dead letter (`not_a_number`) |
 * | text, varchar, char, name, citext, uuid, enums, time, inet, other scalars | string | the text form |
 * | boolean | string | `"true"` / `"false"` |
 * | json, jsonb | string | the JSON text |
 * | bytea | string | base64 |
 * | interval | string | ISO 8601 duration (`P1DT2H`) |
 * | timestamp, timestamptz, date | datetime | ISO 8601 (`2024-01-02T03:04:05.123456Z`, `2024-01-02`); a timestamp without time zone is read as UTC |
 * | ±infinity, BC or past-9999 dates | — | a dead letter (`unrepresentable_datetime`) |
 * | text[], varchar[] and other one-dimensional arrays | string | an array of strings (the elements' text forms); a NULL element or a nested array is a dead letter |
 * | NULL | (any) | null |
 *
 * @since 0.1.0
 */
import pg from "pg"
import type { ColumnType } from "../../src/records.js"

/**
 * What the source knows of a result column's type: its OID, and for types outside the
 * built-in set, what `pg_type` says (an enum, a domain over a base type, an array of a type).
 *
 * @since 0.1.0
 * @category models
 */
export interface ColumnKind {
  readonly name: string
  /** The type OID, resolved through domains to the base type. */
  readonly oid: number
  /** For an array type: its element type's OID (resolved through domains). */
  readonly elementOid?: number | undefined
}

/**
 * Type OIDs of the built-in types this module treats specially.
 *
 * @since 0.1.0
 * @category defaults
 */
export const Oid = {
  bool: 16,
  bytea: 17,
  int8: 20,
  int2: 21,
  int4: 23,
  oid: 26,
  json: 114,
  float4: 700,
  float8: 701,
  date: 1082,
  timestamp: 1114,
  timestamptz: 1184,
  interval: 1186,
  numeric: 1700,
  jsonb: 3802
} as const

const numberOids = new Set<number>([Oid.int2, Oid.int4, Oid.int8, Oid.oid, Oid.float4, Oid.float8, Oid.numeric])
const datetimeOids = new Set<number>([Oid.date, Oid.timestamp, Oid.timestamptz])

/**
 * The dataset column type of a Postgres column.
 *
 * @since 0.1.0
 * @category utils
 */
export const columnType = (kind: ColumnKind): ColumnType =>
  kind.elementOid !== undefined ? "string" : numberOids.has(kind.oid) ? "number" : datetimeOids.has(kind.oid) ? "datetime" : "string"

/**
 * Why a value cannot be sent. `convert` answers the value itself, or one of these: not a
 * wrapper per value, since every column of every row goes through it (the wrappers were a
 * good part of the source's garbage).
 *
 * @since 0.1.0
 * @category models
 */
export class Unrepresentable {
  constructor(
    readonly code: "not_a_number" | "inexact_number" | "unrepresentable_datetime" | "unrepresentable_array",
    readonly message: string
  ) {}
}

/**
 * Converts one value's text form (null: SQL NULL) of a column of kind `kind`: the record
 * value, or why there is none.
 *
 * @since 0.1.0
 * @category utils
 */
export const convert = (kind: ColumnKind, text: string | null): unknown => {
  if (text === null) return null
  if (kind.elementOid !== undefined) return convertArray(text)
  switch (kind.oid) {
    case Oid.int2:
    case Oid.int4:
    case Oid.oid:
      return Number(text)
    case Oid.int8:
    case Oid.numeric:
    case Oid.float4:
    case Oid.float8:
      return convertNumber(text, kind.oid)
    case Oid.date:
    case Oid.timestamp:
    case Oid.timestamptz:
      return convertDatetime(text)
    case Oid.bool:
      return text === "t" ? "true" : "false"
    case Oid.bytea:
      return Buffer.from(text.slice(2), "hex").toString("base64")
    default:
      return text
  }
}

/**
 * The decimal text of a number, without sign, leading zeros, trailing fraction zeros or
 * exponent: what two texts of the same value have in common.
 */
const canonicalDecimal = (text: string): { readonly negative: boolean; readonly digits: string; readonly exponent: number } => {
  let t = text.trim()
  const negative = t.startsWith("-")
  if (negative || t.startsWith("+")) t = t.slice(1)
  let exponent = 0
  const e = t.search(/[eE]/)
  if (e !== -1) {
    exponent = Number(t.slice(e + 1))
    t = t.slice(0, e)
  }
  const dot = t.indexOf(".")
  let digits = dot === -1 ? t : t.slice(0, dot) + t.slice(dot + 1)
  exponent += (dot === -1 ? t.length : dot)
  // exponent now: the position of the decimal point after the first digit of `digits`
  const leading = digits.length - digits.replace(/^0+/, "").length
  digits = digits.slice(leading)
  exponent -= leading
  digits = digits.replace(/0+$/, "")
  if (digits === "") return { negative: false, digits: "0", exponent: 0 }
  return { negative, digits, exponent }
}

const sameDecimal = (a: string, b: string): boolean => {
  const x = canonicalDecimal(a)
  const y = canonicalDecimal(b)
  return x.negative === y.negative && x.digits === y.digits && x.exponent === y.exponent
}

const convertNumber = (text: string, oid: number): unknown => {
  if (text === "NaN" || text === "Infinity" || text === "-Infinity") {
    return new Unrepresentable("not_a_number", `${text} is not a number the service can store`)
  }
  const value = Number(text)
  // Real and double values are doubles already (their text is the shortest that reads back
  // the same); integers and numerics must come through digit for digit, or not at all. Most
  // read back as they are, or with a numeric's trailing fraction zeros dropped.
  if (oid === Oid.float4 || oid === Oid.float8) return value
  if (fewDigits(text)) return value
  const shortest = String(value)
  if (shortest === text || shortest === withoutTrailingZeros(text) || sameDecimal(text, shortest)) return value
  return new Unrepresentable(
    "inexact_number",
    `${text} cannot be held exactly by a double (it would become ${value}); ` +
      `cast it in the query (::float8 to accept the rounding, ::text to keep the digits as a string)`
  )
}

/**
 * Whether `text` is a plain decimal (`[-]digits[.digits]`) of at most 15 digits: any such
 * decimal is exact as the double nearest to it, which prints back as the same value (a double
 * holds 15 decimal digits whatever they are), so the texts need not be compared. Leading and
 * trailing zeros count here, which only sends a few more values to the comparison. Most
 * numerics and integers take this way: on a 1M-row backfill of a `numeric(10,2)` column the
 * comparison (`String`, a regular expression) was 0.54 µs a value.
 */
const fewDigits = (text: string): boolean => {
  let i = text.charCodeAt(0) === 45 ? 1 : 0 // "-"
  if (text.length - i > 16) return false
  let digits = 0
  let dot = false
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 48 && c <= 57) digits++
    else if (c === 46 && !dot) dot = true // "."
    else return false
  }
  return digits > 0 && digits <= 15
}

const withoutTrailingZeros = (text: string) =>
  text.indexOf(".") === -1 || text.indexOf("e") !== -1 ? text : text.replace(/\.?0+$/, "")

// Postgres' ISO output in UTC: `2024-01-02`, `2024-01-02 03:04:05.123456`, `…+00` (timestamptz).
const datetimePattern = /^\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}:\d{2}(?:\.\d+)?(?:\+00)?)?$/

const convertDatetime = (text: string): unknown => {
  // Checked with `test` and rebuilt by slicing: no match array per value.
  if (!datetimePattern.test(text)) {
    return new Unrepresentable(
      "unrepresentable_datetime",
      `${text} is not a date-time the service can store (infinite, before year 1 or after 9999)`
    )
  }
  if (text.length === 10) return text
  const end = text.endsWith("+00") ? text.length - 3 : text.length
  return `${text.slice(0, 10)}T${text.slice(11, end)}Z`
}

const convertArray = (text: string): unknown => {
  if (/^\[[^\]]*\]=/.test(text)) return new Unrepresentable("unrepresentable_array", "an array with explicit bounds is not a list of strings")
  const parser = pg.types.arrayParser as unknown as { create: (text: string, transform: (element: string) => string) => { parse: () => Array<unknown> } }
  const elements = parser.create(text, (element) => element).parse()
  for (const element of elements) {
    if (element === null) return new Unrepresentable("unrepresentable_array", `${shorten(text)} holds NULL, which a list of strings cannot`)
    if (Array.isArray(element)) return new Unrepresentable("unrepresentable_array", `${shorten(text)} is a nested array, not a list of strings`)
  }
  return elements
}

const shorten = (text: string) => (text.length > 80 ? `${text.slice(0, 80)}…` : text)

/**
 * Session settings the text forms above count on: timestamps in UTC and ISO style, intervals
 * as ISO 8601 durations, bytea as hex, and extra float digits so that reals and doubles read
 * back exactly (the default since Postgres 12; set for older servers).
 *
 * @since 0.1.0
 * @category defaults
 */
export const sessionOptions = "-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=iso_8601 -c bytea_output=hex -c extra_float_digits=1"

/**
 * A `types` setting for `pg` that leaves every value in its text form.
 *
 * @since 0.1.0
 * @category defaults
 */
export const textTypes = { getTypeParser: () => (value: string) => value } as const
