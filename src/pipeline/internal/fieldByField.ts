/**
 * The fast path of typed decode and encode: a plain struct converted field by field, each
 * field through a function compiled from its AST. Effect's struct parser cost 5.9 µs to decode
 * and 6.0 µs to encode a 6-field record with a date; this path about 1.2 µs each. It only ever
 * answers "converted" or "not here": on any failure the caller runs the whole schema, whose
 * answer and message are the ones that count.
 *
 * Dates are read and written by the service's `datetime` rule (`isIsoDateTime`), on this path
 * and on the whole schema's (`serviceDates`): `2026-02-30` is not a date, where `new Date`, so
 * Effect's `Schema.Date`, reads it as March 2.
 *
 * @internal
 */
import { Either, Option, ParseResult, Schema, SchemaAST } from "effect"
import { isCalendarDay, isIsoDateTime } from "../../records.js"

/**
 * A plain check of a value against a schema without transformations, compiled from its AST
 * (`typeof`, `===`, and the refinements' own filters); undefined for anything else.
 */
const guardOf = (ast: SchemaAST.AST): ((u: unknown) => boolean) | undefined => {
  switch (ast._tag) {
    case "StringKeyword":
      return (u) => typeof u === "string"
    case "NumberKeyword":
      return (u) => typeof u === "number"
    case "UndefinedKeyword":
      return (u) => u === undefined
    case "Literal": {
      const literal = ast.literal
      return (u) => u === literal
    }
    case "Refinement": {
      const from = guardOf(ast.from)
      if (from === undefined) return undefined
      const refinement = ast
      return (u) => from(u) && Option.isNone(refinement.filter(u, SchemaAST.defaultParseOption, refinement))
    }
    case "Union": {
      const members = ast.types.map(guardOf)
      if (members.some((member) => member === undefined)) return undefined
      const checks = members as Array<(u: unknown) => boolean>
      return (u) => checks.some((check) => check(u))
    }
    case "TupleType": {
      const element = ast.elements.length === 0 && ast.rest.length === 1 ? guardOf(ast.rest[0]!.type) : undefined
      if (element === undefined) return undefined
      return (u) => Array.isArray(u) && u.every(element)
    }
    default:
      return undefined
  }
}

/**
 * @since 0.1.0
 * @category defaults
 * @internal
 */
export const dayMillis = 86_400_000
// 0000-01-01 and 10000-01-01: the years `toISOString` writes with four digits.
/**
 * @since 0.1.0
 * @category defaults
 * @internal
 */
export const firstIsoMillis = -62_167_219_200_000
/**
 * @since 0.1.0
 * @category defaults
 * @internal
 */
export const endIsoMillis = 253_402_300_800_000
const twoDigits = Array.from({ length: 100 }, (_, n) => (n < 10 ? `0${n}` : `${n}`))
const threeDigits = Array.from({ length: 1000 }, (_, n) => `${n}`.padStart(3, "0"))

// "HH:MM:" for every minute of a day, and "SS.000Z" for every whole second (timestamps mostly
// are): a time of day is two strings joined to the day's text, not eight (each string made is
// what the collector pays for). For `Typed.encode`'s dates; `run`'s writer writes a date's
// bytes (`wireBytes.date`), with no string at all.
const minuteTexts = Array.from({ length: 1440 }, (_, m) => `${twoDigits[Math.floor(m / 60)]}:${twoDigits[m % 60]}:`)
const wholeSecondTexts = Array.from({ length: 60 }, (_, s) => `${twoDigits[s]}.000Z`)

// The date part of the last day written: records in a stream mostly share their day.
let lastDay = NaN
let lastDayText = ""

