import { FastCheck as fc } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import type { Column, Row } from "../../src/records.js"
import {
  applyModifications,
  checkFormula,
  compile,
  evaluate,
  type FormulaType,
  formulaFunctions,
  MaxDepth,
  MaxFormulaLength,
  type Modifications,
  noModifications,
  parseFormula,
  type Plan,
  type Value
} from "../../src/server/features/modifications/index.js"

const schema: ReadonlyArray<Column> = [
  { id: "id", dataType: "string" },
  { id: "amount", dataType: "number" },
  { id: "qty", dataType: "number" },
  { id: "at", dataType: "datetime" },
  { id: "name", dataType: "string" },
  { id: "unit price", dataType: "number" }
]
const types = new Map<string, FormulaType>(schema.map((c) => [c.id, c.dataType]))

/** Parses, type-checks and evaluates a formula on a row; the error text when it fails. */
const run = (formula: string, row: Row = {}): Value | { error: string; position: number } => {
  const parsed = parseFormula(formula)
  if (parsed._tag === "FormulaError") return { error: parsed.error.message, position: parsed.error.position }
  const checked = checkFormula(parsed.expr, (id) => types.get(id))
  if (checked._tag === "FormulaError") return { error: checked.error.message, position: checked.error.position }
  return evaluate(checked.typed, (id) => {
    const v = Object.prototype.hasOwnProperty.call(row, id) ? row[id] : null
    return Array.isArray(v) ? v.join(", ") : (v as Value) ?? null
  })
}

const plan = (definition: Partial<Modifications>, s: ReadonlyArray<Column> = schema): Plan => {
  const compiled = compile(s, { ...noModifications, ...definition })
  if (compiled._tag === "Invalid") throw new Error(JSON.stringify(compiled.errors))
  return compiled.plan
}

const errorsOf = (definition: Partial<Modifications>) => {
  const compiled = compile(schema, { ...noModifications, ...definition })
  return compiled._tag === "Invalid" ? compiled.errors : []
}

