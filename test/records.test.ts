import { FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import {
  checkRecord,
  type CheckRecordOptions,
  type Column,
  defaultMaxColumns,
  inferColumnType,
  inferSchema,
  isCalendarDay,
  isIsoDateTime,
  MaxJsonDepth,
  primaryKeyOf,
  rowJsonBytes,
  type RecordCheck,
  RecordProblemCode,
  tooDeepRecordJson
} from "../src/records.js"

const schema: ReadonlyArray<Column> = [
  { id: "id", dataType: "string" },
  { id: "amount", dataType: "number" },
  { id: "at", dataType: "datetime" },
  { id: "tags", dataType: "string" }
]

const options: CheckRecordOptions = { schema, primaryKey: ["id"], addUnknownColumns: false }

const problemOf = (check: RecordCheck) => {
  if (check._tag === "Valid") throw new Error(`expected a problem, got a valid row`)
  return check.problem
}

const expectProblem = (record: unknown, code: string, field: string | null, opts: CheckRecordOptions = options) => {
  const problem = problemOf(checkRecord(record, opts))
  expect({ code: problem.code, field: problem.field }).toEqual({ code, field })
  return problem
}

describe("isIsoDateTime", () => {
  it.each([
    "2026-11-01",
    "2026-11-01T10:00:00Z",
    "2026-11-01T10:00:00.123+02:00",
    "2026-11-01T10:00Z",
    "2026-11-01T10:00:00",
    "2026-11-01T23:59:59.999999-03:30",
    "2026-11-01T10:00:00+0530",
    "2026-11-01T10:00:00+02",
    "2028-02-29",
    "2000-02-29T00:00:00Z"
  ])("accepts %s", (value) => {
    expect(isIsoDateTime(value)).toBe(true)
  })

  it.each([
    "2026-13-01",
    "2026-00-10",
    "2026-02-30",
    "2026-02-29",
    "1900-02-29",
    "2026-04-31",
    "2026-11-00",
    "yesterday",
    "",
    "2026-11-01T24:00:00Z",
    "2026-11-01T10:60:00Z",
    "2026-11-01 10:00:00Z",
    "2026-11-01T10:00:00z",
    "2026-11-01T10",
    "26-11-01",
    "2026-1-01",
    "2026-11-01T10:00:00+25:00",
    " 2026-11-01"
  ])("rejects %j", (value) => {
    expect(isIsoDateTime(value)).toBe(false)
  })
})

describe("isCalendarDay", () => {
  it("knows each month's days, leap years by the Gregorian rule (year 0 included), and no month 0 or 13", () => {
    const lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    for (const year of [2023, 2024, 2000, 1900, 2100, 0, 4, 400, 9999]) {
      const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
      for (let month = 1; month <= 12; month++) {
        const last = month === 2 && leap ? 29 : lengths[month - 1]!
        expect(isCalendarDay(year, month, last), `${year}-${month}-${last}`).toBe(true)
        expect(isCalendarDay(year, month, last + 1), `${year}-${month}-${last + 1}`).toBe(false)
        expect(isCalendarDay(year, month, 0)).toBe(false)
      }
      expect(isCalendarDay(year, 0, 1)).toBe(false)
      expect(isCalendarDay(year, 13, 1)).toBe(false)
    }
    // The calendar JavaScript's Date keeps: a day is real when Date.UTC does not roll it over.
    for (let year = 1896; year <= 2104; year++) {
      const rollsOver = new Date(Date.UTC(year, 1, 29)).getUTCMonth() !== 1
      expect(isCalendarDay(year, 2, 29), String(year)).toBe(!rollsOver)
    }
  })
})

describe("checkRecord", () => {
  it("accepts strings, finite numbers, datetimes, string arrays and null, returning the record itself", () => {
    const record = { id: "a", amount: -1.5, at: "2026-11-01T10:00:00.123+02:00", tags: ["x", "y"] }
    const check = checkRecord(record, options)
    expect(check).toEqual({ _tag: "Valid", row: record, newColumns: [] })
    expect(check._tag === "Valid" && check.row).toBe(record)
    expect(checkRecord({ id: "a", amount: null, at: null, tags: null }, options)._tag).toBe("Valid")
    expect(checkRecord({ id: "a", tags: [] }, options)._tag).toBe("Valid")
    expect(checkRecord({ id: "a", at: "2026-11-01" }, options)._tag).toBe("Valid")
  })

  it("lets a string column hold any string, ISO dates included", () => {
    expect(checkRecord({ id: "2026-11-01", tags: "2026-11-01T10:00:00Z" }, options)._tag).toBe("Valid")
  })

  it.each([null, 1, "text", true, [{ id: "a" }], new Date()])("rejects the non-object record %j", (record) => {
    const problem = expectProblem(record, RecordProblemCode.NotAnObject, null)
    expect(problem.message).toMatch(/^expected a record object, got /)
  })

  it("rejects a value of the wrong type without coercing it", () => {
    expect(expectProblem({ id: "a", amount: "12" }, "invalid_type", "amount").message).toBe(
      "expected number, got string \"12\""
    )
    expect(expectProblem({ id: 7 }, "invalid_type", "id").message).toBe("expected string, got number 7")
    expect(expectProblem({ id: "a", at: 1767261600000 }, "invalid_type", "at").message).toBe(
      "expected datetime, got number 1767261600000"
    )
    expect(expectProblem({ id: "a", amount: ["1"] }, "invalid_type", "amount").message).toBe(
      "expected number, got array [\"1\"]"
    )
    expectProblem({ id: "a", at: ["2026-11-01"] }, "invalid_type", "at")
  })

  it("truncates long values in messages", () => {
    const { message } = expectProblem({ id: "a", amount: "9".repeat(500) }, "invalid_type", "amount")
    expect(message.length).toBeLessThan(80)
    expect(message).toMatch(/^expected number, got string "9{38}…$/)
  })

  it.each(["2026-13-01", "yesterday", "2026-02-30", "2026-11-01 10:00"])(
    "rejects the datetime %j with invalid_datetime",
    (at) => {
      const problem = expectProblem({ id: "a", at }, "invalid_datetime", "at")
      expect(problem.message).toContain(JSON.stringify(at))
    }
  )

  it.each([
    ["a boolean", true],
    ["a nested object", { value: 1 }],
    ["an array of numbers", [1, 2]],
    ["a mixed array", ["a", 1]],
    ["an array of arrays", [["a"]]],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["undefined", undefined]
  ])("rejects %s with unsupported_value, whatever the column type", (_, value) => {
    for (const field of ["amount", "tags", "at"]) {
      expectProblem({ id: "a", [field]: value }, "unsupported_value", field)
    }
  })

  it("says what was found in an unsupported_value message", () => {
    expect(expectProblem({ id: "a", tags: false }, "unsupported_value", "tags").message).toContain("boolean false")
    expect(expectProblem({ id: "a", tags: [1] }, "unsupported_value", "tags").message).toContain("array [1]")
  })

  it("requires every primary-key column to hold a value", () => {
    const composite: CheckRecordOptions = { ...options, primaryKey: ["id", "at"] }
    expectProblem({ amount: 1 }, "missing_primary_key", "id")
    expectProblem({ id: null, amount: 1 }, "missing_primary_key", "id")
    expectProblem({ id: undefined }, "missing_primary_key", "id")
    expectProblem({ id: "a" }, "missing_primary_key", "at", composite)
    expectProblem({ id: "a", at: null }, "missing_primary_key", "at", composite)
    expect(checkRecord({ id: "a", at: "2026-11-01" }, composite)._tag).toBe("Valid")
    expect(checkRecord({ amount: null }, { ...options, primaryKey: [] })._tag).toBe("Valid")
  })

  it("rejects unknown keys unless columns may be added", () => {
    expectProblem({ id: "a", extra: 1 }, "unknown_column", "extra")
    expectProblem({ id: "a", extra: null }, "unknown_column", "extra")
  })

  it("infers new columns from unknown keys in key order; a null adds none", () => {
    const check = checkRecord(
      { id: "a", city: "Ljubljana", visits: 3, seen: "2026-11-01T10:00:00Z", nothing: null, labels: ["p", "q"] },
      { ...options, addUnknownColumns: true }
    )
    expect(check).toMatchObject({
      _tag: "Valid",
      newColumns: [
        { id: "city", dataType: "string" },
        { id: "visits", dataType: "number" },
        { id: "seen", dataType: "datetime" },
        { id: "labels", dataType: "string" }
      ]
    })
  })

  it("rejects an unsupported value in an unknown key even when columns may be added", () => {
    expectProblem({ id: "a", flag: true }, "unsupported_value", "flag", { ...options, addUnknownColumns: true })
  })

  it("allows at most maxColumns columns, 100 by default", () => {
    expect(defaultMaxColumns).toBe(100)
    const add: CheckRecordOptions = { ...options, addUnknownColumns: true }
    const record = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`c${i}`, i]))
    // The schema has 4 columns: 96 new ones reach 100, a 97th goes past.
    const full = checkRecord({ id: "a", ...record(96) }, add)
    expect(full._tag === "Valid" && full.newColumns.length).toBe(96)
    expectProblem({ id: "a", ...record(97) }, "too_many_columns", "c96", add)
    // A null adds no column, so it does not count.
    expect(checkRecord({ id: "a", ...record(96), later: null }, add)._tag).toBe("Valid")
    expectProblem({ id: "a", c0: 1, c1: 2 }, "too_many_columns", "c1", { ...add, maxColumns: 5 })
    const hundred = Array.from({ length: 100 }, (_, i): Column => ({ id: `k${i}`, dataType: "number" }))
    expectProblem({ k0: 1, k99: 2, more: 3 }, "too_many_columns", "more", { ...add, schema: hundred, primaryKey: [] })
  })

  it("reports the first problem in key order, absent primary keys last", () => {
    expectProblem({ amount: "x", at: "nope", id: null }, "invalid_type", "amount")
    expectProblem({ at: "nope", amount: "x" }, "invalid_datetime", "at")
    expectProblem({ flag: true, id: null }, "unknown_column", "flag")
    expectProblem({ id: null, flag: true }, "missing_primary_key", "id")
    expectProblem({ amount: 1, extra: 1 }, "unknown_column", "extra")
    expectProblem({ amount: 1 }, "missing_primary_key", "id")
  })

  it("keeps the problem codes stable", () => {
    expect(Object.values(RecordProblemCode).sort()).toEqual([
      "invalid_datetime",
      "invalid_type",
      "missing_primary_key",
      "nesting_too_deep",
      "not_an_object",
      "too_many_columns",
      "unknown_column",
      "unsupported_value"
    ])
  })

  it("rejects a value nested deeper than MaxJsonDepth without walking all of it, and the stand-in for a record cut out", () => {
    const nested = (levels: number): unknown => {
      let value: unknown = []
      for (let i = 1; i < levels; i++) value = [value]
      return value
    }
    const options = { schema: [], primaryKey: [], addUnknownColumns: true }
    // The record is one level; its value may nest 63 more.
    expect(checkRecord({ v: nested(MaxJsonDepth - 1) }, options)).toMatchObject({ _tag: "Invalid", problem: { code: "unsupported_value", field: "v" } })
    expect(checkRecord({ v: nested(MaxJsonDepth) }, options)).toMatchObject({ _tag: "Invalid", problem: { code: "nesting_too_deep", field: "v" } })
    // Deep enough that formatting it recursively overflowed the stack.
    expect(checkRecord({ v: nested(200_000) }, options)).toMatchObject({ _tag: "Invalid", problem: { code: "nesting_too_deep", field: "v" } })
    expect(checkRecord({ v: { a: nested(MaxJsonDepth - 1) } }, options)).toMatchObject({ problem: { code: "nesting_too_deep" } })
    expect(checkRecord(JSON.parse(tooDeepRecordJson(42)), options)).toEqual({
      _tag: "Invalid",
      problem: { code: "nesting_too_deep", field: null, message: "the record (at byte 42 of the body) nests deeper than 64 levels" }
    })
  })

  it("checks against an edited schema rather than a stale cached one", () => {
    const first: ReadonlyArray<Column> = [{ id: "n", dataType: "number" }]
    const second: ReadonlyArray<Column> = [{ id: "n", dataType: "string" }]
    const opts = { primaryKey: [], addUnknownColumns: false }
    expect(checkRecord({ n: 1 }, { ...opts, schema: first })._tag).toBe("Valid")
    expect(checkRecord({ n: 1 }, { ...opts, schema: second })._tag).toBe("Invalid")
  })
})