/**
 * A date's ISO text as `toISOString` writes it (what `DateFromString` encodes), for the years
 * it writes with four digits; undefined outside them and for an invalid date: text the
 * service's `datetime` does not take. The day's text is kept from the last date of the same day
 * and the time of day is written from the milliseconds: 45 ns against 120 for writing every
 * field from the `getUTC*` methods, and 340 for `toISOString`.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const isoText = (date: Date): string | undefined => {
  const time = date.getTime()
  if (!(time >= firstIsoMillis && time < endIsoMillis)) return undefined
  const day = Math.floor(time / dayMillis)
  if (day !== lastDay) {
    lastDay = day
    lastDayText = date.toISOString().slice(0, 11)
  }
  let rest = time - day * dayMillis
  const minute = Math.floor(rest / 60_000)
  rest -= minute * 60_000
  const seconds = Math.floor(rest / 1000)
  const millis = rest - seconds * 1000
  return lastDayText + minuteTexts[minute]! +
    (millis === 0 ? wholeSecondTexts[seconds]! : `${twoDigits[seconds]}.${threeDigits[millis]}Z`)
}

// The day of the last text read, as YYYYMMDD, and its start in milliseconds.
let lastParsedDay = NaN
let lastParsedDayStart = 0

const digit = (text: string, at: number): number => {
  const d = text.charCodeAt(at) - 48
  // Far enough below 0 that any sum of digits it is part of stays below 0.
  return d >= 0 && d <= 9 ? d : -10_000
}
const twoDigitsAt = (text: string, at: number): number => digit(text, at) * 10 + digit(text, at + 1)

/**
 * An offset of hours alone (`+02`), which the service takes and `new Date` does not, given its
 * minutes (`+02:00`); any other text as it is. Only for text `isIsoDateTime` accepts: there a
 * sign three characters from the end of a date-time can only start such an offset.
 */
const withOffsetMinutes = (text: string): string => {
  const sign = text.charCodeAt(text.length - 3)
  return text.length > 10 && (sign === 43 || sign === 45) ? `${text}:00` : text
}

/**
 * The time a date-time's text gives after its date, in milliseconds from that day's midnight
 * UTC, for the forms read from their digits: `THH:MM:SS`, then `.sss` or not, then `Z` or
 * `±HH:MM` (texts of 20, 24, 25 or 29 characters); NaN for any other text.
 */
const timeAfterDate = (text: string, length: number): number => {
  const fraction = length === 24 || length === 29
  if (
    !(fraction || length === 20 || length === 25) || text.charCodeAt(10) !== 84 || text.charCodeAt(13) !== 58 ||
    text.charCodeAt(16) !== 58 || (fraction && text.charCodeAt(19) !== 46)
  ) return Number.NaN
  const hours = twoDigitsAt(text, 11)
  const minutes = twoDigitsAt(text, 14)
  const seconds = twoDigitsAt(text, 17)
  const millis = fraction ? digit(text, 20) * 100 + twoDigitsAt(text, 21) : 0
  if (!(hours >= 0 && hours <= 23 && minutes >= 0 && minutes <= 59 && seconds >= 0 && seconds <= 59 && millis >= 0)) {
    return Number.NaN
  }
  const time = hours * 3_600_000 + minutes * 60_000 + seconds * 1000 + millis
  if (length === 20 || length === 24) return text.charCodeAt(length - 1) === 90 ? time : Number.NaN
  const sign = text.charCodeAt(length - 6)
  const offsetHours = twoDigitsAt(text, length - 5)
  const offsetMinutes = twoDigitsAt(text, length - 2)
  if (
    !((sign === 43 || sign === 45) && text.charCodeAt(length - 3) === 58 && offsetHours >= 0 && offsetHours <= 23 &&
      offsetMinutes >= 0 && offsetMinutes <= 59)
  ) return Number.NaN
  const offset = offsetHours * 3_600_000 + offsetMinutes * 60_000
  return sign === 43 ? time - offset : time + offset
}

