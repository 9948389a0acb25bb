/**
 * Typed records: element types through the stages (checked by the compiler), dead letters of
 * decode and transform failures with their paths, defects, drops, one-to-many children and
 * their commits, cuts and keys, the dataset schema derived from an output schema, and the
 * start-up comparison with the destination's schema.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, expectTypeOf, it, layer } from "@effect/vitest"
import { Arbitrary, Chunk, Data, DateTime, Effect, Either, FastCheck, Schema, Stream } from "effect"
import * as Kafka from "../../connectors/kafka/codec.js"
import * as Ndjson from "../../connectors/ndjson/index.js"
import { batch, batchBody, batchBodyBytes, type Unit } from "../../src/pipeline/batch.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import { CommitTracker } from "../../src/pipeline/internal/commitTracker.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import { idempotencyKey } from "../../src/pipeline/internal/ingest.js"
import { run } from "../../src/pipeline/run.js"
import type { Element, Position, SourceElement } from "../../src/pipeline/Source.js"
import * as Typed from "../../src/pipeline/Typed.js"
import { serviceDates } from "../../src/pipeline/internal/fieldByField.js"
import { WrittenRecord } from "../../src/pipeline/internal/wireBytes.js"
import { type Checked, checkElement, type DatasetSchema, sequence, validate } from "../../src/pipeline/validate.js"
import { checkRecord } from "../../src/records.js"
import { clientFor, serverLayer } from "../support/server.js"
import { seededTimes } from "../support/times.js"

const Line = Schema.Struct({ sku: Schema.String, qty: Schema.Int })
const Order = Schema.Struct({
  orderId: Schema.String,
  placedAt: Schema.Date,
  status: Schema.optional(Schema.Literal("live", "test")),
  lines: Schema.Array(Line)
})
type Order = typeof Order.Type

const OrderLine = Schema.Struct({
  lineId: Schema.String,
  sku: Schema.String,
  qty: Schema.Int,
  placedAt: Schema.Date,
  region: Schema.Literal("EU", "NA")
})

const at = (offset: number, child?: { index: number; of: number }): Position =>
  child === undefined ? { partition: "0", offset } : { partition: "0", offset, child }

const record = (offset: number, value: unknown): SourceElement => ({ _tag: "Record", position: at(offset), value })

const malformed = (offset: number): SourceElement => ({
  _tag: "Malformed",
  position: at(offset),
  problem: { code: "invalid_json", field: null, message: `line ${offset}: bad` },
  raw: "{"
})

const order = (orderId: string, lines: ReadonlyArray<unknown>, extra: object = {}) => ({
  orderId,
  placedAt: "2026-11-02T10:00:00Z",
  lines,
  ...extra
})

const collect = <A, E>(stream: Stream.Stream<A, E>) => Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

/** A checked element as plain data: a valid record's text read through `json` (written ones decode their bytes). */
const plainChecked = (checked: Checked) =>
  checked._tag === "Valid" ? { _tag: checked._tag, seq: checked.seq, position: checked.position, json: checked.json } : checked

/**
 * Typed values through `run`'s encode stage written for `destination` and through the generic
 * one (encode, then `validate`): the same checked element each (text or dead letter), the same
 * UTF-8 bytes of each valid record, and the same body for any batch of them (records written
 * one after the other are copied into a body as one run). Answers how many were written by the
 * fast path.
 */
const samePaths = (out: Schema.Schema<any, any>, destination: DatasetSchema, inputs: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const records = Typed.records({ decode: Schema.Any, encode: out })
    const events = () => Stream.fromIterable(inputs.map((value, i) => record(i, value)))
    const check = checkElement(destination)
    const written = yield* collect(records.through(events(), destination))
    const generic = yield* collect(records.through(events()))
    let marked = 0
    const fastValid: Array<Checked & { _tag: "Valid" }> = []
    const genericValid: Array<Checked & { _tag: "Valid" }> = []
    for (let i = 0; i < inputs.length; i++) {
      const fast = check(written[i] as Element<unknown>, i)
      const slow = check(generic[i] as Element<unknown>, i)
      if (fast instanceof WrittenRecord) marked++
      expect(plainChecked(fast)).toEqual(plainChecked(slow))
      if (fast._tag === "Valid" && slow._tag === "Valid") {
        fastValid.push(fast)
        genericValid.push(slow)
        expect(Buffer.from(batchBodyBytes([fast]))).toEqual(Buffer.from(batchBody([slow])))
      }
    }
    // Batches of 1 to 100 records, mixed or not: the bodies sent are the same bytes.
    for (let from = 0, size = 1; from < fastValid.length; from += size, size = (size * 7) % 100 + 1) {
      const to = Math.min(from + size, fastValid.length)
      expect(Buffer.from(batchBodyBytes(fastValid.slice(from, to)))).toEqual(Buffer.from(batchBody(genericValid.slice(from, to))))
    }
    return marked
  })

class UnknownSku extends Data.TaggedError("UnknownSku")<{ readonly message: string; readonly field: string }> {}

const regionOf = (sku: string) =>
  sku.startsWith("eu-")
    ? Effect.succeed("EU" as const)
    : sku.startsWith("na-")
    ? Effect.succeed("NA" as const)
    : Effect.fail(new UnknownSku({ message: `no region for sku ${sku}`, field: "sku" }))

