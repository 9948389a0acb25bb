/**
 * The source conformance suite: every connector passes the same cases, against a real
 * reference server (or a scripted HTTP server on loopback) and, for Kafka, the real broker.
 *
 * A harness writes lines into a fresh source and opens it for a run; `runToEnd` runs the
 * pipeline until everything written is committed (an endless source is stopped then).
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { afterAll, expect, layer } from "@effect/vitest"
import { Context, Data, Deferred, Effect, Either, Fiber, Layer, Redacted, Schedule, Schema, type Scope, Stream } from "effect"
import { Kafka as KafkaJs, logLevel } from "kafkajs"
import * as Kafka from "../../connectors/kafka/index.js"
import * as Ndjson from "../../connectors/ndjson/index.js"
import * as Postgres from "../../connectors/postgres/index.js"
import { TributaryClient, type TributaryClientService } from "../../src/client/index.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import * as Replay from "../../src/pipeline/Replay.js"
import { run, type PipelineConfig } from "../../src/pipeline/run.js"
import * as Typed from "../../src/pipeline/Typed.js"
import { json, scriptedServer } from "../support/http.js"
import { clientFor, serverLayer } from "../support/server.js"
import { testSchema } from "../support/postgres.js"
import { databaseUrl, kafkaBrokers } from "../support/services.js"

const quick = { poll: { initial: "5 millis", max: "50 millis" }, commitInterval: "10 millis" } as const

interface Opened {
  readonly config: Pick<PipelineConfig<any, any>, "source" | "checkpoint">
  /** Ends an endless source once everything written is committed; undefined for finite sources. */
  readonly stopWhenCommitted?: Effect.Effect<void> | undefined
}

interface Harness {
  readonly name: string
  /**
   * The dead-letter codes of the three bad elements of the first case (not JSON, not an
   * object, a string where a number goes); a source of typed rows makes them rows it cannot
   * send (default: the codes of a source of JSON text).
   */
  readonly badElementCodes?: ReadonlyArray<string>
  /** A fresh source holding `lines`; `open` opens it for one run (again after a restart). */
  readonly create: (lines: ReadonlyArray<string>) => Effect.Effect<{ readonly open: Effect.Effect<Opened, unknown, Scope.Scope> }>
}

const ndjsonHarness: Harness = {
  name: "NDJSON",
  create: (lines) =>
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "tributary-conformance-"))
      const path = join(dir, "source.ndjson")
      writeFileSync(path, lines.join("\n") + "\n")
      return {
        open: Effect.map(Checkpoint.file(`${path}.checkpoint.json`), (checkpoint) => ({
          config: { source: Ndjson.fromFile(path), checkpoint }
        }))
      }
    })
}

/** NDJSON from standard input, as `tributary ingest -` reads it: any byte stream (`fromBytes`). */
const stdinHarness: Harness = {
  name: "NDJSON stdin",
  create: (lines) =>
    Effect.sync(() => ({
      open: Effect.map(Checkpoint.memory(), (checkpoint) => ({
        config: { source: Ndjson.fromBytes("ndjson:stdin", Stream.make(new TextEncoder().encode(lines.join("\n") + "\n"))), checkpoint }
      }))
    }))
}

/**
 * A table of the lines' records. Lines that are records `{ id, n }` make a table (id text
 * primary key, n double precision), keyed by id; other records (the typed case) make a table
 * keyed by line number (`seq`) with a column per key (arrays as text[], numbers as double
 * precision, the rest as text), absent keys NULL. Either way a line that is not a record
 * becomes a row whose n is NaN, which the service cannot take. Read through a checkpoint file.
 */
const schemasToDrop: Array<() => Promise<void>> = []
afterAll(() => Promise.all(schemasToDrop.map((drop) => drop())))

