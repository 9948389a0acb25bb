/**
 * The metric core (pure): time zones, filters and values against a reference computed here
 * independently, on random rows.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import type { Column, Row } from "../../src/records.js"
import {
  checkDefinition,
  compileGroup,
  distinctDimensionValues,
  type MetricDefinition,
  metricValues,
  sortRows
} from "../../src/server/features/analytics/metrics.js"
import { formatZoned, instantOf } from "../../src/server/features/analytics/zonedTime.js"

const columns: ReadonlyArray<Column> = [
  { id: "day", dataType: "datetime" },
  { id: "amount", dataType: "number" },
  { id: "region", dataType: "string" }
]

/** UTC+03:00 all year: the reference reads local times by adding three hours. */
const zone = "Etc/GMT-3"
const zoneOffset = 3 * 3600_000

const referenceInstant = (value: string): number =>
  value.endsWith("Z") ? Date.parse(value) : value.length === 10 ? Date.parse(`${value}T00:00:00Z`) - zoneOffset : Date.parse(`${value}Z`) - zoneOffset

const referenceBucket = (instant: number, granularity: "daily" | "weekly" | "monthly"): string => {
  const local = new Date(instant + zoneOffset)
  if (granularity === "monthly") return `${local.toISOString().slice(0, 7)}-01`
  if (granularity === "daily") return local.toISOString().slice(0, 10)
  const monday = new Date(local.getTime() - ((local.getUTCDay() + 6) % 7) * 86_400_000)
  return monday.toISOString().slice(0, 10)
}

const referenceAggregate = (values: ReadonlyArray<number | null>, aggregation: MetricDefinition["aggregationFunction"]) => {
  const present = values.filter((v): v is number => v !== null)
  if (aggregation === "count") return present.length
  if (present.length === 0) return null
  switch (aggregation) {
    case "sum":
      return present.reduce((a, b) => a + b, 0)
    case "avg":
      return present.reduce((a, b) => a + b, 0) / present.length
    case "min":
      return Math.min(...present)
    case "max":
      return Math.max(...present)
  }
}

const start = Date.UTC(2025, 11, 1)
const span = 120 * 86_400_000

/** A date cell written one of three ways: UTC, local time without offset, or a bare local date. */
const dateCell = fc.tuple(fc.integer({ min: 0, max: span / 1000 }), fc.constantFrom("utc", "local", "date")).map(([s, form]) => {
  const instant = start + s * 1000
  const local = new Date(instant + zoneOffset).toISOString()
  return form === "utc" ? `${new Date(instant).toISOString().slice(0, 19)}Z` : form === "local" ? local.slice(0, 19) : local.slice(0, 10)
})

const rowArb: fc.Arbitrary<Row> = fc.record({
  day: dateCell,
  amount: fc.option(fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.double({ min: -1e6, max: 1e6, noNaN: true })), { nil: null }),
  region: fc.option(fc.constantFrom("north", "south", "east", "West"), { nil: null })
})

const close = (a: number | null, b: number | null) =>
  a === null || b === null ? a === b : Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))

