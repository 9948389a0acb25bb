/**
 * The wire text of a typed record written straight from the typed value, for one destination
 * schema: the output schema's encode, the per-record check against the dataset's columns and
 * the `JSON.stringify` of the encoded record in one pass, with no encoded object between them.
 *
 * The generic path (encode, then `checkRecord` in `validate`, then `JSON.stringify`) cost
 * about 2 µs a record more than the untyped pipeline, which sends the source's own text; a
 * profile at 1M records put a third of that in the stringify, and a fifth in checking again
 * what the output schema already says (types, primary key, known columns) plus reading back
 * the datetime text just written. Here a field's column type and primary-key role are known
 * when the writer is made; what the types cannot promise is checked per record (finite
 * numbers, dates within the years ISO text writes with four digits, strings in arrays). On
 * anything else the writer answers `undefined` and the record takes the generic path, whose
 * answer (a dead letter with its message, or the same text) is the one that counts: a
 * property test holds the two equal.
 *
 * @internal
 */
import { Either, ParseResult, Schema, type SchemaAST } from "effect"
import { type Column, isIsoDateTime } from "../../records.js"
import { conversionOf, endIsoMillis, failed, firstIsoMillis, isoText } from "./fieldByField.js"

/**
 * Marks a record element whose `json` was written by a writer made for this dataset schema
 * (compared by identity): `checkElement` with the same schema takes the text as it is.
 *
 * @internal
 */
export const writtenFor: unique symbol = Symbol("tributary/Typed/writtenFor")

/** What the writer needs of the destination: its columns and primary key. */
interface Destination {
  readonly columns: ReadonlyArray<Column>
  readonly primaryKey: ReadonlyArray<string>
}

const plain = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false
  }
  return true
}

/**
 * A string as JSON text: quoted as it is when nothing in it needs an escape (37 against 74 ns
 * for `JSON.stringify` of a 13-character id), else by `JSON.stringify` (escapes, surrogates).
 *
 * @internal
 */
export const jsonString = (text: string): string => (plain(text) ? `"${text}"` : JSON.stringify(text))

/** An array of strings as JSON text; undefined for anything else (holes included). */
const jsonStrings = (values: unknown): string | undefined => {
  if (!Array.isArray(values)) return undefined
  let out = "["
  for (let i = 0; i < values.length; i++) {
    const value: unknown = values[i]
    if (typeof value !== "string") return undefined
    out += i === 0 ? jsonString(value) : `,${jsonString(value)}`
  }
  return `${out}]`
}

type Write = (value: unknown) => string | undefined

/** An encoded value as JSON text for a column of this type, or undefined where `checkRecord` might object. */
const encodedWriter = (dataType: Column["dataType"], nullable: boolean): Write => {
  switch (dataType) {
    case "string":
      return (e) => (typeof e === "string" ? jsonString(e) : e === null ? (nullable ? "null" : undefined) : jsonStrings(e))
    case "number":
      return (e) =>
        typeof e === "number" ? (Number.isFinite(e) ? `${e}` : undefined) : e === null && nullable ? "null" : undefined
    case "datetime":
      return (e) =>
        typeof e === "string" ? (isIsoDateTime(e) ? jsonString(e) : undefined) : e === null && nullable ? "null" : undefined
  }
}

// A key the object's own order would move ahead of the others (JSON.stringify writes integer
// keys first): left to the generic path.
const indexLike = /^(?:0|[1-9]\d*)$/

/**
 * A writer for records of the output schema `ast` into `destination`, or undefined when the
 * schema is not a plain struct, a field is not a column of the destination (or has a name
 * JSON would move), or code cannot be generated here.
 *
 * @internal
 */
export const wireWriter = (ast: SchemaAST.AST, destination: Destination): ((value: unknown) => string | undefined) | undefined => {
  if (ast._tag !== "TypeLiteral" || ast.indexSignatures.length > 0 || ast.propertySignatures.length === 0) return undefined
  const types = new Map(destination.columns.map((column) => [column.id, column.dataType]))
  const fields: Array<{ readonly key: string; readonly optional: boolean; readonly write: Write }> = []
  for (const field of ast.propertySignatures) {
    const name = field.name
    if (typeof name !== "string" || indexLike.test(name)) return undefined
    const dataType = types.get(name)
    if (dataType === undefined) return undefined
    const key = destination.primaryKey.includes(name)
    const nullable = !key
    // A primary key that is absent is checkRecord's to refuse: such a field is written as required.
    const optional = field.isOptional && !key
    if (dataType === "datetime" && (field.type === Schema.Date.ast || field.type === Schema.DateFromString.ast)) {
      // What the fast path encodes (`isoText` of a valid date) and is valid ISO text by
      // construction within these years: not read back to be checked.
      fields.push({
        key: name,
        optional,
        write: (v) => {
          if (!(v instanceof Date)) return undefined
          const time = v.getTime()
          return time >= firstIsoMillis && time < endIsoMillis ? `"${isoText(v)}"` : undefined
        }
      })
      continue
    }
    // Fields the fast path does not convert go through their own schema (as in `fieldByField`).
    const encodeField = ParseResult.encodeUnknownEither(Schema.make(field.type))
    const convert = conversionOf(field.type, "encode") ?? ((u: unknown) => {
      const result = encodeField(u)
      return Either.isRight(result) ? result.right : failed
    })
    const write = encodedWriter(dataType, nullable)
    fields.push({
      key: name,
      optional,
      write: (v) => {
        const e = convert(v)
        return e === failed ? undefined : write(e)
      }
    })
  }
  // Generated: the keys as constants, each field's writer its own call site (so it can be
  // inlined), the text one concatenation.
  const lines = ["if (typeof input !== \"object\" || input === null || Array.isArray(input)) return undefined"]
  fields.forEach((field, i) => {
    const key = JSON.stringify(field.key)
    const prefix = JSON.stringify(`${i === 0 ? "" : ","}${key}:`)
    lines.push(`const v${i} = input[${key}]`)
    if (field.optional) {
      // Absent: no key. There as undefined: the generic path decides.
      lines.push(`let p${i} = ""`)
      lines.push(`if (v${i} !== undefined) { const t = w${i}(v${i}); if (t === undefined) return undefined; p${i} = ${prefix} + t }`)
      lines.push(`else if (${key} in input) return undefined`)
    } else {
      lines.push(`if (v${i} === undefined) return undefined`)
      lines.push(`const t${i} = w${i}(v${i})`)
      lines.push(`if (t${i} === undefined) return undefined`)
      lines.push(`const p${i} = ${prefix} + t${i}`)
    }
  })
  const body = fields.map((_, i) => `p${i}`).join(" + ")
  // Without a first field the others start with a comma, cut here.
  lines.push(
    fields[0]!.optional
      ? `const body = ${body}\nreturn body === "" ? "{}" : "{" + (body.charCodeAt(0) === 44 ? body.slice(1) : body) + "}"`
      : `return "{" + ${body} + "}"`
  )
  try {
    const make = new Function(...fields.map((_, i) => `w${i}`), `"use strict"\nreturn function write(input) {\n${lines.join("\n")}\n}`)
    return make(...fields.map((field) => field.write))
  } catch {
    return undefined
  }
}