const parseLine = (line: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(line)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

const postgresHarness: Harness = {
  name: "Postgres",
  badElementCodes: ["not_a_number", "not_a_number", "not_a_number"],
  create: (lines) =>
    Effect.promise(async () => {
      const db = await testSchema()
      schemasToDrop.push(db.drop)
      const records = lines.map(parseLine)
      const idAndN = records.some((r) => r !== undefined && "id" in r)
      let key: ReadonlyArray<string>
      if (idAndN) {
        key = ["id"]
        await db.sql(`CREATE TABLE ${db.name}.source (id text PRIMARY KEY, n double precision)`)
        const rows = records.map((r, i) => typeof r?.id === "string" && typeof r.n === "number" ? [r.id, r.n] : [`x-${i}`, "NaN"])
        await db.sql(
          `INSERT INTO ${db.name}.source SELECT * FROM unnest($1::text[], $2::double precision[])`,
          [rows.map((r) => r[0]), rows.map((r) => r[1])]
        )
      } else {
        key = ["seq"]
        const columns = new Map<string, string>([["n", "double precision"]])
        for (const r of records) {
          for (const [name, value] of Object.entries(r ?? {})) {
            if (!columns.has(name) || columns.get(name) === "text") {
              columns.set(name, Array.isArray(value) ? "text[]" : typeof value === "number" ? "double precision" : "text")
            }
          }
        }
        const names = [...columns.keys()]
        await db.sql(`CREATE TABLE ${db.name}.source (seq integer PRIMARY KEY, ${names.map((c) => `"${c}" ${columns.get(c)}`).join(", ")})`)
        for (const [i, r] of records.entries()) {
          const values = names.map((c) => r === undefined ? (c === "n" ? "NaN" : null) : Array.isArray(r[c]) ? (r[c] as Array<unknown>).map(String) : r[c] ?? null)
          await db.sql(
            `INSERT INTO ${db.name}.source (seq, ${names.map((c) => `"${c}"`).join(", ")}) VALUES ($1, ${names.map((_, j) => `$${j + 2}`).join(", ")})`,
            [i, ...values]
          )
        }
      }
      const path = join(mkdtempSync(join(tmpdir(), "tributary-conformance-")), "checkpoint.json")
      return {
        open: Effect.gen(function*() {
          const context = yield* Layer.build(Postgres.layer({ url: Redacted.make(databaseUrl()) }))
          const source = yield* Postgres.make({
            relation: { _tag: "Table", name: `${db.name}.source` },
            key,
            checkpoint: { _tag: "File", path }
          }).pipe(Effect.provide(context))
          return { config: { source } }
        })
      }
    })
}

process.env["KAFKAJS_NO_PARTITIONER_WARNING"] = "1"

const kafkaHarness: Harness = {
  name: "Kafka",
  create: (lines) =>
    Effect.promise(async () => {
      const topic = `conformance-${randomUUID()}`
      const groupId = `conformance-${randomUUID()}`
      const kafka = new KafkaJs({ clientId: "conformance-setup", brokers: kafkaBrokers(), logLevel: logLevel.NOTHING })
      const admin = kafka.admin()
      await admin.connect()
      await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true })
      await admin.disconnect()
      const producer = kafka.producer()
      await producer.connect()
      await producer.send({ topic, acks: -1, messages: lines.map((value) => ({ value })) })
      await producer.disconnect()
      return {
        open: Effect.gen(function*() {
          const context = yield* Layer.build(Kafka.layer({ brokers: kafkaBrokers(), clientId: "conformance" }))
          const source = yield* Kafka.make({ groupId, topics: [topic], sessionTimeoutMillis: 6000 }).pipe(
            Effect.provide(context)
          )
          const committedAll = source.partitions.pipe(
            Effect.repeat({
              until: (partitions) => partitions.length > 0 && partitions.every((p) => p.committed === lines.length),
              schedule: Schedule.spaced("20 millis")
            })
          )
          return { config: { source }, stopWhenCommitted: Effect.zipRight(committedAll, source.stop) }
        })
      }
    })
}

