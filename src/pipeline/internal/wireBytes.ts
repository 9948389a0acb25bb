/**
 * Records' JSON text written as UTF-8 bytes straight into shared buffers, and batch bodies put
 * together from them: what the typed writer (`wireWriter`) makes of a record instead of a
 * string.
 *
 * Why bytes: a record's text made as a string is a concatenation (a cons string: an object per
 * `+`), which `Buffer.byteLength` in the batcher then flattens (a copy) on node's slow path.
 * With the text of a typed record as a constant string, the typed benchmark ran faster than the
 * untyped one; with it written as a string, 1.7 µs a record slower (1M records; 204 against
 * 159 young-generation collections). Written as bytes, no string and no object but the range
 * are made a record, its length is known, and a batch's body is one copy of each run of
 * records that lie side by side (`bodyBytes`), where strings are joined and then encoded.
 *
 * Records are written one after the other into a buffer of 16 KB, each followed by a comma, so
 * that records written in a row are one run of bytes in the body; a full buffer is left to the
 * records that point into it (the collector takes it with the last of them), and a new one is
 * started. A record waiting in a batch keeps its buffer: at most 16 KB per open or unfinished
 * batch beyond the records themselves (64 KB buffers measured the same). Writing is
 * synchronous: a record is written whole before another is begun, whoever writes it.
 *
 * @internal
 */
import type { KeyValue, Position } from "../vocabulary.js"
import { dayMillis, endIsoMillis, firstIsoMillis } from "./fieldByField.js"

/**
 * A record's JSON text: bytes `start` to `end` of `buffer`, in UTF-8 (a comma follows them
 * there).
 *
 * @since 0.1.0
 * @category models
 * @internal
 */
export interface Written {
  readonly buffer: Uint8Array
  readonly start: number
  readonly end: number
}

/**
 * The size of a buffer records are written into.
 *
 * @since 0.1.0
 * @category defaults
 * @internal
 */
export const slabBytes = 16 * 1024
let buffer = new Uint8Array(slabBytes)
let at = 0
let start = 0

/**
 * Starts a record at the end of the current buffer.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const begin = (): void => {
  start = at
}

/**
 * Room for `n` more bytes of the record being written: a record that does not fit moves, with
 * what is written of it, to a new buffer (of twice its size when it is that large).
 */
const reserve = (n: number): void => {
  if (at + n <= buffer.length) return
  const written = at - start
  const next = new Uint8Array(Math.max(slabBytes, 2 * (written + n)))
  next.set(buffer.subarray(start, at))
  buffer = next
  start = 0
  at = written
}

/**
 * Ends the record being written: its bytes (a comma after them).
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const finish = (): Written => {
  reserve(1)
  const end = at
  buffer[at++] = 44
  return { buffer, start, end }
}

/**
 * Forgets what is written of the record being written (the writer gave it up).
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const abandon = (): void => {
  at = start
}

/**
 * Text as UTF-8 bytes, as it is (for constants: keys and punctuation).
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const encoded = (text: string): ReadonlyArray<number> => Array.from(Buffer.from(text, "utf8"))

/**
 * Bytes made when the writer is made (keys, punctuation).
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const constant = (bytes: ReadonlyArray<number>): true => {
  const length = bytes.length
  reserve(length)
  const b = buffer
  let p = at
  for (let i = 0; i < length; i++) b[p++] = bytes[i]!
  at = p
  return true
}

const nullBytes = encoded("null")

/**
 * `null`.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const writeNull = (): true => constant(nullBytes)

/**
 * JSON text as UTF-8 (surrogates in pairs, as `JSON.stringify` leaves them: it escapes a lone
 * one). What `Buffer.from(text)` gives, a byte at a time.
 */
const utf8 = (text: string): true => {
  const length = text.length
  reserve(length * 3) // 3 bytes at most for each UTF-16 unit (4 for the two of a pair)
  const b = buffer
  let p = at
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) {
      b[p++] = c
    } else if (c < 0x800) {
      b[p++] = 0xc0 | (c >> 6)
      b[p++] = 0x80 | (c & 0x3f)
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < length) {
      const point = 0x10000 + ((c - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00)
      b[p++] = 0xf0 | (point >> 18)
      b[p++] = 0x80 | ((point >> 12) & 0x3f)
      b[p++] = 0x80 | ((point >> 6) & 0x3f)
      b[p++] = 0x80 | (point & 0x3f)
    } else {
      b[p++] = 0xe0 | (c >> 12)
      b[p++] = 0x80 | ((c >> 6) & 0x3f)
      b[p++] = 0x80 | (c & 0x3f)
    }
  }
  at = p
  return true
}

