/**
 * The functions formulas may call: one table that the parser, the type checker, the evaluator
 * and `GET /v2/datasets/modifications/functions` all read, so that what is listed is exactly
 * what runs.
 *
 * Every function gives `null` for a `null` argument unless its description says otherwise
 * (`CONCAT`, `COALESCE`, `IF`, `ISNULL`, `MIN`, `MAX`), and `null` rather than an error for an
 * argument it cannot use (an unknown unit, a text that is not a number).
 *
 * @since 0.1.0
 */
import {
  compareValues,
  dateFields,
  type FormulaType,
  formatWallClock,
  instantOf,
  MaxStringValue,
  numberOfText,
  textOf,
  type Value,
  wallClockMillis
} from "./values.js"

/** A parameter's accepted type: one formula type, or `any`. */
type ParamType = Exclude<FormulaType, "null"> | "any"

interface Param {
  readonly name: string
  readonly description: string
  readonly type: ParamType
  readonly isOptional?: boolean
  /** The last parameter may repeat. */
  readonly repeats?: boolean
}

/**
 * A type error of a call: which argument (undefined: the call itself) and why.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallTypeError {
  readonly argument?: number | undefined
  readonly message: string
}

/**
 * One function of the table.
 *
 * @since 0.1.0
 * @category models
 */
export interface FormulaFunction {
  readonly name: string
  readonly signature: string
  readonly description: string
  readonly example: string | null
  readonly category: "text" | "number" | "logic" | "date"
  readonly parameters: ReadonlyArray<{ readonly name: string; readonly description: string; readonly isOptional: boolean }>
  /** The result type for these argument types, or why they do not fit. */
  readonly check: (types: ReadonlyArray<FormulaType>) => FormulaType | CallTypeError
  /** Evaluates; arguments are thunks so that `IF` and `COALESCE` evaluate only what they need. */
  readonly apply: (args: ReadonlyArray<() => Value>, types: ReadonlyArray<FormulaType>) => Value
}

type Result = FormulaType | ((types: ReadonlyArray<FormulaType>) => FormulaType | CallTypeError)

const fits = (t: FormulaType, p: ParamType) => p === "any" || t === "null" || t === p

/** Arity and parameter types, then the result type. */
const checker = (params: ReadonlyArray<Param>, result: Result) => (types: ReadonlyArray<FormulaType>) => {
  const required = params.filter((p) => p.isOptional !== true).length
  const repeats = params[params.length - 1]?.repeats === true
  if (types.length < required) {
    return { message: `needs at least ${required} argument${required === 1 ? "" : "s"}, got ${types.length}` }
  }
  if (!repeats && types.length > params.length) {
    return { argument: params.length, message: `takes at most ${params.length} argument${params.length === 1 ? "" : "s"}` }
  }
  for (let k = 0; k < types.length; k++) {
    const p = params[Math.min(k, params.length - 1)]!
    if (!fits(types[k]!, p.type)) {
      return { argument: k, message: `argument ${k + 1} (${p.name}) must be a ${p.type}, not a ${types[k]}` }
    }
  }
  return typeof result === "function" ? result(types) : result
}

const define = (
  spec: {
    readonly name: string
    readonly category: FormulaFunction["category"]
    readonly description: string
    readonly example: string
    readonly params: ReadonlyArray<Param>
    readonly result: Result
    readonly apply: FormulaFunction["apply"]
  }
): FormulaFunction => ({
  name: spec.name,
  category: spec.category,
  signature: `${spec.name}(${
    spec.params.map((p) => `${p.name}${p.repeats === true ? ", ..." : ""}${p.isOptional === true ? "?" : ""}`).join(", ")
  })`,
  description: spec.description,
  example: spec.example,
  parameters: spec.params.map((p) => ({ name: p.name, description: p.description, isOptional: p.isOptional === true })),
  check: checker(spec.params, spec.result),
  apply: spec.apply
})

/** Strings longer than the limit are no value (see `MaxStringValue`). */
const text = (s: string): Value => s.length > MaxStringValue ? null : s

/** Applies `f` when every argument is present with the expected JavaScript type; null otherwise. */
const strict = <A extends ReadonlyArray<Value>>(f: (...values: A) => Value) => (args: ReadonlyArray<() => Value>): Value => {
  const values: Array<Value> = []
  for (const arg of args) {
    const v = arg()
    if (v === null) return null
    values.push(v)
  }
  return f(...(values as unknown as A))
}