describe("typed stages", () => {
  it("carry the element types from stage to stage (checked by the compiler)", () => {
    const source: Stream.Stream<SourceElement> = Stream.empty
    const decoded = source.pipe(Typed.decode(Order))
    expectTypeOf(decoded).toEqualTypeOf<Stream.Stream<Typed.Event<Order>>>()
    const live = decoded.pipe(Typed.filter((o): o is Order & { status: "live" } => o.status === "live"))
    expectTypeOf(live).toEqualTypeOf<Stream.Stream<Typed.Event<Order & { status: "live" }>, Typed.TransformError>>()
    const lines = live.pipe(Typed.flatMap((o) => o.lines.map((line) => ({ ...line, orderId: o.orderId, placedAt: o.placedAt }))))
    expectTypeOf(lines).toEqualTypeOf<
      Stream.Stream<Typed.Event<{ sku: string; qty: number; orderId: string; placedAt: Date }>, Typed.TransformError>
    >()
    const enriched = lines.pipe(
      Typed.mapEffect((line) => Effect.map(regionOf(line.sku), (region) => ({ lineId: `${line.orderId}-${line.sku}`, ...line, region })))
    )
    const encoded = enriched.pipe(Typed.encode(OrderLine))
    expectTypeOf(encoded).toEqualTypeOf<Stream.Stream<Typed.Event<typeof OrderLine.Encoded>, Typed.TransformError>>()
    expectTypeOf<typeof OrderLine.Encoded["placedAt"]>().toEqualTypeOf<string>()
    // The stages are dual: data-first gives the same type.
    expectTypeOf(Typed.map(decoded, (o) => o.lines.length)).toEqualTypeOf<Stream.Stream<Typed.Event<number>, Typed.TransformError>>()
    // A stream of elements of a known type does not accept a function over another type.
    // @ts-expect-error a number is not an Order
    decoded.pipe(Typed.map((n: number) => n + 1))
    // Output schemas that encode to something the service cannot store do not compile.
    // @ts-expect-error booleans cannot be stored
    Typed.encode(Schema.Struct({ paid: Schema.Boolean }))
    // @ts-expect-error nested objects cannot be stored
    Typed.encode(Schema.Struct({ address: Schema.Struct({ city: Schema.String }) }))
    // @ts-expect-error arrays of numbers cannot be stored
    Typed.encode(Schema.Struct({ sizes: Schema.Array(Schema.Number) }))
  })

  it.effect("decode: a record that does not decode is a dead letter with the schema's path and message, at its position", () =>
    Effect.gen(function*() {
      const out = yield* collect(Stream.make(
        record(1, order("A", [{ sku: "eu-1", qty: 2 }])),
        record(2, order("B", [{ sku: "eu-1", qty: 1 }, { sku: "eu-2", qty: "three" }])),
        record(3, { orderId: 7, placedAt: "not a date", lines: [] }),
        malformed(4)
      ).pipe(Typed.decode(Order)))
      expect(out[0]).toEqual({ _tag: "Record", position: at(1), value: { orderId: "A", placedAt: new Date("2026-11-02T10:00:00Z"), lines: [{ sku: "eu-1", qty: 2 }] } })
      expect(out[1]).toMatchObject({
        _tag: "Dead",
        letter: { position: at(2), stage: "decode", reason: { code: "decode_failed", field: "lines[1].qty", message: "lines[1].qty: Expected number, actual \"three\"" } }
      })
      // Every issue is listed, the first one names the field.
      const third = out[2] as Extract<Element, { _tag: "Dead" }>
      expect(third.letter.reason.field).toBe("orderId")
      expect(third.letter.reason.message).toContain("orderId: Expected string, actual 7")
      expect(third.letter.reason.message).toContain("placedAt: ")
      expect(third.letter.record).toEqual({ orderId: 7, placedAt: "not a date", lines: [] })
      expect(out[3]?._tag).toBe("Malformed") // passes through untouched
    }))

  it.effect("filter drops; flatMap gives children with indexes, nothing becomes a drop; a failing lookup dead-letters that child", () =>
    Effect.gen(function*() {
      const out = yield* collect(Stream.make(
        record(1, order("A", [{ sku: "eu-1", qty: 1 }, { sku: "zz-9", qty: 1 }, { sku: "na-3", qty: 2 }])),
        record(2, order("T", [{ sku: "eu-1", qty: 1 }], { status: "test" })),
        record(3, order("E", []))
      ).pipe(
        Typed.decode(Order),
        Typed.filter((o) => o.status !== "test"),
        Typed.flatMap((o) => o.lines),
        Typed.mapEffect((line) => Effect.map(regionOf(line.sku), (region) => ({ ...line, region })), { concurrency: 2 })
      ))
      expect(out.map((e) => [e._tag, e._tag === "Dead" ? e.letter.position : (e as { position: Position }).position])).toEqual([
        ["Record", at(1, { index: 0, of: 3 })],
        ["Dead", at(1, { index: 1, of: 3 })],
        ["Record", at(1, { index: 2, of: 3 })],
        ["Dropped", at(2)],
        ["Dropped", at(3)]
      ])
      expect(out[1]).toMatchObject({
        letter: { stage: "transform", reason: { code: "UnknownSku", field: "sku", message: "no region for sku zz-9" }, record: { sku: "zz-9", qty: 1 } }
      })
    }))

  it.effect("a defect in a transform stops the stream with a TransformError naming the record", () =>
    Effect.gen(function*() {
      const elements = Stream.make(record(1, order("A", [])), record(2, order("B", [])))
      const thrown = yield* Effect.flip(collect(elements.pipe(
        Typed.decode(Order),
        Typed.map((o) => {
          if (o.orderId === "B") throw new Error("no B expected")
          return o
        })
      )))
      expect(thrown).toBeInstanceOf(Typed.TransformError)
      expect(thrown.message).toBe("partition 0 offset 2: map threw: no B expected")
      const died = yield* Effect.flip(collect(elements.pipe(Typed.decode(Order), Typed.mapEffect(() => Effect.dieMessage("lookup table missing")))))
      expect(died.message).toBe("partition 0 offset 1: mapEffect died: lookup table missing")
      const nested = yield* Effect.flip(collect(Stream.make(record(1, [1, 2])).pipe(
        Typed.flatMap((xs) => xs as Array<number>),
        Typed.flatMap((x) => [x, x])
      )))
      expect(nested.message).toContain("make one flatMap of the two")
    }))

  it.effect("decode and encode answer what the whole schema answers, its dates held to the service's rule (the field-by-field fast path included), on generated records", () =>
    Effect.gen(function*() {
      const Mixed = Schema.Struct({
        id: Schema.String,
        at: Schema.Date,
        from: Schema.DateFromString,
        self: Schema.optional(Schema.DateFromSelf),
        qty: Schema.Int.pipe(Schema.between(0, 50)),
        kind: Schema.Literal("a", "b"),
        tags: Schema.Array(Schema.String),
        note: Schema.optional(Schema.NullOr(Schema.String)),
        lines: Schema.Array(Schema.Struct({ sku: Schema.String }))
      })
      // Most dates within the years 0-9999, whose text the service takes (the arbitrary's span
      // far beyond: every tenth record keeps such a date, a dead letter).
      const inYears = (date: Date) => new Date(Math.abs(date.getTime()) % 253_402_300_800_000)
      const good = FastCheck.sample(Arbitrary.make(Mixed), { numRuns: 300, seed: 20261201 }).map((value, i) =>
        Schema.encodeSync(Mixed)(i % 10 === 0 ? value : { ...value, at: inYears(value.at), from: inYears(value.from) })
      )
      const junk = FastCheck.sample(FastCheck.dictionary(FastCheck.constantFrom("id", "at", "from", "self", "qty", "kind", "tags", "note", "x"), FastCheck.anything()), 300)
      const inputs = [...good, ...junk, ...good.map((g) => ({ ...g, extra: 1, lines: g.lines.map((l) => ({ ...l, more: true })) }))]
      const decoded = yield* collect(Stream.fromIterable(inputs.map((value, i) => record(i, value))).pipe(Typed.decode(Mixed)))
      const decodeAll = Schema.decodeUnknownEither(Schema.make<typeof Mixed.Type, typeof Mixed.Encoded>(serviceDates(Mixed.ast)), { errors: "all" })
      const MixedOut = Mixed.omit("lines")
      const encodeAll = Schema.encodeEither(Schema.make<typeof MixedOut.Type, typeof MixedOut.Encoded>(serviceDates(MixedOut.ast)), { errors: "all" })
      let valid = 0
      for (let i = 0; i < inputs.length; i++) {
        const expected = decodeAll(inputs[i])
        const got = decoded[i]!
        if (Either.isRight(expected)) {
          valid++
          expect(got).toEqual({ _tag: "Record", position: at(i), value: expected.right })
          expect(Object.keys((got as { value: object }).value)).toEqual(Object.keys(expected.right))
        } else {
          expect(got).toMatchObject({ _tag: "Dead", letter: { reason: Typed.parseProblem("decode_failed", expected.left) } })
        }
      }
      expect(valid).toBeGreaterThan(300)
      // Valid values, some whose quantity breaks the refinement and some with a date past 9999
      // (a dead letter each).
      const values = (decoded.filter((e) => e._tag === "Record") as Array<Extract<Element<typeof Mixed.Type>, { _tag: "Record" }>>)
        .map((e, i) => ({
          ...e,
          value: { ...e.value, qty: i % 10 === 0 ? 51 : e.value.qty, at: i % 10 === 5 ? new Date(Date.UTC(10_000, 0, 1)) : e.value.at }
        }))
      const encoded = yield* collect(Stream.fromIterable(values).pipe(Typed.encode(MixedOut)))
      for (let i = 0; i < values.length; i++) {
        const expected = encodeAll(values[i]!.value)
        if (Either.isRight(expected)) expect(encoded[i]).toEqual({ _tag: "Record", position: values[i]!.position, value: expected.right })
        else expect(encoded[i]).toMatchObject({ _tag: "Dead", letter: { reason: Typed.parseProblem("encode_failed", expected.left) } })
      }
    }))

  it.effect("records written for a destination: what encode, validate and JSON.stringify give, taken as they are by validate", () =>
    Effect.gen(function*() {
      const Out = Schema.Struct({
        note: Schema.optional(Schema.NullOr(Schema.String)),
        id: Schema.String,
        at: Schema.Date,
        from: Schema.optional(Schema.DateFromString),
        qty: Schema.Int.pipe(Schema.between(0, 50)),
        amount: Schema.Number,
        kind: Schema.Literal("a", "b"),
        tags: Schema.Array(Schema.String),
        seen: Schema.NullOr(Schema.DateFromString)
      })
      const destination: DatasetSchema = {
        columns: yield* Typed.datasetColumns(Out),
        primaryKey: ["id"]
      }
      // Dates within the years 0-9999 (the arbitrary's span far beyond; those are among `odd`).
      const inYears = (date: Date) => new Date(Math.abs(date.getTime()) % 253_402_300_800_000)
      const good = FastCheck.sample(Arbitrary.make(Out), { numRuns: 400, seed: 20261125 }).map((value) => ({
        ...value,
        at: inYears(value.at),
        seen: value.seen === null ? null : inYears(value.seen),
        ...(value.from === undefined ? {} : { from: inYears(value.from) })
      }))
      const texts = ["plain", "quote \" and \\ slash", "line\nfeed", "\u0001", "lone \ud800", "pair \ud83d\ude00", "ünïcödé", ""]
      const odd = [NaN, Infinity, -0, 1e21, 1.5, 51, new Date(Number.NaN), new Date(Date.UTC(10_000, 0, 1)), new Date(-62_167_219_200_001), null, undefined, [1], ["x", 2], {}, ...texts]
      const spoiled = good.flatMap((value, i) => {
        const keys = Object.keys(value) as Array<keyof typeof value>
        const key = keys[i % keys.length]!
        return [{ ...value, [key]: odd[i % odd.length] }, { ...value, id: texts[i % texts.length], tags: texts.slice(0, i % 4) }]
      })
      const inputs = [...good, ...spoiled, { ...good[0], extra: "dropped" }, Object.assign(Object.create(null), good[1])]
      // Both paths are taken often (the rest: dates past 9999, numbers that are not finite, ...).
      const marked = yield* samePaths(Out, destination, inputs)
      expect(marked).toBeGreaterThan(200)
      expect(marked).toBeLessThan(inputs.length - 200)
      // Only optional fields: commas wherever the first present field is.
      const Loose = Schema.Struct({ a: Schema.optional(Schema.String), b: Schema.optional(Schema.Number), c: Schema.optional(Schema.Date) })
      const loose = [{}, { a: "x" }, { b: 1 }, { c: new Date(0) }, { a: "x\"y", b: 2 }, { b: 2, c: new Date(0) }, { a: "x", c: new Date(0) }, { a: undefined }, { b: NaN }]
      expect(yield* samePaths(Loose, { columns: yield* Typed.datasetColumns(Loose), primaryKey: [] }, loose)).toBe(loose.length - 2)
    }))

  it.effect("decode answers what the whole schema answers for keys the generated code treats apart: symbols, odd names, __proto__", () =>
    Effect.gen(function*() {
      const tag = Symbol.for("tributary/test/tag")
      const Odd = Schema.Struct({
        "a \"quoted\" \\ key\n": Schema.String,
        [tag]: Schema.Number,
        after: Schema.optional(Schema.String),
        last: Schema.Date
      })
      const Proto = Schema.Struct({ __proto__: Schema.Struct({ x: Schema.String }), id: Schema.String })
      const inputs: Array<[Schema.Schema<any, any>, unknown]> = [
        [Odd, { "a \"quoted\" \\ key\n": "x", [tag]: 1, last: "2026-11-02T10:00:00Z", extra: true }],
        [Odd, { "a \"quoted\" \\ key\n": "x", [tag]: 1, after: "y", last: "2026-11-02T10:00:00Z" }],
        [Odd, { "a \"quoted\" \\ key\n": "x", [tag]: "1", last: "2026-11-02T10:00:00Z" }],
        [Odd, { "a \"quoted\" \\ key\n": "x", last: "2026-11-02T10:00:00Z" }],
        [Proto, JSON.parse("{\"__proto__\":{\"x\":\"p\"},\"id\":\"i\"}")],
        [Proto, { id: "i" }]
      ]
      for (const [schema, input] of inputs) {
        const [got] = yield* collect(Stream.make<Array<Typed.Event<unknown>>>(record(0, input)).pipe(Typed.decode(schema)))
        const expected = Schema.decodeUnknownEither(schema, { errors: "all" })(input)
        if (Either.isRight(expected)) {
          expect(got).toEqual({ _tag: "Record", position: at(0), value: expected.right })
          const value = (got as { value: object }).value
          expect(Reflect.ownKeys(value)).toEqual(Reflect.ownKeys(expected.right))
          expect(Object.getPrototypeOf(value)).toEqual(Object.getPrototypeOf(expected.right))
        } else {
          expect(got).toMatchObject({ _tag: "Dead", letter: { reason: Typed.parseProblem("decode_failed", expected.left) } })
        }
      }
    }))

  it.effect("encode: what the output schema encodes to is sent; a refinement that fails is a dead letter", () =>
    Effect.gen(function*() {
      const Out = Schema.Struct({ id: Schema.String, at: Schema.Date, qty: Schema.Int.pipe(Schema.positive()) })
      const out = yield* collect(Stream.make<Array<Typed.Event<typeof Out.Type>>>(
        { _tag: "Record", position: at(1), value: { id: "a", at: new Date("2026-11-02T10:00:00Z"), qty: 1 } },
        { _tag: "Record", position: at(2), value: { id: "b", at: new Date("2026-11-02T10:00:00Z"), qty: 0 } }
      ).pipe(Typed.encode(Out)))
      expect(out[0]).toEqual({ _tag: "Record", position: at(1), value: { id: "a", at: "2026-11-02T10:00:00.000Z", qty: 1 } })
      expect(out[1]).toMatchObject({ letter: { stage: "encode", reason: { code: "encode_failed", field: "qty" } } })
    }))
})

