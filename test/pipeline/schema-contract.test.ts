/**
 * Schema contracts, the pure decision: what each mode does with new columns and values of the
 * wrong type, held as properties over generated records, and the contract's text.
 */
import { Either, FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import { checkRecord, type Column } from "../../src/records.js"
import * as SchemaContract from "../../src/pipeline/SchemaContract.js"
import { checkElement, fitsTypes } from "../../src/pipeline/validate.js"
import type { ValueTypes } from "../../src/pipeline/vocabulary.js"

const columns: ReadonlyArray<Column> = [
  { id: "id", dataType: "string" },
  { id: "amount", dataType: "number" },
  { id: "at", dataType: "datetime" }
]
const schema = { columns, primaryKey: ["id"] }

const value = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom("2026-11-01", "2026-11-01T10:00:00Z", "2026-13-01"),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }),
  fc.constant({ nested: 1 })
)
const key = fc.constantFrom("id", "amount", "at", "coupon", "note", "flag")
const record = fc.dictionary(key, value, { maxKeys: 6 })

const modes = fc.record({
  columns: fc.constantFrom<SchemaContract.ColumnsMode>("evolve", "freeze", "discard_value"),
  dataType: fc.constantFrom<SchemaContract.DataTypeMode>("freeze", "discard_value")
})

const fitsAsIs = (value: unknown, contract: SchemaContract.SchemaContract) =>
  checkRecord(value, { schema: columns, primaryKey: ["id"], addUnknownColumns: contract.columns === "evolve" })._tag === "Valid"

describe("SchemaContract.decide", () => {
  it("sends a record that fits as it is: the same object, nothing dropped", () => {
    fc.assert(fc.property(record, modes, (r, contract) => {
      fc.pre(fitsAsIs(r, contract))
      const decision = SchemaContract.decide(r, schema, contract)
      expect(decision._tag).toBe("Send")
      if (decision._tag === "Send") {
        expect(decision.row).toBe(r)
        expect(decision.discarded).toEqual([])
      }
    }))
  })

  it("freeze/freeze sends exactly the records that fit the dataset's columns, adding none", () => {
    fc.assert(fc.property(record, (r) => {
      const decision = SchemaContract.decide(r, schema, SchemaContract.frozenContract)
      const fits = checkRecord(r, { schema: columns, primaryKey: ["id"], addUnknownColumns: false })._tag === "Valid"
      expect(decision._tag === "Send").toBe(fits)
      if (decision._tag === "Send") expect(decision.added).toEqual([])
    }))
  })

  it("what is sent fits: the known columns plus those it adds; dropped keys are exactly the missing ones, values unchanged", () => {
    fc.assert(fc.property(record, modes, (r, contract) => {
      const decision = SchemaContract.decide(r, schema, contract)
      if (decision._tag === "Dead") return
      // Checked again with the columns it adds, it adds no more (a new key holding null adds
      // none, at the service too: it is sent, and nothing is learnt from it).
      const known = [...columns, ...decision.added]
      const again = checkRecord(decision.row, { schema: known, primaryKey: ["id"], addUnknownColumns: contract.columns === "evolve" })
      expect(again).toMatchObject({ _tag: "Valid", newColumns: [] })
      if (contract.columns !== "evolve") {
        expect(checkRecord(decision.row, { schema: known, primaryKey: ["id"], addUnknownColumns: false })._tag).toBe("Valid")
      }
      for (const [k, v] of Object.entries(decision.row)) expect(r[k]).toBe(v)
      expect(decision.discarded.map((d) => d.field).sort()).toEqual(Object.keys(r).filter((k) => !(k in decision.row)).sort())
      if (contract.columns !== "evolve") expect(decision.added).toEqual([])
      if (contract.columns === "freeze") {
        for (const d of decision.discarded) expect(d.code).not.toBe("unknown_column")
      }
      if (contract.dataType === "freeze") {
        // Only new keys may be dropped: a known column's value is sent or the record is a dead letter.
        for (const d of decision.discarded) expect(columns.some((c) => c.id === d.field)).toBe(false)
      }
    }))
  })

  it("a record without its primary-key value is always a dead letter, whatever the contract", () => {
    fc.assert(fc.property(record, modes, fc.constantFrom(undefined, null, true, 5), (r, contract, id) => {
      const withoutKey: Record<string, unknown> = { ...r }
      if (id === undefined) delete withoutKey.id
      else withoutKey.id = id
      expect(SchemaContract.decide(withoutKey, schema, contract)._tag).toBe("Dead")
    }))
  })

  it("discard_value keeps every record that has a good key, whatever else it holds", () => {
    fc.assert(fc.property(record, fc.string({ maxLength: 4 }), (r, id) => {
      const decision = SchemaContract.decide({ ...r, id }, schema, { columns: "discard_value", dataType: "discard_value" })
      expect(decision._tag).toBe("Send")
    }))
  })

  it("never changes the record it is given", () => {
    fc.assert(fc.property(record, modes, (r, contract) => {
      const before = JSON.stringify(r)
      SchemaContract.decide(r, schema, contract)
      expect(JSON.stringify(r)).toBe(before)
    }))
  })

  it("evolve refuses the column past the limit, as the service would", () => {
    const full = Array.from({ length: 99 }, (_, i): Column => ({ id: `c${i}`, dataType: "number" }))
    const at100 = SchemaContract.decide({ a: 1 }, { columns: full, primaryKey: [] }, SchemaContract.defaultContract)
    expect(at100._tag).toBe("Send")
    const past = SchemaContract.decide({ a: 1, b: 2 }, { columns: full, primaryKey: [] }, SchemaContract.defaultContract)
    expect(past).toMatchObject({ _tag: "Dead", problem: { code: "too_many_columns", field: "b" } })
  })

  it("a new key whose value no column takes: dropped under evolve only when data_type says so", () => {
    const r = { id: "a", flag: true }
    expect(SchemaContract.decide(r, schema, SchemaContract.defaultContract)).toMatchObject({ _tag: "Dead", problem: { code: "unsupported_value" } })
    expect(SchemaContract.decide(r, schema, { columns: "evolve", dataType: "discard_value" })).toMatchObject({
      _tag: "Send",
      row: { id: "a" },
      discarded: [{ field: "flag", code: "unsupported_value" }]
    })
    expect(SchemaContract.decide(r, schema, { columns: "discard_value", dataType: "freeze" })).toMatchObject({
      _tag: "Send",
      discarded: [{ field: "flag", code: "unknown_column" }]
    })
  })
})

