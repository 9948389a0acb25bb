/**
 * Values as formulas and filters see them, and the few conversions both need.
 *
 * A `datetime` is carried as the ISO 8601 text the row holds (a date `2026-01-05` or a
 * date-time with an optional offset). Its calendar fields are read as written (`YEAR` of
 * `2026-01-01T00:30:00+02:00` is 2026); instants (comparisons, differences) take the offset into
 * account, and a value without one is read as UTC.
 *
 * @since 0.1.0
 */
import { isIsoDateTime, type RecordValue } from "../../../records.js"

/**
 * The types a formula deals in: the three column types, `boolean` for conditions, and `null`
 * for the `NULL` literal (which fits every type).
 *
 * @since 0.1.0
 * @category models
 */
export type FormulaType = "number" | "string" | "datetime" | "boolean" | "null"

/** @since 0.1.0 @category models */
export type Value = number | string | boolean | null

/**
 * A stored cell as a formula value: a multi-valued string cell (an array) reads as its values
 * joined with `", "`.
 *
 * @since 0.1.0
 * @category utils
 */
export const cellValue = (cell: RecordValue | undefined): Value => {
  if (cell === undefined || cell === null) return null
  if (typeof cell === "string" || typeof cell === "number") return cell
  return cell.join(", ")
}

/** @since 0.1.0 @category models */
export interface DateFields {
  readonly year: number
  readonly month: number
  readonly day: number
  readonly hour: number
  readonly minute: number
  readonly second: number
  readonly millisecond: number
  /** True for a date without a time. */
  readonly dateOnly: boolean
  /** The offset as written (`Z`, `+02:00`), empty when there is none. */
  readonly offset: string
  readonly offsetMinutes: number
}

const num = (s: string | undefined) => s === undefined || s === "" ? 0 : Number(s)

/**
 * The fields of an ISO 8601 date or date-time; undefined for anything else.
 *
 * @since 0.1.0
 * @category utils
 */
export const dateFields = (text: string): DateFields | undefined => {
  if (!isIsoDateTime(text)) return undefined
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/.exec(text)
  if (m === null) return undefined
  const offset = m[8] ?? ""
  let offsetMinutes = 0
  if (offset !== "" && offset !== "Z") {
    const sign = offset.startsWith("-") ? -1 : 1
    const digits = offset.slice(1).replace(":", "")
    offsetMinutes = sign * (num(digits.slice(0, 2)) * 60 + num(digits.slice(2, 4)))
  }
  return {
    year: num(m[1]),
    month: num(m[2]),
    day: num(m[3]),
    hour: num(m[4]),
    minute: num(m[5]),
    second: num(m[6]),
    millisecond: m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000),
    dateOnly: m[4] === undefined,
    offset,
    offsetMinutes
  }
}

/**
 * Milliseconds of the fields read as UTC wall-clock time (no offset applied).
 *
 * @since 0.1.0
 * @category utils
 */
export const wallClockMillis = (f: DateFields) =>
  Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute, f.second, f.millisecond)

/**
 * The instant an ISO value denotes, in epoch milliseconds (no offset: UTC).
 *
 * @since 0.1.0
 * @category utils
 */
export const instantOf = (text: string): number | undefined => {
  const f = dateFields(text)
  return f === undefined ? undefined : wallClockMillis(f) - f.offsetMinutes * 60_000
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0")

/**
 * Writes wall-clock milliseconds back as ISO text: a date when `dateOnly`, otherwise a
 * date-time with seconds (and milliseconds when there are any) and the given offset.
 * Undefined outside years 0000–9999.
 *
 * @since 0.1.0
 * @category utils
 */
export const formatWallClock = (millis: number, dateOnly: boolean, offset: string): string | undefined => {
  const d = new Date(millis)
  const year = d.getUTCFullYear()
  if (!Number.isFinite(millis) || year < 0 || year > 9999) return undefined
  const date = `${pad(year, 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
  if (dateOnly) return date
  const ms = d.getUTCMilliseconds()
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${ms === 0 ? "" : `.${pad(ms, 3)}`}`
  return `${date}T${time}${offset}`
}

/**
 * Orders two non-null values of one type: numbers by value, datetimes by instant, strings by
 * UTF-16 code units, `FALSE` before `TRUE`. Undefined when they cannot be compared.
 *
 * @since 0.1.0
 * @category utils
 */
export const compareValues = (a: Value, b: Value, type: FormulaType): number | undefined => {
  if (a === null || b === null) return undefined
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0
  if (typeof a === "boolean" && typeof b === "boolean") return a === b ? 0 : a ? 1 : -1
  if (typeof a === "string" && typeof b === "string") {
    if (type === "datetime") {
      const x = instantOf(a)
      const y = instantOf(b)
      if (x === undefined || y === undefined) return undefined
      return x < y ? -1 : x > y ? 1 : 0
    }
    return a < b ? -1 : a > b ? 1 : 0
  }
  return undefined
}

/**
 * A value as text (for `CONCAT` and conversions to `string`): numbers in JavaScript's shortest
 * round-trip form, `TRUE`/`FALSE`, datetimes as stored.
 *
 * @since 0.1.0
 * @category utils
 */
export const textOf = (v: Value): string | null =>
  v === null ? null : typeof v === "boolean" ? (v ? "TRUE" : "FALSE") : String(v)

/**
 * Text as a number: decimal notation with optional sign, fraction, exponent and surrounding
 * spaces; thousands separators are not accepted. Null when it is not one.
 *
 * @since 0.1.0
 * @category utils
 */
export const numberOfText = (s: string): number | null => {
  const t = s.trim()
  if (!/^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(t) || t.length > 64) return null
  const n = Number(t)
  return Number.isFinite(n) ? n : null
}

/**
 * The longest string a formula may produce; a longer result is `null`. Without it a chain of
 * calculated columns, each `CONCAT($previous, $previous)`, would double a string per column.
 *
 * @since 0.1.0
 * @category defaults
 */
export const MaxStringValue = 10_000