/** Opens the source and runs one pipeline over it until its end (or until all is committed). */
const runToEnd = (
  client: TributaryClientService,
  open: Effect.Effect<Opened, unknown, Scope.Scope>,
  datasetId: string | number,
  extra: Partial<PipelineConfig<any, any>> = {}
) =>
  Effect.scoped(Effect.gen(function*() {
    const opened = yield* open
    const deadLetters = yield* DeadLetter.memory
    const running = yield* Effect.fork(
      run(client, { ...opened.config, destination: { datasetId }, deadLetters, ...quick, batch: { linger: "20 millis" }, ...extra })
        .pipe(Effect.provide(NodeContext.layer))
    )
    if (opened.stopWhenCommitted !== undefined) {
      yield* Effect.raceFirst(opened.stopWhenCommitted, Effect.flatMap(Fiber.await(running), () => Effect.void))
    }
    const progress = yield* Fiber.join(running)
    return { progress, letters: yield* deadLetters.letters }
  }))

const schema = { columns: [{ id: "id", dataType: "string" as const }, { id: "n", dataType: "number" as const }], primaryKey: ["id"] }

/** Typed records: an order of skus in, one item per sku out, priced by a lookup. */
// What every source can carry: a table row has every column (NULL where a line had no key)
// and no booleans, so the test order is marked by a string and a bad sku by its spelling.
const OrderSkus = Schema.Struct({
  order: Schema.String,
  skus: Schema.Array(Schema.String.pipe(Schema.pattern(/^(s[0-9]+|missing)$/))),
  kind: Schema.optional(Schema.NullOr(Schema.Literal("test")))
})
const Item = Schema.Struct({ id: Schema.String, sku: Schema.String, price: Schema.Number })
class UnknownSku extends Data.TaggedError("UnknownSku")<{ readonly message: string }> {}
const priceOf = (sku: string) =>
  sku === "missing" ? Effect.fail(new UnknownSku({ message: `no price for ${sku}` })) : Effect.succeed(sku.length * 1.5)

/** A client whose connection pool lives as long as the test. */
const standaloneClient = (baseUrl: string) =>
  Effect.map(
    Layer.build(TributaryClient.layer({ baseUrl, apiKey: Redacted.make("k"), retry: { maxRetries: 0 } })),
    Context.get(TributaryClient)
  )

/**
 * The ordering case's sources: keyed updates (`{ id, n, seq }`, a key's versions in source
 * order) that a later run finds more of (`append`), each connector in its own way. A line is
 * one version of a row, so a table keyed by id cannot hold them: the Postgres source reads a
 * change log keyed by `seq` (one partition, in seq order) with `seq` as its since column, so
 * that a later run reads the versions appended since the last one, as `--since-column` does.
 */
interface GrowingSource {
  readonly open: Effect.Effect<Opened, unknown, Scope.Scope>
  /** Adds lines after those already there; a later run reads them. */
  readonly append: (lines: ReadonlyArray<string>) => Effect.Effect<void>
}