describe("checkElement under a contract", () => {
  it("remembers the columns a run added: a later value of another type is a mismatch, reported once", () => {
    const added: Array<string> = []
    const check = checkElement({ columns: [], primaryKey: [] }, { columnAdded: (column, position) => added.push(`${column.id}:${column.dataType}@${position.offset}`) })
    const element = (offset: number, value: unknown) => ({ _tag: "Record" as const, position: { partition: "0", offset }, value })
    expect(check(element(1, { coupon: "A" }), 0)._tag).toBe("Valid")
    expect(check(element(2, { coupon: "B", n: 1 }), 1)._tag).toBe("Valid")
    const third = check(element(3, { coupon: 5 }), 2)
    expect(third).toMatchObject({ _tag: "Dead", letter: { reason: { code: "invalid_type", field: "coupon" } } })
    expect(added).toEqual(["coupon:string@1", "n:number@2"])
  })

  it("sends what is left after discard_value, as JSON of the record without the dropped keys", () => {
    const check = checkElement({ columns, primaryKey: ["id"], contract: { columns: "discard_value", dataType: "discard_value" } })
    const checked = check({ _tag: "Record", position: { partition: "0", offset: 1 }, value: { id: "a", amount: "12", coupon: "X" } }, 0)
    expect(checked).toMatchObject({ _tag: "Valid", json: "{\"id\":\"a\"}" })
  })
})