describe("formulas", () => {
  it("evaluate arithmetic with the usual precedence", () => {
    expect(run("$amount * 1.2", { amount: 100 })).toBeCloseTo(120)
    expect(run("1 + 2 * 3 - 4 / 2")).toBe(5)
    expect(run("(1 + 2) * 3")).toBe(9)
    expect(run("-$amount + 10 % 4", { amount: 3 })).toBe(-1)
    expect(run("2 - -2")).toBe(4)
    expect(run("${unit price} * $qty", { "unit price": 2.5, qty: 4 })).toBe(10)
    expect(run("1.5e3 + .5")).toBe(1500.5)
  })

  it("give null for null operands, division by zero and overflow", () => {
    expect(run("$amount + 1", { amount: null })).toBe(null)
    expect(run("$amount + 1", {})).toBe(null)
    expect(run("1 / 0")).toBe(null)
    expect(run("5 % 0")).toBe(null)
    expect(run("1e308 * 10")).toBe(null)
    expect(run("NULL = NULL")).toBe(null)
    expect(run("$amount > 1", { amount: null })).toBe(null)
  })

  it("use three-valued logic", () => {
    expect(run("FALSE AND NULL")).toBe(false)
    expect(run("TRUE AND NULL")).toBe(null)
    expect(run("TRUE OR NULL")).toBe(true)
    expect(run("FALSE OR NULL")).toBe(null)
    expect(run("NOT NULL")).toBe(null)
    expect(run("not (1 < 2) || 2 >= 2")).toBe(true)
    expect(run("1 <> 2 && 'a' != 'b'")).toBe(true)
  })

  it("call the listed functions", () => {
    const row = { amount: 12.345, name: "  Ada  ", at: "2026-01-31T22:30:00+02:00", id: "x" }
    expect(run("ROUND($amount, 2)", row)).toBe(12.35)
    expect(run("ROUND(-2.5)")).toBe(-3)
    expect(run("CONCAT(UPPER(TRIM($name)), '-', $id, NULL, 1)", row)).toBe("ADA-x1")
    expect(run("IF($amount > 10, 'big', 'small')", row)).toBe("big")
    expect(run("IF(NULL, 1, 2)")).toBe(2)
    expect(run("COALESCE($qty, $amount)", row)).toBe(12.345)
    expect(run("LENGTH($name)", row)).toBe(7)
    expect(run("SUBSTRING('abcdef', 2, 3)")).toBe("bcd")
    expect(run("LEFT('abc', 2) + ''", row)).toMatchObject({ error: expect.stringContaining("numbers") })
    expect(run("REPLACE('a-b-c', '-', '+')")).toBe("a+b+c")
    expect(run("YEAR($at) * 100 + MONTH($at)", row)).toBe(202601)
    expect(run("DAY($at) + HOUR($at)", row)).toBe(31 + 22)
    expect(run("WEEKDAY($at)", row)).toBe(6)
    expect(run("DATE_ADD($at, 1, 'month')", row)).toBe("2026-02-28T22:30:00+02:00")
    expect(run("DATE_ADD(DATE('2026-01-31'), 2, 'days')")).toBe("2026-02-02")
    expect(run("DATE_TRUNC($at, 'month')", row)).toBe("2026-01-01")
    expect(run("DATE_DIFF($at, DATE('2026-02-01T00:00:00Z'), 'hour')", row)).toBe(3)
    expect(run("$at < DATE('2026-01-31T21:00:00Z')", row)).toBe(true)
    expect(run("NUMBER('12.5') * 2")).toBe(25)
    expect(run("NUMBER('12,5')")).toBe(null)
    expect(run("MAX(1, NULL, 3)")).toBe(3)
    expect(run("MIN('b', 'a')")).toBe("a")
    expect(run("ISNULL($qty)", row)).toBe(true)
    expect(run("TEXT(1.5)")).toBe("1.5")
    expect(run("ABS(-2) + FLOOR(1.7) + CEIL(1.2) + POWER(2, 3) + SQRT(16)")).toBe(2 + 1 + 2 + 8 + 4)
  })

  it("list every function with a signature, description and parameters", () => {
    expect(formulaFunctions.length).toBeGreaterThan(20)
    for (const f of formulaFunctions) {
      expect(f.signature.startsWith(`${f.name}(`)).toBe(true)
      expect(f.description.length).toBeGreaterThan(5)
      // Every example parses.
      expect(parseFormula(f.example!)._tag).toBe("Parsed")
    }
  })

  it("name the position of an error", () => {
    expect(run("$amount * * 2")).toEqual({ error: "unexpected \"*\"", position: 11 })
    expect(run("$amount +")).toEqual({ error: "the formula ends too early", position: 10 })
    expect(run("(1 + 2")).toMatchObject({ position: 7 })
    expect(run("$nope + 1")).toEqual({ error: "unknown column \"nope\"", position: 1 })
    expect(run("$amount + 'x'")).toMatchObject({ position: 11, error: expect.stringContaining("numbers") })
    expect(run("UPPER($amount)")).toMatchObject({ position: 7, error: expect.stringContaining("UPPER") })
    expect(run("FOO(1)")).toEqual({ error: "unknown function \"FOO\"", position: 1 })
    expect(run("'open")).toMatchObject({ position: 1, error: "the string is not closed" })
    expect(run("1 < 2 < 3")).toMatchObject({ position: 7 })
    expect(run("IF(TRUE, 1, 'a')")).toMatchObject({ position: 13 })
    expect(run("ROUND()")).toMatchObject({ position: 1 })
    expect(run("")).toMatchObject({ position: 1 })
  })
})

describe("hostile formulas", () => {
  const exit = vi.spyOn(process, "exit")
  afterEach(() => expect(exit).not.toHaveBeenCalled())

  it("cannot reach JavaScript", () => {
    const hostile = [
      "constructor.constructor('return process')().exit(1)",
      "process.exit(1)",
      "$a.constructor",
      "$amount.constructor.constructor('process.exit(1)')()",
      "CONSTRUCTOR(1)",
      "__proto__(1)",
      "$__proto__",
      "$constructor",
      "${constructor}",
      "${__proto__} + 1",
      "toString()",
      "eval('1')",
      "Function('return 1')()",
      "require('child_process')",
      "`${process.exit(1)}`",
      "$amount; process.exit(1)",
      "import('fs')",
      "globalThis",
      "this",
      "[].constructor",
      "{}",
      "'a'['constructor']"
    ]
    for (const formula of hostile) {
      const result = run(formula, { amount: 1 })
      expect(result, formula).toMatchObject({ error: expect.any(String), position: expect.any(Number) })
    }
  })

  it("refuse deep nesting without exhausting the stack", () => {
    for (const open of ["(", "-", "NOT ", "ABS(", "IF(TRUE, "]) {
      const formula = open.repeat(10_000) + "1"
      const result = run(formula.slice(0, MaxFormulaLength))
      expect(result, open).toMatchObject({ error: expect.stringContaining(`${MaxDepth} levels`) })
    }
    expect(run("(".repeat(MaxDepth - 2) + "1" + ")".repeat(MaxDepth - 2))).toBe(1)
  })

  it("refuse long input and huge literals", () => {
    expect(run("1+".repeat(100_000) + "1")).toMatchObject({ position: MaxFormulaLength + 1 })
    expect(run("1e400")).toMatchObject({ error: "the number is too large" })
    expect(run("9".repeat(40))).toMatchObject({ error: expect.stringContaining("at most 32") })
    expect(run(`'${"x".repeat(1500)}'`)).toMatchObject({ error: expect.stringContaining("at most 1000") })
  })

  it("keep produced strings bounded", () => {
    // Each calculated column doubles the previous one: the limit turns c9 (10,240 characters) into null
    // (and CONCAT reads a null as empty text).
    const formulas: Record<string, string> = { c0: "CONCAT($name, $name)" }
    for (let k = 1; k < 20; k++) formulas[`c${k}`] = `CONCAT($c${k - 1}, $c${k - 1})`
    const p = plan({ formulas })
    const row = p.evaluate({ name: "x".repeat(10) })
    expect(row.c8).toHaveLength(10 * 2 ** 9)
    expect(row.c9).toBe(null)
    for (const value of Object.values(row)) expect(String(value).length).toBeLessThanOrEqual(10_000)
  })
})