const growingSources = new Map<Harness, (lines: ReadonlyArray<string>) => Effect.Effect<GrowingSource>>([
  [ndjsonHarness, (lines) =>
    Effect.sync(() => {
      const path = join(mkdtempSync(join(tmpdir(), "tributary-conformance-")), "updates.ndjson")
      writeFileSync(path, lines.join("\n") + "\n")
      return {
        open: Effect.map(Checkpoint.file(`${path}.checkpoint.json`), (checkpoint) => ({
          config: { source: Ndjson.fromFile(path), checkpoint }
        })),
        append: (more) => Effect.sync(() => writeFileSync(path, more.join("\n") + "\n", { flag: "a" }))
      }
    })],
  [kafkaHarness, (lines) =>
    Effect.promise(async () => {
      const topic = `conformance-keyed-${randomUUID()}`
      const groupId = `conformance-keyed-${randomUUID()}`
      const kafka = new KafkaJs({ clientId: "conformance-setup", brokers: kafkaBrokers(), logLevel: logLevel.NOTHING })
      const admin = kafka.admin()
      await admin.connect()
      await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true })
      await admin.disconnect()
      let produced = 0
      const produce = async (values: ReadonlyArray<string>) => {
        const producer = kafka.producer()
        await producer.connect()
        await producer.send({ topic, acks: -1, messages: values.map((value) => ({ value })) })
        await producer.disconnect()
        produced += values.length
      }
      await produce(lines)
      return {
        open: Effect.gen(function*() {
          const context = yield* Layer.build(Kafka.layer({ brokers: kafkaBrokers(), clientId: "conformance" }))
          const source = yield* Kafka.make({ groupId, topics: [topic], sessionTimeoutMillis: 6000 }).pipe(Effect.provide(context))
          const committedAll = source.partitions.pipe(
            Effect.repeat({
              until: (partitions) => partitions.length > 0 && partitions.every((p) => p.committed === produced),
              schedule: Schedule.spaced("20 millis")
            })
          )
          return { config: { source }, stopWhenCommitted: Effect.zipRight(committedAll, source.stop) }
        }),
        append: (more) => Effect.promise(() => produce(more))
      }
    })],
  [postgresHarness, (lines) =>
    Effect.promise(async () => {
      const db = await testSchema()
      schemasToDrop.push(db.drop)
      await db.sql(`CREATE TABLE ${db.name}.updates (seq integer PRIMARY KEY, id text NOT NULL, n double precision NOT NULL)`)
      const insert = async (values: ReadonlyArray<string>) => {
        const rows = values.map((line) => JSON.parse(line) as { id: string; n: number; seq: number })
        await db.sql(
          `INSERT INTO ${db.name}.updates SELECT * FROM unnest($1::integer[], $2::text[], $3::double precision[])`,
          [rows.map((r) => r.seq), rows.map((r) => r.id), rows.map((r) => r.n)]
        )
      }
      await insert(lines)
      const path = join(mkdtempSync(join(tmpdir(), "tributary-conformance-")), "checkpoint.json")
      return {
        open: Effect.gen(function*() {
          const context = yield* Layer.build(Postgres.layer({ url: Redacted.make(databaseUrl()) }))
          const source = yield* Postgres.make({
            relation: { _tag: "Table", name: `${db.name}.updates` },
            key: ["seq"],
            since: "seq",
            checkpoint: { _tag: "File", path }
          }).pipe(Effect.provide(context))
          return { config: { source } }
        }),
        append: (more) => Effect.promise(() => insert(more))
      }
    })]
])

/** A retry policy that outlasts `5xx=0.3,drop=0.1` without long waits. */
const patientRetry = { maxRetries: 60, baseDelay: "5 millis", maxDelay: "50 millis" } as const

/**
 * Dead letters round-trip through replay: a plain run dead-letters a line that never parsed
 * (for Kafka: message bytes that are not JSON) and a value of the wrong type, a typed run
 * dead-letters a record its output schema cannot encode; each letter carries what a replay
 * needs, goes through the file format, is fixed (the broken text in the file, the values by a
 * transform) and replayed: every record stored exactly once, and a second replay, fresh,
 * stores nothing new.
 */