/**
 * A string as `JSON.stringify` writes it (quoted, escaped), in UTF-8: copied a character at a
 * time while it is printable ASCII without `"` or `\`; anything else through `JSON.stringify`.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const string = (s: string): true => {
  const length = s.length
  reserve(length + 2)
  const b = buffer
  let p = at
  b[p++] = 34
  for (let i = 0; i < length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80) return utf8(JSON.stringify(s))
    b[p++] = c
  }
  b[p++] = 34
  at = p
  return true
}

/**
 * An array of strings as JSON text; false for anything else (holes included).
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const strings = (values: unknown): boolean => {
  if (!Array.isArray(values)) return false
  for (let i = 0; i < values.length; i++) if (typeof values[i] !== "string") return false
  reserve(2)
  buffer[at++] = 91
  for (let i = 0; i < values.length; i++) {
    if (i > 0) {
      reserve(1)
      buffer[at++] = 44
    }
    string(values[i])
  }
  reserve(1)
  buffer[at++] = 93
  return true
}

/**
 * A finite number as `JSON.stringify` writes it: integers below 10^15 digit by digit (no string
 * made), others through their text.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const number = (n: number): true => {
  if (!(Number.isInteger(n) && n > -1e15 && n < 1e15)) return utf8(`${n}`)
  reserve(16)
  const b = buffer
  if (n < 0) {
    b[at++] = 45
    n = -n
  }
  let digits = 1
  for (let m = n; m >= 10; m = Math.floor(m / 10)) digits++
  let p = at + digits
  at = p
  while (n >= 10) {
    const q = Math.floor(n / 10)
    b[--p] = 48 + n - q * 10
    n = q
  }
  b[--p] = 48 + n // -0 is written 0, as JSON.stringify writes it
  return true
}

// `"YYYY-MM-DDT` of the last day written: records in a stream mostly share their day.
let lastDay = NaN
let lastDayBytes: ReadonlyArray<number> = []

const twoDigits = (b: Uint8Array, p: number, n: number) => {
  const tens = Math.floor(n / 10)
  b[p] = 48 + tens
  b[p + 1] = 48 + n - tens * 10
}

/**
 * A date as `DateFromString` encodes it (`toISOString`), quoted; false for a date outside the
 * years `toISOString` writes with four digits, or an invalid one (the generic path decides).
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const date = (date: Date): boolean => {
  const time = date.getTime()
  if (!(time >= firstIsoMillis && time < endIsoMillis)) return false
  const day = Math.floor(time / dayMillis)
  if (day !== lastDay) {
    lastDay = day
    lastDayBytes = encoded(`"${date.toISOString().slice(0, 11)}`)
  }
  constant(lastDayBytes)
  reserve(14)
  let rest = time - day * dayMillis
  const hours = Math.floor(rest / 3_600_000)
  rest -= hours * 3_600_000
  const minutes = Math.floor(rest / 60_000)
  rest -= minutes * 60_000
  const seconds = Math.floor(rest / 1000)
  const millis = rest - seconds * 1000
  const b = buffer
  const p = at
  twoDigits(b, p, hours)
  b[p + 2] = 58
  twoDigits(b, p + 3, minutes)
  b[p + 5] = 58
  twoDigits(b, p + 6, seconds)
  b[p + 8] = 46
  const hundreds = Math.floor(millis / 100)
  b[p + 9] = 48 + hundreds
  twoDigits(b, p + 10, millis - hundreds * 100)
  b[p + 12] = 90
  b[p + 13] = 34
  at = p + 14
  return true
}

const decoder = new TextDecoder()

/**
 * A valid record whose text was written as bytes: a `Checked` record and a `BatchRecord` like
 * any other, its `json` decoded from the bytes when asked (a dead letter's record, a split).
 *
 * @since 0.1.0
 * @category models
 * @internal
 */
export class WrittenRecord {
  readonly _tag = "Valid" as const
  constructor(
    readonly seq: number,
    readonly position: Position,
    readonly text: Written,
    /** Its primary-key value (see `Checked`), when the dataset has a key. */
    readonly key?: KeyValue | undefined
  ) {}
  get json(): string {
    return decoder.decode(this.text.buffer.subarray(this.text.start, this.text.end))
  }
}

/**
 * A record's UTF-8 length, from its bytes or its text.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const byteLength = (record: { readonly json: string }): number =>
  record instanceof WrittenRecord ? record.text.end - record.text.start : Buffer.byteLength(record.json)

const head = encoded("{\"records\":[")
const tail = encoded("]}")

/**
 * The body of a batch of written records (`{"records":[...]}`), in UTF-8: one copy for each run
 * of records written one after the other (their commas between them); undefined when a record
 * is not a written one.
 *
 * @since 0.1.0
 * @category utils
 * @internal
 */
export const bodyBytes = (records: ReadonlyArray<{ readonly json: string }>): Uint8Array | undefined => {
  let total = head.length + tail.length + records.length - 1
  for (let i = 0; i < records.length; i++) {
    const record = records[i]
    if (!(record instanceof WrittenRecord)) return undefined
    total += record.text.end - record.text.start
  }
  const body = Buffer.allocUnsafe(total)
  body.set(head, 0)
  let p = head.length
  for (let i = 0; i < records.length;) {
    const first = (records[i] as WrittenRecord).text
    let end = first.end
    let j = i + 1
    for (; j < records.length; j++) {
      const next = (records[j] as WrittenRecord).text
      if (next.buffer !== first.buffer || next.start !== end + 1) break
      end = next.end
    }
    if (i > 0) body[p++] = 44
    body.set(first.buffer.subarray(first.start, end), p)
    p += end - first.start
    i = j
  }
  body.set(tail, p)
  return body
}
