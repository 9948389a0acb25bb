/**
 * Decode issues as people read them (seed errors, typed dead letters, 400s): one issue per
 * wrong value, the union's other members folded away, echoed values cut.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { formatPath, objectIdentifiers, parseIssues } from "../../src/internal/issues.js"

const Order = Schema.Struct({
  id: Schema.String,
  discount: Schema.NullOr(Schema.Number),
  channel: Schema.optional(Schema.Literal("web", "shop", "phone")),
  lines: Schema.optional(Schema.Array(Schema.Struct({ qty: Schema.optional(Schema.Int) })))
})

const issuesOf = (value: unknown) =>
  Effect.map(Effect.flip(Schema.decodeUnknown(Order, { errors: "all" })(value)), (error) =>
    parseIssues(error).map((issue) => `${formatPath(issue.path)}: ${issue.message}`))

describe("parseIssues", () => {
  it.effect("folds a union's other members and lists literals once", () =>
    Effect.gen(function*() {
      expect(yield* issuesOf({ id: "a", discount: "10%", channel: "mail" })).toEqual([
        "discount: Expected number, actual \"10%\"",
        "channel: Expected \"web\" | \"shop\" | \"phone\", actual \"mail\""
      ])
    }))

  it.effect("names the deepest wrong value, not the optional list around it", () =>
    Effect.gen(function*() {
      expect(yield* issuesOf({ id: "a", discount: null, lines: [{ qty: 1 }, { qty: 1.5 }] })).toEqual([
        "lines[1].qty: Expected an integer, actual 1.5"
      ])
    }))

  it.effect("cuts what it echoes and says 'an array' for a list", () =>
    Effect.gen(function*() {
      const [issue, ...rest] = yield* issuesOf({ id: "a", discount: 1, lines: { text: "x".repeat(500) } })
      expect(rest).toEqual([])
      expect(issue).toMatch(/^lines: Expected an array, actual \{"text":"x+…$/)
      expect(issue!.length).toBeLessThan(120)
    }))

  it.effect("keeps a missing key and messages of other forms as they are", () =>
    Effect.gen(function*() {
      expect(yield* issuesOf({ discount: 1 })).toEqual(["id: is missing"])
    }))

  it.effect("says 'an object' for a named object schema, found however deep it is nested", () =>
    Effect.gen(function*() {
      const Column = Schema.Struct({ id: Schema.String }).annotations({ identifier: "Column" })
      const Id = Schema.String.annotations({ identifier: "ColumnId" })
      const Body = Schema.Struct({
        measure: Column,
        byKey: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.NullOr(Schema.Array(Column)) })),
        id: Id
      })
      const objects = objectIdentifiers([Body.ast])
      expect([...objects]).toEqual(["Column"])
      const error = yield* Effect.flip(Schema.decodeUnknown(Body, { errors: "all" })({ measure: "amount", byKey: { a: ["x"] }, id: 1 }))
      expect(parseIssues(error, objects).map((issue) => `${formatPath(issue.path)}: ${issue.message}`)).toEqual([
        "measure: Expected an object, actual \"amount\"",
        "byKey.a[0]: Expected an object, actual \"x\"",
        "id: Expected ColumnId, actual 1"
      ])
    }))
})