const replayRoundTrip = (harness: Harness) =>
  Effect.gen(function*() {
    const client = yield* clientFor("acme-admin")
    const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "conformance replay" }, headers: {} })
    const datasetId = (yield* client.v2.v2Datasets.create({
      payload: { name: "replayed", dataSourceId: dataSource.data.id, schema: schema.columns, primaryKey: ["id"] },
      headers: {}
    })).data.id
    const broken = `{"id":"p1","n":1`
    const plain = [...Array.from({ length: 20 }, (_, i) => JSON.stringify({ id: `a${i}`, n: i })), broken, JSON.stringify({ id: "t1", n: "seven" })]
    const typed = [...Array.from({ length: 20 }, (_, i) => JSON.stringify({ id: `b${i}`, n: i })), JSON.stringify({ id: "e1", n: -5 })]
    const first = yield* runToEnd(client, (yield* harness.create(plain)).open, datasetId)
    const records = Typed.records({
      decode: Schema.Struct({ id: Schema.String, n: Schema.Number }),
      transform: (rows) => rows,
      encode: Schema.Struct({ id: Schema.String, n: Schema.Number.pipe(Schema.nonNegative()) })
    })
    const second = yield* runToEnd(client, (yield* harness.create(typed)).open, datasetId, { records })
    expect([first.progress.accepted, second.progress.accepted]).toEqual([20, 20])
    const letters = [...first.letters, ...second.letters]
    expect(letters.map((l) => l.stage).sort()).toEqual(
      harness.badElementCodes === undefined ? ["encode", "source", "validate"] : ["encode", "source", "source"]
    )
    // What a replay needs: where it came from (source, run, position), where it was going, why,
    // and what was read: the raw text when it never parsed, the record otherwise.
    for (const letter of letters) {
      expect(letter.source, JSON.stringify(letter)).toMatch(/^(ndjson|kafka|postgres):/)
      expect(letter.run, JSON.stringify(letter)).toBeTypeOf("string")
      expect(letter.dataset).toBe(String(datasetId))
      expect(letter.reason.code).not.toBe("")
      expect(letter.position.offset).toBeTypeOf("number")
      if (letter.record === undefined) expect(letter.raw, JSON.stringify(letter)).toBeTruthy()
    }
    // Through the file format, the broken text fixed in the file as a person would.
    const stored = letters.map((letter) => {
      const read = Either.getOrThrow(Replay.decodeLetter(DeadLetter.encodeLetter(letter, "2026-11-26T00:00:00.000Z")))
      return read.raw === broken ? { ...read, raw: `${broken}}` } : read
    })
    const fix: Replay.Transform = (record) => (typeof record.n === "number" && record.n >= 0 ? record : { ...record, n: 0 })
    const replayOnce = Effect.gen(function*() {
      const again = yield* DeadLetter.memory
      const progress = yield* Replay.replay(client, {
        letters: Stream.fromIterable(stored),
        description: `${harness.name} letters`,
        transform: fix,
        checkpoint: yield* Checkpoint.memory(),
        deadLetters: again,
        ...quick
      })
      return { progress, again: yield* again.letters }
    })
    const replayed = yield* replayOnce
    expect(replayed.again).toEqual([])
    expect([replayed.progress.read, replayed.progress.accepted, replayed.progress.replayed]).toEqual([3, 3, 0])
    const rows = (yield* client.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { pageSize: 1000 } })).data.items
    expect(rows).toHaveLength(43)
    expect(new Set(rows.map((row) => row.id)).size).toBe(43)
    expect(rows.filter((row) => !/^[ab][0-9]+$/.test(String(row.id))).map((row) => row.n)).toEqual(expect.arrayContaining([0, 0]))
    // Again, as a fresh run: the same batches under the same keys, answered from the first.
    const twice = yield* replayOnce
    expect([twice.progress.accepted, twice.progress.replayed]).toEqual([3, 3])
    expect((yield* client.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { pageSize: 1000 } })).data.items).toHaveLength(43)
  })

layer(serverLayer(), { excludeTestServices: true })("source conformance: NDJSON stdin", (it) => {
  it.scoped("dead letters of every kind round-trip through replay: fixed, stored exactly once; replaying again stores nothing", () =>
    replayRoundTrip(stdinHarness))
})

