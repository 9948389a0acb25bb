/**
 * Typed record streams: decode each source record with the user's Effect `Schema`, transform
 * the typed records (`map`, `mapEffect`, `filter`, a one-to-many `flatMap`), and encode them
 * with an output schema whose encoded side is what is sent. The dataset's schema is derived
 * from that output schema (`datasetColumns`), compared with the destination's at start
 * (`compareSchemas`), or used to create the dataset (`createDataset`).
 *
 * Every stage is a pipeable (and dual) combinator over a stream of `Event`s: a source's
 * elements, or a `PartitionedSource`'s events (partition events pass through untouched, in
 * their place). `run` composes the same combinators over its source (`PipelineConfig.records`,
 * built with `records`): one core per stage.
 *
 * Dates are read and written as the service's `datetime` column takes them, not as `new Date`
 * (which Effect's date schemas use) would: the text that `Schema.Date`, `DateFromString` and
 * `DateTimeUtc` read or write must be an ISO 8601 date or date-time on a real calendar day
 * (`Records.isIsoDateTime` from `tributary`), so `2026-02-30` is a dead letter of stage
 * `decode`, not March 2, and a year past 9999 one of stage `encode`.
 *
 * Nothing is lost on the way: a record that does not decode or encode, or whose transform
 * fails, becomes a dead letter with the reason at its source position; a record a `filter`
 * drops (or a `flatMap` maps to nothing) is committed as handled. A defect in a transform (a
 * thrown exception, an `Effect.die`) stops the stream with a `TransformError` naming the
 * record's position.
 *
 * @since 0.1.0
 */
import { Cause, Chunk, Data, Effect, Either, Option, ParseResult, Schema, SchemaAST, Stream } from "effect"
import { dual } from "effect/Function"
import type { TributaryClientService } from "../client/Client.js"
import { formatPath, parseIssues } from "../internal/issues.js"
import type { Column, ColumnType } from "../records.js"
import { fieldByField, serviceDates } from "./internal/fieldByField.js"
import { wireWriter, writtenFor, writtenText } from "./internal/wireWriter.js"
import type { PartitionEvent } from "./Source.js"
import type { DatasetSchema } from "./validate.js"
import type { DeadLetter, Element, Position, Problem } from "./vocabulary.js"

/**
 * What typed stages take and give: elements whose records hold values of type `A`, and the
 * partition events of a `PartitionedSource`, passed through in their place.
 *
 * @since 0.1.0
 * @category models
 */
export type Event<A> = Element<A> | PartitionEvent

/**
 * A transform failed with a defect (it threw, or died): the run stops, since every record
 * after it would most likely fail the same way.
 *
 * @since 0.1.0
 * @category errors
 */
export class TransformError extends Data.TaggedError("TransformError")<{
  readonly reason: string
  readonly position: Position
  readonly cause?: unknown
}> {
  override get message() {
    return `partition ${this.position.partition} offset ${this.position.offset}` +
      `${this.position.child === undefined ? "" : ` child ${this.position.child.index}`}: ${this.reason}`
  }
}

// ---------------------------------------------------------------------------------------------
// decode and encode

/**
 * A schema's parse error as a problem: `field` is the path of the first issue; the message
 * lists every issue as the schema formats it (`path: message`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseProblem = (code: string, error: ParseResult.ParseError): Problem => {
  const issues = parseIssues(error)
  return {
    code,
    field: formatPath(issues[0]?.path ?? []) || null,
    message: issues.map((issue) => `${formatPath(issue.path) || "(record)"}: ${issue.message}`).join("; ")
  }
}

const dead = (letter: DeadLetter): Element<never> => ({ _tag: "Dead", letter })

/**
 * Decodes each record with `schema`: the stream's records hold the schema's `Type`. A record
 * that does not decode is a dead letter (stage `decode`, code `decode_failed`) naming the path
 * and the schema's message of each issue. Keys the schema does not name are dropped. The text
 * of a `Schema.Date`, `DateFromString` or `DateTimeUtc` must be one the service's `datetime`
 * takes (a date or date-time on a real calendar day, seconds and offset optional):
 * `placedAt: Expected an ISO 8601 date or date-time on a real calendar day, actual "2026-02-30"`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const decode: {
  <A, I>(schema: Schema.Schema<A, I, never>): <E, R>(self: Stream.Stream<Event<unknown>, E, R>) => Stream.Stream<Event<A>, E, R>
  <A, I, E, R>(self: Stream.Stream<Event<unknown>, E, R>, schema: Schema.Schema<A, I, never>): Stream.Stream<Event<A>, E, R>
} = dual(
  2,
  <A, I, E, R>(self: Stream.Stream<Event<unknown>, E, R>, schema: Schema.Schema<A, I, never>): Stream.Stream<Event<A>, E, R> =>
    mapRecordsPure(self, convertWith(schema, "decode") as (element: Extract<Element<unknown>, { _tag: "Record" }>) => Event<A>)
)

/**
 * One record through a schema, either way: the field-by-field path first, the whole schema
 * when that fails (its answer counts); a failure is a dead letter of stage `direction`. Both
 * paths read and write dates by the service's `datetime` rule (`serviceDates`).
 */