const finite = (n: number): Value => Number.isFinite(n) ? (n === 0 ? 0 : n) : null

/** The common type of arguments that must agree (IF's branches, COALESCE's values). */
const common = (types: ReadonlyArray<FormulaType>, from: number): FormulaType | CallTypeError => {
  let found: FormulaType = "null"
  for (let k = from; k < types.length; k++) {
    const t = types[k]!
    if (t === "null") continue
    if (found !== "null" && t !== found) return { argument: k, message: `argument ${k + 1} is a ${t}, the others a ${found}` }
    found = t
  }
  return found
}

const units = new Map<string, number>([
  ["second", 1000],
  ["minute", 60_000],
  ["hour", 3_600_000],
  ["day", 86_400_000],
  ["week", 7 * 86_400_000]
])

const unitOf = (u: string) => {
  const unit = u.toLowerCase().replace(/s$/, "")
  return unit
}

const addToDate = (date: string, amount: number, unitText: string): Value => {
  const f = dateFields(date)
  if (f === undefined || !Number.isFinite(amount) || Math.abs(amount) > 1e7) return null
  const unit = unitOf(unitText)
  const whole = Math.trunc(amount)
  if (unit === "month" || unit === "year") {
    const months = unit === "year" ? whole * 12 : whole
    const total = f.year * 12 + (f.month - 1) + months
    const year = Math.floor(total / 12)
    const month = total - year * 12 + 1
    // The day is kept, or the month's last day when it has fewer (31 Jan + 1 month = 28/29 Feb).
    const last = new Date(Date.UTC(year, month, 0)).getUTCDate()
    const millis = Date.UTC(year, month - 1, Math.min(f.day, last), f.hour, f.minute, f.second, f.millisecond)
    return formatWallClock(yearSafe(millis, year), f.dateOnly, f.offset) ?? null
  }
  const step = units.get(unit)
  if (step === undefined) return null
  // A date stays a date when whole days are added; adding hours to it gives a date-time.
  const dateOnly = f.dateOnly && step >= 86_400_000
  return formatWallClock(wallClockMillis(f) + amount * step, dateOnly, f.offset) ?? null
}

// Date.UTC maps years 0-99 to 1900-1999; put them back.
const yearSafe = (millis: number, year: number) => {
  if (year >= 0 && year < 100) {
    const d = new Date(millis)
    d.setUTCFullYear(year)
    return d.getTime()
  }
  return millis
}

const truncDate = (date: string, unitText: string): Value => {
  const f = dateFields(date)
  if (f === undefined) return null
  const unit = unitOf(unitText)
  let millis: number
  switch (unit) {
    case "year":
      millis = Date.UTC(f.year, 0, 1)
      break
    case "month":
      millis = Date.UTC(f.year, f.month - 1, 1)
      break
    case "week": {
      // ISO weeks start on Monday.
      const day = Date.UTC(f.year, f.month - 1, f.day)
      const weekday = (new Date(day).getUTCDay() + 6) % 7
      millis = day - weekday * 86_400_000
      break
    }
    case "day":
      millis = Date.UTC(f.year, f.month - 1, f.day)
      break
    case "hour":
      millis = Date.UTC(f.year, f.month - 1, f.day, f.hour)
      break
    case "minute":
      millis = Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute)
      break
    default:
      return null
  }
  const dateOnly = f.dateOnly || unit === "year" || unit === "month" || unit === "week" || unit === "day"
  return formatWallClock(yearSafe(millis, f.year), dateOnly, dateOnly ? "" : f.offset) ?? null
}

const dateDiff = (start: string, end: string, unitText: string): Value => {
  const a = instantOf(start)
  const b = instantOf(end)
  const step = units.get(unitOf(unitText))
  if (a === undefined || b === undefined || step === undefined) return null
  return finite(Math.trunc((b - a) / step))
}

const field = (name: string, description: string, read: (f: NonNullable<ReturnType<typeof dateFields>>) => number) =>
  define({
    name,
    category: "date",
    description,
    example: `${name}($order_date)`,
    params: [{ name: "date", description: "A datetime value", type: "datetime" }],
    result: "number",
    apply: strict((d: Value) => {
      const f = typeof d === "string" ? dateFields(d) : undefined
      return f === undefined ? null : read(f)
    })
  })