/**
 * A date from text the service's `datetime` takes (`isIsoDateTime`), as `new Date` reads it (a
 * date alone is midnight UTC, a date-time without an offset local time); an invalid date for
 * any other text: `2026-02-30`, `2026-02-29`, `2026-13-01`, hour 24 are not dates here, where
 * `new Date` rolls the first two over into March.
 *
 * The forms dates mostly take are read from their digits: a date alone, and a date-time with
 * seconds, milliseconds or not, in UTC (`Z`, as `toISOString` writes) or at an offset
 * (`+02:00`). The day is checked against the calendar once per day read (the start of the last
 * day read is kept: records in a stream mostly share it); 35 ns against 150 for `new Date` on
 * node 20. Other text is checked by `isIsoDateTime`, then read by `new Date`. A test holds the
 * answers equal to `isIsoDateTime`'s and, for the text it takes, to `new Date`'s.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const dateOfText = (text: string): Date => {
  const length = text.length
  const time = length === 10 ? 0 : timeAfterDate(text, length)
  if (time === time && text.charCodeAt(4) === 45 && text.charCodeAt(7) === 45) {
    const century = twoDigitsAt(text, 0)
    const year = twoDigitsAt(text, 2)
    const month = twoDigitsAt(text, 5)
    const day = twoDigitsAt(text, 8)
    // Years 0-99 are left out: Date.UTC reads them as 1900-1999.
    if (century >= 1 && year >= 0 && month >= 0 && day >= 0) {
      const dayKey = (century * 100 + year) * 10_000 + month * 100 + day
      if (dayKey !== lastParsedDay) {
        if (!isCalendarDay(century * 100 + year, month, day)) return new Date(Number.NaN)
        lastParsedDay = dayKey
        lastParsedDayStart = Date.UTC(century * 100 + year, month - 1, day)
      }
      return new Date(lastParsedDayStart + time)
    }
  }
  return isIsoDateTime(text) ? new Date(withOffsetMinutes(text)) : new Date(Number.NaN)
}

/**
 * What a compiled conversion answers when the value does not pass.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const failed: unique symbol = Symbol("tributary/Typed/failed")

// ---------------------------------------------------------------------------------------------
// the service's datetime rule in a schema

const datetimeText = (u: unknown, _: SchemaAST.ParseOptions, self: SchemaAST.Refinement) =>
  typeof u === "string" && isIsoDateTime(u) ? Option.none() : Option.some(
    new ParseResult.Type(self, u, `Expected an ISO 8601 date or date-time on a real calendar day, actual ${JSON.stringify(u)}`)
  )

// Effect's readers of ISO text into dates, known by their transformations (an annotated copy
// of a schema keeps its node's transformation).
const dateFromString = (Schema.DateFromString.ast as SchemaAST.Transformation).transformation as SchemaAST.FinalTransformation
const dateTimeUtc = (Schema.DateTimeUtc.ast as SchemaAST.Transformation).transformation as SchemaAST.FinalTransformation

/** A reader of ISO text into a date, held to the service's rule: its text must pass `isIsoDateTime`. */
const serviceReader = (ast: SchemaAST.Transformation, transformation: SchemaAST.FinalTransformation) =>
  new SchemaAST.Transformation(new SchemaAST.Refinement(ast.from, datetimeText), ast.to, transformation, ast.annotations)

const rewritten = new WeakMap<SchemaAST.AST, SchemaAST.AST>()