describe("dates as the service's datetime takes them", () => {
  const two = (min: number, max: number) => FastCheck.integer({ min, max }).map((n) => String(n).padStart(2, "0"))
  const digits = (min: number, max: number) => FastCheck.array(FastCheck.constantFrom(..."0123456789"), { minLength: min, maxLength: max })
  /** Date-like text: days 00-32 of months 00-13 in leap and other years, times up to 25:61:61, fractions, offsets, and noise. */
  const dateLike = FastCheck.tuple(
    FastCheck.oneof(FastCheck.constantFrom(2024, 2026, 2023, 2000, 1900, 2100, 400, 0, 99), FastCheck.integer({ min: 0, max: 9999 })),
    two(0, 13),
    FastCheck.oneof(FastCheck.constantFrom("28", "29", "30", "31"), two(0, 32)),
    FastCheck.option(FastCheck.tuple(
      FastCheck.constantFrom("T", "T", "T", "T", " ", "t"),
      two(0, 25),
      two(0, 61),
      FastCheck.option(two(0, 61)),
      FastCheck.option(FastCheck.oneof(FastCheck.constantFrom(".000", ".123", ".999"), digits(0, 10).map((ds) => `.${ds.join("")}`))),
      FastCheck.option(FastCheck.oneof(
        FastCheck.constantFrom("Z", "Z", "Z", "z"),
        FastCheck.tuple(FastCheck.constantFrom("+", "-"), two(0, 25), FastCheck.constantFrom("", ":", ":", "::"), two(0, 61)).map((parts) => parts.join("")),
        FastCheck.tuple(FastCheck.constantFrom("+", "-"), two(0, 25)).map((parts) => parts.join(""))
      ))
    ))
  ).map(([year, month, day, time]) => {
    const date = `${String(year).padStart(4, "0")}-${month}-${day}`
    if (time === null) return date
    const [t, hours, minutes, seconds, fraction, offset] = time
    return `${date}${t}${hours}:${minutes}${seconds === null ? "" : `:${seconds}${fraction ?? ""}`}${offset ?? ""}`
  })
  const texts = FastCheck.sample(
    FastCheck.oneof(
      { weight: 20, arbitrary: dateLike },
      // A character dropped, doubled or changed.
      { weight: 3, arbitrary: FastCheck.tuple(dateLike, FastCheck.nat(), FastCheck.constantFrom("", "0", "-", ":", "T", "x")).map(([text, at, c]) => {
        const i = at % (text.length + 1)
        return text.slice(0, i) + c + text.slice(c === "" ? i + 1 : i)
      }) },
      { weight: 1, arbitrary: FastCheck.string({ maxLength: 30 }) }
    ),
    { numRuns: 4_000, seed: 20261130 }
  )
  /** What `checkRecord` says of the text in a `datetime` column. */
  const serviceTakes = (text: string) =>
    checkRecord({ at: text }, { schema: [{ id: "at", dataType: "datetime" }], primaryKey: [], addUnknownColumns: false })._tag === "Valid"
  /** The instant `new Date` reads from text the service takes (an offset of hours alone given its minutes). */
  const instant = (text: string) => new Date(/[+-]\d{2}$/.test(text) && text.length > 10 ? `${text}:00` : text).getTime()

  it.effect("decode takes a date's text exactly when checkRecord's datetime rule does, whichever path it takes", () =>
    Effect.gen(function*() {
      class Dated extends Schema.Class<Dated>("Dated")({ at: Schema.NullOr(Schema.Date) }) {}
      const paths: Array<[string, Schema.Schema<any, any>, (value: any) => number]> = [
        // The generated decoder, the digit reader for UTC timestamps, new Date for the rest.
        ["Schema.Date in a struct", Schema.Struct({ at: Schema.Date }), (value) => value.at.getTime()],
        ["Schema.DateFromString in a struct", Schema.Struct({ at: Schema.DateFromString }), (value) => value.at.getTime()],
        // Compiled from its AST, not known by hand.
        ["an annotated Schema.Date", Schema.Struct({ at: Schema.Date.annotations({ description: "when" }) }), (value) => value.at.getTime()],
        // No fast path: the whole schema.
        ["the whole schema (a refined struct)", Schema.Struct({ at: Schema.Date }).pipe(Schema.filter(() => true)), (value) => value.at.getTime()],
        ["a class of a nullable date", Dated, (value) => value.at.getTime()],
        ["Schema.DateTimeUtc", Schema.Struct({ at: Schema.DateTimeUtc }), (value) => DateTime.toEpochMillis(value.at)]
      ]
      const taken = texts.filter(serviceTakes).length
      // Both answers are common.
      expect(taken).toBeGreaterThan(800)
      expect(taken).toBeLessThan(texts.length - 800)
      for (const [name, schema, millis] of paths) {
        const out = yield* collect(Stream.fromIterable(texts.map((text, i) => record(i, { at: text }))).pipe(Typed.decode(schema)))
        for (let i = 0; i < texts.length; i++) {
          const text = texts[i]!
          const got = out[i]!
          if (serviceTakes(text)) {
            expect(got._tag, `${name}: ${JSON.stringify(text)}`).toBe("Record")
            // DateTimeUtc reads a time without an offset as UTC, new Date as local time.
            if (!name.includes("DateTimeUtc")) expect(millis((got as { value: unknown }).value), `${name}: ${text}`).toBe(instant(text))
          } else {
            expect(got, `${name}: ${JSON.stringify(text)}`).toMatchObject({
              _tag: "Dead",
              letter: { position: at(i), stage: "decode", reason: { code: "decode_failed", field: "at" } }
            })
            const message = (got as Extract<Element, { _tag: "Dead" }>).letter.reason.message
            expect(message, name).toContain(`at: Expected an ISO 8601 date or date-time on a real calendar day, actual ${JSON.stringify(text)}`)
          }
        }
      }
    }))

  it.effect("encode writes a date exactly when its ISO text is one the service takes (the years 0-9999), through the writer too", () =>
    Effect.gen(function*() {
      const Out = Schema.Struct({ id: Schema.String, at: Schema.Date, from: Schema.DateFromString })
      const times = [...seededTimes(11, 1_000), Date.UTC(10_000, 0, 1), Date.UTC(10_000, 0, 1) - 1, -62_167_219_200_000, -62_167_219_200_001, Number.NaN]
      const inputs = times.map((time, i) => ({ id: `r${i}`, at: new Date(time), from: new Date(i % 2 === 0 ? time : 0) }))
      const records = Typed.records({ decode: Schema.Any, encode: Out })
      const destination: DatasetSchema = { columns: yield* Typed.datasetColumns(Out), primaryKey: ["id"] }
      const events = () => Stream.fromIterable(inputs.map((value, i) => record(i, value)))
      const encoded = yield* collect(records.through(events()))
      const written = yield* collect(records.through(events(), destination))
      const check = checkElement(destination)
      const isoOf = (date: Date) => (Number.isNaN(date.getTime()) ? undefined : date.toISOString())
      let stored = 0
      for (let i = 0; i < inputs.length; i++) {
        const iso = isoOf(inputs[i]!.at)
        const fromIso = isoOf(inputs[i]!.from)
        if (iso !== undefined && fromIso !== undefined && serviceTakes(iso) && serviceTakes(fromIso)) {
          stored++
          expect(encoded[i], iso).toEqual({ _tag: "Record", position: at(i), value: { id: `r${i}`, at: iso, from: fromIso } })
          const checked = check(written[i] as Element<unknown>, i)
          expect(checked).toBeInstanceOf(WrittenRecord)
          expect(JSON.parse((checked as WrittenRecord).json)).toEqual({ id: `r${i}`, at: iso, from: fromIso })
        } else {
          for (const got of [encoded[i], written[i]]) {
            expect(got, iso).toMatchObject({ _tag: "Dead", letter: { stage: "encode", reason: { code: "encode_failed" } } })
          }
        }
      }
      expect(stored).toBeGreaterThan(100)
      expect(stored).toBeLessThan(inputs.length - 100)
    }))
})