describe("inferColumnType", () => {
  it.each([
    ["2026-11-01", "datetime"],
    ["2026-11-01T10:00:00Z", "datetime"],
    ["2026-11-01T10:00:00.123+02:00", "datetime"],
    ["2026-13-01", "string"],
    ["hello", "string"],
    ["12", "string"],
    [["a", "b"], "string"],
    [[], "string"],
    [0, "number"],
    [-3.25, "number"],
    [null, undefined],
    [true, undefined],
    [Number.NaN, undefined],
    [{ a: 1 }, undefined],
    [[1], undefined]
  ])("infers %j as %s", (value, type) => {
    expect(inferColumnType(value)).toBe(type)
  })
})

describe("inferSchema", () => {
  it("builds columns in first-seen key order", () => {
    expect(
      inferSchema([
        { day: "2026-11-01", visits: 3 },
        { visits: "many", country: "SI", tags: ["a"] },
        { country: 1, day: "x", price: 9.5 }
      ])
    ).toEqual([
      { id: "day", dataType: "datetime" },
      { id: "visits", dataType: "number" },
      { id: "country", dataType: "string" },
      { id: "tags", dataType: "string" },
      { id: "price", dataType: "number" }
    ])
  })

  it("adds a column only once a value implies its type, as checkRecord would", () => {
    const records = [{ a: null, b: 1 }, { a: "2026-11-01T10:00:00Z", c: null }, { c: "x" }]
    expect(inferSchema(records)).toEqual([
      { id: "b", dataType: "number" },
      { id: "a", dataType: "datetime" },
      { id: "c", dataType: "string" }
    ])
    let schema: ReadonlyArray<Column> = []
    for (const record of records) {
      const check = checkRecord(record, { schema, primaryKey: [], addUnknownColumns: true })
      if (check._tag === "Valid") schema = [...schema, ...check.newColumns]
    }
    expect(schema).toEqual(inferSchema(records))
  })

  it("skips non-object records and values that imply no type", () => {
    expect(inferSchema([5, { c: true }, null, { c: [1], d: Number.NaN }, { c: "x" }])).toEqual([
      { id: "c", dataType: "string" }
    ])
  })

  it("returns an empty schema for no records", () => {
    expect(inferSchema([])).toEqual([])
  })
})

