/**
 * `validate`: check records against the destination dataset's schema before sending.
 *
 * @since 0.1.0
 */
import { Chunk, Stream } from "effect"
import { dual } from "effect/Function"
import { type Column, primaryKeyOf, type Row } from "../records.js"
import { CommitTracker } from "./internal/commitTracker.js"
import { keyNumber } from "./internal/conflicts.js"
import { decide, defaultContract, type Discarded, evolve, frozenContract, type KnownSchema, type SchemaContract } from "./SchemaContract.js"
import { type Written, WrittenRecord } from "./internal/wireBytes.js"
import { writtenFor, writtenText } from "./internal/wireWriter.js"
import { isPartitionEvent, type PartitionEvent } from "./Source.js"
import { type Checked, type Element, elementPosition, type KeyValue, type Position, type RecordElement, type ValueTypes } from "./vocabulary.js"

export type { Checked } from "./vocabulary.js"

/**
 * An element with its place in the run: `seq` numbers the elements of a partition densely
 * from 0 in the order they were read, which is what commit tracking counts on.
 *
 * @since 0.1.0
 * @category models
 */
export interface Sequenced {
  readonly seq: number
  readonly element: Element
}

/**
 * The destination dataset's columns and primary key.
 *
 * @since 0.1.0
 * @category models
 */
export interface DatasetSchema {
  readonly columns: ReadonlyArray<Column>
  readonly primaryKey: ReadonlyArray<string>
  /**
   * What to do with records that do not fit (`SchemaContract`): by default new columns evolve
   * the dataset, as the service does, and a value of the wrong type makes a dead letter.
   */
  readonly contract?: SchemaContract | undefined
  /**
   * The older switch for new columns: `true` is a contract's `columns: "evolve"`, `false`
   * `columns: "freeze"`. `contract` wins when both are given.
   */
  readonly allowNewColumns?: boolean | undefined
}

/**
 * How a valid record's primary-key value is read for the key order (`internal/conflicts.ts`):
 * undefined for a dataset without a key, else its number (`keyNumber`): a whole number from 0
 * to 2^30 - 1 stands for itself, any other value for a hash of its text (a composite key's
 * text is `primaryKeyOf`'s). The number is made here, while the record's text is warm: made at
 * admission, the first touch of each cold key string was most of the key order's cost. Two
 * values with one number are ordered as if they shared a key, which costs a wait, never an
 * order. (A boolean key's text `[true]` meets the string `"[true]"` the same way.)
 *
 * @since 0.2.0
 * @category utils
 */
export const keyValueOf = (primaryKey: ReadonlyArray<string>): (value: unknown) => KeyValue | undefined => {
  if (primaryKey.length === 0) return () => undefined
  if (primaryKey.length > 1) return (value) => keyNumber(primaryKeyOf(value as Row, primaryKey))
  const column = primaryKey[0]!
  return (value) => {
    const key = (value as Row)[column]
    return keyNumber(typeof key === "string" || typeof key === "number" ? key : primaryKeyOf(value as Row, primaryKey))
  }
}

/**
 * The contract a schema is checked under: its own, or what `allowNewColumns` says, or the
 * default (new columns evolve).
 *
 * @since 0.3.0
 * @category utils
 */
export const contractOf = (schema: DatasetSchema): SchemaContract =>
  schema.contract ??
    (schema.allowNewColumns === undefined
      ? defaultContract
      : { ...defaultContract, columns: schema.allowNewColumns ? "evolve" : frozenContract.columns })

/**
 * Whether every record a source typed with `types` (`RecordElement.typedBy`) fits `known` as
 * it is: each of its columns is in the dataset with a type that takes its values (the same
 * type, or `string` for a date-time, whose ISO text is a string too), and each primary-key
 * column is one the source never leaves null. Such a record adds no column and has no misfit
 * for any contract to act on, so it needs no check. Measured on a 1M-row backfill: the
 * value-by-value check was 6% of its CPU (1.1 of 17.2 s).
 *
 * @since 0.3.0
 * @category guards
 */
export const fitsTypes = (types: ValueTypes, known: KnownSchema): boolean => {
  const columns = new Map(known.columns.map((column) => [column.id, column.dataType]))
  for (const column of types.columns) {
    const dataType = columns.get(column.id)
    if (dataType !== column.dataType && !(column.dataType === "datetime" && dataType === "string")) return false
  }
  return known.primaryKey.every((key) => types.notNull.includes(key))
}

/**
 * What checking saw besides each record's verdict: a column the dataset gains (the first
 * record that holds it, by its position), values a contract dropped.
 *
 * @since 0.3.0
 * @category models
 */
export interface SchemaObserver {
  readonly columnAdded?: ((column: Column, position: Position) => void) | undefined
  readonly discarded?: ((discarded: ReadonlyArray<Discarded>, position: Position) => void) | undefined
}

