/**
 * How deep a JSON body nests, read from its bytes before anything parses it.
 *
 * `JSON.parse` itself copes with deep nesting, but slowly (5 million levels: 6.5 s), and
 * everything after it (decoding, error messages, copies, `JSON.stringify`) recurses and
 * overflows the stack at a few thousand levels. So the depth is measured on the bytes, in one
 * pass that skips strings, and a body nested deeper than {@link MaxJsonDepth} is refused.
 *
 * Ingest bodies are judged per record: an element of the top-level object's `records` array
 * counts its depth from itself, and one nested too deep is reported (its index and byte span)
 * so that the caller can cut it out and reject that record alone.
 *
 * @since 0.1.0
 */
import { MaxJsonDepth } from "../../records.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface DeepRecord {
  /** Its index in the `records` array. */
  readonly index: number
  /** Its bytes: `[start, end)`. */
  readonly start: number
  readonly end: number
}

/**
 * @since 0.1.0
 * @category models
 */
export type DepthScan =
  | { readonly _tag: "Within"; readonly deepRecords: ReadonlyArray<DeepRecord> }
  | { readonly _tag: "TooDeep"; readonly offset: number }

const quote = 0x22
const backslash = 0x5c
const openArray = 0x5b
const openObject = 0x7b
const closeArray = 0x5d
const closeObject = 0x7d
const comma = 0x2c

const recordsKey = Buffer.from("records")

const bytesEqual = (bytes: Uint8Array, start: number, end: number, expected: Uint8Array) => {
  if (end - start !== expected.length) return false
  for (let i = 0; i < expected.length; i++) if (bytes[start + i] !== expected[i]) return false
  return true
}

/**
 * Scans `bytes` (JSON, or something that will fail to parse as JSON) for nesting deeper than
 * {@link MaxJsonDepth}; with `records`, the elements of the top-level `records` array are
 * judged one by one. A malformed body is not an error here: the parser says what is wrong.
 *
 * @since 0.1.0
 * @category utils
 */
export const scanDepth = (bytes: Uint8Array, options: { readonly records: boolean }): DepthScan => {
  const deepRecords: Array<DeepRecord> = []
  const length = bytes.length
  let depth = 0
  // The last string at depth 1: the key of the value that follows.
  let keyStart = -1
  let keyEnd = -1
  let inRecords = false
  let index = 0
  let recordStart = -1
  let recordTooDeep = false
  for (let i = 0; i < length; i++) {
    const c = bytes[i]!
    if (c === quote) {
      const start = i + 1
      i++
      while (i < length) {
        const d = bytes[i]!
        if (d === backslash) i += 2
        else if (d === quote) break
        else i++
      }
      if (depth === 1) {
        keyStart = start
        keyEnd = i
      }
      continue
    }
    if (c === openArray || c === openObject) {
      depth++
      if (inRecords) {
        if (depth === 3) {
          recordStart = i
          recordTooDeep = false
        }
        // Two levels of wrapping (the body object, the records array) are not the record's.
        if (depth - 2 > MaxJsonDepth) recordTooDeep = true
        continue
      }
      if (depth === 2 && c === openArray && options.records && bytesEqual(bytes, keyStart, keyEnd, recordsKey)) {
        inRecords = true
        index = 0
        continue
      }
      if (depth > MaxJsonDepth) return { _tag: "TooDeep", offset: i }
      continue
    }
    if (c === closeArray || c === closeObject) {
      depth--
      if (inRecords) {
        if (depth === 2 && recordStart >= 0) {
          if (recordTooDeep) deepRecords.push({ index, start: recordStart, end: i + 1 })
          recordStart = -1
          recordTooDeep = false
        } else if (depth === 1) {
          inRecords = false
        }
      }
      continue
    }
    if (c === comma && inRecords && depth === 2) index++
  }
  // A record that never closed: nothing to cut out, and parsing it would take as long as it nests.
  if (recordTooDeep) return { _tag: "TooDeep", offset: recordStart }
  return { _tag: "Within", deepRecords }
}