describe("metric core", () => {
  it("reads dates in the zone, across DST", () => {
    expect(instantOf("2026-01-05", "Europe/Ljubljana")).toBe(Date.parse("2026-01-04T23:00:00Z"))
    expect(instantOf("2026-07-05T10:00", "Europe/Ljubljana")).toBe(Date.parse("2026-07-05T08:00:00Z"))
    expect(instantOf("2026-07-05T10:00:00+05:30", "Europe/Ljubljana")).toBe(Date.parse("2026-07-05T04:30:00Z"))
    // 02:30 does not exist on 29 March 2026 there: read with the offset before the jump.
    expect(instantOf("2026-03-29T02:30", "Europe/Ljubljana")).toBe(Date.parse("2026-03-29T01:30:00Z"))
    expect(instantOf("yesterday", "UTC")).toBeUndefined()
    expect(formatZoned(Date.parse("2026-03-29T00:00:00Z"), "Europe/Ljubljana")).toBe("2026-03-29T01:00:00+01:00")
    expect(formatZoned(Date.parse("2026-03-30T00:00:00Z"), "America/St_Johns")).toBe("2026-03-29T21:30:00-02:30")
  })

  it("daily buckets of a DST day are 23 hours long", () => {
    const definition: MetricDefinition = {
      measure: { id: "amount", displayName: "Amount" },
      date: { id: "day", displayName: "Day" },
      aggregationFunction: "sum",
      dimensions: [],
      filters: null
    }
    const rows = [{ day: "2026-03-29T12:00", amount: 2 }, { day: "2026-03-29T23:30", amount: 3 }, { day: "2026-03-30", amount: 5 }]
    const values = metricValues(rows, definition, () => true, "Europe/Ljubljana", { granularity: "daily" })
    expect(values.items).toEqual([
      { date: "2026-03-29", start: "2026-03-29T00:00:00+01:00", end: "2026-03-30T00:00:00+02:00", dimensionValue: null, value: 5, rowCount: 2 },
      { date: "2026-03-30", start: "2026-03-30T00:00:00+02:00", end: "2026-03-31T00:00:00+02:00", dimensionValue: null, value: 5, rowCount: 1 }
    ])
    expect(values.total).toEqual({ value: 10, rowCount: 3 })
  })

  it("checks definitions and filters, naming the field", () => {
    const base: MetricDefinition = {
      measure: { id: "amount", displayName: "Amount" },
      date: { id: "day", displayName: "Day" },
      aggregationFunction: "sum",
      dimensions: [{ id: "region", displayName: "Region" }],
      filters: null
    }
    const field = (d: MetricDefinition) => Either.match(checkDefinition(columns, "UTC", d), { onLeft: (e) => e.field, onRight: () => null })
    expect(field(base)).toBeNull()
    expect(field({ ...base, measure: { id: "region", displayName: "r" } })).toBe("measure.id")
    expect(field({ ...base, measure: { id: "region", displayName: "r" }, aggregationFunction: "count" })).toBeNull()
    expect(field({ ...base, date: { id: "amount", displayName: "a" } })).toBe("date.id")
    expect(field({ ...base, dimensions: [{ id: "nope", displayName: "n" }] })).toBe("dimensions[0].id")
    expect(field({ ...base, filters: { logicalOperator: "and", conditions: [{ field: "amount", operator: "GREATER_THAN", values: ["x"] }] } }))
      .toBe("filters.conditions[0].values[0]")
    expect(field({ ...base, filters: { logicalOperator: "and", conditions: [{ field: "region", operator: "LESS_THAN", values: ["a"] }] } }))
      .toBe("filters.conditions[0].operator")
    expect(field({ ...base, filters: { logicalOperator: "or", conditions: [{ field: "region", operator: "IS_EMPTY", values: ["a"] }] } }))
      .toBe("filters.conditions[0].values")
  })

  it("filters: multi-valued cells, negation, empty values", () => {
    const test = (operator: any, values: Array<string>) =>
      Either.getOrThrow(compileGroup(columns, "UTC", { logicalOperator: "and", conditions: [{ field: "region", operator, values }] }, "f"))
    const rows: Array<Row> = [{ region: ["north", "east"] }, { region: "south" }, { region: null }, {}]
    expect(rows.map(test("ANY_OF", ["east"]))).toEqual([true, false, false, false])
    expect(rows.map(test("NONE_OF", ["east"]))).toEqual([false, true, true, true])
    expect(rows.map(test("IS_EMPTY", []))).toEqual([false, false, true, true])
    expect(rows.map(test("CONTAINS", ["OUT"]))).toEqual([false, true, false, false])
    expect(distinctDimensionValues(rows, "region", () => true)).toEqual(["east", "north", "south"])
  })

  it("sorts datetime cells by instant, nulls last", () => {
    const rows: Array<Row> = [{ day: "2026-01-02T00:00:00+05:00" }, { day: null }, { day: "2026-01-01T20:00:00Z" }]
    expect(sortRows(rows, "UTC", { column: columns[0]!, order: "asc" })).toEqual([rows[0], rows[2], rows[1]])
    expect(sortRows(rows, "UTC", { column: columns[0]!, order: "desc" })).toEqual([rows[2], rows[0], rows[1]])
  })

  it("values match a reference on random rows (every aggregation, granularity, dimension and period)", () => {
    fc.assert(
      fc.property(
        fc.array(rowArb, { maxLength: 80 }),
        fc.constantFrom<Array<MetricDefinition["aggregationFunction"]>>("sum", "avg", "min", "max", "count"),
        fc.constantFrom(undefined, "daily" as const, "weekly" as const, "monthly" as const),
        fc.boolean(),
        fc.tuple(fc.integer({ min: 0, max: span / 1000 }), fc.integer({ min: 0, max: span / 1000 })),
        (rows, aggregation, granularity, byRegion, [a, b]) => {
          const period = { startTimestamp: start / 1000 + Math.min(a, b), endTimestamp: start / 1000 + Math.max(a, b) }
          const definition: MetricDefinition = {
            measure: { id: "amount", displayName: "Amount" },
            date: { id: "day", displayName: "Day" },
            aggregationFunction: aggregation,
            dimensions: [{ id: "region", displayName: "Region" }],
            filters: null
          }
          const got = metricValues(rows, definition, () => true, zone, {
            period,
            granularity,
            dimension: byRegion ? "region" : undefined
          })
          const inPeriod = rows.filter((r) => {
            const s = Math.floor(referenceInstant(r.day as string) / 1000)
            return s >= period.startTimestamp && s <= period.endTimestamp
          })
          const groups = new Map<string, Array<number | null>>()
          for (const r of inPeriod) {
            const bucket = granularity === undefined ? "" : referenceBucket(referenceInstant(r.day as string), granularity)
            const key = `${bucket}|${byRegion ? (r.region ?? "\u0000") : ""}`
            groups.set(key, [...(groups.get(key) ?? []), r.amount as number | null])
          }
          expect(got.total.rowCount).toBe(inPeriod.length)
          expect(close(got.total.value, referenceAggregate(inPeriod.map((r) => r.amount as number | null), aggregation))).toBe(true)
          expect(got.items.length).toBe(groups.size)
          for (const item of got.items) {
            const key = `${item.date ?? ""}|${byRegion ? (item.dimensionValue ?? "\u0000") : ""}`
            const values = groups.get(key)
            expect(values, key).toBeDefined()
            expect(item.rowCount).toBe(values!.length)
            expect(close(item.value, referenceAggregate(values!, aggregation))).toBe(true)
          }
        }
      ),
      { numRuns: 300 }
    )
  })
})
