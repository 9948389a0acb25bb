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
import { Schema, SchemaAST } from "effect"
import { type Column, isIsoDateTime } from "../../records.js"
import { endIsoMillis, failed, fieldConversion, firstIsoMillis, isoText } from "./fieldByField.js"

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
 */
const jsonString = (text: string): string => (plain(text) ? `"${text}"` : JSON.stringify(text))

/** An array of strings as JSON text; undefined for anything else (holes included). */
const jsonStrings = (values: unknown): string | undefined => {
  if (!Array.isArray(values)) return undefined
  let allPlain = true
  for (let i = 0; i < values.length; i++) {
    const value: unknown = values[i]
    if (typeof value !== "string") return undefined
    if (allPlain && !plain(value)) allPlain = false
  }
  // One string for the values (`join`), not one for each value and each comma.
  if (allPlain) return values.length === 0 ? "[]" : `["${values.join("\",\"")}"]`
  return `[${(values as ReadonlyArray<string>).map(jsonString).join(",")}]`
}

/** A string's JSON text without its quotes (the generated code has them in its constants). */
const unquoted = (text: string): string => (plain(text) ? text : JSON.stringify(text).slice(1, -1))

/**
 * How a field is written: `quoted` fields always encode to a string, and their writer gives its
 * text without quotes, which the generated code keeps in the constants beside it (fewer
 * strings made a record: the text is one concatenation of constants and values); `json` fields
 * give their whole JSON text.
 */
type Written = { readonly quoted: boolean; readonly write: (value: unknown) => string | undefined }

/** Whether every value of this (encoded) AST is a string. */
const alwaysString = (ast: SchemaAST.AST): boolean => {
  switch (ast._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return true
    case "Literal":
      return typeof ast.literal === "string"
    case "Refinement":
      return alwaysString(ast.from)
    case "Union":
      return ast.types.every(alwaysString)
    default:
      return false
  }
}

/** An encoded value as JSON text for a column of this type, or undefined where `checkRecord` might object. */
const encodedWriter = (dataType: Column["dataType"], nullable: boolean): (e: unknown) => string | undefined => {
  const orNull = (e: unknown) => (e === null && nullable ? "null" : undefined)
  switch (dataType) {
    case "string":
      return (e) => (typeof e === "string" ? jsonString(e) : e === null ? orNull(e) : jsonStrings(e))
    case "number":
      return (e) => (typeof e === "number" ? (Number.isFinite(e) ? `${e}` : undefined) : orNull(e))
    case "datetime":
      return (e) => (typeof e === "string" ? (isIsoDateTime(e) ? jsonString(e) : undefined) : orNull(e))
  }
}

/** How one field of the output schema is written into a column of `dataType`. */
const writtenField = (type: SchemaAST.AST, dataType: Column["dataType"], nullable: boolean): Written => {
  if (dataType === "datetime" && (type === Schema.Date.ast || type === Schema.DateFromString.ast)) {
    // What the fast path encodes (`isoText` of a valid date) is valid ISO text by construction
    // within these years: not read back to be checked (reading a string just written flattens it).
    return {
      quoted: true,
      write: (v) => {
        if (!(v instanceof Date)) return undefined
        const time = v.getTime()
        return time >= firstIsoMillis && time < endIsoMillis ? isoText(v) : undefined
      }
    }
  }
  const convert = fieldConversion(type, "encode")
  if (dataType !== "number" && alwaysString(SchemaAST.encodedAST(type))) {
    const datetime = dataType === "datetime"
    return {
      quoted: true,
      write: (v) => {
        const e = convert(v)
        return typeof e !== "string" || (datetime && !isIsoDateTime(e)) ? undefined : unquoted(e)
      }
    }
  }
  const write = encodedWriter(dataType, nullable)
  return {
    quoted: false,
    write: (v) => {
      const e = convert(v)
      return e === failed ? undefined : write(e)
    }
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
  const fields: Array<Written & { readonly key: string; readonly optional: boolean }> = []
  for (const field of ast.propertySignatures) {
    const name = field.name
    if (typeof name !== "string" || indexLike.test(name)) return undefined
    const dataType = types.get(name)
    if (dataType === undefined) return undefined
    const key = destination.primaryKey.includes(name)
    // A primary key that is absent, or null, is checkRecord's to refuse: written as required.
    fields.push({ ...writtenField(field.type, dataType, !key), key: name, optional: field.isOptional && !key })
  }
  // Generated: the keys as constants, each field's writer its own call site (so it can be
  // inlined), and the text one concatenation of constants and values. A comma goes before a
  // field when one was written before it: known here from the first required field on, kept
  // in `sep` before it.
  const firstRequired = fields.findIndex((field) => !field.optional)
  const lines = ["if (typeof input !== \"object\" || input === null || Array.isArray(input)) return undefined"]
  if (firstRequired !== 0) lines.push("let sep = \"\"")
  // The text's parts: constants (merged when side by side) and the names of values.
  const parts: Array<{ readonly constant: string } | { readonly value: string }> = [{ constant: "{" }]
  fields.forEach((field, i) => {
    const key = JSON.stringify(field.key)
    const quote = field.quoted ? "\"" : ""
    // Undefined: the comma is `sep`'s (before the first required field, when there is one).
    const comma = firstRequired === -1 || i <= firstRequired ? (i === 0 && !field.optional ? "" : undefined) : ","
    lines.push(`const v${i} = input[${key}]`)
    if (field.optional) {
      // Absent: no key. There as undefined: the generic path decides.
      const open = comma === undefined ? `sep + ${JSON.stringify(`${key}:${quote}`)}` : JSON.stringify(`${comma}${key}:${quote}`)
      lines.push(`let p${i} = ""`)
      lines.push(
        `if (v${i} !== undefined) { const t = w${i}(v${i}); if (t === undefined) return undefined; ` +
          `p${i} = ${open} + t${quote === "" ? "" : ` + ${JSON.stringify(quote)}`}${comma === undefined ? "; sep = \",\"" : ""} }`
      )
      lines.push(`else if (${key} in input) return undefined`)
      parts.push({ value: `p${i}` })
    } else {
      lines.push(`if (v${i} === undefined) return undefined`)
      lines.push(`const t${i} = w${i}(v${i})`)
      lines.push(`if (t${i} === undefined) return undefined`)
      if (comma === undefined) parts.push({ value: "sep" })
      parts.push({ constant: `${comma ?? ""}${key}:${quote}` }, { value: `t${i}` }, { constant: quote })
    }
  })
  parts.push({ constant: "}" })
  const merged: Array<string> = []
  let constant = ""
  for (const part of parts) {
    if ("constant" in part) {
      constant += part.constant
      continue
    }
    if (constant !== "") merged.push(JSON.stringify(constant))
    constant = ""
    merged.push(part.value)
  }
  merged.push(JSON.stringify(constant))
  // Concatenated: fewer bytes made than a `join` of the parts or a `JSON.stringify`, measured.
  lines.push(`return ${merged.join(" + ")}`)
  try {
    const make = new Function(...fields.map((_, i) => `w${i}`), `"use strict"\nreturn function write(input) {\n${lines.join("\n")}\n}`)
    return make(...fields.map((field) => field.write))
  } catch {
    return undefined
  }
}
