/**
 * NDJSON source: one JSON object per line, from a file, stdin or any byte stream.
 *
 * Position: partition `"0"`, offset = line number (from 1), resume = the byte offset just
 * after the line, so a restart seeks straight past everything committed (files) or skips
 * it without parsing (streams). Malformed JSON, non-object lines, over-long lines and
 * invalid UTF-8 become `Malformed` elements naming the line; blank lines are skipped; CRLF
 * line ends and a leading byte-order mark are accepted.
 *
 * Framing is done here rather than with `@effect/platform`'s `Ndjson`: that one fails the
 * whole stream on the first bad line and knows no line numbers or byte offsets, and a
 * pipeline must dead-letter a bad line and carry on.
 *
 * @since 0.1.0
 */
import { resolve } from "node:path"
import * as FileSystem from "@effect/platform/FileSystem"
import type { PlatformError } from "@effect/platform/Error"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Chunk, Data, Effect, Option, Stream } from "effect"
import type { Position, Source, SourceElement } from "../../src/pipeline/Source.js"

/** The one partition of an NDJSON source. @since 0.1.0 */
export const partition = "0"

/** Lines over this many bytes are dead-lettered unread (1 MiB). @since 0.1.0 */
export const defaultMaxLineBytes = 1024 * 1024

/** @since 0.1.0 */
export interface NdjsonOptions {
  /** Longest line accepted, in bytes without the line end. */
  readonly maxLineBytes?: number | undefined
}

/**
 * The input could not be read (not: a line could not be parsed, which is a dead letter).
 *
 * @since 0.1.0
 */
export class NdjsonReadError extends Data.TaggedError("NdjsonReadError")<{ readonly reason: string; readonly cause?: unknown }> {
  override get message() {
    return this.reason
  }
}

interface Line {
  readonly number: number
  /** Byte offset just after the line end. */
  readonly end: number
  /** The line's bytes without the line end; undefined when it was too long to keep. */
  readonly bytes: Uint8Array | undefined
  readonly length: number
}

const newline = 0x0a
const carriageReturn = 0x0d

/**
 * Cuts a byte stream into lines with their numbers and end offsets; a line longer than
 * `maxLineBytes` is reported without its bytes (they are never buffered).
 *
 * @since 0.1.0
 */
export const lines = <E, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  from: { readonly line: number; readonly byteOffset: number },
  maxLineBytes: number
): Stream.Stream<Line, E, R> => {
  let pending: Array<Uint8Array> = []
  let pendingLength = 0
  let tooLong = false
  let number = from.line
  let offset = from.byteOffset
  const take = (end: number): Line => {
    number++
    const length = pendingLength
    let joined: Uint8Array | undefined
    if (!tooLong) joined = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingLength)
    pending = []
    pendingLength = 0
    tooLong = false
    return { number, end, bytes: joined, length }
  }
  const keep = (part: Uint8Array) => {
    pendingLength += part.length
    if (tooLong) return
    if (pendingLength > maxLineBytes + 1) { // +1: a CR that belongs to the line end
      tooLong = true
      pending = []
    } else if (part.length > 0) {
      pending.push(part)
    }
  }
  const cut = (chunk: Uint8Array): Array<Line> => {
    const out: Array<Line> = []
    let start = 0
    for (let i = chunk.indexOf(newline); i !== -1; i = chunk.indexOf(newline, start)) {
      keep(chunk.subarray(start, i))
      offset += i - start + 1
      out.push(take(offset))
      start = i + 1
    }
    keep(chunk.subarray(start))
    offset += chunk.length - start
    return out
  }
  return Stream.concat(
    Stream.mapConcat(bytes, cut),
    Stream.suspend(() => (pendingLength > 0 || tooLong ? Stream.make(take(offset)) : Stream.empty))
  )
}

const decoder = new TextDecoder("utf-8", { fatal: true })
const shown = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text)

/**
 * Turns a line into a record or a malformed element; undefined for a blank line.
 *
 * @since 0.1.0
 */