for (const harness of [ndjsonHarness, kafkaHarness, postgresHarness]) {
  layer(serverLayer(), { excludeTestServices: true })(`source conformance: ${harness.name}`, (it) => {
    const dataset = (primaryKey: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const client = yield* clientFor("acme-admin")
        const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "conformance" }, headers: {} })
        const created = yield* client.v2.v2Datasets.create({
          payload: { name: "conformance", dataSourceId: dataSource.data.id, schema: schema.columns, primaryKey },
          headers: {}
        })
        return { client, datasetId: created.data.id }
      })
    const storedIds = (client: TributaryClientService, id: string | number) =>
      Effect.map(
        client.v2.v2Datasets.getData({ path: { id }, urlParams: { pageSize: 1000 } }),
        (answer) => answer.data.items.map((row) => row.id as string)
      )

    it.scoped("dead letters of every kind round-trip through replay: fixed, stored exactly once; replaying again stores nothing", () =>
      replayRoundTrip(harness), 60_000)

    it.scoped("stores every record once, dead-letters bad elements naming where they were, and a second run sends nothing", () =>
      Effect.gen(function*() {
        const { client, datasetId } = yield* dataset([])
        const lines = [
          ...Array.from({ length: 250 }, (_, i) => JSON.stringify({ id: `r${i}`, n: i })),
          "{not json",
          "[1,2]",
          JSON.stringify({ id: "bad", n: "not a number" })
        ]
        const source = yield* harness.create(lines)
        const first = yield* runToEnd(client, source.open, datasetId)
        expect(first.progress.accepted).toBe(250)
        expect(first.letters.map((l) => l.reason.code).sort()).toEqual(
          harness.badElementCodes ?? ["invalid_json", "invalid_type", "not_an_object"]
        )
        for (const letter of first.letters) expect(letter.position.offset).toBeGreaterThanOrEqual(250)
        const ids = yield* storedIds(client, datasetId)
        expect(ids).toHaveLength(250)
        expect(new Set(ids).size).toBe(250)

        const second = yield* runToEnd(client, source.open, datasetId)
        expect(second.progress.read).toBe(0)
        expect(yield* storedIds(client, datasetId)).toHaveLength(250)
      }))

    it.scoped("checkpoint capture: A, B, D delivered and C, E failed -> a restart sends C, D, E again, under the same keys, and nothing else", () =>
      Effect.gen(function*() {
        const source = yield* harness.create(["A", "B", "C", "D", "E"].map((id, n) => JSON.stringify({ id, n })))
        const idsOf = (body: string) => (JSON.parse(body).records as Array<{ id: string }>).map((r) => r.id)
        const server = (failing: ReadonlyArray<string>) =>
          scriptedServer((arrival) => (_a, res) => {
            if (arrival.method === "POST") {
              if (idsOf(arrival.body).some((id) => failing.includes(id))) {
                // Late, so that A, B and D are done first.
                setTimeout(() => json(res, 500, { requestId: "r", status: "error", errors: [{ message: "boom", type: "server" }] }), 300)
                return
              }
              return json(res, 200, { requestId: "r", status: "success", data: { ingestionId: randomUUID(), status: "queued" } })
            }
            return json(res, 200, {
              requestId: "r",
              status: "success",
              data: {
                status: "success",
                summary: { ingestion: { receivedRecordCount: 1, appendedRecordCount: 1, overwrittenRecordCount: 0, rejectedRecordCount: 0 } },
                errors: null
              }
            })
          })
        // Five requests at once from the start (an adaptive limit would start at one, behind C).
        const options = { schema, concurrency: { fixed: 5 }, batch: { max: 1, linger: "20 millis" } } as const
        const datasetId = "00000000-0000-4000-8000-000000000000"

        const failing = yield* server(["C", "E"])
        const failed = yield* Effect.either(runToEnd(yield* standaloneClient(failing.url), source.open, datasetId, options))
        expect(failed._tag).toBe("Left")
        const posts = (arrivals: typeof failing.arrivals) => arrivals.filter((a) => a.method === "POST")
        expect(posts(failing.arrivals).flatMap((a) => idsOf(a.body)).sort()).toEqual(["A", "B", "C", "D", "E"])

        const healthy = yield* server([])
        const second = yield* runToEnd(yield* standaloneClient(healthy.url), source.open, datasetId, options)
        expect(posts(healthy.arrivals).flatMap((a) => idsOf(a.body)).sort()).toEqual(["C", "D", "E"])
        expect(second.progress.accepted).toBe(3)
        const keyOf = new Map(posts(failing.arrivals).map((a) => [idsOf(a.body)[0], a.headers["idempotency-key"]]))
        for (const arrival of posts(healthy.arrivals)) expect(arrival.headers["idempotency-key"]).toBe(keyOf.get(idsOf(arrival.body)[0]))
      }))

    it.scoped("typed records: decoded, filtered, exploded and enriched; failures dead-lettered with their paths; all committed; a restart sends nothing", () =>
      Effect.gen(function*() {
        const client = yield* clientFor("acme-admin")
        const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "conformance typed" }, headers: {} })
        const datasetId = yield* Typed.createDataset(client, Item, { dataSourceId: dataSource.data.id, name: "items", primaryKey: ["id"] })
        const lines = [
          ...Array.from({ length: 60 }, (_, i) => JSON.stringify({ order: `o${i}`, skus: Array.from({ length: (i % 4) }, (_, j) => `s${j}`) })),
          JSON.stringify({ order: "test", skus: ["s1"], kind: "test" }), // 60: filtered
          JSON.stringify({ order: "bad", skus: ["s1", 2] }), // 61: decode fails at skus[1]
          JSON.stringify({ order: "lookup", skus: ["s1", "missing", "s2"] }), // 62: the lookup fails for its second child
          "{not json" // 63
        ]
        const expected = [
          ...Array.from({ length: 60 }, (_, i) => Array.from({ length: i % 4 }, (_, j) => `o${i}/s${j}`)).flat(),
          "lookup/s1",
          "lookup/s2"
        ].sort()
        const source = yield* harness.create(lines)
        const records = Typed.records({
          decode: OrderSkus,
          transform: (orders) =>
            orders.pipe(
              Typed.filter((o) => o.kind !== "test"),
              Typed.flatMap((o) => o.skus.map((sku) => ({ order: o.order, sku }))),
              Typed.mapEffect(({ order, sku }) => Effect.map(priceOf(sku), (price) => ({ id: `${order}/${sku}`, sku, price })))
            ),
          encode: Item
        })
        const first = yield* runToEnd(client, source.open, datasetId, { records, batch: { max: 7, linger: "20 millis" } })
        expect(yield* storedIds(client, datasetId).pipe(Effect.map((ids) => ids.sort()))).toEqual(expected)
        expect(first.progress.accepted).toBe(expected.length)
        const letters = [...first.letters].sort((a, b) => a.position.offset - b.position.offset)
        expect(letters.map((l) => [l.position.offset - letters[0]!.position.offset, l.stage, l.reason.code, l.reason.field])).toEqual([
          [0, "decode", "decode_failed", "skus[1]"],
          [1, "transform", "UnknownSku", null],
          // A line that is not JSON: a source of JSON text says so; a table row holds n = NaN.
          harness.badElementCodes === undefined ? [2, "source", "invalid_json", null] : [2, "source", harness.badElementCodes[0], "n"]
        ])
        expect(letters[1]!.position.child).toEqual({ index: 1, of: 3 })
        // Orders without skus (i % 4 === 0) and the test order were dropped, and committed.
        expect(first.progress.dropped).toBe(16)

        const second = yield* runToEnd(client, source.open, datasetId, { records })
        expect(second.progress.read).toBe(0)
      }))

    it.scoped("resumes after a crash in the middle of a run: every record stored exactly once", () =>
      Effect.gen(function*() {
        const { client, datasetId } = yield* dataset([])
        const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: `c${i}`, n: i }))
        const source = yield* harness.create(lines)
        // The crash: the run is interrupted once some batches are committed, others in flight.
        yield* Effect.scoped(Effect.gen(function*() {
          const committed = yield* Deferred.make<void>()
          const running = yield* Effect.fork(runToEnd(client, source.open, datasetId, {
            schema,
            concurrency: 4,
            onEvent: (event) => (event._tag === "Committed" ? Effect.asVoid(Deferred.succeed(committed, undefined)) : Effect.void)
          }))
          yield* client.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { pageSize: 1 } }).pipe(
            Effect.repeat({ until: (answer) => answer.data.pagination.totalItems >= 500, schedule: Schedule.spaced("10 millis") })
          )
          // Sends run ahead of their ingestions' ends: wait until something is committed too.
          yield* Deferred.await(committed)
          yield* Fiber.interrupt(running)
        }))
        const second = yield* runToEnd(client, source.open, datasetId, { schema })
        expect(second.progress.read).toBeLessThan(3000)
        const ids = yield* Effect.map(
          client.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { pageSize: 1000, page: 0 } }),
          (answer) => answer.data.pagination.totalItems
        )
        expect(ids).toBe(3000)
        const all = [] as Array<string>
        for (let page = 0; page < 3; page++) {
          const answer = yield* client.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { pageSize: 1000, page } })
          all.push(...answer.data.items.map((row) => row.id as string))
        }
        expect(new Set(all).size).toBe(3000)
      }))

    it.scoped("keyed updates through 5xx and dropped answers, a crash and a resume, then a later run: every key once, at its last version", () =>
      Effect.gen(function*() {
        const growing = growingSources.get(harness)
        if (growing === undefined) return yield* Effect.dieMessage(`no keyed-updates source for ${harness.name} in growingSources`)
        // A server of its own: its faults hit every API request, the test's own reads too.
        const faulty = yield* Layer.build(serverLayer({ faults: { serverErrorRate: 0.3, dropRate: 0.1 } }))
        const client = yield* Effect.provide(clientFor("acme-admin", patientRetry), faulty)
        const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "conformance keyed" }, headers: {} })
        const columns = [...schema.columns, { id: "seq", dataType: "number" as const }]
        const datasetId = (yield* client.v2.v2Datasets.create({
          payload: { name: "keyed", dataSourceId: dataSource.data.id, schema: columns, primaryKey: ["id"] },
          headers: {}
        })).data.id
        // 150 keys x 30 versions, version after version: every batch shares keys with the next ones.
        const keys = 150
        const lines = Array.from({ length: keys * 30 }, (_, seq) => JSON.stringify({ id: `k${seq % keys}`, n: Math.floor(seq / keys), seq }))
        const firstVersions = 20
        const first = lines.slice(0, keys * firstVersions)
        const later = lines.slice(keys * firstVersions)
        const options = { concurrency: { fixed: 8 }, batch: { max: 50, linger: "20 millis" } } as const
        const versions = Effect.map(
          client.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { pageSize: 1000 } }),
          (answer) => answer.data.items.map((row) => ({ id: row.id as string, n: row.n as number }))
        )
        const stale = (rows: ReadonlyArray<{ id: string; n: number }>, last: number) =>
          rows.filter((row) => row.n !== last).map((row) => `${row.id}@${row.n}`)

        const source = yield* growing(first)
        // The crash: the run is interrupted once ten batches are done and a commit was written
        // after them, with later batches in flight or held back behind them.
        yield* Effect.scoped(Effect.gen(function*() {
          const done = yield* Deferred.make<void>()
          let batchesDone = 0
          const running = yield* Effect.fork(runToEnd(client, source.open, datasetId, {
            ...options,
            onEvent: (event) => {
              if (event._tag === "BatchDone") batchesDone++
              return event._tag === "Committed" && batchesDone >= 10 ? Effect.asVoid(Deferred.succeed(done, undefined)) : Effect.void
            }
          }))
          const endedFirst = Effect.flatMap(Fiber.join(running), () => Effect.dieMessage("the run ended before the crash"))
          yield* Effect.raceFirst(Deferred.await(done), endedFirst)
          yield* Fiber.interrupt(running)
        }))
        const resumed = yield* runToEnd(client, source.open, datasetId, options)
        expect(resumed.letters).toEqual([])
        expect(resumed.progress.read).toBeGreaterThan(0)
        expect(resumed.progress.read).toBeLessThan(first.length)
        const afterResume = yield* versions
        expect(afterResume.map((row) => row.id).sort()).toEqual(Array.from({ length: keys }, (_, k) => `k${k}`).sort())
        expect(stale(afterResume, firstVersions - 1)).toEqual([])

        // Later versions, read by a later run.
        yield* source.append(later)
        const next = yield* runToEnd(client, source.open, datasetId, options)
        expect(next.progress.read).toBe(later.length)
        expect(next.letters).toEqual([])
        const final = yield* versions
        expect(final).toHaveLength(keys)
        expect(new Set(final.map((row) => row.id)).size).toBe(keys)
        expect(stale(final, 29)).toEqual([])
      }), 60_000)
  })
}