/**
 * A schema's AST with Effect's readers of ISO text into dates (`DateFromString`, and so
 * `Schema.Date`, and `DateTimeUtc`) held to the service's `datetime` rule, wherever they are in
 * it: their text must pass `isIsoDateTime`, decoding before it is read and encoding once it is
 * written, so `2026-02-30` and a year past 9999 fail (`new Date`, which Effect's readers use,
 * takes the first as March 2, and writes the second as `+010000-...`). `DateFromString` reads
 * its text with `dateOfText`, and `DateTimeUtc` is given an offset's minutes: the service takes
 * `+02`, `new Date` does not. Schemas of one's own that read other text (`31.01.2026`) are left
 * as they are, and so is `DateTimeZoned`, whose text names a zone. Nodes are rebuilt only where
 * something under them changed, and the same node always gives the same one (`Schema.Date`
 * gives `serviceDate`), so the fast path knows the dates it converts by hand.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const serviceDates = (ast: SchemaAST.AST): SchemaAST.AST => {
  const known = rewritten.get(ast)
  if (known !== undefined) return known
  let out: SchemaAST.AST = ast
  switch (ast._tag) {
    case "Transformation": {
      if (ast.transformation === dateFromString) {
        out = serviceReader(
          ast,
          new SchemaAST.FinalTransformation((text) => ParseResult.succeed(dateOfText(text)), dateFromString.encode)
        )
      } else if (ast.transformation === dateTimeUtc) {
        out = serviceReader(
          ast,
          new SchemaAST.FinalTransformation(
            (text, options, self, input) => dateTimeUtc.decode(withOffsetMinutes(text), options, self, input),
            dateTimeUtc.encode
          )
        )
      } else {
        const from = serviceDates(ast.from)
        const to = serviceDates(ast.to)
        if (from !== ast.from || to !== ast.to) out = new SchemaAST.Transformation(from, to, ast.transformation, ast.annotations)
      }
      break
    }
    case "Refinement": {
      const from = serviceDates(ast.from)
      if (from !== ast.from) out = new SchemaAST.Refinement(from, ast.filter, ast.annotations)
      break
    }
    case "TypeLiteral": {
      const fields = ast.propertySignatures.map((field) => {
        const type = serviceDates(field.type)
        return type === field.type
          ? field
          : new SchemaAST.PropertySignature(field.name, type, field.isOptional, field.isReadonly, field.annotations)
      })
      const indexes = ast.indexSignatures.map((index) => {
        const type = serviceDates(index.type)
        return type === index.type ? index : new SchemaAST.IndexSignature(index.parameter, type, index.isReadonly)
      })
      if (fields.some((field, i) => field !== ast.propertySignatures[i]) || indexes.some((index, i) => index !== ast.indexSignatures[i])) {
        out = new SchemaAST.TypeLiteral(fields, indexes, ast.annotations)
      }
      break
    }
    case "Union": {
      const types = ast.types.map(serviceDates)
      if (types.some((type, i) => type !== ast.types[i])) out = SchemaAST.Union.make(types, ast.annotations)
      break
    }
    case "TupleType": {
      const elements = ast.elements.map((element) => {
        const type = serviceDates(element.type)
        return type === element.type ? element : new SchemaAST.OptionalType(type, element.isOptional, element.annotations)
      })
      const rest = ast.rest.map((element) => {
        const type = serviceDates(element.type)
        return type === element.type ? element : new SchemaAST.Type(type, element.annotations)
      })
      if (elements.some((element, i) => element !== ast.elements[i]) || rest.some((element, i) => element !== ast.rest[i])) {
        out = new SchemaAST.TupleType(elements, rest, ast.isReadonly, ast.annotations)
      }
      break
    }
    case "Suspend": {
      // What it suspends is rewritten when first read, by when this node is known (it may
      // hold it again).
      const f = ast.f
      out = new SchemaAST.Suspend(() => serviceDates(f()), ast.annotations)
      break
    }
  }
  rewritten.set(ast, out)
  return out
}

/**
 * `Schema.Date` and `Schema.DateFromString` held to the service's rule (`serviceDates`).
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const serviceDate = serviceDates(Schema.Date.ast)
/**
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const serviceDateFromString = serviceDates(Schema.DateFromString.ast)

// ---------------------------------------------------------------------------------------------
// conversions

/**
 * A conversion compiled from an AST (through `serviceDates`), one way, for what the fast path
 * handles: guarded types pass as they are; refinements, declarations (`DateFromSelf`) and
 * transformations whose own functions answer at once (`Date`, `DateFromString`, `DateTimeUtc`)
 * are run directly, in the order Effect's parser runs them. Undefined for anything else (the
 * field then goes through its own schema).
 */