describe("compiled modifications", () => {
  it("add calculated columns, convert types, filter, hide and order", () => {
    const p = plan({
      formulas: { total: "$amount * $qty", label: "CONCAT($name, ': ', TEXT($total))" },
      dataTypes: { id: { outputLogicalType: "number", inputFormat: null, outputFormat: null } },
      filters: { total: { logicalOperator: "AND", conditions: [{ type: "greater_than", value: 10 }] } },
      displayNames: { total: "Total" },
      visibility: { qty: false },
      order: ["label", "total"]
    })
    expect(p.columns.map((c) => c.id)).toEqual(["label", "total", "id", "amount", "qty", "at", "name", "unit price"])
    expect(p.column("total")).toMatchObject({ displayName: "Total", dataType: "number", calculated: true, order: 1 })
    expect(p.column("id")).toMatchObject({ dataType: "number", logicalType: "number" })
    expect(p.column("qty")?.visible).toBe(false)
    expect(p.read({ id: "7", amount: 3, qty: 5, name: "a" })).toEqual({
      id: 7,
      amount: 3,
      at: null,
      name: "a",
      "unit price": null,
      total: 15,
      label: "a: 15"
    })
    expect(p.read({ id: "8", amount: 1, qty: 5, name: "b" })).toBeUndefined()
    expect(p.expanded.visibility).toEqual({
      label: true,
      total: true,
      id: true,
      amount: true,
      qty: false,
      at: true,
      name: true,
      "unit price": true
    })
    expect(p.expanded.order).toHaveLength(8)
  })

  it("apply filters per column type, AND and OR", () => {
    const p = plan({
      filters: {
        name: { logicalOperator: "OR", conditions: [{ type: "starts_with", value: "a" }, { type: "is_null", value: null }] },
        at: { logicalOperator: "AND", conditions: [{ type: "on_or_after", value: "2026-01-01" }] },
        amount: { logicalOperator: "AND", conditions: [{ type: "between", value: [1, 10] }, { type: "not_in", value: [5] }] }
      }
    })
    const keep = (row: Row) => p.read(row) !== undefined
    expect(keep({ name: "ab", at: "2026-01-02", amount: 1 })).toBe(true)
    expect(keep({ name: null, at: "2026-01-01T00:00:00Z", amount: 10 })).toBe(true)
    expect(keep({ name: "b", at: "2026-01-02", amount: 1 })).toBe(false)
    expect(keep({ name: "a", at: "2025-12-31T23:59:59Z", amount: 1 })).toBe(false)
    expect(keep({ name: "a", at: "2026-01-02", amount: 5 })).toBe(false)
    expect(keep({ name: "a", at: "2026-01-02", amount: null })).toBe(false)
  })

  it("name every invalid field", () => {
    const errors = errorsOf({
      formulas: { amount: "1", bad: "$amount +", cond: "$amount > 1", ok: "$nope * 2" },
      filters: {
        name: { logicalOperator: "AND", conditions: [{ type: "greater_than", value: 1 }] },
        amount: { logicalOperator: "AND", conditions: [{ type: "greater_than", value: "1" }] },
        ghost: { logicalOperator: "AND", conditions: [{ type: "is_null" }] }
      },
      dataTypes: { at: { outputLogicalType: "currency", inputFormat: null, outputFormat: null } },
      displayNames: { name: " " },
      visibility: { ghost: false },
      order: ["id", "id"]
    })
    expect(errors.map((e) => e.field).sort()).toEqual([
      "dataTypes.at.outputLogicalType",
      "displayNames.name",
      "filters.amount.conditions[0].value",
      "filters.ghost",
      "filters.name.conditions[0].type",
      "formulas.amount",
      "formulas.bad",
      "formulas.cond",
      "formulas.ok",
      "order[1]",
      "visibility.ghost"
    ])
    expect(errors.find((e) => e.field === "formulas.bad")).toMatchObject({
      position: 10,
      message: expect.stringContaining("position 10")
    })
  })

  it("refuse cycles between calculated columns", () => {
    const errors = errorsOf({ formulas: { a: "$b + 1", b: "$c + 1", c: "$a + 1", d: "$amount" } })
    expect(errors.map((e) => e.field).sort()).toEqual(["formulas.a", "formulas.b", "formulas.c"])
    expect(errorsOf({ formulas: { a: "$a" } })).toHaveLength(1)
  })

  it("convert types as the rules allow", () => {
    const p = plan({
      dataTypes: {
        name: { outputLogicalType: "datetime", inputFormat: "DD/MM/YYYY", outputFormat: null },
        amount: { outputLogicalType: "datetime", inputFormat: "UNIX_SECONDS", outputFormat: null },
        qty: { outputLogicalType: "currency", inputFormat: null, outputFormat: { type: "AUTO_DOLLAR", scale: "thousands" } }
      }
    })
    expect(p.evaluate({ name: "31/01/2026", amount: 0, qty: 2 })).toMatchObject({
      name: "2026-01-31",
      amount: "1970-01-01T00:00:00Z",
      qty: 2
    })
    expect(p.evaluate({ name: "31/02/2026" }).name).toBe(null)
    expect(p.column("qty")).toMatchObject({ dataType: "number", logicalType: "currency" })
    expect(errorsOf({ dataTypes: { at: { outputLogicalType: "string", inputFormat: "X", outputFormat: null } } })[0]?.field)
      .toBe("dataTypes.at.inputFormat")
  })

  it("treat __proto__ and constructor as plain column ids", () => {
    const s: ReadonlyArray<Column> = [{ id: "__proto__", dataType: "number" }, { id: "constructor", dataType: "number" }]
    const p = plan({ formulas: { sum: "${__proto__} + $constructor" }, visibility: { constructor: false } }, s)
    const row = JSON.parse("{\"__proto__\": 2, \"constructor\": 3}") as Row
    const read = p.read(row)!
    expect(Object.keys(read)).toEqual(["__proto__", "sum"])
    expect(read.sum).toBe(5)
    expect(Object.getPrototypeOf(read)).toBe(Object.prototype)
    // A row without the columns reads null, not Object.prototype's members.
    expect(p.read({})!.sum).toBe(null)
  })

  it("let a stored column win over a calculated column of the same id added later", () => {
    const definition = { ...noModifications, formulas: { total: "$amount * 2", twice: "$total * 2" } }
    const later = [...schema, { id: "total", dataType: "number" as const }]
    const compiled = applyModifications(later, definition)
    expect(compiled._tag).toBe("Plan")
    if (compiled._tag === "Plan") expect(compiled.plan.evaluate({ amount: 1, total: 5 })).toMatchObject({ total: 5, twice: 10 })
  })
})

