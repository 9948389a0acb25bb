import { randomUUID } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it, layer } from "@effect/vitest"
import { Cause, Chunk, Context, Effect, Exit, Fiber, Layer, Redacted, Schedule, Stream } from "effect"
import * as Ndjson from "../../connectors/ndjson/index.js"
import { TributaryClient, type ClientConfig } from "../../src/client/index.js"
import { batch, type Unit } from "../../src/pipeline/batch.js"
import { commit } from "../../src/pipeline/commit.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import { deliverUnits } from "../../src/pipeline/deliver.js"
import { keyNumber } from "../../src/pipeline/internal/conflicts.js"
import { idempotencyKey } from "../../src/pipeline/internal/ingest.js"
import { events, fetchSchema, run, type PipelineConfig, topReasons } from "../../src/pipeline/run.js"
import type { Source, SourceElement } from "../../src/pipeline/Source.js"
import { type Checked, keyValueOf, sequence, validate } from "../../src/pipeline/validate.js"
import { json, scriptedServer, type Answer } from "../support/http.js"
import { clientFor, serverLayer } from "../support/server.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-pipeline-"))
const writeLines = (name: string, lines: ReadonlyArray<string>) => {
  const path = join(dir, name)
  writeFileSync(path, lines.join("\n") + "\n")
  return path
}

const quick = { poll: { initial: "5 millis", max: "50 millis" }, commitInterval: "10 millis", batch: { linger: "20 millis" } } as const

/** A good record, one with a wrong type, one that is not JSON. */
const firstThreeLines = [
  "{\"id\":\"a\",\"amount\":1,\"at\":\"2026-11-01\"}",
  "{\"id\":\"b\",\"amount\":\"2\",\"at\":\"2026-11-01\"}",
  "{\"id\":\"c\",\"amount\":3"
]

/** An order record at `offset` of partition "0". */
const orderAt = (offset: number, id: string): SourceElement => ({
  _tag: "Record",
  position: { partition: "0", offset },
  value: { id, amount: offset, at: "2026-11-01" }
})

/** A client whose pool lives as long as the test. */
const standaloneClient = (baseUrl: string, retry?: ClientConfig["retry"]) =>
  Effect.map(Layer.build(TributaryClient.layer({ baseUrl, apiKey: Redacted.make("k"), retry })), Context.get(TributaryClient))

const ordersSchema = [
  { id: "id", dataType: "string" as const },
  { id: "amount", dataType: "number" as const },
  { id: "at", dataType: "datetime" as const }
]

/** A v2 dataset of Acme's, with primary key `id` unless told otherwise. */
const v2Dataset = (primaryKey: ReadonlyArray<string> = ["id"]) =>
  Effect.gen(function*() {
    const client = yield* clientFor("acme-admin")
    const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "pipeline" }, headers: {} })
    const dataset = yield* client.v2.v2Datasets.create({
      payload: { name: "orders", dataSourceId: dataSource.data.id, schema: ordersSchema, primaryKey },
      headers: {}
    })
    return { client, datasetId: dataset.data.id }
  })

const storedRows = (client: TributaryClient["Type"], id: string | number) =>
  Effect.map(client.v2.v2Datasets.getData({ path: { id }, urlParams: { pageSize: 1000 } }), (answer) => answer.data.items)

const runNdjson = (client: TributaryClient["Type"], path: string, extra: Partial<PipelineConfig<any, any>> & { datasetId: string | number }) =>
  Effect.gen(function*() {
    const deadLetters = yield* DeadLetter.memory
    const checkpoint = yield* Checkpoint.file(`${path}.checkpoint.json`)
    const progress = yield* run(client, {
      source: Ndjson.fromFile(path, { maxLineBytes: 200 }),
      destination: { datasetId: extra.datasetId },
      checkpoint,
      deadLetters,
      ...quick,
      ...extra
    })
    return { progress, letters: yield* deadLetters.letters }
  }).pipe(Effect.provide(NodeContext.layer))