const conversionOf = (ast: SchemaAST.AST, direction: "decode" | "encode"): ((u: unknown) => unknown) | undefined => {
  const guard = guardOf(ast)
  if (guard !== undefined) return (u) => (guard(u) ? u : failed)
  if (ast === Schema.DateFromSelf.ast) return (u) => (u instanceof Date ? u : failed)
  // Dates, the usual datetime column, by hand: `Schema.Date` and `DateFromString` held to the
  // service's rule answer alike (text it takes, a valid date), here in one step each way,
  // without the `Either` each of Effect's steps wraps its answer in, the `Option` of
  // `Schema.Date`'s refinement (140 ns a record) and `toISOString` (400 ns, done in 45).
  if (ast === serviceDate || ast === serviceDateFromString) {
    return direction === "decode"
      ? (u) => {
        if (typeof u !== "string") return failed
        const date = dateOfText(u)
        return date.getTime() === date.getTime() ? date : failed
      }
      : (u) => (u instanceof Date ? isoText(u) ?? failed : failed)
  }
  switch (ast._tag) {
    case "Refinement": {
      const refinement = ast
      if (direction === "decode") {
        const from = conversionOf(ast.from, direction)
        if (from === undefined) return undefined
        return (u) => {
          const a = from(u)
          return a !== failed && Option.isNone(refinement.filter(a, SchemaAST.defaultParseOption, refinement)) ? a : failed
        }
      }
      // Encoding checks the type side (refinement included), then encodes what it refines.
      const type = conversionOf(SchemaAST.typeAST(ast), "decode")
      const from = conversionOf(ast.from, direction)
      if (type === undefined || from === undefined) return undefined
      return (u) => (type(u) === failed ? failed : from(u))
    }
    case "Declaration": {
      const parse = direction === "decode" ? ast.decodeUnknown(...ast.typeParameters) : ast.encodeUnknown(...ast.typeParameters)
      const declaration = ast
      return (u) => {
        const result = parse(u, SchemaAST.defaultParseOption, declaration)
        return Either.isEither(result) && Either.isRight(result) ? result.right : failed
      }
    }
    case "Transformation": {
      if (ast.transformation._tag !== "FinalTransformation") return undefined
      const transform = direction === "decode" ? ast.transformation.decode : ast.transformation.encode
      const from = conversionOf(direction === "decode" ? ast.from : ast.to, direction)
      const to = conversionOf(direction === "decode" ? ast.to : ast.from, direction)
      if (from === undefined || to === undefined) return undefined
      const transformation = ast
      return (u) => {
        const a = from(u)
        if (a === failed) return failed
        const result = transform(a, SchemaAST.defaultParseOption, transformation, u)
        return Either.isEither(result) && Either.isRight(result) ? to(result.right) : failed
      }
    }
    default:
      return undefined
  }
}

/**
 * A field's conversion, one way: compiled from its AST where `conversionOf` can, else through
 * its own schema; `failed` when the value does not convert.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const fieldConversion = (type: SchemaAST.AST, direction: "decode" | "encode"): (u: unknown) => unknown => {
  const compiled = conversionOf(type, direction)
  if (compiled !== undefined) return compiled
  const schema = Schema.make(type)
  const parse = direction === "decode" ? ParseResult.decodeUnknownEither(schema) : ParseResult.encodeUnknownEither(schema)
  return (u) => {
    const result = parse(u)
    return Either.isRight(result) ? result.right : failed
  }
}

/** What a compiled field answers when the field is absent and optional. */
const absent: unique symbol = Symbol("tributary/Typed/absent")

interface CompiledField {
  readonly name: PropertyKey
  readonly optional: boolean
  readonly convert: (u: unknown) => unknown
}