describe("checkElement with the types a source gave its values (typedBy)", () => {
  const names = ["id", "amount", "at", "note"] as const
  const dataType = fc.constantFrom<Column["dataType"]>("string", "number", "datetime")
  const columnsOf = (types: ReadonlyArray<Column["dataType"] | null>): Array<Column> =>
    names.flatMap((id, i) => (types[i] === null ? [] : [{ id, dataType: types[i]! }]))
  const valueOf = (type: Column["dataType"], notNull: boolean) =>
    fc.oneof(
      ...(notNull ? [] : [fc.constant(null)]),
      ...(type === "number"
        ? [fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer()]
        : type === "datetime"
        ? [fc.constantFrom("2026-11-01", "2026-11-01T10:00:00Z", "2024-02-29T23:59:59.123456Z")]
        : [fc.string({ maxLength: 6 }), fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 })])
    )
  /** A source's types, a record that keeps to them, and a dataset and contract to check it under. */
  const scene = fc.record({
    source: fc.array(fc.option(dataType, { nil: null }), { minLength: 4, maxLength: 4 }),
    notNull: fc.subarray([...names]),
    dataset: fc.array(fc.option(dataType, { nil: null }), { minLength: 4, maxLength: 4 }),
    primaryKey: fc.subarray([...names], { maxLength: 2 }),
    contract: modes
  }).chain((s) => {
    const types: ValueTypes = { columns: columnsOf(s.source), notNull: s.notNull.filter((n) => s.source[names.indexOf(n)] !== null) }
    const record = fc.record(Object.fromEntries(types.columns.map((c) => [c.id, valueOf(c.dataType, types.notNull.includes(c.id))])))
    return record.map((value) => ({ ...s, types, value }))
  })

  it("never changes a verdict: a record that keeps to its types is sent or refused as if it were checked (property)", () => {
    fc.assert(
      fc.property(scene, ({ contract, dataset, primaryKey, types, value }) => {
        const schema = { columns: columnsOf(dataset), primaryKey, contract }
        const position = { partition: "0", offset: 1 }
        const trusted = checkElement(schema)({ _tag: "Record", position, value, typedBy: types }, 0)
        const checked = checkElement(schema)({ _tag: "Record", position, value }, 0)
        expect(trusted).toEqual(checked)
      }),
      { numRuns: 3000 }
    )
  })

  it("fits when the dataset has every column with a type that takes it and its key is never null", () => {
    const types: ValueTypes = { columns: [{ id: "id", dataType: "string" }, { id: "at", dataType: "datetime" }], notNull: ["id"] }
    const dataset = (at: Column["dataType"], primaryKey: Array<string>) => ({ columns: [{ id: "id", dataType: "string" as const }, { id: "at", dataType: at }], primaryKey })
    expect(fitsTypes(types, dataset("datetime", ["id"]))).toBe(true)
    expect(fitsTypes(types, dataset("string", ["id"]))).toBe(true) // an ISO text is a string too
    expect(fitsTypes(types, dataset("number", ["id"]))).toBe(false)
    expect(fitsTypes(types, dataset("datetime", ["at"]))).toBe(false) // a key the source may leave null
    expect(fitsTypes(types, { columns: [{ id: "id", dataType: "string" }], primaryKey: ["id"] })).toBe(false) // a column to add
  })

  it("takes a fitting source's word for it: the record is not checked value by value", () => {
    const types: ValueTypes = { columns: columns, notNull: ["id"] }
    const check = checkElement(schema)
    // A record that breaks its source's word shows the check was skipped.
    const broken = { _tag: "Record" as const, position: { partition: "0", offset: 1 }, value: { id: "a", amount: "x", at: null } }
    expect(check({ ...broken, typedBy: types }, 0)).toMatchObject({ _tag: "Valid", json: "{\"id\":\"a\",\"amount\":\"x\",\"at\":null}" })
    expect(check(broken, 1)).toMatchObject({ _tag: "Dead", letter: { reason: { code: "invalid_type", field: "amount" } } })
  })
})

describe("SchemaContract.parse", () => {
  it("reads one mode for both, or a list per part", () => {
    expect(SchemaContract.parse("evolve")).toEqual(Either.right({ columns: "evolve", dataType: "freeze" }))
    expect(SchemaContract.parse("freeze")).toEqual(Either.right({ columns: "freeze", dataType: "freeze" }))
    expect(SchemaContract.parse("discard_value")).toEqual(Either.right({ columns: "discard_value", dataType: "discard_value" }))
    expect(SchemaContract.parse("columns=discard_value")).toEqual(Either.right({ columns: "discard_value", dataType: "freeze" }))
    expect(SchemaContract.parse(" data_type = discard_value , columns=freeze")).toEqual(
      Either.right({ columns: "freeze", dataType: "discard_value" })
    )
  })

  it("refuses anything else, naming the part", () => {
    for (const bad of ["", "thaw", "columns=thaw", "data_type=evolve", "columns=freeze,columns=evolve", "tables=evolve", "discard_row"]) {
      expect(Either.isLeft(SchemaContract.parse(bad))).toBe(true)
    }
    expect(SchemaContract.parse("columns=thaw")).toEqual(Either.left(expect.stringContaining("'columns=thaw' is not a contract")))
  })

  it("reads back what format writes", () => {
    fc.assert(fc.property(modes, (contract) => {
      expect(SchemaContract.parse(SchemaContract.format(contract))).toEqual(Either.right(contract))
    }))
  })
})