describe("children of a flatMap: commits, cuts and keys", () => {
  it("a parent's position is committed only with its last child; a dropped record is committed as handled", () => {
    const tracker = new CommitTracker()
    for (let i = 0; i < 5; i++) tracker.read("0", 0)
    // Element 0: a dropped record at offset 1; 1..3: the three children of offset 2; 4: offset 3.
    expect(tracker.delivered("0", 0, 0, at(1))).toEqual(at(1))
    expect(tracker.delivered("0", 1, 1, at(2, { index: 0, of: 3 }))).toBeUndefined()
    expect(tracker.delivered("0", 3, 4, at(3))).toBeUndefined() // child 1 still out
    expect(tracker.delivered("0", 2, 2, at(2, { index: 1, of: 3 }))).toEqual(at(3))
    const other = new CommitTracker()
    for (let i = 0; i < 3; i++) other.read("0", 0)
    expect(other.delivered("0", 0, 1, at(2, { index: 1, of: 3 }))).toBeUndefined()
    expect(other.delivered("0", 2, 2, at(2, { index: 2, of: 3 }))).toEqual(at(2, { index: 2, of: 3 }))
  })

  it.effect("batches cut between children record the child indexes, and a restart honours them", () =>
    Effect.gen(function*() {
      const elements = Stream.make(
        record(1, [1, 2, 3, 4, 5]),
        record(2, []),
        record(3, [6, 7])
      ).pipe(Typed.flatMap((xs) => (xs as Array<number>).map((n) => ({ n }))))
      const checkpoint = yield* Checkpoint.memory()
      const schema = { columns: [{ id: "n", dataType: "number" as const }], primaryKey: [] }
      const units = (recordedCuts: ReadonlyArray<Checkpoint.BatchCut>, max: number) =>
        collect(elements.pipe(
          sequence,
          validate(schema),
          batch({ max, maxBytes: 1_000_000, linger: "1 hour", checkpoint, recordedCuts })
        ))
      const batchesOf = (all: ReadonlyArray<Unit>) =>
        all.map((u) => (u._tag === "Batch" ? u.batch.records.map((r) => JSON.parse(r.json).n) : u._tag))
      const first = yield* units([], 3)
      expect(batchesOf(first)).toEqual([[1, 2, 3], [4, 5, 6], [7]])
      const cuts = (yield* checkpoint.current).cuts
      expect(cuts).toEqual([
        { partition: "0", first: 1, last: 1, firstChild: 0, lastChild: 2 },
        { partition: "0", first: 1, last: 3, firstChild: 3, lastChild: 0 },
        { partition: "0", first: 3, last: 3, firstChild: 1, lastChild: 1 }
      ])
      // The dropped record travels inside the batch that spans it.
      const second = first[1] as Extract<Unit, { _tag: "Batch" }>
      expect([second.batch.fromSeq, second.batch.toSeq]).toEqual([3, 6])
      // Restarted with another batch size: the recorded cuts win.
      expect(batchesOf(yield* units(cuts, 100))).toEqual([[1, 2, 3], [4, 5, 6], [7]])
    }))

  it("idempotency keys name the children; keys without children are unchanged", () => {
    const plain = idempotencyKey("ds-1", "ndjson:/data/orders.ndjson", "0", 1, 100)
    expect(plain).toBe("b6af26ea-c453-5714-9f4e-dde79fa326ce")
    expect(idempotencyKey("ds-1", "ndjson:/data/orders.ndjson", "0", 1, 100, { firstChild: undefined, lastChild: undefined })).toBe(plain)
    const a = idempotencyKey("ds-1", "s", "0", 1, 3, { firstChild: 0, lastChild: 2 })
    const b = idempotencyKey("ds-1", "s", "0", 1, 3, { firstChild: 3, lastChild: 0 })
    expect(new Set([a, b, idempotencyKey("ds-1", "s", "0", 1, 3)]).size).toBe(3)
  })

  it("Kafka offset metadata keeps the child indexes of cuts", () => {
    const cuts = [
      { partition: "t:0", first: 1000, last: 1000, firstChild: 0, lastChild: 99 },
      { partition: "t:0", first: 1000, last: 1004, firstChild: 100, lastChild: 3 },
      { partition: "t:0", first: 1005, last: 1104 }
    ]
    const metadata = Kafka.encodeCuts(cuts, 1000)
    expect(metadata).toBe("t1:0.0+0.2r,0.2s+4.3,5+2r")
    expect(Kafka.decodeCuts(metadata, 1000, "t:0")).toEqual(cuts)
  })
})

