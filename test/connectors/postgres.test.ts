/**
 * The Postgres source on the real database: one test per type of the value mapping (what the
 * column becomes in the dataset schema, what the value becomes in the record, or the dead
 * letter it is), and the pure parts (key splits, keyset SQL, number exactness).
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Chunk, Effect, Redacted, Stream } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Postgres from "../../connectors/postgres/index.js"
import { checkRecord } from "../../src/records.js"
import { databaseUrl } from "../support/services.js"
import { testSchema } from "../support/postgres.js"

let db: Awaited<ReturnType<typeof testSchema>>
let dir: string
let n = 0

beforeAll(async () => {
  db = await testSchema()
  dir = mkdtempSync(join(tmpdir(), "tributary-postgres-"))
  await db.sql(`CREATE TYPE ${db.name}.mood AS ENUM ('calm', 'busy')`)
  await db.sql(`CREATE DOMAIN ${db.name}.positive AS integer CHECK (VALUE > 0)`)
})
afterAll(() => db?.drop())

/** Reads `SELECT 1 AS id, <expression> AS v` through the source: v's column type and element. */
const readValue = (expression: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const source = yield* Postgres.make({
        relation: { _tag: "Query", sql: `SELECT 1 AS id, ${expression} AS v` },
        key: ["id"],
        checkpoint: { _tag: "File", path: join(dir, `value-${n++}.json`) }
      })
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(source.events))
      const element = events.find((e) => e._tag === "Record" || e._tag === "Malformed")!
      return { dataType: source.schema.columns.find((c) => c.id === "v")!.dataType, element }
    }).pipe(Effect.provide(Postgres.layer({ url: Redacted.make(databaseUrl()) })))
  )

const value = async (expression: string) => {
  const { dataType, element } = await readValue(expression)
  if (element._tag !== "Record") throw new Error(`expected a record, got ${JSON.stringify(element)}`)
  return { dataType, value: (element.value as Record<string, unknown>)["v"] }
}

const dead = async (expression: string) => {
  const { element } = await readValue(expression)
  if (element._tag !== "Malformed") throw new Error(`expected a dead letter, got ${JSON.stringify(element)}`)
  return element
}