/**
 * Checks one element: malformed elements and records the schema's contract refuses become
 * dead letters with the reason; records it accepts (values it dropped taken out) carry their
 * JSON text for the batch body. Under `evolve`, the columns a record adds are known to the
 * records after it (a later value of another type is a mismatch, as it is at the service),
 * and the 101st column is refused as the service would refuse it.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkElement = (schema: DatasetSchema, observer: SchemaObserver = {}) => {
  const contract = contractOf(schema)
  // The columns known so far: the dataset's, then those this run's records added.
  let known = { columns: schema.columns, primaryKey: schema.primaryKey }
  const primaryKey = schema.primaryKey
  // Only keyed datasets order their batches (`internal/conflicts.ts`); a valid record is an object.
  const keyOf = keyValueOf(primaryKey)
  // The value types last found to fit (`fitsTypes`), and those last found not to, until a
  // column is added: a source types all its records with one object.
  let fitting: ValueTypes | undefined
  let misfitting: ValueTypes | undefined
  const fits = (types: ValueTypes): boolean => {
    if (types === fitting) return true
    if (types === misfitting) return false
    const fit = fitsTypes(types, known)
    if (fit) fitting = types
    else misfitting = types
    return fit
  }
  /** A record sent as the source made it: its own text, or its value's. */
  const asIs = (element: RecordElement, seq: number): Checked => ({
    _tag: "Valid",
    seq,
    position: element.position,
    json: element.json ?? JSON.stringify(element.value),
    key: keyOf(element.value)
  })
  return (element: Element, seq: number): Checked => {
    if (element._tag === "Dead") return { _tag: "Dead", seq, letter: element.letter }
    if (element._tag === "Dropped") return { _tag: "Skipped", seq, position: element.position }
    if (element._tag === "Malformed") {
      return {
        _tag: "Dead",
        seq,
        letter: { position: element.position, reason: element.problem, stage: "source", raw: element.raw }
      }
    }
    // Written and checked for this very schema by the typed encoder (`run` with typed records).
    const written = element as { readonly [writtenFor]?: DatasetSchema; readonly [writtenText]?: Written }
    if (written[writtenFor] === schema && written[writtenText] !== undefined) {
      return new WrittenRecord(seq, element.position, written[writtenText], keyOf(element.value))
    }
    const typedBy = (element as RecordElement).typedBy
    if (typedBy !== undefined && fits(typedBy)) return asIs(element, seq)
    const decision = decide(element.value, known, contract)
    if (decision._tag === "Dead") {
      return {
        _tag: "Dead",
        seq,
        letter: { position: element.position, reason: decision.problem, stage: "validate", record: element.value }
      }
    }
    if (decision.added.length > 0) {
      known = { ...known, columns: evolve(known.columns, decision.added) }
      misfitting = undefined
      for (const column of decision.added) observer.columnAdded?.(column, element.position)
    }
    if (decision.discarded.length > 0) {
      observer.discarded?.(decision.discarded, element.position)
      return { _tag: "Valid", seq, position: element.position, json: JSON.stringify(decision.row), key: keyOf(decision.row) }
    }
    return asIs(element, seq)
  }
}

/**
 * Numbers the elements of a source (or of typed stages after it) per partition, densely from 0 in reading order: the
 * `seq` that batching and committing count on. Numbering starts afresh with every run of the
 * stream (a resumed source starts after its committed position).
 *
 * @since 0.1.0
 * @category combinators
 */
export const sequence = <E, R>(self: Stream.Stream<Element | PartitionEvent, E, R>): Stream.Stream<Sequenced, E, R> =>
  Stream.suspend(() => {
    // The numbering `run` uses; the read clock is not needed here.
    const numbering = new CommitTracker()
    return Stream.mapChunks(self, (chunk) =>
      Chunk.map(chunk, (element): Sequenced => {
        // Typed stages pass partition events through for `run`; a `Source`'s elements have none.
        if (isPartitionEvent(element)) throw new Error("sequence: partition events need run (a PartitionedSource)")
        return { seq: numbering.read(elementPosition(element).partition, 0), element }
      }))
  })

/**
 * Checks every element of a stream against `schema`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const validate: {
  (schema: DatasetSchema): <E, R>(self: Stream.Stream<Sequenced, E, R>) => Stream.Stream<Checked, E, R>
  <E, R>(self: Stream.Stream<Sequenced, E, R>, schema: DatasetSchema): Stream.Stream<Checked, E, R>
} = dual(2, <E, R>(self: Stream.Stream<Sequenced, E, R>, schema: DatasetSchema) =>
  // Each run of the stream starts from the dataset's columns (an evolving contract learns more).
  Stream.suspend(() => {
    const check = checkElement(schema)
    // Whole chunks at a time: a per-element effect would cost more than the check itself.
    return Stream.mapChunks(self, (chunk) => Chunk.map(chunk, ({ element, seq }) => check(element, seq)))
  }))