describe("the dataset schema from the output schema", () => {
  const columnsOf = (fields: Schema.Struct.Fields) => Typed.datasetColumns(Schema.Struct(fields))

  it("derives every supported kind", () => {
    class Custom extends Schema.Class<Custom>("Custom")({ id: Schema.String, at: Schema.DateTimeUtc }) {}
    expect(Either.getOrThrow(columnsOf({
      s: Schema.String,
      n: Schema.Number,
      i: Schema.Int,
      nfs: Schema.NumberFromString,
      d: Schema.Date,
      dfs: Schema.DateFromString,
      dts: Schema.DateTimeUtc,
      dself: Schema.DateFromSelf,
      dnum: Schema.DateFromNumber,
      tags: Schema.Array(Schema.String),
      opt: Schema.optional(Schema.String),
      nul: Schema.NullOr(Schema.Number),
      nulDate: Schema.NullishOr(Schema.Date),
      lit: Schema.Literal("a", "b"),
      litNum: Schema.Literal(1, 2),
      tpl: Schema.TemplateLiteral("o-", Schema.Number),
      trimmed: Schema.Trim,
      branded: Schema.String.pipe(Schema.brand("Sku"))
    }))).toEqual([
      { id: "s", dataType: "string", nullable: false },
      { id: "n", dataType: "number", nullable: false },
      { id: "i", dataType: "number", nullable: false },
      { id: "nfs", dataType: "string", nullable: false }, // sent as its encoded text
      { id: "d", dataType: "datetime", nullable: false },
      { id: "dfs", dataType: "datetime", nullable: false },
      { id: "dts", dataType: "datetime", nullable: false },
      { id: "dself", dataType: "datetime", nullable: false },
      { id: "dnum", dataType: "number", nullable: false }, // sent as milliseconds
      { id: "tags", dataType: "string", nullable: false },
      { id: "opt", dataType: "string", nullable: true },
      { id: "nul", dataType: "number", nullable: true },
      { id: "nulDate", dataType: "datetime", nullable: true },
      { id: "lit", dataType: "string", nullable: false },
      { id: "litNum", dataType: "number", nullable: false },
      { id: "tpl", dataType: "string", nullable: false },
      { id: "trimmed", dataType: "string", nullable: false },
      { id: "branded", dataType: "string", nullable: false }
    ])
    expect(Either.getOrThrow(Typed.datasetColumns(Custom))).toEqual([
      { id: "id", dataType: "string", nullable: false },
      { id: "at", dataType: "datetime", nullable: false }
    ])
  })

  it("names every field the service cannot store (for schemas the compiler cannot refuse)", () => {
    const result = Typed.datasetColumns(Schema.Struct({
      ok: Schema.String,
      flag: Schema.Boolean as Schema.Schema<boolean, any>,
      mixed: Schema.Union(Schema.String, Schema.Number),
      nested: Schema.Struct({ a: Schema.String }) as Schema.Schema<any, any>,
      numbers: Schema.Array(Schema.Number) as Schema.Schema<any, any>
    }))
    expect(Either.isLeft(result) && result.left.message).toBe(
      "the output schema has fields the service cannot store: " +
        "flag: booleans cannot be stored (the service has string, number and datetime columns); " +
        "mixed: a union of string and number cannot be one column; " +
        "nested: nested objects cannot be stored (flatten them into columns); " +
        "numbers: only arrays of strings can be stored (as a multi-valued string column)"
    )
    expect(Either.isLeft(Typed.datasetColumns(Schema.Record({ key: Schema.String, value: Schema.String })))).toBe(true)
  })

  it("compares with a dataset's schema: one line per mismatched column", () => {
    const columns = Either.getOrThrow(Typed.datasetColumns(OrderLine.pipe(Schema.extend(Schema.Struct({ note: Schema.optional(Schema.String) })))))
    expect(Typed.compareSchemas(columns, {
      columns: [
        { id: "lineId", dataType: "string" },
        { id: "sku", dataType: "string" },
        { id: "qty", dataType: "string" },
        { id: "placedAt", dataType: "datetime" },
        { id: "note", dataType: "string" },
        { id: "warehouse", dataType: "string" }
      ],
      primaryKey: ["lineId", "note", "warehouse"]
    })).toEqual([
      "qty: number in the output schema, string in the dataset",
      "region: string in the output schema, not in the dataset",
      "note: in the dataset's primary key, but optional or nullable in the output schema",
      "warehouse: in the dataset's primary key, not in the output schema"
    ])
    expect(Typed.compareSchemas(columns, {
      columns: columns.map(({ dataType, id }) => ({ id, dataType })),
      primaryKey: ["lineId"]
    })).toEqual([])
  })
})