const convertWith = (schema: Schema.Schema<any, any, never>, direction: "decode" | "encode") => {
  const ast = serviceDates(schema.ast)
  const held = Schema.make(ast)
  const whole = direction === "decode"
    ? Schema.decodeUnknownEither(held, { errors: "all" })
    : Schema.encodeUnknownEither(held, { errors: "all" })
  const fast = fieldByField(ast, direction)
  return (element: Extract<Element<unknown>, { _tag: "Record" }>): Event<unknown> => {
    const { position, value } = element
    const quick = fast?.(value)
    if (quick !== undefined) return { _tag: "Record", position, value: quick }
    const converted = whole(value)
    return Either.isRight(converted)
      ? { _tag: "Record", position, value: converted.right }
      : dead({ position, reason: parseProblem(`${direction}_failed`, converted.left), stage: direction, record: value })
  }
}

/**
 * A value the service can store in a column: a string (also an ISO 8601 datetime), a finite
 * number, an array of strings, a `Date` (sent as ISO 8601 text), or nothing (`null`, absent).
 *
 * @since 0.1.0
 * @category models
 */
export type Storable = string | number | ReadonlyArray<string> | Date | null | undefined

/**
 * Encodes each record with the output schema: what the schema encodes to is what is sent. A
 * record that does not encode (a refinement of the type side that fails, a date whose ISO text
 * the service's `datetime` refuses: an invalid one, a year outside 0-9999) is a dead letter
 * (stage `encode`, code `encode_failed`).
 *
 * @since 0.1.0
 * @category combinators
 */
export const encode: {
  <A, I extends { readonly [column: string]: Storable }>(
    schema: Schema.Schema<A, I, never>
  ): <E, R>(self: Stream.Stream<Event<A>, E, R>) => Stream.Stream<Event<I>, E, R>
  <A, I extends { readonly [column: string]: Storable }, E, R>(
    self: Stream.Stream<Event<A>, E, R>,
    schema: Schema.Schema<A, I, never>
  ): Stream.Stream<Event<I>, E, R>
} = dual(2, <A, I extends { readonly [column: string]: Storable }, E, R>(
  self: Stream.Stream<Event<A>, E, R>,
  schema: Schema.Schema<A, I, never>
): Stream.Stream<Event<I>, E, R> =>
  mapRecordsPure(self, convertWith(schema, "encode") as (element: Extract<Element<A>, { _tag: "Record" }>) => Event<I>))

/**
 * `encode` when the destination's schema is known: each record's wire text is written straight
 * from the typed value as UTF-8 bytes, checked against `destination` on the way (`wireWriter`),
 * and the element is marked as written for it, so that `validate` (`checkElement` with the same
 * schema) sends the bytes as they are. Such an element's `value` is the typed record, not an
 * encoded one: only its text is read after this. A record the writer leaves (anything it is
 * not sure of) is encoded as `encode` does, and checked by `validate` as usual.
 *
 * The typed benchmark's records/s against the untyped pipeline's: 0.70 through `encode` then
 * `validate`, 0.80 with the text written as a string, 0.89 written as bytes (1M records;
 * `docs/decisions.md`, "Typed records").
 */
