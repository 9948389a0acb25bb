/**
 * Typed records' text written as UTF-8 bytes (pure, no I/O): every value as `JSON.stringify`
 * then `Buffer.from` give it, records past the end of a buffer and larger than one, and batch
 * bodies put together from runs of records in any order.
 */
import { FastCheck } from "effect"
import { describe, expect, it } from "vitest"
import { batchBody, batchBodyBytes } from "../../src/pipeline/batch.js"
import * as Bytes from "../../src/pipeline/internal/wireBytes.js"
import type { Position } from "../../src/pipeline/Source.js"
import { seededTimes } from "../support/times.js"

/** The bytes `write` writes as one record. */
const written = (write: () => boolean): Buffer | false => {
  Bytes.begin()
  if (!write()) {
    Bytes.abandon()
    return false
  }
  const text = Bytes.finish()
  return Buffer.from(text.buffer.subarray(text.start, text.end))
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value))

const at = (offset: number): Position => ({ partition: "0", offset })

/** Two byte strings equal, compared whole (deep equality of megabytes, byte by byte, is slow); the first difference shown. */
const sameBytes = (actual: Uint8Array, expected: Uint8Array) => {
  const a = Buffer.from(actual)
  if (a.equals(expected)) return
  let i = 0
  while (i < a.length && a[i] === expected[i]) i++
  expect({ length: a.length, at: i, around: a.subarray(Math.max(0, i - 20), i + 20).toString() }).toEqual({
    length: expected.length,
    at: i,
    around: Buffer.from(expected).subarray(Math.max(0, i - 20), i + 20).toString()
  })
}

