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
 */
export interface ColumnKind {
  readonly name: string
  /** The type OID, resolved through domains to the base type. */
  readonly oid: number
  /** For an array type: its element type's OID (resolved through domains). */
  readonly elementOid?: number | undefined
}

/** Type OIDs of the built-in types this module treats specially. @since 0.1.0 */
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
 */
export const columnType = (kind: ColumnKind): ColumnType =>
  kind.elementOid !== undefined ? "string" : numberOids.has(kind.oid) ? "number" : datetimeOids.has(kind.oid) ? "datetime" : "string"

/**
 * A value converted, or why it cannot be.
 *
 * @since 0.1.0
 */
export type Converted =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly code: "not_a_number" | "inexact_number" | "unrepresentable_datetime" | "unrepresentable_array"; readonly message: string }

const ok = (value: unknown): Converted => ({ ok: true, value })

/**
 * Converts one value's text form (null: SQL NULL) of a column of kind `kind`.
 *
 * @since 0.1.0
 */
export const convert = (kind: ColumnKind, text: string | null): Converted => {
  if (text === null) return ok(null)
  if (kind.elementOid !== undefined) return convertArray(text)
  switch (kind.oid) {
    case Oid.int2:
    case Oid.int4:
    case Oid.oid:
      return ok(Number(text))
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
      return ok(text === "t" ? "true" : "false")
    case Oid.bytea:
      return ok(Buffer.from(text.slice(2), "hex").toString("base64"))
    default:
      return ok(text)
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

const convertNumber = (text: string, oid: number): Converted => {
  if (text === "NaN" || text === "Infinity" || text === "-Infinity") {
    return { ok: false, code: "not_a_number", message: `${text} is not a number the service can store` }
  }
  const value = Number(text)
  // Real and double values are doubles already (their text is the shortest that reads back
  // the same); integers and numerics must come through digit for digit, or not at all.
  if (oid === Oid.float4 || oid === Oid.float8 || sameDecimal(text, String(value))) return ok(value)
  return {
    ok: false,
    code: "inexact_number",
    message: `${text} cannot be held exactly by a double (it would become ${value}); ` +
      `cast it in the query (::float8 to accept the rounding, ::text to keep the digits as a string)`
  }
}

// Postgres' ISO output in UTC: `2024-01-02`, `2024-01-02 03:04:05.123456`, `…+00` (timestamptz).
const datetimePattern = /^(\d{4})-(\d{2})-(\d{2})(?: (\d{2}:\d{2}:\d{2}(?:\.\d+)?)(\+00|Z)?)?$/

const convertDatetime = (text: string): Converted => {
  const match = datetimePattern.exec(text)
  if (match === null) {
    return {
      ok: false,
      code: "unrepresentable_datetime",
      message: `${text} is not a date-time the service can store (infinite, before year 1 or after 9999)`
    }
  }
  const [, year, month, day, time] = match
  return ok(time === undefined ? `${year}-${month}-${day}` : `${year}-${month}-${day}T${time}Z`)
}

const convertArray = (text: string): Converted => {
  if (/^\[[^\]]*\]=/.test(text)) return { ok: false, code: "unrepresentable_array", message: `an array with explicit bounds is not a list of strings` }
  const parser = pg.types.arrayParser as unknown as { create: (text: string, transform: (element: string) => string) => { parse: () => Array<unknown> } }
  const elements = parser.create(text, (element) => element).parse()
  for (const element of elements) {
    if (element === null) {
      return { ok: false, code: "unrepresentable_array", message: `${shorten(text)} holds NULL, which a list of strings cannot` }
    }
    if (Array.isArray(element)) {
      return { ok: false, code: "unrepresentable_array", message: `${shorten(text)} is a nested array, not a list of strings` }
    }
  }
  return ok(elements)
}

const shorten = (text: string) => (text.length > 80 ? `${text.slice(0, 80)}…` : text)

/**
 * Session settings the text forms above count on: timestamps in UTC and ISO style, intervals
 * as ISO 8601 durations, bytea as hex, and extra float digits so that reals and doubles read
 * back exactly (the default since Postgres 12; set for older servers).
 *
 * @since 0.1.0
 */
export const sessionOptions = "-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=iso_8601 -c bytea_output=hex -c extra_float_digits=1"

/**
 * A `types` setting for `pg` that leaves every value in its text form.
 *
 * @since 0.1.0
 */
export const textTypes = { getTypeParser: () => (value: string) => value } as const
