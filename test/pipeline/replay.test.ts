/**
 * Schema changes and dead-letter replay in the library, against the reference server: the
 * `ColumnAdded` events and counters, the stricter contract of typed jobs, and `Replay.replay`
 * of letters from typed stages with a function or a typed stage as the fix.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import * as Ndjson from "../../connectors/ndjson/index.js"
import type { TributaryClient } from "../../src/client/index.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import type { PipelineEvent } from "../../src/pipeline/events.js"
import * as Replay from "../../src/pipeline/Replay.js"
import { run } from "../../src/pipeline/run.js"
import * as Typed from "../../src/pipeline/Typed.js"
import { clientFor, serverLayer } from "../support/server.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-replay-"))
const writeLines = (name: string, lines: ReadonlyArray<unknown>) => {
  const path = join(dir, name)
  writeFileSync(path, lines.map((line) => JSON.stringify(line)).join("\n") + "\n")
  return path
}
const quickReplay = { poll: { initial: "5 millis", max: "50 millis" }, commitInterval: "10 millis" } as const
const quick = { ...quickReplay, batch: { linger: "20 millis" } } as const

const dataset = (schema: ReadonlyArray<{ id: string; dataType: "string" | "number" | "datetime" }>, primaryKey: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const client = yield* clientFor("acme-admin")
    const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "replay" }, headers: {} })
    const created = yield* client.v2.v2Datasets.create({ payload: { name: "rows", dataSourceId: dataSource.data.id, schema, primaryKey }, headers: {} })
    return { client, datasetId: created.data.id }
  })

const storedRows = (client: TributaryClient["Type"], id: number) =>
  Effect.map(client.v2.v2Datasets.getData({ path: { id }, urlParams: { pageSize: 1000 } }), (answer) => answer.data.items)

/** Written the way the file sink writes them, and read back as a replay reads them. */
const roundTrip = (letters: ReadonlyArray<DeadLetter.DeadLetter>) =>
  letters.map((letter) => Either.getOrThrow(Replay.decodeLetter(DeadLetter.encodeLetter(letter, "2026-11-26T00:00:00.000Z"))))