// A reference for arithmetic formulas: a tree generated at random, printed, then parsed and
// evaluated by the module; the reference evaluates the tree directly with the documented rules.
type Tree =
  | { readonly k: "num"; readonly v: number }
  | { readonly k: "col"; readonly id: "amount" | "qty" }
  | { readonly k: "neg"; readonly a: Tree }
  | { readonly k: "bin"; readonly op: "+" | "-" | "*" | "/" | "%"; readonly a: Tree; readonly b: Tree }
  | { readonly k: "if"; readonly op: "<" | "=" | ">="; readonly a: Tree; readonly b: Tree; readonly t: Tree; readonly e: Tree }
  | { readonly k: "coalesce"; readonly a: Tree; readonly b: Tree }

const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.oneof(
      fc.integer({ min: -1000, max: 1000 }).map((v): Tree => ({ k: "num", v })),
      fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((v): Tree => ({ k: "num", v: Object.is(v, -0) ? 0 : v })),
      fc.constantFrom<Tree>({ k: "col", id: "amount" }, { k: "col", id: "qty" })
    ),
    tie("tree").map((a): Tree => ({ k: "neg", a })),
    fc.record({ op: fc.constantFrom<"+" | "-" | "*" | "/" | "%">("+", "-", "*", "/", "%"), a: tie("tree"), b: tie("tree") }).map((r): Tree => ({
      k: "bin",
      ...r
    })),
    fc.record({ op: fc.constantFrom<"<" | "=" | ">=">("<", "=", ">="), a: tie("tree"), b: tie("tree"), t: tie("tree"), e: tie("tree") }).map((
      r
    ): Tree => ({ k: "if", ...r })),
    fc.record({ a: tie("tree"), b: tie("tree") }).map((r): Tree => ({ k: "coalesce", ...r }))
  )
})).tree