describe("Postgres values as record values", () => {
  it("smallint and integer: numbers", async () => {
    expect(await value("(-32768)::smallint")).toEqual({ dataType: "number", value: -32768 })
    expect(await value("2147483647::integer")).toEqual({ dataType: "number", value: 2147483647 })
  })

  it("bigint: a number when a double holds it exactly, else a dead letter naming the key and column", async () => {
    expect(await value("9007199254740991::bigint")).toEqual({ dataType: "number", value: 9007199254740991 })
    expect(await value("(-9007199254740992)::bigint")).toEqual({ dataType: "number", value: -9007199254740992 })
    const letter = await dead("9007199254740993::bigint")
    expect(letter.problem).toMatchObject({ code: "inexact_number", field: "v" })
    expect(letter.problem.message).toContain("row (id)=(1): column v: 9007199254740993 cannot be held exactly")
    expect(letter.position).toMatchObject({ offset: 0, resume: { key: ["1"] } })
  })

  it("numeric: exact decimals as numbers (trailing zeros are not digits lost); more digits than a double holds, NaN and infinities are dead letters", async () => {
    expect(await value("12.50::numeric(10,2)")).toEqual({ dataType: "number", value: 12.5 })
    expect(await value("0.1::numeric")).toEqual({ dataType: "number", value: 0.1 })
    expect(await value("1e20::numeric")).toEqual({ dataType: "number", value: 1e20 })
    expect(await value("-0.000001234::numeric")).toEqual({ dataType: "number", value: -0.000001234 })
    expect((await dead("0.12345678901234567890::numeric")).problem.code).toBe("inexact_number")
    expect((await dead("'NaN'::numeric")).problem.code).toBe("not_a_number")
    expect((await dead("'Infinity'::numeric")).problem.code).toBe("not_a_number")
  })

  it("real and double precision: numbers as the database shows them; NaN and infinities are dead letters", async () => {
    expect(await value("1.1::real")).toEqual({ dataType: "number", value: 1.1 })
    expect(await value("(1/3.0)::double precision")).toEqual({ dataType: "number", value: 1 / 3 })
    expect((await dead("'NaN'::double precision")).problem).toMatchObject({ code: "not_a_number", field: "v" })
    expect((await dead("'-Infinity'::real")).problem.code).toBe("not_a_number")
  })

  it("text, varchar, char, uuid and enums: strings", async () => {
    expect(await value("'héllo'::text")).toEqual({ dataType: "string", value: "héllo" })
    expect(await value("'ab'::varchar(5)")).toEqual({ dataType: "string", value: "ab" })
    expect(await value("'ab'::char(4)")).toEqual({ dataType: "string", value: "ab  " })
    expect(await value("'6f1c2c7a-1b1e-4d4e-9a57-0b8a1d4a4f10'::uuid")).toEqual({
      dataType: "string",
      value: "6f1c2c7a-1b1e-4d4e-9a57-0b8a1d4a4f10"
    })
    expect(await value(`'busy'::${db.name}.mood`)).toEqual({ dataType: "string", value: "busy" })
  })

  it("a domain maps as its base type", async () => {
    expect(await value(`5::${db.name}.positive`)).toEqual({ dataType: "number", value: 5 })
  })

  it("timestamp, timestamptz and date: ISO 8601 date-times (a timestamp without time zone read as UTC)", async () => {
    expect(await value("'2024-02-29 13:14:15.123456'::timestamp")).toEqual({ dataType: "datetime", value: "2024-02-29T13:14:15.123456Z" })
    expect(await value("'2024-02-29 13:14:15+02'::timestamptz")).toEqual({ dataType: "datetime", value: "2024-02-29T11:14:15Z" })
    expect(await value("'2024-02-29'::date")).toEqual({ dataType: "datetime", value: "2024-02-29" })
  })

  it("infinite, BC and past-9999 date-times are dead letters", async () => {
    expect((await dead("'infinity'::timestamptz")).problem.code).toBe("unrepresentable_datetime")
    expect((await dead("'-infinity'::date")).problem.code).toBe("unrepresentable_datetime")
    expect((await dead("'0044-03-15 BC'::date")).problem.code).toBe("unrepresentable_datetime")
    expect((await dead("'12000-01-01'::timestamp")).problem.code).toBe("unrepresentable_datetime")
  })

  it("text[] and varchar[]: arrays of strings; a NULL element is a dead letter; other arrays as their elements' text", async () => {
    expect(await value(`ARRAY['a', 'b c', 'NULL', '{x}']::text[]`)).toEqual({ dataType: "string", value: ["a", "b c", "NULL", "{x}"] })
    expect(await value(`ARRAY['x']::varchar(3)[]`)).toEqual({ dataType: "string", value: ["x"] })
    expect(await value(`ARRAY[]::text[]`)).toEqual({ dataType: "string", value: [] })
    expect(await value(`ARRAY[1, 2]::int[]`)).toEqual({ dataType: "string", value: ["1", "2"] })
    expect((await dead(`ARRAY['a', NULL]::text[]`)).problem.code).toBe("unrepresentable_array")
    expect((await dead(`ARRAY[['a'], ['b']]::text[]`)).problem.code).toBe("unrepresentable_array")
  })

  it("boolean: the strings true and false", async () => {
    expect(await value("true")).toEqual({ dataType: "string", value: "true" })
    expect(await value("false")).toEqual({ dataType: "string", value: "false" })
  })

  it("json and jsonb: their JSON text", async () => {
    expect(await value(`'{"b": [1, 2], "a": null}'::json`)).toEqual({ dataType: "string", value: `{"b": [1, 2], "a": null}` })
    expect(await value(`'{"b": 1, "a": 2}'::jsonb`)).toEqual({ dataType: "string", value: `{"a": 2, "b": 1}` })
  })

  it("bytea: base64", async () => {
    expect(await value(`'\\x00ff10'::bytea`)).toEqual({ dataType: "string", value: "AP8Q" })
  })

  it("interval: an ISO 8601 duration", async () => {
    expect(await value(`'1 day 2 hours 3.5 seconds'::interval`)).toEqual({ dataType: "string", value: "P1DT2H3.5S" })
  })

  it("every record keeps to the types its source gives it (typedBy): its values pass the check against the source's own schema", async () => {
    const expressions = [
      "(-32768)::smallint", "2147483647::integer", "9007199254740991::bigint", "12.30::numeric(10,2)", "1.5::real",
      "2.25::double precision", "'x'::text", "'y'::varchar(3)", "gen_random_uuid()", "'calm'::" + db.name + ".mood",
      "5::" + db.name + ".positive", "timestamptz '2024-02-29 23:59:59.123456+00'", "timestamp '2024-01-02 03:04:05'",
      "date '0001-01-01'", "ARRAY['a', 'b']::text[]", "ARRAY[1, 2]::int[]", "true", "'{\"a\": [1]}'::jsonb",
      "'\\x00ff'::bytea", "interval '1 day 2 hours'", "NULL::integer", "NULL::timestamptz", "NULL::text[]"
    ]
    for (const expression of expressions) {
      const { element } = await readValue(expression)
      if (element._tag !== "Record" || element.typedBy === undefined) throw new Error(`${expression}: expected a typed record, got ${JSON.stringify(element)}`)
      const checked = checkRecord(element.value, { schema: element.typedBy.columns, primaryKey: element.typedBy.notNull, addUnknownColumns: false })
      expect(checked._tag, expression).toBe("Valid")
      expect(Object.keys(element.value as object)).toEqual(element.typedBy.columns.map((c) => c.id))
    }
  })

  it("NULL: null, in a column of the declared type", async () => {
    expect(await value("NULL::integer")).toEqual({ dataType: "number", value: null })
    expect(await value("NULL::text[]")).toEqual({ dataType: "string", value: null })
  })
})