const dir = mkdtempSync(join(tmpdir(), "tributary-typed-"))

layer(serverLayer(), { excludeTestServices: true })("typed records through run, into the reference server", (it) => {
  const orderLines = Typed.records({
    decode: Order,
    transform: (orders) =>
      orders.pipe(
        Typed.filter((o) => o.status !== "test"),
        Typed.flatMap((o) => o.lines.map((line, i) => ({ ...line, lineId: `${o.orderId}-${i + 1}`, placedAt: o.placedAt }))),
        Typed.mapEffect((line) => Effect.map(regionOf(line.sku), (region) => ({ ...line, region })))
      ),
    encode: OrderLine
  })

  const source = (name: string, lines: ReadonlyArray<unknown>) => {
    const path = join(dir, name)
    writeFileSync(path, lines.map((line) => (typeof line === "string" ? line : JSON.stringify(line))).join("\n") + "\n")
    return path
  }

  it.effect("creates the dataset from the output schema, stores every line once, and dead-letters failures with their paths", () =>
    Effect.gen(function*() {
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "typed" }, headers: {} })
      const datasetId = yield* Typed.createDataset(client, OrderLine, { dataSourceId: dataSource.data.id, name: "lines", primaryKey: ["lineId"] })
      const schema = yield* client.v2.v2Datasets.getSchema({ path: { id: datasetId } })
      expect(schema.data).toEqual({
        items: [
          { id: "lineId", dataType: "string" },
          { id: "sku", dataType: "string" },
          { id: "qty", dataType: "number" },
          { id: "placedAt", dataType: "datetime" },
          { id: "region", dataType: "string" }
        ].map((column) => expect.objectContaining(column)),
        primaryKey: ["lineId"]
      })
      const path = source("orders.ndjson", [
        order("A", [{ sku: "eu-1", qty: 1 }, { sku: "na-2", qty: 2 }]), // 1: two lines
        order("B", [{ sku: "eu-1", qty: 1 }, { sku: "eu-2", qty: "x" }]), // 2: decode fails at lines[1].qty
        order("T", [{ sku: "eu-1", qty: 1 }], { status: "test" }), // 3: filtered
        order("E", []), // 4: no lines
        order("C", [{ sku: "zz-1", qty: 1 }, { sku: "eu-3", qty: 3 }, { sku: "eu-4", qty: 4 }]), // 5: first line's lookup fails
        "{not json", // 6
        ...Array.from({ length: 40 }, (_, i) => order(`M${i}`, Array.from({ length: 5 }, (_, j) => ({ sku: `eu-${j}`, qty: j + 1 })))) // 7..46
      ])
      const deadLetters = yield* DeadLetter.memory
      const checkpoint = yield* Checkpoint.file(`${path}.checkpoint.json`)
      const progress = yield* run(client, {
        source: Ndjson.fromFile(path),
        records: orderLines,
        destination: { datasetId },
        checkpoint,
        deadLetters,
        batch: { max: 7, linger: "20 millis" },
        poll: { initial: "5 millis", max: "50 millis" },
        commitInterval: "10 millis"
      }).pipe(Effect.provide(NodeContext.layer))
      const rows = yield* client.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { pageSize: 1000 } })
      const ids = rows.data.items.map((row) => row["lineId"]).sort()
      expect(ids).toEqual(["A-1", "A-2", "C-2", "C-3", ...Array.from({ length: 40 }, (_, i) => [1, 2, 3, 4, 5].map((j) => `M${i}-${j}`)).flat()].sort())
      expect(rows.data.items.find((row) => row["lineId"] === "A-2")).toMatchObject({ sku: "na-2", qty: 2, region: "NA" })
      const letters = yield* deadLetters.letters
      expect(letters.map((l) => [l.position.offset, l.position.child ?? null, l.stage, l.reason.code, l.reason.field])).toEqual([
        [2, null, "decode", "decode_failed", "lines[1].qty"],
        [5, { index: 0, of: 3 }, "transform", "UnknownSku", "sku"],
        [6, null, "source", "invalid_json", null]
      ])
      expect(progress).toMatchObject({ accepted: 204, deadLettered: 3, dropped: 2, read: 209 })
      expect(progress.committed["0"]).toMatchObject({ offset: 46, child: { index: 4, of: 5 } })
      expect((yield* checkpoint.load).cuts).toEqual([])
    }))

  it.effect("stores what typed records say, as the service reads their bytes: non-ASCII, escapes, pairs, lone surrogates, long texts", () =>
    Effect.gen(function*() {
      const Note = Schema.Struct({ id: Schema.String, text: Schema.String, at: Schema.Date, n: Schema.Number, tags: Schema.Array(Schema.String) })
      const texts = [
        "plain", "ünïcödé", "日本語", "pair \ud83d\ude00", "lone \ud800 high", "quote \" slash \\ tab \t", "line\nfeed", "\u0001",
        "x".repeat(40_000), "é".repeat(20_000), ""
      ]
      const values = Array.from({ length: 150 }, (_, i) => ({
        id: `note-${i}`,
        text: texts[i % texts.length]!,
        at: new Date(Date.UTC(2026, 10, 1 + (i % 3), i % 24, i % 60, i % 60, i % 1000)).toISOString(),
        n: i % 2 === 0 ? i * 1_000_003 : -i / 8,
        tags: texts.slice(0, i % 5).map((t) => t.slice(0, 20))
      }))
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "typed" }, headers: {} })
      const datasetId = yield* Typed.createDataset(client, Note, { dataSourceId: dataSource.data.id, name: "notes", primaryKey: ["id"] })
      const path = source("notes.ndjson", values)
      const progress = yield* run(client, {
        source: Ndjson.fromFile(path),
        records: Typed.records({ decode: Note, encode: Note }),
        destination: { datasetId },
        checkpoint: yield* Checkpoint.file(`${path}.checkpoint.json`),
        deadLetters: yield* DeadLetter.memory,
        batch: { max: 13, linger: "20 millis" },
        poll: { initial: "5 millis", max: "50 millis" }
      }).pipe(Effect.provide(NodeContext.layer))
      expect(progress).toMatchObject({ accepted: 150, deadLettered: 0 })
      const rows = yield* client.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { pageSize: 1000 } })
      const byId = new Map(rows.data.items.map((row) => [row["id"], row]))
      for (const value of values) {
        const row = byId.get(value.id)!
        expect(row["text"], value.id).toBe(value.text)
        expect(row["tags"], value.id).toEqual(value.tags)
        expect(new Date(row["at"] as string).toISOString(), value.id).toBe(value.at)
        expect(row["n"], value.id).toBe(value.n)
      }
    }))

  it.effect("stops at start with one error listing every column that does not match the dataset", () =>
    Effect.gen(function*() {
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "typed" }, headers: {} })
      const dataset = yield* client.v2.v2Datasets.create({
        payload: {
          name: "wrong",
          dataSourceId: dataSource.data.id,
          schema: [{ id: "lineId", dataType: "string" }, { id: "qty", dataType: "string" }, { id: "placedAt", dataType: "number" }],
          primaryKey: ["lineId"]
        },
        headers: {}
      })
      const path = source("mismatch.ndjson", [order("A", [{ sku: "eu-1", qty: 1 }])])
      const error = yield* Effect.flip(run(client, {
        source: Ndjson.fromFile(path),
        records: orderLines,
        destination: { datasetId: dataset.data.id },
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: yield* DeadLetter.memory
      }).pipe(Effect.provide(NodeContext.layer)))
      expect(error.message).toBe(
        `the output schema does not match dataset ${dataset.data.id} in 4 column(s): ` +
          "sku: string in the output schema, not in the dataset; " +
          "qty: number in the output schema, string in the dataset; " +
          "placedAt: datetime in the output schema, number in the dataset; " +
          "region: string in the output schema, not in the dataset"
      )
      const rows = yield* client.v2.v2Datasets.getData({ path: { id: dataset.data.id }, urlParams: {} })
      expect(rows.data.items).toEqual([]) // nothing was sent
    }))

  it.effect("a defect in a transform stops the run with the record's position; what was delivered before is committed", () =>
    Effect.gen(function*() {
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "typed" }, headers: {} })
      const Out = Schema.Struct({ id: Schema.String })
      const datasetId = yield* Typed.createDataset(client, Out, { dataSourceId: dataSource.data.id, name: "defect" })
      const path = source("defect.ndjson", Array.from({ length: 30 }, (_, i) => ({ id: `r${i}` })))
      const checkpoint = yield* Checkpoint.memory()
      const error = yield* Effect.flip(run(client, {
        source: Ndjson.fromFile(path),
        records: Typed.records({
          decode: Out,
          transform: (records) =>
            records.pipe(Typed.map((r, position) => {
              if (position.offset === 25) throw new Error("unexpected record")
              return r
            })),
          encode: Out
        }),
        destination: { datasetId },
        checkpoint,
        deadLetters: yield* DeadLetter.memory,
        batch: { max: 10, linger: "20 millis" }
      }).pipe(Effect.provide(NodeContext.layer)))
      expect(error.message).toBe("partition 0 offset 25: map threw: unexpected record")
      expect((yield* checkpoint.current).positions["0"]?.offset ?? 0).toBeLessThan(25)
    }))
})