const print = (t: Tree): string => {
  switch (t.k) {
    case "num":
      return t.v < 0 ? `(${t.v})` : String(t.v)
    case "col":
      return `$${t.id}`
    case "neg":
      return `-(${print(t.a)})`
    case "bin":
      return `(${print(t.a)} ${t.op} ${print(t.b)})`
    case "if":
      return `IF(${print(t.a)} ${t.op} ${print(t.b)}, ${print(t.t)}, ${print(t.e)})`
    case "coalesce":
      return `COALESCE(${print(t.a)}, ${print(t.b)})`
  }
}

const reference = (t: Tree, row: { amount: number | null; qty: number | null }): number | null => {
  const fin = (n: number) => (Number.isFinite(n) ? (n === 0 ? 0 : n) : null)
  switch (t.k) {
    case "num":
      return t.v
    case "col":
      return row[t.id]
    case "neg": {
      const a = reference(t.a, row)
      return a === null ? null : fin(-a)
    }
    case "bin": {
      const a = reference(t.a, row)
      const b = reference(t.b, row)
      if (a === null || b === null) return null
      if ((t.op === "/" || t.op === "%") && b === 0) return null
      return fin(t.op === "+" ? a + b : t.op === "-" ? a - b : t.op === "*" ? a * b : t.op === "/" ? a / b : a % b)
    }
    case "if": {
      const a = reference(t.a, row)
      const b = reference(t.b, row)
      const cond = a === null || b === null ? null : t.op === "<" ? a < b : t.op === "=" ? a === b : a >= b
      return cond === true ? reference(t.t, row) : reference(t.e, row)
    }
    case "coalesce": {
      const a = reference(t.a, row)
      return a !== null ? a : reference(t.b, row)
    }
  }
}

const cell = fc.oneof(fc.constant(null), fc.integer({ min: -50, max: 50 }), fc.double({ min: -1e3, max: 1e3, noNaN: true }))

describe("formula properties", () => {
  it("evaluate as the reference does", () => {
    fc.assert(
      fc.property(tree, cell, cell, (t, amount, qty) => {
        const text = print(t)
        fc.pre(text.length <= MaxFormulaLength)
        const row = { amount: amount === null ? null : Object.is(amount, -0) ? 0 : amount, qty: qty === null ? null : Object.is(qty, -0) ? 0 : qty }
        const result = run(text, row)
        if (typeof result === "object" && result !== null) {
          // Only nesting beyond the limit may be refused.
          expect(result.error).toContain("levels")
          return
        }
        expect(result).toBe(reference(t, row))
      }),
      { seed: 1311, numRuns: 500 }
    )
  })

  it("follow precedence and left associativity without parentheses", () => {
    const op = fc.constantFrom("+", "-", "*", "/")
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.array(fc.tuple(op, fc.integer({ min: 1, max: 50 })), { maxLength: 8 }), (first, rest) => {
        const text = `${first}${rest.map(([o, n]) => ` ${o} ${n}`).join("")}`
        // Reference: fold * and / into terms first, then + and - left to right.
        const terms: Array<number> = [first]
        const signs: Array<1 | -1> = [1]
        for (const [o, n] of rest) {
          if (o === "*") terms[terms.length - 1]! *= n
          else if (o === "/") terms[terms.length - 1]! /= n
          else {
            terms.push(n)
            signs.push(o === "+" ? 1 : -1)
          }
        }
        let expected = 0
        terms.forEach((t, k) => (expected = k === 0 ? t : expected + signs[k]! * t))
        expect(run(text)).toBeCloseTo(expected, 9)
      }),
      { seed: 1312, numRuns: 300 }
    )
  })

  it("never throw on random text", () => {
    const alphabet = fc.constantFrom(..."$(){}'\"\\+-*/%<>=!&|,. 0123456789eE_aZIFNOTANDORnull".split(""))
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 80 }).map((cs) => cs.join("")), (text) => {
        const result = run(text, { amount: 1, qty: 2 })
        expect(result === null || ["number", "string", "boolean", "object"].includes(typeof result)).toBe(true)
      }),
      { seed: 1313, numRuns: 2000 }
    )
  })
})