layer(serverLayer({ maxBodyBytes: 4000 }), { excludeTestServices: true })("pipeline into the reference server", (it) => {
  it.effect("accounts for every line of a file mixing good records and every kind of bad input", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const lines = [
        ...firstThreeLines, // 1 good, 2 wrong type, 3 malformed JSON
        "", // 4 blank: skipped
        "{\"amount\":4,\"at\":\"2026-11-01\"}", // 5 missing key column
        `{"id":"e","amount":5,"at":"2026-11-01","note":"${"x".repeat(300)}"}`, // 6 over-long
        "[\"not\",\"an\",\"object\"]", // 7
        "{\"id\":\"f\",\"amount\":6,\"at\":\"2026-13-01\"}", // 8 bad datetime
        "{\"id\":\"g\",\"amount\":7,\"at\":\"2026-11-02T10:00:00Z\"}", // 9
        "{\"id\":\"h\",\"amount\":8,\"at\":\"2026-11-03\",\"extra\":1}" // 10 column not in the schema
      ]
      const path = writeLines("mixed.ndjson", lines)
      // Frozen: a column the dataset lacks is a dead letter too (the default contract evolves it).
      const { letters, progress } = yield* runNdjson(client, path, { datasetId, schemaContract: "freeze" })
      expect(progress.read).toBe(9)
      expect(progress.accepted + progress.deadLettered).toBe(progress.read)
      expect(progress.accepted).toBe(2)
      expect(letters.map((l) => [l.position.offset, l.reason.code]).sort((x, y) => Number(x[0]) - Number(y[0]))).toEqual([
        [2, "invalid_type"],
        [3, "invalid_json"],
        [5, "missing_primary_key"],
        [6, "line_too_long"],
        [7, "not_an_object"],
        [8, "invalid_datetime"],
        [10, "unknown_column"]
      ])
      for (const letter of letters) expect(letter.reason.message.length).toBeGreaterThan(0)
      const rows = yield* storedRows(client, datasetId)
      expect(rows.map((r) => r.id).sort()).toEqual(["a", "g"])
      const checkpoint = yield* Checkpoint.readCheckpointFile(`${path}.checkpoint.json`)
      expect(checkpoint.positions["0"]?.offset).toBe(10)
    }))

  it.effect("the stages compose by hand: sequence, validate, batch, deliverUnits, writeLetters, commit", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const lines = [
        ...firstThreeLines, // 1 good, 2 wrong type, 3 malformed JSON
        ...["d", "e", "f", "g", "h"].map((id, i) => `{"id":"${id}","amount":${i},"at":"2026-11-01"}`) // 4-8
      ]
      const path = writeLines("composed.ndjson", lines)
      const source = Ndjson.fromFile(path)
      const checkpoint = yield* Checkpoint.file(`${path}.checkpoint.json`)
      const deadLetters = yield* DeadLetter.memory
      const composed = Effect.gen(function*() {
        const loaded = yield* checkpoint.load
        return yield* source.elements(loaded.positions).pipe(
          sequence,
          validate({ columns: ordersSchema, primaryKey: ["id"] }),
          batch({ max: 2, maxBytes: 1_000_000, linger: "1 hour", checkpoint, recordedCuts: loaded.cuts }),
          deliverUnits({ exchanges: client.exchanges, destination: { datasetId }, sourceName: source.name, concurrency: 3 }),
          DeadLetter.writeLetters(deadLetters),
          commit(checkpoint),
          Stream.runCollect,
          Effect.map((positions) => Chunk.toReadonlyArray(positions).map((p) => p.offset))
        )
      }).pipe(Effect.provide(NodeContext.layer))

      const committed = yield* composed
      // Committed positions only move forward, and end at the last line.
      expect(committed).toEqual([...committed].sort((x, y) => x - y))
      expect(committed.at(-1)).toBe(8)
      expect((yield* storedRows(client, datasetId)).map((r) => r.id).sort()).toEqual(["a", "d", "e", "f", "g", "h"])
      expect((yield* deadLetters.letters).map((l) => [l.position.offset, l.reason.code]).sort()).toEqual([
        [2, "invalid_type"],
        [3, "invalid_json"]
      ])
      expect((yield* checkpoint.load).positions["0"]?.offset).toBe(8)
      // A second pass from the checkpoint reads nothing.
      expect(yield* composed).toEqual([])
    }))

  it.effect("a second run of the same file after completion sends nothing", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset([])
      const path = writeLines("twice.ndjson", ["{\"id\":\"a\",\"amount\":1,\"at\":\"2026-11-01\"}"])
      yield* runNdjson(client, path, { datasetId })
      const second = yield* runNdjson(client, path, { datasetId })
      expect(second.progress.read).toBe(0)
      expect(yield* storedRows(client, datasetId)).toHaveLength(1)
    }))

  it.effect("splits a batch the service answers 413, and dead-letters a record that is too large alone", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const lines = Array.from({ length: 100 }, (_, i) => JSON.stringify({ id: `r${i}`, amount: i, at: "2026-11-01" }))
      lines.push(JSON.stringify({ id: "huge", amount: 1, at: "2026-11-01", padding: "p".repeat(5000) }))
      const path = writeLines("split.ndjson", lines)
      const { letters, progress } = yield* runNdjson(client, path, {
        datasetId,
        source: Ndjson.fromFile(path),
        schema: { columns: ordersSchema, primaryKey: ["id"], allowNewColumns: true }
      })
      expect(progress.accepted).toBe(100)
      expect(letters.map((l) => [l.position.offset, l.reason.code, l.stage])).toEqual([[101, "payload_too_large", "send"]])
      expect(yield* storedRows(client, datasetId)).toHaveLength(100)
    }))

  it.effect("a run reaches a dataset by its number and by its UUID, over v2 and over v1", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const uuid = (yield* client.v2.v2Datasets.get({ path: { id: datasetId } })).data.uuid
      const ways = [
        { name: "number-v2", datasetId, api: "v2" as const },
        { name: "uuid-v2", datasetId: uuid, api: "v2" as const },
        { name: "number-v1", datasetId, api: "v1" as const },
        // As the CLI passes it: the number as text.
        { name: "text-v1", datasetId: String(datasetId), api: "v1" as const },
        { name: "uuid-v1", datasetId: uuid, api: "v1" as const }
      ]
      for (const way of ways) {
        const path = writeLines(`${way.name}.ndjson`, [JSON.stringify({ id: way.name, amount: 1, at: "2026-11-01" })])
        const { progress } = yield* runNdjson(client, path, {
          datasetId: way.datasetId,
          destination: { datasetId: way.datasetId, api: way.api }
        })
        expect(progress.accepted, way.name).toBe(1)
      }
      const rows = yield* storedRows(client, datasetId)
      expect(rows.map((r) => r.id).sort()).toEqual(ways.map((w) => w.name).sort())
      expect(yield* storedRows(client, uuid)).toEqual(rows)
    }))

  it.effect("a v1 run to an unknown dataset number stops before sending, naming the number", () =>
    Effect.gen(function*() {
      const client = yield* clientFor("acme-admin")
      const path = writeLines("unknown-number.ndjson", ["{\"id\":\"a\"}"])
      const error = yield* runNdjson(client, path, {
        datasetId: 999999999,
        destination: { datasetId: 999999999, api: "v1" },
        schema: { columns: [], primaryKey: [], allowNewColumns: true }
      }).pipe(Effect.flip)
      expect(error).toMatchObject({ _tag: "SchemaError" })
      expect(error.message).toContain("cannot find the v1 id of dataset 999999999: the service answered 404")
    }))

  it.effect("reads the schema from the service and delivers through v1 too", () =>
    Effect.gen(function*() {
      const admin = yield* clientFor("acme-admin")
      const dataSource = yield* admin.v1.v1DataSources.createDataSource({ payload: { title: "v1" } })
      const dataset = yield* admin.v1.v1Datasets.createDataset({ payload: { dataSourceId: dataSource.id, primaryKeys: ["id"] } })
      const path = writeLines("v1.ndjson", [
        "{\"id\":\"a\",\"n\":1}",
        "{\"id\":\"b\",\"n\":2}"
      ])
      const { progress } = yield* runNdjson(admin, path, {
        datasetId: dataset.id,
        destination: { datasetId: dataset.id, api: "v1" },
        schema: { columns: [], primaryKey: ["id"], allowNewColumns: true }
      })
      expect(progress.accepted).toBe(2)
      const rows = yield* storedRows(admin, dataset.id)
      expect(rows.map((r) => r.id).sort()).toEqual(["a", "b"])
    }))

  it.effect("the service's own per-record rejections become dead letters at the right lines", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const path = writeLines("service-rejects.ndjson", [
        "{\"id\":\"a\",\"at\":\"2026-11-01\"}",
        "{ \"id\": \"b\", \"amount\": \"two\", \"at\": \"2026-11-01\" }",
        "{\"id\":\"c\",\"at\":\"2026-11-01\"}"
      ])
      // The pipeline is given no columns (anything goes: line 2 adds `amount` as a string, as far
      // as it knows), so only the service can catch line 2;
      // the service echoes the record in its own spacing, and it is still matched to its line.
      const { letters, progress } = yield* runNdjson(client, path, {
        datasetId,
        schema: { columns: [], primaryKey: ["id"], allowNewColumns: true }
      })
      expect(progress.accepted).toBe(2)
      expect(progress.rejected).toBe(1)
      expect(letters).toEqual([
        expect.objectContaining({
          position: expect.objectContaining({ offset: 2 }),
          stage: "service",
          reason: expect.objectContaining({ code: "invalid_type", field: "amount" }),
          record: { id: "b", amount: "two", at: "2026-11-01" }
        })
      ])
    }))

  it.effect("without a schema given, reads it from the service", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const path = writeLines("fetched-schema.ndjson", ["{\"id\":\"a\",\"amount\":\"x\",\"at\":\"2026-11-01\"}"])
      const { letters } = yield* runNdjson(client, path, { datasetId })
      expect(letters.map((l) => [l.stage, l.reason.code])).toEqual([["validate", "invalid_type"]])
    }))

  it.effect("events: the run as a stream that ends with the final progress", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const lines = Array.from({ length: 250 }, (_, i) => JSON.stringify({ id: `e${i}`, amount: i, at: "2026-11-01" }))
      lines.splice(100, 0, "{not json")
      const path = writeLines("events.ndjson", lines)
      const seen = yield* events(client, {
        source: Ndjson.fromFile(path),
        destination: { datasetId },
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: yield* DeadLetter.memory,
        ...quick
      }).pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray), Effect.provide(NodeContext.layer))

      const last = seen[seen.length - 1]!
      expect(last._tag).toBe("Progress")
      if (last._tag === "Progress") {
        expect(last.progress).toMatchObject({ read: 251, valid: 250, sent: 250, accepted: 250, deadLettered: 1, inFlight: 0 })
      }
      const sent = seen.flatMap((e) => (e._tag === "BatchSent" ? [e.first] : []))
      const done = seen.flatMap((e) => (e._tag === "BatchDone" ? [e.first] : []))
      expect(sent.length).toBe(3)
      expect([...done].sort((a, b) => a - b)).toEqual([...sent].sort((a, b) => a - b))
      for (const first of done) {
        expect(seen.findIndex((e) => e._tag === "BatchSent" && e.first === first))
          .toBeLessThan(seen.findIndex((e) => e._tag === "BatchDone" && e.first === first))
      }
      expect(seen.filter((e) => e._tag === "DeadLettered")).toEqual([
        expect.objectContaining({ letter: expect.objectContaining({ position: expect.objectContaining({ offset: 101 }) }) })
      ])
      const committed = seen.flatMap((e) => (e._tag === "Committed" ? [e.position.offset] : []))
      expect(committed[committed.length - 1]).toBe(251)
    }))

  it.effect("a dead letter that cannot be written stops the run, and nothing past it is committed", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const path = writeLines("unwritable-letters.ndjson", [
        "{\"id\":\"a\",\"amount\":1,\"at\":\"2026-11-01\"}",
        "not json",
        "{\"id\":\"c\",\"amount\":3,\"at\":\"2026-11-01\"}"
      ])
      const checkpoint = yield* Checkpoint.memory()
      const error = yield* Effect.flip(run(client, {
        source: Ndjson.fromFile(path),
        destination: { datasetId },
        checkpoint,
        deadLetters: { write: () => Effect.fail(new DeadLetter.DeadLetterError({ reason: "disk full" })) },
        ...quick
      }).pipe(Effect.provide(NodeContext.layer)))
      expect(error).toMatchObject({ _tag: "DeadLetterError", reason: "disk full" })
      expect((yield* checkpoint.current).positions).toEqual({})
    }))

  it.effect("keeps partitions apart: batches never mix them, each commits its own position, a restart resumes each", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset([])
      // Two partitions interleaved, as a consumer of a two-partition topic would read them.
      const elements: ReadonlyArray<SourceElement> = Array.from({ length: 300 }, (_, i) => {
        const partition = i % 2 === 0 ? "p0" : "p1"
        const offset = (partition === "p0" ? 0 : 1000) + Math.floor(i / 2)
        return { _tag: "Record", position: { partition, offset }, value: { id: `${partition}-${offset}`, amount: i, at: "2026-11-01" } }
      })
      const twoPartitions: Source = {
        name: "two-partitions",
        elements: (committed) =>
          Stream.fromIterable(elements.filter((e) => e.position.offset > (committed[e.position.partition]?.offset ?? -1)))
      }
      const checkpoint = yield* Checkpoint.memory()
      const config = { source: twoPartitions, destination: { datasetId }, checkpoint, deadLetters: yield* DeadLetter.memory, ...quick }
      const seen = yield* events(client, config).pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray))

      const sent = seen.flatMap((e) => (e._tag === "BatchSent" ? [e] : []))
      for (const batch of sent) {
        const base = batch.partition === "p0" ? 0 : 1000
        expect(batch.first).toBeGreaterThanOrEqual(base)
        expect(batch.last).toBeLessThan(base + 150)
      }
      expect(sent.reduce((n, b) => n + b.records, 0)).toBe(300)
      expect((yield* checkpoint.current).positions).toMatchObject({ p0: { offset: 149 }, p1: { offset: 1149 } })
      const rows = yield* storedRows(client, datasetId)
      expect(rows).toHaveLength(300)
      expect(new Set(rows.map((r) => r.id)).size).toBe(300)

      const again = yield* run(client, config)
      expect(again.read).toBe(0)
    }))

  it.effect("a checkpoint that cannot be written stops an endless run", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const endless: Source = {
        name: "endless",
        elements: () =>
          Stream.iterate(1, (n) => n + 1).pipe(Stream.map((n) => orderAt(n, `e${n % 500}`)))
      }
      const memory = yield* Checkpoint.memory()
      const error = yield* Effect.flip(run(client, {
        source: endless,
        destination: { datasetId },
        checkpoint: { ...memory, commit: () => Effect.fail(new Checkpoint.CheckpointError({ reason: "disk full" })) },
        deadLetters: yield* DeadLetter.memory,
        ...quick
      }))
      expect(error).toMatchObject({ _tag: "CheckpointError", reason: "disk full" })
    }))

  it.effect("a partial batch goes out after linger while the source is silent, its boundary recorded first", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      // Three records, then a source that says nothing more (a quiet topic, a paused stdin).
      const quiet: Source = {
        name: "quiet",
        elements: () =>
          Stream.concat(
            Stream.fromIterable([1, 2, 3].map((n) => orderAt(n, `q${n}`))),
            Stream.never
          )
      }
      const checkpoint = yield* Checkpoint.memory()
      const recorded: Array<ReadonlyArray<Checkpoint.BatchCut>> = []
      const running = yield* Effect.fork(run(client, {
        source: quiet,
        destination: { datasetId },
        checkpoint: { ...checkpoint, recordCuts: (cuts) => Effect.zipRight(Effect.sync(() => recorded.push(cuts)), checkpoint.recordCuts(cuts)) },
        deadLetters: yield* DeadLetter.memory,
        ...quick
      }))
      yield* checkpoint.current.pipe(
        Effect.repeat({ until: (c) => c.positions["0"]?.offset === 3, schedule: Schedule.spaced("10 millis") }),
        Effect.timeout("5 seconds")
      )
      expect(recorded.flat()).toEqual([{ partition: "0", first: 1, last: 3 }])
      expect((yield* storedRows(client, datasetId)).map((r) => r.id).sort()).toEqual(["q1", "q2", "q3"])
      yield* Fiber.interrupt(running)
    }))

  it.effect("a batch boundary that cannot be recorded stops the run before the batch is sent", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const path = writeLines("unrecordable.ndjson", ['{"id":"u1","amount":1,"at":"2026-11-01"}'])
      const memory = yield* Checkpoint.memory()
      const error = yield* Effect.flip(run(client, {
        source: Ndjson.fromFile(path),
        destination: { datasetId },
        checkpoint: { ...memory, recordCuts: () => Effect.fail(new Checkpoint.CheckpointError({ reason: "disk full" })) },
        deadLetters: yield* DeadLetter.memory,
        ...quick
      }).pipe(Effect.provide(NodeContext.layer)))
      expect(error).toMatchObject({ _tag: "CheckpointError", reason: "disk full" })
      expect(yield* storedRows(client, datasetId)).toHaveLength(0)
    }))

  it.effect("a concurrency below 1 is refused at once (it would wait forever)", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const path = writeLines("zero-concurrency.ndjson", ["{\"id\":\"a\",\"amount\":1,\"at\":\"2026-11-01\"}"])
      const exit = yield* Effect.exit(runNdjson(client, path, { datasetId, concurrency: 0 }))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(String(exit)).toContain("concurrency must be a whole number of at least 1, got 0")
    }))

  it.effect("events: a failed run fails the stream with the run's error", () =>
    Effect.gen(function*() {
      const client = yield* clientFor("acme-admin")
      const path = writeLines("events-fail.ndjson", ["{\"id\":\"a\"}"])
      const error = yield* events(client, {
        source: Ndjson.fromFile(path),
        destination: { datasetId: "no-such-dataset" },
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: yield* DeadLetter.memory,
        ...quick
      }).pipe(Stream.runDrain, Effect.flip, Effect.provide(NodeContext.layer))
      expect(error._tag).toBe("SchemaError")
    }))

  it.effect("events: a consumer that stops early stops the run", () =>
    Effect.gen(function*() {
      const { client, datasetId } = yield* v2Dataset()
      const path = writeLines("events-early.ndjson", Array.from({ length: 5000 }, (_, i) => JSON.stringify({ id: `x${i}`, amount: i, at: "2026-11-01" })))
      const first = yield* events(client, {
        source: Ndjson.fromFile(path),
        destination: { datasetId },
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: yield* DeadLetter.memory,
        ...quick
      }).pipe(Stream.filter((e) => e._tag === "BatchDone"), Stream.take(1), Stream.runCollect, Effect.provide(NodeContext.layer))
      expect(Chunk.size(first)).toBe(1)
      const stored = yield* storedRows(client, datasetId)
      expect(stored.length).toBeLessThan(5000)
    }))
})