const encodeFor = <A, I, E, R>(
  self: Stream.Stream<Event<A>, E, R>,
  schema: Schema.Schema<A, I, never>,
  destination: DatasetSchema
): Stream.Stream<Event<I>, E, R> => {
  const generic = convertWith(schema, "encode") as (element: Extract<Element<A>, { _tag: "Record" }>) => Event<I>
  const write = wireWriter(serviceDates(schema.ast), destination)
  if (write === undefined) return mapRecordsPure(self, generic)
  return mapRecordsPure(self, (element) => {
    const text = write(element.value)
    if (text === undefined) return generic(element)
    return {
      _tag: "Record",
      position: element.position,
      value: element.value as unknown as I,
      [writtenFor]: destination,
      [writtenText]: text
    }
  })
}

// ---------------------------------------------------------------------------------------------
// transforms

/** Applies `f` to the records of each chunk; other elements and partition events pass. */
const mapRecordsPure = <A, B, E, R>(
  self: Stream.Stream<Event<A>, E, R>,
  f: (element: Extract<Element<A>, { _tag: "Record" }>) => Event<B>
): Stream.Stream<Event<B>, E, R> =>
  Stream.mapChunks(self, (chunk) => Chunk.map(chunk, (element) => (element._tag === "Record" ? f(element) : element as Event<B>)))

/**
 * Applies `f` to the records of each chunk (other elements and partition events pass). One
 * step per chunk, not per record: a per-record effect would cost more than most transforms.
 * `f` throwing is a defect: the stream fails with a `TransformError` at that record.
 *
 * `Stream.mapChunks`, not `mapChunksEffect`: the effectful form cost 7 µs more per record in
 * the pipeline benchmark (32 against 25 µs of CPU per record, with a map stage), most of it in
 * the collector. A throw is carried out of the pure step as a `TransformError` defect and turned
 * into the stream's failure once, at the end of the stage.
 */
const mapRecords = <A, B, E, R>(
  self: Stream.Stream<Event<A>, E, R>,
  f: (element: Extract<Element<A>, { _tag: "Record" }>, out: Array<Event<B>>) => Event<B> | void,
  what = "the stage"
): Stream.Stream<Event<B>, E | TransformError, R> =>
  Stream.mapChunks(self, (chunk) => {
    const elements = Chunk.toReadonlyArray(chunk)
    const out: Array<Event<B>> = []
    for (let i = 0; i < elements.length; i++) {
      const element = elements[i]!
      if (element._tag !== "Record") {
        out.push(element as Event<B>) // not a record: nothing of type A in it
        continue
      }
      try {
        const result = f(element, out)
        if (result !== undefined) out.push(result)
      } catch (error) {
        throw defect(element.position, `${what} threw`, error)
      }
    }
    return Chunk.unsafeFromArray(out)
  }).pipe(
    Stream.catchAllCause((cause): Stream.Stream<Event<B>, E | TransformError, R> => {
      const thrown = Option.getOrUndefined(Cause.dieOption(cause))
      return thrown instanceof TransformError ? Stream.fail(thrown) : Stream.failCause(cause)
    })
  )

const defect = (position: Position, what: string, cause: unknown) =>
  new TransformError({ reason: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, position, cause })

/**
 * Maps each record's value. `f` is pure: a failure that belongs to one record goes through
 * `mapEffect`; `f` throwing stops the stream with a `TransformError`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const map: {
  <A, B>(f: (value: A, position: Position) => B): <E, R>(self: Stream.Stream<Event<A>, E, R>) => Stream.Stream<Event<B>, E | TransformError, R>
  <A, B, E, R>(self: Stream.Stream<Event<A>, E, R>, f: (value: A, position: Position) => B): Stream.Stream<Event<B>, E | TransformError, R>
} = dual(2, <A, B, E, R>(self: Stream.Stream<Event<A>, E, R>, f: (value: A, position: Position) => B) =>
  mapRecords<A, B, E, R>(self, (element) => ({ _tag: "Record", position: element.position, value: f(element.value, element.position) }), "map"))

/**
 * Keeps the records `predicate` holds for; the others are dropped, and their positions are
 * committed as handled (nothing is sent for them).
 *
 * @since 0.1.0
 * @category combinators
 */
