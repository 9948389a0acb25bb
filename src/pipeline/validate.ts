/**
 * `validate`: check records against the destination dataset's schema before sending.
 *
 * @since 0.1.0
 */
import { Chunk, Stream } from "effect"
import { dual } from "effect/Function"
import { checkRecord, type Column, primaryKeyOf, type Row } from "../records.js"
import { CommitTracker } from "./internal/commitTracker.js"
import { type Written, WrittenRecord } from "./internal/wireBytes.js"
import { writtenFor, writtenText } from "./internal/wireWriter.js"
import { isPartitionEvent, type PartitionEvent } from "./Source.js"
import { type Checked, type Element, elementPosition, type KeyValue } from "./vocabulary.js"

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
   * Whether keys outside the schema are allowed (the service adds them as columns).
   * Off by default: an unexpected column is usually a mistake upstream.
   */
  readonly allowNewColumns?: boolean | undefined
}

/**
 * How a valid record's primary-key value is read for the key order (`internal/conflicts.ts`):
 * undefined for a dataset without a key. A one-column key of a string or a number is its value
 * as it is: building the JSON text (`primaryKeyOf`) cost a string a record and, with the map
 * look-ups it feeds, about 8% of `bench:pipeline`'s CPU.
 *
 * @since 0.2.0
 * @category utils
 */
export const keyValueOf = (primaryKey: ReadonlyArray<string>): (value: unknown) => KeyValue | undefined => {
  if (primaryKey.length === 0) return () => undefined
  if (primaryKey.length > 1) return (value) => primaryKeyOf(value as Row, primaryKey)
  const column = primaryKey[0]!
  return (value) => {
    const key = (value as Row)[column]
    return typeof key === "string" || typeof key === "number" ? key : primaryKeyOf(value as Row, primaryKey)
  }
}

/**
 * Checks one element: malformed elements and invalid records become dead letters with
 * the reason; valid records carry their JSON text for the batch body.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkElement = (schema: DatasetSchema) => {
  const options = {
    schema: schema.columns,
    primaryKey: schema.primaryKey,
    addUnknownColumns: schema.allowNewColumns ?? false
  }
  const primaryKey = schema.primaryKey
  // Only keyed datasets order their batches (`internal/conflicts.ts`); a valid record is an object.
  const keyOf = keyValueOf(primaryKey)
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
    const check = checkRecord(element.value, options)
    if (check._tag === "Invalid") {
      return {
        _tag: "Dead",
        seq,
        letter: { position: element.position, reason: check.problem, stage: "validate", record: element.value }
      }
    }
    return {
      _tag: "Valid",
      seq,
      position: element.position,
      json: element.json ?? JSON.stringify(element.value),
      key: keyOf(element.value)
    }
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
} = dual(2, <E, R>(self: Stream.Stream<Sequenced, E, R>, schema: DatasetSchema) => {
  const check = checkElement(schema)
  // Whole chunks at a time: a per-element effect would cost more than the check itself.
  return Stream.mapChunks(self, (chunk) => Chunk.map(chunk, ({ element, seq }) => check(element, seq)))
})