// The checkpoint-capture case (A, B, D delivered, C, E failed) is in the source conformance
// suite, test/connectors/conformance.test.ts, which every connector runs.

describe("answers of the wrong shape (a real HTTP server on loopback, scripted)", () => {
  const schema = { columns: ordersSchema, primaryKey: ["id"] }
  const deliverTo = (answer: Answer) =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(() => answer)
      const client = yield* standaloneClient(server.url, { maxRetries: 0 })
      const path = writeLines(`shape-${randomUUID()}.ndjson`, ["{\"id\":\"a\",\"amount\":1,\"at\":\"2026-11-01\"}"])
      return yield* Effect.flip(run(client, {
        source: Ndjson.fromFile(path),
        destination: { datasetId: "00000000-0000-4000-8000-000000000000" },
        schema,
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: yield* DeadLetter.memory,
        ...quick
      }).pipe(Effect.provide(NodeContext.layer)))
    })

  it.scopedLive("a 200 that is not the service's answer (a proxy's page) stops the run with what came back", () =>
    Effect.gen(function*() {
      const error = yield* deliverTo((_arrival, res) => {
        res.writeHead(200, { "content-type": "text/html" })
        res.end("<html>Welcome to the proxy</html>")
      })
      expect(error).toMatchObject({ _tag: "DeliveryError", status: 200 })
      expect(error.message).toContain("the service answered 200 without an ingestion id: <html>Welcome to the proxy</html>")
    }))

  it.scopedLive("a schema answer without columns is a SchemaError, not a crash", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(() => (_arrival, res) => json(res, 200, { requestId: "r", status: "success", data: {} }))
      const client = yield* standaloneClient(server.url, { maxRetries: 0 })
      const error = yield* Effect.flip(fetchSchema(client, "7"))
      expect(error._tag).toBe("SchemaError")
      expect(error.message).toContain("cannot read the schema of dataset 7: the service answered with what the contract does not allow")
    }))

  it.scopedLive("a schema read the service refuses names its status and first message; a proxy's page, its start", () =>
    Effect.gen(function*() {
      const paths: Array<string> = []
      const server = yield* scriptedServer(() => (arrival, res) => {
        paths.push(arrival.url)
        if (arrival.url.includes("/404")) return json(res, 404, { requestId: "r", status: "error", errors: [{ code: "not_found", message: "dataset 404 was not found", field: null, type: "validation" }] })
        res.writeHead(400, { "content-type": "text/html" })
        res.end("<html>Bad gateway page</html>")
      })
      const client = yield* standaloneClient(server.url, { maxRetries: 0 })
      const missing = yield* Effect.flip(fetchSchema(client, "404"))
      expect(missing.message).toBe("cannot read the schema of dataset 404: the service answered 404: dataset 404 was not found")
      const proxied = yield* Effect.flip(fetchSchema(client, "7"))
      expect(proxied.message).toBe("cannot read the schema of dataset 7: the service answered 400: <html>Bad gateway page</html>")
      // A UUID is sent lower-case, as the path takes it.
      yield* Effect.flip(fetchSchema(client, "0F6E5F4A-8B1C-4D2E-9F3A-1B2C3D4E5F60"))
      expect(paths).toEqual(["/v2/datasets/404/schema", "/v2/datasets/7/schema", "/v2/datasets/0f6e5f4a-8b1c-4d2e-9f3a-1b2c3d4e5f60/schema"])
    }))

  it.scopedLive("an ingestion answer of the wrong shape stops the run naming the ingestion", () =>
    Effect.gen(function*() {
      const error = yield* deliverTo((arrival, res) =>
        arrival.method === "POST"
          ? json(res, 200, { requestId: "r", status: "success", data: { ingestionId: "ing-1", status: "queued" } })
          : json(res, 200, { requestId: "r", status: "success", data: {} })
      )
      expect(error.message).toContain("following ingestion ing-1: an answer of the wrong shape")
    }))
})