export const filter: {
  <A, B extends A>(refinement: (value: A, position: Position) => value is B): <E, R>(
    self: Stream.Stream<Event<A>, E, R>
  ) => Stream.Stream<Event<B>, E | TransformError, R>
  <A>(predicate: (value: A, position: Position) => boolean): <E, R>(
    self: Stream.Stream<Event<A>, E, R>
  ) => Stream.Stream<Event<A>, E | TransformError, R>
  <A, B extends A, E, R>(
    self: Stream.Stream<Event<A>, E, R>,
    refinement: (value: A, position: Position) => value is B
  ): Stream.Stream<Event<B>, E | TransformError, R>
  <A, E, R>(self: Stream.Stream<Event<A>, E, R>, predicate: (value: A, position: Position) => boolean): Stream.Stream<Event<A>, E | TransformError, R>
} = dual(2, <A, E, R>(self: Stream.Stream<Event<A>, E, R>, predicate: (value: A, position: Position) => boolean) =>
  mapRecords<A, A, E, R>(
    self,
    (element) => (predicate(element.value, element.position) ? element : { _tag: "Dropped", position: element.position }),
    "filter"
  ))

/**
 * One record to any number: each child is sent as a record of its own, at its parent's
 * source position with a child index (`Position.child`). The parent's position is committed
 * only once all of its children are stored or dead-lettered; batch boundaries and idempotency
 * keys name the children, so a restart rebuilds the same batches as long as `f` gives the
 * same children for the same record. No children: the record is dropped (committed as
 * handled). Children of children are refused (`TransformError`): make one `flatMap` of two.
 *
 * @since 0.1.0
 * @category combinators
 */
export const flatMap: {
  <A, B>(f: (value: A, position: Position) => Iterable<B>): <E, R>(
    self: Stream.Stream<Event<A>, E, R>
  ) => Stream.Stream<Event<B>, E | TransformError, R>
  <A, B, E, R>(self: Stream.Stream<Event<A>, E, R>, f: (value: A, position: Position) => Iterable<B>): Stream.Stream<Event<B>, E | TransformError, R>
} = dual(2, <A, B, E, R>(self: Stream.Stream<Event<A>, E, R>, f: (value: A, position: Position) => Iterable<B>) =>
  mapRecords<A, B, E, R>(self, (element, out) => {
    const { position } = element
    if (position.child !== undefined) throw new Error("flatMap of a flatMap's children: make one flatMap of the two")
    const children = Array.from(f(element.value, position))
    if (children.length === 0) return { _tag: "Dropped", position }
    for (let index = 0; index < children.length; index++) {
      // `Object.assign`, not a spread: a spread followed by a new key cost 1.2 µs per child on
      // node 20 against 0.05 (docs/decisions.md, "Spreads").
      const child: Position = Object.assign({}, position, { child: { index, of: children.length } })
      out.push({ _tag: "Record", position: child, value: children[index]! })
    }
  }, "flatMap"))

/**
 * Maps each record with an effect (a lookup, a call to another service), `concurrency` at a
 * time (default 1), keeping the order. A failure dead-letters that record (stage `transform`,
 * code the error's `_tag` or `transform_failed`, message the error's); a defect stops the
 * stream with a `TransformError`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const mapEffect: {
  <A, B, E2, R2>(
    f: (value: A, position: Position) => Effect.Effect<B, E2, R2>,
    options?: { readonly concurrency?: number | undefined }
  ): <E, R>(self: Stream.Stream<Event<A>, E, R>) => Stream.Stream<Event<B>, E | TransformError, R | R2>
  <A, B, E2, R2, E, R>(
    self: Stream.Stream<Event<A>, E, R>,
    f: (value: A, position: Position) => Effect.Effect<B, E2, R2>,
    options?: { readonly concurrency?: number | undefined }
  ): Stream.Stream<Event<B>, E | TransformError, R | R2>
} = dual(
  (args) => Stream.StreamTypeId in args[0],
  <A, B, E2, R2, E, R>(
    self: Stream.Stream<Event<A>, E, R>,
    f: (value: A, position: Position) => Effect.Effect<B, E2, R2>,
    options?: { readonly concurrency?: number | undefined }
  ): Stream.Stream<Event<B>, E | TransformError, R | R2> =>
    Stream.mapEffect(self, (element): Effect.Effect<Event<B>, TransformError, R2> => {
      if (element._tag !== "Record") return Effect.succeed(element as Event<B>)
      const { position } = element
      return Effect.matchCauseEffect(Effect.suspend(() => f(element.value, position)), {
        onSuccess: (value) => Effect.succeed<Event<B>>({ _tag: "Record", position, value }),
        onFailure: (cause) =>
          Option.match(Cause.failureOption(cause), {
            onSome: (error) => Effect.succeed(dead({ position, reason: failureProblem(error), stage: "transform", record: element.value })),
            onNone: () =>
              Cause.isInterruptedOnly(cause)
                ? Effect.failCause(cause as Cause.Cause<never>)
                : Effect.fail(defect(position, "mapEffect died", Cause.squash(cause)))
          })
      })
    }, { concurrency: options?.concurrency ?? 1 })
)

/** A transform's failure as a dead letter's reason. */
const failureProblem = (error: unknown): Problem => {
  if (ParseResult.isParseError(error)) return parseProblem("transform_failed", error)
  const tagged = typeof error === "object" && error !== null ? (error as { _tag?: unknown; message?: unknown; field?: unknown }) : {}
  return {
    code: typeof tagged._tag === "string" ? tagged._tag : "transform_failed",
    field: typeof tagged.field === "string" ? tagged.field : null,
    message: typeof tagged.message === "string" && tagged.message !== "" ? tagged.message : String(error)
  }
}