describe("pure parts", () => {
  it("integer splits divide min..max into ranges of nearly equal width", () => {
    expect(Postgres.integerSplits(1n, 100n, 4)).toEqual([25n, 50n, 75n])
    expect(Postgres.integerSplits(1n, 2n, 4)).toEqual([1n]) // fewer ranges than asked when there are fewer keys
    expect(Postgres.integerSplits(-10n, 9n, 2)).toEqual([-1n])
  })

  it("quantile splits drop repeated keys", () => {
    const sample = ["a", "a", "a", "b", "c", "d"].map((k) => [k])
    expect(Postgres.quantileSplits(sample, 3)).toEqual([["a"], ["b"]])
    expect(Postgres.quantileSplits(sample, 6)).toEqual([["a"], ["b"], ["c"]])
  })

  it("ranges cover the key space: open at both ends, each upper bound the next lower bound", () => {
    expect(Postgres.rangesOf([["10"], ["20"]])).toEqual([
      { index: 0, lower: null, upper: ["10"] },
      { index: 1, lower: ["10"], upper: ["20"] },
      { index: 2, lower: ["20"], upper: null }
    ])
  })

  it("the keyset query resumes after the committed key, within the partition's range and the since window", () => {
    const key = [{ name: "a", sqlType: "text" }, { name: "b", sqlType: "bigint" }]
    const query = Postgres.partitionQuery(
      { _tag: "Table", name: "s.t" },
      key,
      { index: 1, lower: ["x", "1"], upper: ["y", "9"] },
      ["x", "5"],
      { column: { name: "at", sqlType: "timestamp with time zone" }, after: "2024-01-01 00:00:00+00", through: "2024-02-01 00:00:00+00" }
    )
    expect(query.text).toBe(
      `SELECT * FROM "s"."t" AS tributary_rows WHERE (tributary_rows."a", tributary_rows."b") > ($1::text, $2::bigint) ` +
        `AND (tributary_rows."a", tributary_rows."b") <= ($3::text, $4::bigint) ` +
        `AND tributary_rows."at" > $5::timestamp with time zone AND tributary_rows."at" <= $6::timestamp with time zone ` +
        `ORDER BY tributary_rows."a", tributary_rows."b"`
    )
    expect(query.values).toEqual(["x", "5", "y", "9", "2024-01-01 00:00:00+00", "2024-02-01 00:00:00+00"])
  })

  it("a number is exact when its decimal digits survive the double, whatever its notation", () => {
    const kind = { name: "v", oid: Postgres.Oid.numeric }
    expect(Postgres.convert(kind, "100.000")).toBe(100)
    expect(Postgres.convert(kind, "-0.0")).toBe(-0)
    expect(Postgres.convert(kind, "1.5e-7")).toBe(1.5e-7)
    expect(Postgres.convert(kind, "0.30")).toBe(0.3)
    expect(Postgres.convert(kind, "123456789012345678")).toMatchObject({ code: "inexact_number" })
    expect(Postgres.convert(kind, "1.00000000000000000001")).toMatchObject({ code: "inexact_number" })
  })

  it("a plain decimal is a number exactly when the double prints back as the same value (property)", () => {
    // The reference: both texts reduced to sign, digits and the decimal point's place.
    const canonical = (text: string) => {
      const negative = text.startsWith("-")
      let t = negative ? text.slice(1) : text
      let exponent = 0
      const e = t.search(/e/i)
      if (e !== -1) {
        exponent = Number(t.slice(e + 1))
        t = t.slice(0, e)
      }
      const dot = t.indexOf(".")
      let digits = t.replace(".", "")
      exponent += dot === -1 ? t.length : dot
      const leading = /^0*/.exec(digits)![0].length
      digits = digits.slice(leading).replace(/0+$/, "")
      exponent -= leading
      return digits === "" ? "0" : `${negative ? "-" : ""}${digits}e${exponent}`
    }
    const kind = { name: "v", oid: Postgres.Oid.numeric }
    const decimal = fc.tuple(
      fc.boolean(),
      fc.stringMatching(/^[0-9]{1,12}$/),
      fc.option(fc.stringMatching(/^[0-9]{1,12}$/), { nil: undefined })
    ).map(([negative, whole, fraction]) => `${negative ? "-" : ""}${whole}${fraction === undefined ? "" : `.${fraction}`}`)
    fc.assert(
      fc.property(decimal, (text) => {
        const converted = Postgres.convert(kind, text)
        const exact = canonical(String(Number(text))) === canonical(text)
        if (exact) expect(converted).toBe(Number(text))
        else expect(converted).toMatchObject({ code: "inexact_number" })
      }),
      { numRuns: 5000 }
    )
  })

  it("the connection string's password never shows in messages", () => {
    expect(Postgres.redactedUrl("postgres://user:s3cret@host:5432/db?sslmode=require")).toBe("postgres://user:***@host:5432/db?sslmode=require")
  })
})