layer(serverLayer(), { excludeTestServices: true })("schema changes and replay in the library", (it) => {
  it.effect("ColumnAdded: one event per new column, at its first record; counters of added columns and discarded values", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* dataset([{ id: "n", dataType: "number" }])
      const path = writeLines("events.ndjson", [{ n: 1 }, { n: 2, coupon: "A" }, { n: 3, coupon: "B", note: "x" }, { n: 4, note: 5 }])
      const seen: Array<PipelineEvent> = []
      const progress = yield* run(client, {
        source: Ndjson.fromFile(path),
        destination: { datasetId },
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: (yield* DeadLetter.memory),
        schemaContract: "columns=evolve,data_type=discard_value",
        onEvent: (event) => Effect.sync(() => seen.push(event)),
        ...quick
      })
      expect(seen.filter((e) => e._tag === "ColumnAdded").map((e) => e._tag === "ColumnAdded" && [e.column.id, e.column.dataType, e.position.offset])).toEqual([
        ["coupon", "string", 2],
        ["note", "string", 3]
      ])
      expect(progress.columnsAdded).toEqual([{ id: "coupon", dataType: "string" }, { id: "note", dataType: "string" }])
      expect(progress.valuesDiscarded).toBe(1)
      expect(progress.discardedReasons).toEqual({ "invalid_type note": 1 })
      expect(progress.accepted).toBe(4)
      expect((yield* storedRows(client, datasetId)).find((row) => row.n === 4)).toEqual({ n: 4 })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.effect("a typed job's output schema is its contract: giving another is refused before anything is sent", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* dataset([{ id: "n", dataType: "number" }])
      const records = Typed.records({ decode: Schema.Struct({ n: Schema.Number }), encode: Schema.Struct({ n: Schema.Number }) })
      const failed = yield* Effect.flip(run(client, {
        source: Ndjson.fromFile(writeLines("typed.ndjson", [{ n: 1 }])),
        records,
        destination: { datasetId },
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: yield* DeadLetter.memory,
        schemaContract: "evolve",
        ...quick
      }))
      expect(failed._tag).toBe("SchemaError")
      expect(failed.message).toContain("a typed job's output schema is its schema contract")
      expect(yield* storedRows(client, datasetId)).toEqual([])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.effect("letters of typed stages round-trip: decoded again, fixed by a function or by typed stages, stored once", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* dataset([{ id: "n", dataType: "number" }, { id: "label", dataType: "string" }])
      const Out = Schema.Struct({ n: Schema.Number, label: Schema.String })
      const original = Typed.records({
        decode: Schema.Struct({ n: Schema.Number, label: Schema.String }),
        transform: (records) =>
          records.pipe(Typed.mapEffect((r) => r.label === "lookup-fails" ? Effect.fail(new LookupFailed({ message: "no such label" })) : Effect.succeed(r))),
        encode: Out
      })
      const path = writeLines("typed-letters.ndjson", [
        { n: 1, label: "a" },
        { n: "2", label: "b" }, // decode: n is not a number
        { n: 3, label: "lookup-fails" }, // transform: the lookup fails
        { n: 4, label: "d" }
      ])
      const letters = yield* DeadLetter.memory
      const first = yield* run(client, {
        source: Ndjson.fromFile(path),
        records: original,
        destination: { datasetId },
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: letters,
        ...quick
      })
      expect(first.accepted).toBe(2)
      const stored = roundTrip(yield* letters.letters)
      expect(stored.map((l) => [l.stage, l.position.offset, l.v, l.source, l.dataset])).toEqual([
        ["decode", 2, 2, `ndjson:${path}`, String(datasetId)],
        ["transform", 3, 2, `ndjson:${path}`, String(datasetId)]
      ])

      // The fix as typed stages: decode what the letters hold, repair, encode for the dataset.
      const repaired = Typed.records({
        decode: Schema.Struct({ n: Schema.Union(Schema.Number, Schema.NumberFromString), label: Schema.String }),
        transform: (records) => records.pipe(Typed.map((r) => ({ n: r.n, label: r.label === "lookup-fails" ? "looked up" : r.label }))),
        encode: Out
      })
      const replayOnce = Effect.gen(function*() {
        const again = yield* DeadLetter.memory
        const progress = yield* Replay.replay(client, {
          letters: stored,
          description: "typed letters",
          records: repaired,
          checkpoint: yield* Checkpoint.memory(),
          deadLetters: again,
          ...quickReplay
        })
        return { progress, again: yield* again.letters }
      })
      const replayed = yield* replayOnce
      expect(replayed.progress.accepted).toBe(2)
      expect(replayed.again).toEqual([])
      const twice = yield* replayOnce
      expect(twice.progress.replayed).toBe(2)
      const rows = yield* storedRows(client, datasetId)
      expect(rows.map((row) => [row.n, row.label]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
        [1, "a"],
        [2, "b"],
        [3, "looked up"],
        [4, "d"]
      ])

      // A function as the fix, and its failure: a letter again, stage transform, at its original place.
      const failing = yield* DeadLetter.memory
      const failed = yield* Replay.replay(client, {
        letters: stored,
        description: "typed letters, a fix that throws",
        transform: () => {
          throw new Error("cannot fix this one")
        },
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: failing,
        ...quickReplay
      })
      expect(failed.deadLettered).toBe(2)
      expect((yield* failing.letters).map((l) => [l.stage, l.reason.code, l.position.partition, l.position.offset, l.source])).toEqual([
        ["transform", "transform_failed", "0", 2, `ndjson:${path}`],
        ["transform", "transform_failed", "0", 3, `ndjson:${path}`]
      ])
    }).pipe(Effect.provide(NodeContext.layer)))

  it("reads letters of format version 1 (no source, run or dataset) and needs the dataset for them", () => {
    const v1 = "{\"position\":{\"partition\":\"0\",\"offset\":3},\"reason\":{\"code\":\"invalid_json\",\"field\":null,\"message\":\"line 3: ...\"},\"stage\":\"source\",\"raw\":\"{\\\"n\\\":3\",\"at\":\"2026-11-01T00:00:00Z\"}"
    const letter = Either.getOrThrow(Replay.decodeLetter(v1))
    expect(letter).toMatchObject({ v: 1, position: { partition: "0", offset: 3 }, stage: "source", raw: "{\"n\":3", source: undefined, run: undefined })
    expect(Replay.groupName(letter)).toBe("-|-|0")
    expect(Replay.recordOf(letter)).toEqual(Either.left(expect.objectContaining({ code: "invalid_json" })))
    expect(Replay.recordOf({ ...letter, raw: "{\"n\":3}" })).toEqual(Either.right({ n: 3 }))
    expect(Either.isLeft(Replay.decodeLetter("{\"v\":3,\"position\":{\"partition\":\"0\",\"offset\":1},\"reason\":{\"code\":\"x\"},\"stage\":\"source\"}"))).toBe(true)
  })

  it("plans: twins written twice after a crash count once; groups by origin in original order; filters hold together", () => {
    const at = (offset: number, code: string, extra: Partial<Replay.StoredLetter> = {}): Replay.StoredLetter => ({
      v: 2,
      position: { partition: "0", offset },
      reason: { code, field: "f", message: "" },
      stage: "validate",
      record: { offset },
      source: "s",
      run: "r1",
      dataset: "1",
      ...extra
    })
    const groups = Replay.plan([at(9, "a"), at(3, "b"), at(9, "a"), at(5, "a", { run: "r2" }), at(7, "b", { stage: "service" })])
    expect(groups.map((g) => [g.name, g.letters.map((l) => l.position.offset)])).toEqual([
      ["s|r1|0", [3, 7, 9]],
      ["s|r2|0", [5]]
    ])
    expect(Replay.countByReason(groups)).toEqual([["a f", 2], ["b f", 2]])
    const only = (filter: Replay.Filter) => Replay.plan([at(3, "a"), at(5, "b"), at(7, "b", { stage: "service" })], filter).flatMap((g) => g.letters.map((l) => l.position.offset))
    expect(only({ reasons: ["b"], stages: ["service"] })).toEqual([7])
    expect(only({ reasons: ["a f"] })).toEqual([3])
    expect(only({ from: 4, to: 6 })).toEqual([5])
    expect(only({ partitions: ["1"] })).toEqual([])
    expect(Replay.compose([Replay.rename("a", "b"), Replay.set("c", 1), Replay.drop("d")])({ a: 1, d: 2 })).toEqual({ b: 1, c: 1 })
  })
})

class LookupFailed extends Schema.TaggedError<LookupFailed>()("LookupFailed", { message: Schema.String }) {}