describe("idempotency keys", () => {
  it("are UUIDv5 of the batch's source coordinates, the same in every version", () => {
    // Pinned: a key that changed between versions would make a resumed run store its
    // in-flight batches a second time.
    expect(idempotencyKey("ds-1", "ndjson:/data/orders.ndjson", "0", 1, 100)).toBe("b6af26ea-c453-5714-9f4e-dde79fa326ce")
    expect(idempotencyKey("ds-1", "ndjson:/data/orders.ndjson", "0", 101, 200)).toBe("e89262c4-5f3d-5dcc-8cd8-537a3255784d")
    expect(idempotencyKey("ds-2", "ndjson:/data/orders.ndjson", "0", 1, 100)).not.toBe("b6af26ea-c453-5714-9f4e-dde79fa326ce")
  })
})

describe("batch boundaries", () => {
  const valid = (offset: number): Extract<Checked, { _tag: "Valid" }> => ({
    _tag: "Valid",
    seq: offset - 1,
    position: { partition: "0", offset },
    json: JSON.stringify({ n: offset })
  })
  const boundaries = (units: ReadonlyArray<Unit>) =>
    units.flatMap((u) => (u._tag === "Batch" ? [[u.batch.records[0]!.position.offset, u.batch.records.at(-1)!.position.offset, u.batch.closedBy]] : []))

  it.live("a batch closed by time is recorded first, and rebuilt the same after a restart", () =>
    Effect.gen(function*() {
      const store = yield* Checkpoint.memory()
      const slow = Stream.concat(
        Stream.fromIterable([1, 2, 3].map(valid)),
        Stream.fromEffect(Effect.as(Effect.sleep("150 millis"), valid(4))).pipe(Stream.concat(Stream.fromIterable([5, 6].map(valid))))
      )
      const firstRun = yield* Stream.runCollect(batch(slow, { max: 100, maxBytes: 1_000_000, linger: "40 millis", checkpoint: store, recordedCuts: [] }))
      expect(boundaries(Chunk.toReadonlyArray(firstRun))).toEqual([[1, 3, "linger"], [4, 6, "end"]])
      const { cuts } = yield* store.current
      expect(cuts).toEqual([{ partition: "0", first: 1, last: 3 }, { partition: "0", first: 4, last: 6 }])

      // After a restart everything arrives at once; the recorded boundaries still hold.
      const fast = Stream.fromIterable([1, 2, 3, 4, 5, 6, 7].map(valid))
      const secondRun = yield* Stream.runCollect(batch(fast, { max: 100, maxBytes: 1_000_000, linger: "10 seconds", checkpoint: store, recordedCuts: cuts }))
      expect(boundaries(Chunk.toReadonlyArray(secondRun))).toEqual([[1, 3, "recorded"], [4, 6, "recorded"], [7, 7, "end"]])
    }))

  it.effect("cuts by count and by body size", () =>
    Effect.gen(function*() {
      const store = yield* Checkpoint.memory()
      const records = Stream.fromIterable(Array.from({ length: 7 }, (_, i) => valid(i + 1)))
      const byCount = yield* Stream.runCollect(batch(records, { max: 3, maxBytes: 1_000_000, linger: "1 hour", checkpoint: store, recordedCuts: [] }))
      expect(boundaries(Chunk.toReadonlyArray(byCount))).toEqual([[1, 3, "count"], [4, 6, "count"], [7, 7, "end"]])
      // {"n":1} is 7 bytes (+1 separator); the envelope is 14: room for two records in 32 bytes.
      const bySize = yield* Stream.runCollect(batch(records, { max: 100, maxBytes: 32, linger: "1 hour", checkpoint: store, recordedCuts: [] }))
      expect(boundaries(Chunk.toReadonlyArray(bySize))).toEqual([[1, 2, "bytes"], [3, 4, "bytes"], [5, 6, "bytes"], [7, 7, "end"]])
    }))

  it.effect("counts body size in UTF-8 bytes, as sent, not in characters", () =>
    Effect.gen(function*() {
      const store = yield* Checkpoint.memory()
      // {"s":"žžž"} is 11 characters but 14 bytes (+1 separator; the envelope is 14): two fit in 40
      // bytes only when counted as characters (14 + 2 * 12 = 38), one when counted as bytes (14 + 2 * 15 = 44).
      const wide = (offset: number): Checked => ({ ...valid(offset), json: JSON.stringify({ s: "žžž" }) })
      const records = Stream.fromIterable([1, 2, 3].map(wide))
      const units = yield* Stream.runCollect(batch(records, { max: 100, maxBytes: 40, linger: "1 hour", checkpoint: store, recordedCuts: [] }))
      expect(boundaries(Chunk.toReadonlyArray(units))).toEqual([[1, 1, "bytes"], [2, 2, "bytes"], [3, 3, "end"]])
    }))
})