export const parseLine = (line: Line, maxLineBytes: number): SourceElement | undefined => {
  const position: Position = { partition, offset: line.number, resume: { byteOffset: line.end } }
  if (line.bytes === undefined) {
    return {
      _tag: "Malformed",
      position,
      problem: {
        code: "line_too_long",
        field: null,
        message: `line ${line.number} is ${line.length} bytes, over the ${maxLineBytes}-byte limit`
      },
      raw: ""
    }
  }
  let text: string
  try {
    text = decoder.decode(line.bytes)
  } catch {
    return {
      _tag: "Malformed",
      position,
      problem: { code: "invalid_utf8", field: null, message: `line ${line.number} is not valid UTF-8` },
      raw: shown(Buffer.from(line.bytes).toString("latin1"))
    }
  }
  if (line.number === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  if (text.charCodeAt(text.length - 1) === carriageReturn) text = text.slice(0, -1)
  if (text.trim() === "") return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return {
      _tag: "Malformed",
      position,
      problem: { code: "invalid_json", field: null, message: `line ${line.number}: ${(error as Error).message}` },
      raw: shown(text)
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return {
      _tag: "Malformed",
      position,
      problem: {
        code: "not_an_object",
        field: null,
        message: `line ${line.number}: expected a JSON object, got ${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value}`
      },
      raw: shown(text)
    }
  }
  return { _tag: "Record", position, value, json: text }
}

const resumePoint = (committed: Readonly<Record<string, Position>>) => {
  const position = committed[partition]
  const byteOffset = (position?.resume as { byteOffset?: unknown } | undefined)?.byteOffset
  return position !== undefined && typeof byteOffset === "number"
    ? { line: position.offset, byteOffset }
    : { line: 0, byteOffset: 0 }
}

const elementsOf = <E, R>(
  read: (byteOffset: number) => Stream.Stream<Uint8Array, E, R>,
  options: NdjsonOptions
) =>
(committed: Readonly<Record<string, Position>>): Stream.Stream<SourceElement, E, R> => {
  const maxLineBytes = options.maxLineBytes ?? defaultMaxLineBytes
  const from = resumePoint(committed)
  return lines(read(from.byteOffset), from, maxLineBytes).pipe(
    Stream.mapChunks((chunk) =>
      Chunk.filterMap(chunk, (line) => Option.fromNullable(parseLine(line, maxLineBytes)))
    )
  )
}

/**
 * Large reads: the batcher records its cuts once per chunk, so fewer, larger chunks mean
 * fewer checkpoint writes.
 */
const readChunkBytes = 1024 * 1024

/**
 * An NDJSON file. A restart seeks to the committed byte offset: nothing committed is read
 * again. The source name is the file's absolute path.
 *
 * @since 0.1.0
 */
export const fromFile = (
  path: string,
  options: NdjsonOptions = {}
): Source<NdjsonReadError, FileSystem.FileSystem> => ({
  name: `ndjson:${resolve(path)}`,
  elements: elementsOf(
    (byteOffset) =>
      Stream.unwrap(
        Effect.gen(function*() {
          const fs = yield* FileSystem.FileSystem
          // A checkpoint past the end means the file was replaced or cut: resuming would
          // silently read nothing, or the wrong lines.
          const { size } = yield* fs.stat(path)
          if (Number(size) < byteOffset) {
            return yield* Effect.fail(
              new NdjsonReadError({
                reason: `${path} has ${size} bytes but the checkpoint is at byte ${byteOffset}: the file was replaced or ` +
                  `truncated since the last run (remove the checkpoint to read it from the start)`
              })
            )
          }
          return fs.stream(path, { offset: byteOffset, chunkSize: readChunkBytes })
        })
      ).pipe(
        Stream.mapError((error: PlatformError | NdjsonReadError) =>
          error._tag === "NdjsonReadError"
            ? error
            : new NdjsonReadError({
              reason: `cannot read ${path}: ${
                error._tag === "SystemError" && error.reason === "NotFound" ? "no such file" : error.message
              }`,
              cause: error
            })
        )
      ),
    options
  )
})

/**
 * NDJSON from any byte stream (stdin, a socket, an HTTP body). It cannot seek, so a
 * restart skips the committed bytes as they arrive.
 *
 * @since 0.1.0
 */
export const fromBytes = <E, R>(
  name: string,
  bytes: Stream.Stream<Uint8Array, E, R>,
  options: NdjsonOptions = {}
): Source<E, R> => ({
  name,
  elements: elementsOf((byteOffset) => (byteOffset === 0 ? bytes : skipBytes(bytes, byteOffset)), options)
})

/**
 * NDJSON from standard input (source name `ndjson:stdin`).
 *
 * @since 0.1.0
 */
export const fromStdin = (options: NdjsonOptions = {}): Source<NdjsonReadError> =>
  fromBytes(
    "ndjson:stdin",
    NodeStream.fromReadable(
      () => process.stdin,
      (cause) => new NdjsonReadError({ reason: `cannot read standard input: ${String(cause)}`, cause })
    ),
    options
  )

const skipBytes = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>, count: number): Stream.Stream<Uint8Array, E, R> => {
  let remaining = count
  return Stream.filterMap(bytes, (chunk) => {
    if (remaining === 0) return Option.some(chunk)
    if (chunk.length <= remaining) {
      remaining -= chunk.length
      return Option.none()
    }
    const rest = chunk.subarray(remaining)
    remaining = 0
    return Option.some(rest)
  })
}