// ---------------------------------------------------------------------------------------------
// the dataset's schema from the output schema

/**
 * A column derived from an output schema: its type, and whether a record may leave it empty
 * (an optional or nullable field; such a column cannot be part of a primary key).
 *
 * @since 0.1.0
 * @category models
 */
export interface DerivedColumn extends Column {
  readonly nullable: boolean
}

/**
 * The output schema cannot describe a dataset: every field the service cannot store, named.
 *
 * @since 0.1.0
 * @category errors
 */
export class DatasetSchemaError extends Data.TaggedError("DatasetSchemaError")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

type Derived = { readonly dataType: ColumnType; readonly nullable: boolean } | { readonly problem: string }

const isDateDeclaration = (ast: SchemaAST.AST): boolean => {
  while (ast._tag === "Refinement") ast = ast.from
  if (ast._tag !== "Declaration") return false
  const id = Option.getOrUndefined(SchemaAST.getIdentifierAnnotation(ast))
  return id === "DateFromSelf" || id === "DateTimeUtcFromSelf" || id === "DateTimeZonedFromSelf"
}

const nothing = (ast: SchemaAST.AST) =>
  ast._tag === "UndefinedKeyword" || ast._tag === "VoidKeyword" || (ast._tag === "Literal" && ast.literal === null)

/** The column type a field's schema encodes to. */
const deriveField = (ast: SchemaAST.AST): Derived => {
  switch (ast._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return { dataType: "string", nullable: false }
    case "NumberKeyword":
      return { dataType: "number", nullable: false }
    case "Literal":
      return typeof ast.literal === "string"
        ? { dataType: "string", nullable: false }
        : typeof ast.literal === "number"
        ? { dataType: "number", nullable: false }
        : { problem: `the literal ${String(ast.literal)} cannot be stored (only strings and numbers)` }
    case "Enums": {
      const kinds = new Set(ast.enums.map(([, value]) => typeof value))
      return kinds.size === 1 ? { dataType: kinds.has("string") ? "string" : "number", nullable: false } : {
        problem: "an enum of strings and numbers cannot be one column"
      }
    }
    case "Refinement":
      return deriveField(ast.from)
    case "Suspend":
      return deriveField(ast.f())
    case "Transformation": {
      // What is sent is the encoded side; a date on the type side makes its text a datetime.
      const from = deriveField(ast.from)
      return "dataType" in from && from.dataType === "string" && isDateDeclaration(ast.to) ? { ...from, dataType: "datetime" } : from
    }
    case "Declaration":
      return isDateDeclaration(ast)
        ? { dataType: "datetime", nullable: false }
        : { problem: `${Option.getOrElse(SchemaAST.getIdentifierAnnotation(ast), () => "this declared type")} cannot be stored` }
    case "TupleType": {
      const element = ast.elements.length === 0 && ast.rest.length === 1 ? deriveField(ast.rest[0]!.type) : undefined
      return element !== undefined && "dataType" in element && element.dataType === "string" && !element.nullable
        ? { dataType: "string", nullable: false }
        : { problem: "only arrays of strings can be stored (as a multi-valued string column)" }
    }
    case "Union": {
      const present = ast.types.filter((member) => !nothing(member))
      const members = present.map(deriveField)
      const problem = members.find((member): member is { problem: string } => "problem" in member)
      if (problem !== undefined) return problem
      const types = new Set(members.map((member) => (member as { dataType: ColumnType }).dataType))
      if (types.size !== 1) return { problem: `a union of ${[...types].join(" and ")} cannot be one column` }
      return { dataType: [...types][0]!, nullable: present.length < ast.types.length }
    }
    case "BooleanKeyword":
      return { problem: "booleans cannot be stored (the service has string, number and datetime columns)" }
    case "TypeLiteral":
      return { problem: "nested objects cannot be stored (flatten them into columns)" }
    default:
      return { problem: `${ast._tag} cannot be stored` }
  }
}