/**
 * The loop over the fields, as code generated for this struct: its keys as constants, each
 * field's conversion its own call site, and the output built as an object literal (one shape
 * from the start) where the fields' order allows. Against the same loop written generically
 * (keys and conversions read from an array, the output grown key by key): decode 449 -> 225 ns,
 * encode 437 -> 312 ns a 6-field record with a date. Undefined when code cannot be generated
 * here (`new Function` refused, as under a content security policy): the caller then loops.
 * A field named `__proto__` sets the output's prototype in the literal as Effect's parser's
 * assignment does (a test holds the two equal).
 */
const generated = (fields: ReadonlyArray<CompiledField>): ((input: unknown) => object | undefined) | undefined => {
  // Keys are written as JSON string literals; symbols are passed in.
  const key = (field: CompiledField, i: number) => (typeof field.name === "string" ? JSON.stringify(field.name) : `k${i}`)
  const lines = ["if (typeof input !== \"object\" || input === null || Array.isArray(input)) return undefined"]
  fields.forEach((field, i) => {
    const k = key(field, i)
    // One keyed load per field; `in` only for what is undefined (absent, or there as undefined).
    lines.push(`const v${i} = input[${k}]`)
    lines.push(
      field.optional
        ? `const a${i} = v${i} === undefined && !(${k} in input) ? absent : c${i}(v${i})`
        : `if (v${i} === undefined && !(${k} in input)) return undefined\nconst a${i} = c${i}(v${i})`
    )
    lines.push(`if (a${i} === failed) return undefined`)
  })
  // The required fields with string names before the first other one in the literal (written
  // as plain keys, so it is one shape); the rest after it, in order.
  const firstOther = fields.findIndex((field) => field.optional || typeof field.name !== "string")
  const inLiteral = firstOther === -1 ? fields.length : firstOther
  lines.push(`const out = { ${fields.slice(0, inLiteral).map((field, i) => `${key(field, i)}: a${i}`).join(", ")} }`)
  fields.forEach((field, i) => {
    if (i < inLiteral) return
    const assign = `out[${key(field, i)}] = a${i}`
    lines.push(field.optional ? `if (a${i} !== absent) ${assign}` : assign)
  })
  lines.push("return out")
  const names = ["failed", "absent", ...fields.map((_, i) => `c${i}`), ...fields.map((_, i) => `k${i}`)]
  try {
    const make = new Function(...names, `"use strict"\nreturn function convert(input) {\n${lines.join("\n")}\n}`)
    return make(failed, absent, ...fields.map((field) => field.convert), ...fields.map((field) => field.name))
  } catch {
    return undefined
  }
}

/**
 * A faster path for the common case, a plain struct: each field on its own, through a
 * conversion compiled from its AST (`conversionOf`) or else its own schema. It answers
 * `undefined` when any field fails (or the schema is not a plain struct), and the caller then
 * runs the whole schema, whose answer (and error message) is the one that counts.
 */
/**
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const fieldByField = (ast: SchemaAST.AST, direction: "decode" | "encode"): ((input: unknown) => object | undefined) | undefined => {
  if (ast._tag !== "TypeLiteral" || ast.indexSignatures.length > 0) return undefined
  const fields: ReadonlyArray<CompiledField> = ast.propertySignatures.map((field) => ({
    name: field.name,
    optional: field.isOptional,
    convert: fieldConversion(field.type, direction)
  }))
  return generated(fields) ?? ((input) => {
    if (typeof input !== "object" || input === null || Array.isArray(input)) return undefined
    const record = input as Record<PropertyKey, unknown>
    const out: Record<PropertyKey, unknown> = {}
    for (let i = 0; i < fields.length; i++) {
      const field = fields[i]!
      const value = record[field.name]
      if (value === undefined && !(field.name in record)) {
        if (field.optional) continue
        return undefined
      }
      const converted = field.convert(value)
      if (converted === failed) return undefined
      out[field.name] = converted
    }
    return out
  })
}