describe("validate", () => {
  it.effect("checks a stream of elements: valid records keep their text, the rest become dead letters", () =>
    Effect.gen(function*() {
      const position = (offset: number) => ({ partition: "0", offset })
      const good = { id: "a", amount: 1, at: "2026-11-01" }
      const goodText = "{ \"id\": \"a\", \"amount\": 1, \"at\": \"2026-11-01\" }"
      const elements: ReadonlyArray<SourceElement> = [
        { _tag: "Record", position: position(1), value: good, json: goodText },
        { _tag: "Record", position: position(2), value: { id: "b", amount: "x", at: "2026-11-01" } },
        { _tag: "Malformed", position: position(3), problem: { code: "invalid_json", field: null, message: "line 3: bad" }, raw: "{" }
      ]
      const checked = yield* Stream.fromIterable(elements.map((element, seq) => ({ seq, element }))).pipe(
        validate({ columns: ordersSchema, primaryKey: ["id"] }),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      )
      expect(checked[0]).toEqual({ _tag: "Valid", seq: 0, position: position(1), json: goodText, key: keyNumber("a") })
      expect(checked[1]).toMatchObject({ _tag: "Dead", seq: 1, letter: { stage: "validate", reason: { code: "invalid_type", field: "amount" }, record: { id: "b" } } })
      expect(checked[2]).toMatchObject({ _tag: "Dead", seq: 2, letter: { stage: "source", reason: { code: "invalid_json" }, raw: "{" } })
    }))

  it("a record's key value for the key order: a one-column key's whole number as it is, else the number of its text (a composite key's: the JSON text of the values)", () => {
    expect(keyValueOf([])({ id: 1 })).toBeUndefined()
    expect(keyValueOf(["id"])({ id: 1 })).toBe(1)
    expect(keyValueOf(["id"])({ id: "1" })).toBe(keyNumber("1"))
    expect(keyValueOf(["id"])({ id: "1" })).not.toBe(1)
    expect(keyValueOf(["id"])({ id: true })).toBe(keyNumber("[true]"))
    expect(keyValueOf(["a", "b"])({ b: "x", a: 2 })).toBe(keyNumber("[2,\"x\"]"))
  })
})

describe("the most frequent dead-letter reasons", () => {
  it("by count, then by name among equals, whatever order they were counted in", () => {
    const counted = { "not_an_object": 1, "invalid_type amount": 1, "invalid_json": 1, "invalid_datetime placedAt": 1, "unknown_column n": 4 }
    const reversed = Object.fromEntries(Object.entries(counted).reverse())
    expect(topReasons(counted)).toBe("unknown_column n 4, invalid_datetime placedAt 1, invalid_json 1")
    expect(topReasons(reversed)).toBe(topReasons(counted))
    expect(topReasons(counted, 5)).toBe("unknown_column n 4, invalid_datetime placedAt 1, invalid_json 1, invalid_type amount 1, not_an_object 1")
  })
})