/** The object an output schema encodes to: its fields, with their full schemas. */
const fieldsOf = (ast: SchemaAST.AST): SchemaAST.TypeLiteral | undefined => {
  switch (ast._tag) {
    case "TypeLiteral":
      return ast
    case "Refinement":
      return fieldsOf(ast.from)
    case "Suspend":
      return fieldsOf(ast.f())
    case "Transformation":
      // A class is its fields' struct transformed into the class; optional fields with defaults
      // are a struct transformed into a struct: the fields are on the encoded side.
      return fieldsOf(ast.from)
    default:
      return undefined
  }
}

/**
 * The dataset columns an output schema describes: `String` -> string, `Number`/`Int` ->
 * number, `Date`/`DateFromString`/`DateTimeUtc`/`DateFromSelf` -> datetime, `Array(String)` ->
 * string (multi-valued), a union of string literals -> string, optional or `NullOr` ->
 * nullable. Fields the service cannot store fail with every such field named.
 *
 * @since 0.1.0
 * @category constructors
 */
export const datasetColumns = (schema: Schema.Schema.Any): Either.Either<ReadonlyArray<DerivedColumn>, DatasetSchemaError> => {
  const fields = fieldsOf(schema.ast)
  if (fields === undefined || fields.indexSignatures.length > 0) {
    return Either.left(new DatasetSchemaError({ reason: "the output schema must be a struct (or a class) of named fields" }))
  }
  const columns: Array<DerivedColumn> = []
  const problems: Array<string> = []
  for (const field of fields.propertySignatures) {
    const name = String(field.name)
    const derived = deriveField(field.type)
    if ("problem" in derived) problems.push(`${name}: ${derived.problem}`)
    else columns.push({ id: name, dataType: derived.dataType, nullable: derived.nullable || field.isOptional })
  }
  return problems.length > 0
    ? Either.left(new DatasetSchemaError({ reason: `the output schema has fields the service cannot store: ${problems.join("; ")}` }))
    : Either.right(columns)
}

/**
 * Compares the columns an output schema describes with a dataset's schema; answers one line
 * per mismatched column (none: they agree). A mismatch: a column the dataset lacks, another
 * type, a primary-key column the output schema does not have or may leave empty.
 *
 * @since 0.1.0
 * @category utils
 */
export const compareSchemas = (
  columns: ReadonlyArray<DerivedColumn>,
  dataset: DatasetSchema,
  /** What the columns are, in the messages. */
  what = "the output schema"
): ReadonlyArray<string> => {
  const existing = new Map(dataset.columns.map((column) => [column.id, column.dataType]))
  const derived = new Map(columns.map((column) => [column.id, column]))
  const keys = new Set(dataset.primaryKey)
  const mismatches: Array<string> = []
  for (const column of columns) {
    const type = existing.get(column.id)
    if (type === undefined) {
      // Only a contract given for it lets the dataset gain columns (or drop new keys) here: a
      // comparison of schemas is strict unless told otherwise.
      if ((dataset.contract?.columns ?? (dataset.allowNewColumns ? "evolve" : "freeze")) === "freeze") mismatches.push(`${column.id}: ${column.dataType} in ${what}, not in the dataset`)
    } else if (type !== column.dataType) {
      mismatches.push(`${column.id}: ${column.dataType} in ${what}, ${type} in the dataset`)
    } else if (keys.has(column.id) && column.nullable) {
      mismatches.push(`${column.id}: in the dataset's primary key, but optional or nullable in ${what}`)
    }
  }
  for (const key of dataset.primaryKey) {
    if (!derived.has(key)) mismatches.push(`${key}: in the dataset's primary key, not in ${what}`)
  }
  return mismatches
}