const roundTo = (n: number, digits: number): Value => {
  const d = Math.trunc(digits)
  if (d > 15 || d < -15) return null
  const factor = 10 ** d
  // Half away from zero, as spreadsheets round.
  return finite(Math.sign(n) * Math.round(Math.abs(n) * factor) / factor)
}

const extreme = (pick: (c: number) => boolean) => (args: ReadonlyArray<() => Value>, types: ReadonlyArray<FormulaType>) => {
  let best: Value = null
  const type = common(types, 0)
  for (const arg of args) {
    const v = arg()
    if (v === null) continue
    if (best === null) {
      best = v
      continue
    }
    const c = compareValues(v, best, typeof type === "string" ? type : "null")
    if (c !== undefined && pick(c)) best = v
  }
  return best
}

/** A function of one text or number argument, null for null. */
const oneArgument = <T extends "string" | "number">(
  name: string,
  type: T,
  result: FormulaType,
  description: string,
  example: string,
  f: (value: T extends "string" ? string : number) => Value
): FormulaFunction =>
  define({
    name,
    category: type === "string" ? "text" : "number",
    description,
    example,
    params: [{ name: type === "string" ? "text" : "number", description: type === "string" ? "A text value" : "A number", type }],
    result,
    apply: strict((v: Value) => f(v as T extends "string" ? string : number))
  })

