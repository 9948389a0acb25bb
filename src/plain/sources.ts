/**
 * What a plain job reads, as a pipeline `Source`: an NDJSON file, a Node `Readable` (bytes
 * as NDJSON; an object-mode stream as records), an `AsyncIterable` or an array of records.
 *
 * Records of an iterable are numbered from 1 in partition `"0"` (the NDJSON source's
 * partition), so a checkpoint says "through record n"; a resume skips the first n records
 * as they come again. The same input in the same order under the same `name` maps to the same
 * batches and idempotency keys, which is what makes a resume replay instead of store twice.
 *
 * @since 0.3.0
 */
import type { Readable } from "node:stream"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Data, Option, Stream } from "effect"
import * as Ndjson from "../../connectors/ndjson/index.js"
import type { Source } from "../pipeline/Source.js"
import type { SourceElement } from "../pipeline/vocabulary.js"

/**
 * Records to send: a path of an NDJSON file, a Node `Readable`, an `AsyncIterable` or an
 * `Iterable` (an array) of records.
 *
 * @since 0.3.0
 * @category models
 */
export type Input = string | Readable | AsyncIterable<unknown> | Iterable<unknown>

/**
 * The input could not be read (an iterable threw, a stream failed).
 *
 * @since 0.3.0
 * @category errors
 */
export class InputError extends Data.TaggedError("InputError")<{ readonly reason: string; readonly cause?: unknown }> {
  override get message() {
    return this.reason
  }
}

const isReadable = (input: unknown): input is Readable =>
  typeof input === "object" && input !== null && typeof (input as Readable).pipe === "function" &&
  typeof (input as Readable).read === "function"

/**
 * Records of an iterable, numbered from 1; a resume skips through the committed number.
 *
 * @since 0.3.0
 * @category constructors
 */
export const fromRecords = (name: string, records: AsyncIterable<unknown> | Iterable<unknown>): Source<InputError> => ({
  name,
  elements: (committed) => {
    const skip = committed[Ndjson.partition]?.offset ?? 0
    const values: Stream.Stream<unknown, InputError> = Symbol.asyncIterator in records
      ? Stream.fromAsyncIterable(records, (cause) => new InputError({ reason: `the records could not be read: ${String(cause)}`, cause }))
      : Stream.fromIterable(records as Iterable<unknown>)
    let offset = 0
    return Stream.filterMap(values, (value): Option.Option<SourceElement> => {
      offset++
      return offset <= skip ? Option.none() : Option.some({ _tag: "Record", position: { partition: Ndjson.partition, offset }, value })
    })
  }
})

/**
 * The source of a plain job's input. `name` identifies it across restarts (a file is named by
 * its path): give the same one to resume.
 *
 * @since 0.3.0
 * @category constructors
 */
export const sourceOf = (input: Input, name: string | undefined): Source<any, any> => {
  if (typeof input === "string") return Ndjson.fromFile(input)
  if (isReadable(input) && !input.readableObjectMode) {
    return Ndjson.fromBytes(
      name ?? "ndjson:stream",
      NodeStream.fromReadable(() => input, (cause) => new InputError({ reason: `the stream failed: ${String(cause)}`, cause }))
    )
  }
  if (typeof input === "object" && input !== null && (Symbol.asyncIterator in input || Symbol.iterator in input)) {
    return fromRecords(name ?? "records", input as AsyncIterable<unknown>)
  }
  throw new TypeError("ingest needs `from`: a file path, a Readable, an AsyncIterable or an array of records")
}
