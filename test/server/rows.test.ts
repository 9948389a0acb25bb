/**
 * How a batch of rows lands in a dataset (`writeRows`, the one core of both stores), against a
 * ledger that is a plain map (pure, no I/O).
 */
import { describe, expect, it } from "vitest"
import type { Row } from "../../src/records.js"
import { keysOf, type RowLedger, writeRows } from "../../src/server/core/store/rowLedger.js"

/** A ledger over a map, as the stores keep theirs: an overwritten key keeps its place. */
const mapLedger = (stored: ReadonlyArray<readonly [string, Row]> = []) => {
  const rows = new Map<string, Row>(stored)
  const appended: Array<Row> = []
  const ledger: RowLedger = {
    sizeOf: (key) => rows.has(key) ? bytes(rows.get(key)!) : undefined,
    put: (key, row, size) => {
      expect(size).toBe(bytes(row))
      rows.set(key, row)
    },
    append: (row, size) => {
      expect(size).toBe(bytes(row))
      appended.push(row)
    }
  }
  return { ledger, rows, appended }
}

const bytes = (row: Row) => Buffer.byteLength(JSON.stringify(row))

describe("writeRows", () => {
  it("appends every row of a dataset without a primary key, counting their JSON bytes", () => {
    const { appended, ledger } = mapLedger()
    const rows = [{ a: 1 }, { a: 1 }, { a: "é\"\n" }]
    expect(writeRows(rows, [], ledger)).toEqual({
      appended: 3,
      overwritten: 0,
      rowDelta: 3,
      bytesDelta: rows.reduce((n, row) => n + bytes(row), 0)
    })
    expect(appended).toEqual(rows)
  })

  it("overwrites a stored key in its place and counts the size it replaced", () => {
    const old = { id: "b", v: "a long value that is replaced" }
    const { ledger, rows } = mapLedger([["[\"a\"]", { id: "a", v: 1 }], ["[\"b\"]", old]])
    const fresh = { id: "b", v: 2 }
    const added = { id: "c", v: 3 }
    expect(writeRows([fresh, added], ["id"], ledger)).toEqual({
      appended: 1,
      overwritten: 1,
      rowDelta: 1,
      bytesDelta: bytes(fresh) - bytes(old) + bytes(added)
    })
    expect([...rows.keys()]).toEqual(["[\"a\"]", "[\"b\"]", "[\"c\"]"])
    expect(rows.get("[\"b\"]")).toEqual(fresh)
  })

  it("treats a key repeated within the batch as an overwrite of its earlier row", () => {
    const { ledger, rows } = mapLedger()
    const first = { id: 1, v: "first" }
    const last = { id: 1, v: "last" }
    expect(writeRows([first, { id: "1", v: "a string key" }, last], ["id"], ledger)).toEqual({
      appended: 2,
      overwritten: 1,
      rowDelta: 2,
      bytesDelta: bytes(last) + bytes({ id: "1", v: "a string key" })
    })
    // 1 and "1" are different keys; the number's row is the last one written.
    expect([...rows.entries()]).toEqual([["[1]", last], ["[\"1\"]", { id: "1", v: "a string key" }]])
  })

  it("keys rows by every primary-key column, in primary-key order", () => {
    expect(keysOf([{ a: 1, b: "x" }, { b: ["p", "q"], a: 2 }], ["b", "a"])).toEqual(["[\"x\",1]", "[[\"p\",\"q\"],2]"])
    expect(keysOf([{ a: 1 }], [])).toEqual([])
  })
})
