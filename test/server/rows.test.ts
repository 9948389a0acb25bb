/**
 * How a batch of rows lands in a dataset (`writeRows`, the one core of both stores), against a
 * ledger that is a plain map (pure, no I/O), and the keys the memory store holds rows under.
 */
import { describe, expect, it } from "vitest"
import { primaryKeyOf, type Row } from "../../src/records.js"
import { keysOf, type RowLedger, writeRows } from "../../src/server/core/store/rowLedger.js"
import { StoredRows } from "../../src/server/core/store/memory/state.js"

/** A ledger over a map, as the stores keep theirs: an overwritten key keeps its place. */
const mapLedger = (stored: ReadonlyArray<readonly [string, Row]> = []) => {
  const rows = new Map<string, Row>(stored)
  const appended: Array<Row> = []
  const ledger: RowLedger = {
    keyOf: primaryKeyOf,
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

describe("the memory store's row keys", () => {
  it("hold a one-column key's value as it is, apart from every other value's key", () => {
    // A number, its string, strings that look like the JSON text of keys, and arrays.
    const rows: Array<Row> = [
      { id: 1 },
      { id: "1" },
      { id: "[1]" },
      { id: ["1"] },
      { id: "[\"1\"]" },
      { id: "[[\"1\"]]" },
      { id: ["[1]"] }
    ]
    const stored = new StoredRows()
    expect(writeRows(rows, ["id"], stored)).toMatchObject({ appended: 7, overwritten: 0 })
    expect(stored.keyOf({ id: "a" }, ["id"])).toBe("a")
    expect(stored.keyOf({ id: 2.5 }, ["id"])).toBe(2.5)
    const again = rows.map((row) => ({ ...row, v: 2 }))
    expect(writeRows(again, ["id"], stored)).toMatchObject({ appended: 0, overwritten: 7, rowDelta: 0 })
    expect(stored.rows).toEqual(again)
  })

  it("key rows of a key of several columns by the JSON text of their values", () => {
    const stored = new StoredRows()
    expect(stored.keyOf({ a: "x", b: 1 }, ["a", "b"])).toBe("[\"x\",1]")
    const rows = [{ a: "x", b: 1 }, { a: "x", b: "1" }, { b: 1, a: "x", v: 2 }]
    expect(writeRows(rows, ["a", "b"], stored)).toMatchObject({ appended: 2, overwritten: 1 })
    expect(stored.rows).toEqual([rows[2], rows[1]])
  })
})