describe("primaryKeyOf", () => {
  it("is the JSON of the key values in primary-key order", () => {
    const row = { id: "a", n: 1, at: "2026-11-01" }
    expect(primaryKeyOf(row, ["id", "n"])).toBe("[\"a\",1]")
    expect(primaryKeyOf(row, ["n", "id"])).toBe("[1,\"a\"]")
    expect(primaryKeyOf({ id: "1" }, ["id"])).not.toBe(primaryKeyOf({ id: 1 }, ["id"]))
    expect(primaryKeyOf({ id: "a", tags: ["x"] }, ["id"])).toBe(primaryKeyOf({ tags: ["y"], id: "a" }, ["id"]))
    expect(primaryKeyOf(row, [])).toBe("[]")
  })
})

describe("rowJsonBytes", () => {
  const bytesOf = (row: object) => Buffer.byteLength(JSON.stringify(row))
  it("is the UTF-8 length of the row's JSON", () => {
    for (
      const row of [
        {},
        { id: "rec-1", ts: "2026-11-01T10:00:00Z", amount: 12.5, country: "SI", tags: ["a", "b"] },
        { a: "é\"\\\n\u0001\u001f😀\ud800x\udc00", b: [], c: null, d: -0.000001, e: 1e21, f: ["x", "ü", "\t"] },
        { "ké\"y": 0, 1: "first by JSON's key order", n: -0 }
      ]
    ) expect(rowJsonBytes(row)).toBe(bytesOf(row))
  })
  it("agrees with JSON.stringify on generated rows", () =>
    fc.assert(fc.property(
      fc.dictionary(fc.string({ unit: "binary" }), fc.oneof(fc.string({ unit: "binary" }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(null), fc.array(fc.string({ unit: "binary" })))),
      (row) => rowJsonBytes(row) === bytesOf(row)
    )))
})