/**
 * Creates a v2 dataset whose schema is the output schema's columns, with the primary key
 * given (its columns must be required fields of the output schema); answers its id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const createDataset = <A, I extends { readonly [column: string]: Storable }>(
  client: TributaryClientService,
  output: Schema.Schema<A, I, never>,
  options: {
    readonly dataSourceId: number
    readonly name: string
    readonly primaryKey?: ReadonlyArray<keyof I & string> | undefined
  }
): Effect.Effect<number, DatasetSchemaError> =>
  Effect.gen(function*() {
    const columns = yield* datasetColumns(output)
    const byId = new Map(columns.map((column) => [column.id, column]))
    const badKeys = (options.primaryKey ?? []).filter((key) => byId.get(key)?.nullable !== false)
    if (badKeys.length > 0) {
      return yield* new DatasetSchemaError({
        reason: `primary key ${badKeys.join(", ")}: not a required field of the output schema`
      })
    }
    const created = yield* client.v2.v2Datasets.create({
      payload: {
        name: options.name,
        dataSourceId: options.dataSourceId,
        schema: columns.map(({ dataType, id }) => ({ id, dataType })),
        ...(options.primaryKey === undefined ? {} : { primaryKey: options.primaryKey })
      },
      headers: {}
    }).pipe(Effect.mapError((error) =>
      new DatasetSchemaError({
        reason: `cannot create dataset ${options.name}: ${"errors" in error ? error.errors[0]?.message ?? error._tag : error.message}`
      })
    ))
    return created.data.id
  })

// ---------------------------------------------------------------------------------------------
// the typed part of a run

/**
 * The typed part of a `run`: how records are decoded, transformed and encoded, and the
 * columns the output schema describes (checked against the destination at start).
 *
 * @since 0.1.0
 * @category models
 */
export interface Records<E = never, R = never> {
  readonly columns: Either.Either<ReadonlyArray<DerivedColumn>, DatasetSchemaError>
  /**
   * The typed stages over a source's events. Given the destination's schema (`run` gives it,
   * after comparing it with the output schema), records are written for it in the encode
   * stage: see `encodeFor`.
   */
  readonly through: <E0, R0>(
    events: Stream.Stream<Event<unknown>, E0, R0>,
    destination?: DatasetSchema
  ) => Stream.Stream<Event<unknown>, E0 | E | TransformError, R0 | R>
}

/**
 * The typed part of a `run`: `decode` with the input schema, `transform` (typed stages, or
 * none), `encode` with the output schema.
 *
 * ```ts
 * run(client, {
 *   source,
 *   records: Typed.records({
 *     decode: Order,
 *     transform: Typed.flatMap((order: Order) => order.lines),
 *     encode: OrderLine
 *   }),
 *   ...
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const records: {
  <A, I, B, O extends { readonly [column: string]: Storable }, E = never, R = never>(options: {
    readonly decode: Schema.Schema<A, I, never>
    readonly transform: (records: Stream.Stream<Event<A>>) => Stream.Stream<Event<B>, E, R>
    readonly encode: Schema.Schema<B, O, never>
  }): Records<E, R>
  <A, I, O extends { readonly [column: string]: Storable }>(options: {
    readonly decode: Schema.Schema<A, I, never>
    readonly encode: Schema.Schema<A, O, never>
  }): Records
} = (options: {
  readonly decode: Schema.Schema<any, any, never>
  readonly transform?: (records: Stream.Stream<Event<any>>) => Stream.Stream<Event<any>, any, any>
  readonly encode: Schema.Schema<any, any, never>
}): Records<any, any> => ({
  columns: datasetColumns(options.encode),
  through: (events, destination) => {
    const decoded = decode(events, options.decode)
    // The transform is written over a stream without errors or requirements (that is what it
    // may assume of its input); the source's own pass through it unchanged.
    const transformed = options.transform === undefined ? decoded : options.transform(decoded as Stream.Stream<Event<any>>)
    return destination === undefined ? encode(transformed, options.encode) : encodeFor(transformed, options.encode, destination)
  }
})