const table: ReadonlyArray<FormulaFunction> = [
  // Text.
  define({
    name: "CONCAT",
    category: "text",
    description: "Joins values as text; null values are skipped (numbers and datetimes are written as stored).",
    example: "CONCAT($first_name, ' ', $last_name)",
    params: [{ name: "value", description: "Values to join", type: "any", repeats: true }],
    result: "string",
    apply: (args) => {
      let out = ""
      for (const arg of args) {
        out += textOf(arg()) ?? ""
        if (out.length > MaxStringValue) return null
      }
      return out
    }
  }),
  oneArgument("UPPER", "string", "string", "The text in upper case.", "UPPER($country)", (t) => text(t.toUpperCase())),
  oneArgument("LOWER", "string", "string", "The text in lower case.", "LOWER($email)", (t) => text(t.toLowerCase())),
  oneArgument("TRIM", "string", "string", "The text without leading and trailing white space.", "TRIM($name)", (t) => t.trim()),
  oneArgument("LENGTH", "string", "number", "The number of characters (UTF-16 code units) of the text.", "LENGTH($comment)", (t) => t.length),
  define({
    name: "LEFT",
    category: "text",
    description: "The first `count` characters of the text.",
    example: "LEFT($sku, 3)",
    params: [
      { name: "text", description: "A text value", type: "string" },
      { name: "count", description: "How many characters (0 or more)", type: "number" }
    ],
    result: "string",
    apply: strict((s: Value, n: Value) => String(s).slice(0, Math.max(0, Math.trunc(n as number))))
  }),
  define({
    name: "RIGHT",
    category: "text",
    description: "The last `count` characters of the text.",
    example: "RIGHT($phone, 4)",
    params: [
      { name: "text", description: "A text value", type: "string" },
      { name: "count", description: "How many characters (0 or more)", type: "number" }
    ],
    result: "string",
    apply: strict((s: Value, n: Value) => {
      const count = Math.max(0, Math.trunc(n as number))
      const str = String(s)
      return count === 0 ? "" : str.slice(Math.max(0, str.length - count))
    })
  }),
  define({
    name: "SUBSTRING",
    category: "text",
    description: "Part of the text from position `start` (1 is the first character), `length` characters long or to the end.",
    example: "SUBSTRING($code, 2, 4)",
    params: [
      { name: "text", description: "A text value", type: "string" },
      { name: "start", description: "The first character's position, from 1", type: "number" },
      { name: "length", description: "How many characters", type: "number", isOptional: true }
    ],
    result: "string",
    apply: (args) => {
      const s = args[0]!()
      const start = args[1]!()
      const length = args.length > 2 ? args[2]!() : Number.MAX_SAFE_INTEGER
      if (typeof s !== "string" || typeof start !== "number" || typeof length !== "number") return null
      const from = Math.max(0, Math.trunc(start) - 1)
      return s.slice(from, from + Math.max(0, Math.trunc(Math.min(length, s.length))))
    }
  }),
  define({
    name: "REPLACE",
    category: "text",
    description: "The text with every occurrence of `search` replaced (an empty search changes nothing).",
    example: "REPLACE($url, 'http:', 'https:')",
    params: [
      { name: "text", description: "A text value", type: "string" },
      { name: "search", description: "The text to find", type: "string" },
      { name: "replacement", description: "The text to put instead", type: "string" }
    ],
    result: "string",
    apply: strict((s: Value, search: Value, replacement: Value) =>
      search === "" ? s : text(String(s).split(String(search)).join(String(replacement)))
    )
  }),
  define({
    name: "CONTAINS",
    category: "text",
    description: "Whether the text contains `search` (case-sensitive).",
    example: "IF(CONTAINS($campaign, 'brand'), 'Brand', 'Other')",
    params: [
      { name: "text", description: "A text value", type: "string" },
      { name: "search", description: "The text to find", type: "string" }
    ],
    result: "boolean",
    apply: strict((s: Value, search: Value) => String(s).includes(String(search)))
  }),
  define({
    name: "TEXT",
    category: "text",
    description: "The value as text: numbers in their shortest exact form, datetimes as stored.",
    example: "TEXT($order_id)",
    params: [{ name: "value", description: "Any value", type: "any" }],
    result: "string",
    apply: (args) => textOf(args[0]!())
  }),
  // Numbers.
  oneArgument("ABS", "number", "number", "The absolute value.", "ABS($balance)", (n) => finite(Math.abs(n))),
  define({
    name: "ROUND",
    category: "number",
    description: "The number rounded half away from zero to `digits` decimals (0 when left out; -15 to 15).",
    example: "ROUND($amount * 1.2, 2)",
    params: [
      { name: "number", description: "A number", type: "number" },
      { name: "digits", description: "Decimal places", type: "number", isOptional: true }
    ],
    result: "number",
    apply: (args) => {
      const n = args[0]!()
      const d = args.length > 1 ? args[1]!() : 0
      return typeof n === "number" && typeof d === "number" ? roundTo(n, d) : null
    }
  }),
  oneArgument("FLOOR", "number", "number", "The largest integer not above the number.", "FLOOR($score)", (n) => finite(Math.floor(n))),
  oneArgument("CEIL", "number", "number", "The smallest integer not below the number.", "CEIL($hours)", (n) => finite(Math.ceil(n))),
  define({
    name: "POWER",
    category: "number",
    description: "`base` raised to `exponent`; null when the result is not a finite number.",
    example: "POWER(1 + $rate, $years)",
    params: [
      { name: "base", description: "A number", type: "number" },
      { name: "exponent", description: "A number", type: "number" }
    ],
    result: "number",
    apply: strict((b: Value, e: Value) => finite((b as number) ** (e as number)))
  }),
  oneArgument("SQRT", "number", "number", "The square root; null for a negative number.", "SQRT($area)", (n) => finite(Math.sqrt(n))),
  define({
    name: "MIN",
    category: "number",
    description: "The smallest of the values, skipping nulls (null when all are null).",
    example: "MIN($price, $list_price)",
    params: [{ name: "value", description: "Numbers, texts or datetimes, all of one type", type: "any", repeats: true }],
    result: (types) => common(types, 0),
    apply: extreme((c) => c < 0)
  }),
  define({
    name: "MAX",
    category: "number",
    description: "The largest of the values, skipping nulls (null when all are null).",
    example: "MAX($price, 0)",
    params: [{ name: "value", description: "Numbers, texts or datetimes, all of one type", type: "any", repeats: true }],
    result: (types) => common(types, 0),
    apply: extreme((c) => c > 0)
  }),
  define({
    name: "NUMBER",
    category: "number",
    description: "Text read as a decimal number (`12.5`, `-3e2`); null when it is not one. A number stays as it is.",
    example: "NUMBER($quantity_text) * $price",
    params: [{ name: "value", description: "A text or a number", type: "any" }],
    result: (types) =>
      types[0] === "boolean" || types[0] === "datetime"
        ? { argument: 0, message: `argument 1 (value) must be a string or number, not a ${types[0]}` }
        : "number",
    apply: strict((v: Value) => typeof v === "number" ? v : typeof v === "string" ? numberOfText(v) : null)
  }),
  // Logic.
  define({
    name: "IF",
    category: "logic",
    description: "`then` when the condition is TRUE, otherwise `else` (null when left out); a null condition counts as not TRUE.",
    example: "IF($amount > 100, 'large', 'small')",
    params: [
      { name: "condition", description: "A condition", type: "boolean" },
      { name: "then", description: "The value when the condition is TRUE", type: "any" },
      { name: "else", description: "The value otherwise", type: "any", isOptional: true }
    ],
    result: (types) => common(types, 1),
    apply: (args) => args[0]!() === true ? args[1]!() : args.length > 2 ? args[2]!() : null
  }),
  define({
    name: "COALESCE",
    category: "logic",
    description: "The first value that is not null.",
    example: "COALESCE($discount, 0)",
    params: [{ name: "value", description: "Values of one type", type: "any", repeats: true }],
    result: (types) => common(types, 0),
    apply: (args) => {
      for (const arg of args) {
        const v = arg()
        if (v !== null) return v
      }
      return null
    }
  }),
  define({
    name: "ISNULL",
    category: "logic",
    description: "Whether the value is null.",
    example: "IF(ISNULL($email), 'unknown', $email)",
    params: [{ name: "value", description: "Any value", type: "any" }],
    result: "boolean",
    apply: (args) => args[0]!() === null
  }),
  // Dates.
  field("YEAR", "The year of the date, as written (no time zone conversion).", (f) => f.year),
  field("MONTH", "The month of the date (1-12), as written.", (f) => f.month),
  field("DAY", "The day of the month of the date (1-31), as written.", (f) => f.day),
  field("HOUR", "The hour of the date-time (0-23), as written; 0 for a date.", (f) => f.hour),
  field("MINUTE", "The minute of the date-time (0-59), as written; 0 for a date.", (f) => f.minute),
  field(
    "WEEKDAY",
    "The ISO day of the week of the date (1 = Monday ... 7 = Sunday).",
    (f) => ((new Date(Date.UTC(f.year, f.month - 1, f.day)).getUTCDay() + 6) % 7) + 1
  ),
  define({
    name: "DATE",
    category: "date",
    description: "Text read as an ISO 8601 date or date-time; null when it is not one.",
    example: "DATE($signup_text)",
    params: [{ name: "text", description: "A text value", type: "string" }],
    result: "datetime",
    apply: strict((s: Value) => typeof s === "string" && dateFields(s) !== undefined ? s : null)
  }),
  define({
    name: "DATE_ADD",
    category: "date",
    description:
      "The date moved by `amount` units (second, minute, hour, day, week, month, year); months keep the day or take the month's last. The offset is kept.",
    example: "DATE_ADD($order_date, 30, 'day')",
    params: [
      { name: "date", description: "A datetime value", type: "datetime" },
      { name: "amount", description: "How many units (may be negative)", type: "number" },
      { name: "unit", description: "second, minute, hour, day, week, month or year", type: "string" }
    ],
    result: "datetime",
    apply: strict((d: Value, n: Value, u: Value) => addToDate(String(d), n as number, String(u)))
  }),
  define({
    name: "DATE_DIFF",
    category: "date",
    description:
      "Whole units (second, minute, hour, day, week) from `start` to `end`, truncated toward zero; negative when `end` is earlier.",
    example: "DATE_DIFF($created_at, $closed_at, 'day')",
    params: [
      { name: "start", description: "A datetime value", type: "datetime" },
      { name: "end", description: "A datetime value", type: "datetime" },
      { name: "unit", description: "second, minute, hour, day or week", type: "string" }
    ],
    result: "number",
    apply: strict((a: Value, b: Value, u: Value) => dateDiff(String(a), String(b), String(u)))
  }),
  define({
    name: "DATE_TRUNC",
    category: "date",
    description:
      "The start of the date's unit (minute, hour, day, week from Monday, month, year), as written; day and longer units give a date.",
    example: "DATE_TRUNC($order_date, 'month')",
    params: [
      { name: "date", description: "A datetime value", type: "datetime" },
      { name: "unit", description: "minute, hour, day, week, month or year", type: "string" }
    ],
    result: "datetime",
    apply: strict((d: Value, u: Value) => truncDate(String(d), String(u)))
  })
]

const byName = new Map(table.map((f) => [f.name, f]))

/**
 * Every function, in the order listed by the functions route.
 *
 * @since 0.1.0
 * @category utils
 */
export const formulaFunctions: ReadonlyArray<FormulaFunction> = table

/**
 * A function by its upper-case name (a `Map`, so no inherited names answer).
 *
 * @since 0.1.0
 * @category utils
 */
export const functionByName = (name: string): FormulaFunction | undefined => byName.get(name)