describe("wire bytes", () => {
  it("write strings as JSON.stringify and UTF-8 do: escapes, controls, non-ASCII, pairs and lone surrogates", () => {
    const strings = [
      "",
      "plain",
      "quote \" and \\ slash",
      "line\nfeed\ttab\r\u0000\u001f\u007f",
      "ünïcödé",
      "日本語",
      "pair \ud83d\ude00 end",
      "lone \ud800 high",
      "lone \udc00 low",
      "\ud83d",
      "\ude00\ud83d",
      "reversed \ude00\ud83d pair",
      "\u2028\u2029",
      ...FastCheck.sample(FastCheck.string({ unit: "binary" }), { numRuns: 500, seed: 20261126 }),
      ...FastCheck.sample(FastCheck.string({ unit: "grapheme" }), { numRuns: 200, seed: 7 })
    ]
    for (const s of strings) expect(written(() => Bytes.string(s)), JSON.stringify(s)).toEqual(json(s))
  })

  it("write numbers as JSON.stringify does: integers digit by digit up to 10^15, the rest as their text", () => {
    const numbers = [
      0, -0, 1, -1, 9, 10, 99, 100, 101, 123_456_789, -987_654_321, 999_999_999_999_999, -999_999_999_999_999,
      1e15, -1e15, 1e21, 2 ** 53, 1.5, -0.25, 1e-7, 123.456, Number.MAX_VALUE, Number.MIN_VALUE,
      ...FastCheck.sample(FastCheck.integer({ min: -(2 ** 31), max: 2 ** 31 }), { numRuns: 300, seed: 3 }),
      ...FastCheck.sample(FastCheck.double({ noNaN: true, noDefaultInfinity: true }), { numRuns: 300, seed: 4 })
    ]
    for (const n of numbers) expect(written(() => Bytes.number(n)), String(n)).toEqual(json(n))
  })

  it("write dates as JSON.stringify does within the years 0-9999, and refuse the others and invalid dates", () => {
    const times = [0, -1, 86_399_999, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(1, 0, 1), -62_167_219_200_000, 253_402_300_799_999]
    times.push(...seededTimes(7, 1_000))
    for (const time of times) {
      const date = new Date(time)
      const inYears = time >= -62_167_219_200_000 && time < 253_402_300_800_000
      expect(written(() => Bytes.date(date)), String(time)).toEqual(inYears ? json(date) : false)
    }
    expect(written(() => Bytes.date(new Date(Number.NaN)))).toBe(false)
  })

  it("write arrays of strings, and refuse anything else (holes, other elements)", () => {
    for (const values of [[], ["a"], ["a", "b\"c", "ü"], [""]]) expect(written(() => Bytes.strings(values))).toEqual(json(values))
    // eslint-disable-next-line no-sparse-arrays
    for (const values of [[1], ["a", null], [, "a"], "a", { length: 0 }, null]) expect(written(() => Bytes.strings(values))).toBe(false)
  })

  it("move a record that does not fit to a new buffer, whole, however large, and give up a record without a trace", () => {
    const records: Array<Bytes.WrittenRecord> = []
    const values: Array<unknown> = []
    // Sizes around a buffer's: small ones, one near it, one of it, several larger than one buffer.
    const slab = Bytes.slabBytes
    const sizes = [10, slab / 3, slab / 2, slab / 4, slab - 6, 5, slab + 100, slab * 3, 3, slab, 1, slab * 5, 12, slab * 2 - 40, 7]
    sizes.forEach((size, i) => {
      const value = { i, text: "é".repeat(size % 3 === 0 ? size : 0) + "x".repeat(size), tags: ["a", "b"] }
      Bytes.begin()
      Bytes.constant(Bytes.encoded("{\"i\":"))
      Bytes.number(value.i)
      Bytes.constant(Bytes.encoded(",\"text\":"))
      Bytes.string(value.text)
      if (i % 4 === 1) {
        // A record given up halfway leaves nothing behind.
        Bytes.string("given up")
        Bytes.abandon()
        Bytes.begin()
        Bytes.constant(Bytes.encoded("{\"i\":"))
        Bytes.number(value.i)
        Bytes.constant(Bytes.encoded(",\"text\":"))
        Bytes.string(value.text)
      }
      Bytes.constant(Bytes.encoded(",\"tags\":"))
      Bytes.strings(value.tags)
      Bytes.constant(Bytes.encoded("}"))
      const text = Bytes.finish()
      const before = records[records.length - 1]?.text
      // Right after the record before it (and its comma) when it fit in the same buffer.
      if (before !== undefined && before.buffer === text.buffer) expect(text.start).toBe(before.end + 1)
      records.push(new Bytes.WrittenRecord(i, at(i), text))
      values.push(value)
    })
    records.forEach((record, i) => {
      expect(JSON.parse(record.json)).toEqual(values[i])
      expect(Bytes.byteLength(record)).toBe(Buffer.byteLength(JSON.stringify(values[i])))
    })
    const expected = (list: ReadonlyArray<Bytes.WrittenRecord>) => Buffer.from(batchBody(list))
    sameBytes(batchBodyBytes(records), expected(records))
    // In any order, and any slice (a batch split in two), with records of other writers between.
    const reversed = [...records].reverse()
    sameBytes(batchBodyBytes(reversed), expected(reversed))
    const every = records.filter((_, i) => i % 2 === 0)
    sameBytes(batchBodyBytes(every), expected(every))
    sameBytes(batchBodyBytes(records.slice(3, 9)), expected(records.slice(3, 9)))
    expect(JSON.parse(Buffer.from(batchBodyBytes(records)).toString())).toEqual({ records: values })
  })

  it("put runs of records written one after the other into a body as one copy; other records as their text", () => {
    const records = Array.from({ length: 250 }, (_, i) => {
      Bytes.begin()
      Bytes.constant(Bytes.encoded("{\"n\":"))
      Bytes.number(i)
      Bytes.constant(Bytes.encoded("}"))
      return new Bytes.WrittenRecord(i, at(i), Bytes.finish())
    })
    const body = (list: ReadonlyArray<{ readonly position: Position; readonly json: string }>) =>
      JSON.parse(Buffer.from(batchBodyBytes(list)).toString()).records.map((r: { n: number }) => r.n)
    expect(body(records)).toEqual(records.map((_, i) => i))
    // A record given as text among written ones: the whole body from the texts.
    const mixed = [records[0]!, { position: at(1000), json: "{\"n\":1000}" }, records[1]!]
    expect(body(mixed)).toEqual([0, 1000, 1])
    // Records side by side in a buffer but not in the batch's order are not one run.
    expect(body([records[5]!, records[4]!, records[6]!, records[7]!])).toEqual([5, 4, 6, 7])
  })
})
