/**
 * The wire text of a typed record written straight from the typed value, for one destination
 * schema: the output schema's encode, the per-record check against the dataset's columns and
 * the record's JSON text in one pass, with no encoded object between them, and the text written
 * as UTF-8 bytes (`wireBytes`), not made as a string.
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
 * property test holds the two equal, text and batch bodies.
 *
 * @internal
 */
import type { SchemaAST } from "effect"
import { type Column, isIsoDateTime } from "../../records.js"
import { failed, fieldConversion, serviceDate, serviceDateFromString } from "./fieldByField.js"
import * as Bytes from "./wireBytes.js"

/**
 * Marks a record element whose text was written by a writer made for this dataset schema
 * (compared by identity): `checkElement` with the same schema takes the text as it is.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const writtenFor: unique symbol = Symbol("tributary/Typed/writtenFor")

/**
 * The text of a record element written by a writer (`Bytes.Written`), beside `writtenFor`.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const writtenText: unique symbol = Symbol("tributary/Typed/writtenText")

/** What the writer needs of the destination: its columns and primary key. */
interface Destination {
  readonly columns: ReadonlyArray<Column>
  readonly primaryKey: ReadonlyArray<string>
}

/** A field's writer: writes the value's JSON text, or answers false (nothing to trust). */
type FieldWriter = (value: unknown) => boolean

/** An encoded value as JSON text for a column of this type, or false where `checkRecord` might object. */
const encodedWriter = (dataType: Column["dataType"], nullable: boolean): FieldWriter => {
  switch (dataType) {
    case "string":
      return (e) => (typeof e === "string" ? Bytes.string(e) : e === null ? nullable && Bytes.writeNull() : Bytes.strings(e))
    case "number":
      return (e) => (typeof e === "number" ? Number.isFinite(e) && Bytes.number(e) : e === null && nullable && Bytes.writeNull())
    case "datetime":
      return (e) => (typeof e === "string" ? isIsoDateTime(e) && Bytes.string(e) : e === null && nullable && Bytes.writeNull())
  }
}

/** How one field of the output schema (through `serviceDates`) is written into a column of `dataType`. */
const fieldWriter = (type: SchemaAST.AST, dataType: Column["dataType"], nullable: boolean): FieldWriter => {
  if (dataType === "datetime" && (type === serviceDate || type === serviceDateFromString)) {
    // What the date writer writes is valid ISO text by construction within the years it takes
    // (it refuses the others, and invalid dates, as these schemas do).
    return (v) => v instanceof Date && Bytes.date(v)
  }
  const convert = fieldConversion(type, "encode")
  const write = encodedWriter(dataType, nullable)
  return (v) => {
    const e = convert(v)
    return e !== failed && write(e)
  }
}

// A key the object's own order would move ahead of the others (JSON.stringify writes integer
// keys first): left to the generic path.
const indexLike = /^(?:0|[1-9]\d*)$/

/**
 * A writer for records of the output schema `ast` (through `serviceDates`) into `destination`,
 * or undefined when the schema is not a plain struct, a field is not a column of the
 * destination (or has a name JSON would move), or code cannot be generated here. The writer
 * answers the record's text (`Bytes.Written`), or undefined for the generic path.
 *
 * @since 0.1.0
 * @category constructors
 * @internal
 */
export const wireWriter = (ast: SchemaAST.AST, destination: Destination): ((value: unknown) => Bytes.Written | undefined) | undefined => {
  if (ast._tag !== "TypeLiteral" || ast.indexSignatures.length > 0 || ast.propertySignatures.length === 0) return undefined
  const types = new Map(destination.columns.map((column) => [column.id, column.dataType]))
  const fields: Array<{ readonly write: FieldWriter; readonly key: string; readonly optional: boolean }> = []
  for (const field of ast.propertySignatures) {
    const name = field.name
    if (typeof name !== "string" || indexLike.test(name)) return undefined
    const dataType = types.get(name)
    if (dataType === undefined) return undefined
    const key = destination.primaryKey.includes(name)
    // A primary key that is absent, or null, is checkRecord's to refuse: written as required.
    fields.push({ write: fieldWriter(field.type, dataType, !key), key: name, optional: field.isOptional && !key })
  }
  // Generated: the keys as constants, each field's writer its own call site (so it can be
  // inlined). A comma goes before a field when one was written before it: known here from the
  // first required field on, kept in `sep` before it.
  const firstRequired = fields.findIndex((field) => !field.optional)
  const lines = ["if (typeof input !== \"object\" || input === null || Array.isArray(input)) return undefined"]
  // Every value read, and every key there as undefined found, before a byte is written.
  fields.forEach((field, i) => {
    const key = JSON.stringify(field.key)
    lines.push(`const v${i} = input[${key}]`)
    // Required and absent, or optional and there as undefined: the generic path decides.
    lines.push(field.optional ? `if (v${i} === undefined && ${key} in input) return undefined` : `if (v${i} === undefined) return undefined`)
  })
  const runtimeComma = fields.some((_, i) => i > 0 && (firstRequired === -1 || i <= firstRequired))
  const constants: Array<ReadonlyArray<number>> = []
  const constant = (text: string) => `constant(c${constants.push(Bytes.encoded(text)) - 1})`
  lines.push("begin()")
  if (runtimeComma) lines.push("let sep = false")
  if (fields[0]!.optional) lines.push(constant("{"))
  fields.forEach((field, i) => {
    const key = JSON.stringify(field.key)
    const static_ = firstRequired !== -1 && i > firstRequired
    const open = i === 0 && !field.optional ? "{" : static_ ? "," : ""
    const steps = [
      ...(i > 0 && !static_ ? [`if (sep) ${constant(",")}`] : []),
      `${constant(`${open}${key}:`)}`,
      `if (!w${i}(v${i})) { abandon(); return undefined }`,
      ...(runtimeComma && !static_ ? ["sep = true"] : [])
    ]
    lines.push(field.optional ? `if (v${i} !== undefined) { ${steps.join("; ")} }` : steps.join("\n"))
  })
  lines.push(constant("}"))
  lines.push("return finish()")
  const names = ["begin", "abandon", "finish", "constant", ...fields.map((_, i) => `w${i}`), ...constants.map((_, i) => `c${i}`)]
  try {
    const make = new Function(...names, `"use strict"\nreturn function write(input) {\n${lines.join("\n")}\n}`)
    return make(Bytes.begin, Bytes.abandon, Bytes.finish, Bytes.constant, ...fields.map((field) => field.write), ...constants)
  } catch {
    return undefined
  }
}
