import { execFile, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { promisify } from "node:util"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { isIsoDateTime } from "../src/records.js"
import { createTopic, kafka, waitFor } from "./support/kafka.js"
import { clientFor, serverLayer, ServerUrl } from "./support/server.js"
import { testSchema } from "./support/postgres.js"
import { databaseUrl, kafkaBrokers } from "./support/services.js"

const run = promisify(execFile)

/** Runs an example as a user would (`npx tsx examples/NAME.ts`) against the server. */
const runExample = (name: string, url: string, apiKey: string, args: ReadonlyArray<string> = [], env: Record<string, string> = {}) =>
  Effect.promise(() =>
    run(process.execPath, ["--import", "tsx", `examples/${name}.ts`, ...args], {
      env: { ...process.env, TRIBUTARY_API_URL: url, TRIBUTARY_API_KEY: apiKey, ...env },
      timeout: 60_000
    })
  )

layer(serverLayer(), { excludeTestServices: true })("examples run against the reference server", (it) => {
  it.effect("v1-client creates, ingests and reports the metrics", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { stdout } = yield* runExample("v1-client", url, "acme-admin")
      expect(stdout).toMatch(/ingestion [0-9a-f-]{36}: success/)
      expect(stdout).toContain("appendedRecordsCount: 2")
    }), 60_000)

  it.effect("ndjson-job sends a file through the pipeline and reports", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "example" }, headers: {} })
      const dataset = yield* client.v2.v2Datasets.create({
        payload: { name: "lines", dataSourceId: dataSource.data.id, schema: [{ id: "n", dataType: "number" }], primaryKey: ["n"] },
        headers: {}
      })
      const file = join(mkdtempSync(join(tmpdir(), "tributary-example-")), "lines.ndjson")
      writeFileSync(file, "{\"n\":1}\n{\"n\":\"two\"}\n{\"n\":3}\n")
      const { stdout } = yield* runExample("ndjson-job", url, "acme-admin", [file, String(dataset.data.id)])
      expect(stdout).toContain("stored 2 of 3 records; 1 dead letters")
    }), 60_000)

  it.effect("typed-etl creates a dataset from its output schema, explodes orders into lines, enriches them, and resumes", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "example" }, headers: {} })
      const file = join(mkdtempSync(join(tmpdir(), "tributary-example-")), "orders.ndjson")
      writeFileSync(file, readFileSync("examples/data/orders.ndjson", "utf8") + [
        JSON.stringify({ orderId: "X-1", placedAt: "2026-11-02T10:00:00Z", country: "BR", amount: 9, items: 2, tags: [] }),
        JSON.stringify({ orderId: "X-2", placedAt: "2026-11-02T10:00:00Z", country: "FR", amount: 9, items: 0, tags: [] })
      ].join("\n") + "\n")
      const expected = readFileSync("examples/data/orders.ndjson", "utf8").split("\n").flatMap((line) => {
        try {
          const order = JSON.parse(line)
          return typeof order.orderId === "string" && typeof order.amount === "number" && isIsoDateTime(order.placedAt)
            ? [order.items as number]
            : []
        } catch {
          return []
        }
      }).reduce((a, b) => a + b, 0)
      const { stdout } = yield* runExample("typed-etl", url, "acme-admin", [file, "--create", String(dataSource.data.id)])
      const datasetId = /created dataset (\S+)/.exec(stdout)?.[1]
      expect(datasetId).toBeDefined()
      // The sample's bad lines, and both lines of X-1 (no region for BR); X-2 has no lines.
      expect(stdout).toContain(`stored ${expected} order lines; 7 dead letters, 1 orders without lines`)
      // A day that does not exist is refused where the order is decoded, not stored as March 2.
      const letters = readFileSync(`${file}.dead-letters.ndjson`, "utf8").trim().split("\n").map((line) => JSON.parse(line))
      expect(letters.find((letter) => letter.record?.orderId === "O-BAD-5")).toMatchObject({
        stage: "decode",
        reason: { code: "decode_failed", field: "placedAt", message: expect.stringContaining("\"2026-02-30\"") }
      })
      const rows = yield* client.v2.v2Datasets.getData({ path: { id: Number(datasetId) }, urlParams: { pageSize: 1 } })
      expect(rows.data.pagination.totalItems).toBe(expected)
      expect(Object.keys(rows.data.items[0]!).sort()).toEqual(["amount", "line", "lineId", "orderId", "placedAt", "region", "tags"])
      const again = yield* runExample("typed-etl", url, "acme-admin", [file, datasetId!])
      expect(again.stdout).toContain("stored 0 order lines; 0 dead letters, 0 orders without lines")
    }), 60_000)

  it.effect("kafka-sink sinks a topic with key and timestamp columns until SIGTERM, then commits and exits 0", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "example" }, headers: {} })
      const dataset = yield* client.v2.v2Datasets.create({
        payload: {
          name: "events",
          dataSourceId: dataSource.data.id,
          schema: [
            { id: "n", dataType: "number" },
            { id: "key", dataType: "string" },
            { id: "producedAt", dataType: "datetime" }
          ]
        },
        headers: {}
      })
      const topic = `example-${randomUUID()}`
      const deadLetters = join(mkdtempSync(join(tmpdir(), "tributary-example-")), "dead-letters.ndjson")
      const rows = yield* Effect.promise(async () => {
        await createTopic(topic, 2)
        const producer = kafka().producer()
        await producer.connect()
        const messages = Array.from({ length: 50 }, (_, n) => ({ key: `k${n}`, value: JSON.stringify({ n }) }))
        await producer.send({ topic, acks: -1, messages: [...messages, { key: "bad", value: "not json" }] })
        await producer.disconnect()
        const child = spawn(
          process.execPath,
          ["--import", "tsx", "examples/kafka-sink.ts", kafkaBrokers().join(","), topic, `example-${topic}`, String(dataset.data.id), deadLetters],
          { env: { ...process.env, TRIBUTARY_API_URL: url, TRIBUTARY_API_KEY: "acme-admin" } }
        )
        let output = ""
        child.stdout.on("data", (chunk) => (output += chunk))
        child.stderr.on("data", (chunk) => (output += chunk))
        const exited = new Promise<number | null>((resolve) => child.on("close", resolve))
        const stored = async () => {
          const answer = await fetch(`${url}/v2/datasets/${dataset.data.id}/data?pageSize=100`, { headers: { "x-api-key": "acme-admin" } })
          return ((await answer.json()) as { data: { items: Array<Record<string, unknown>> } }).data.items
        }
        await waitFor(async () => (await stored()).length === 50 && output.includes("committed"), 60_000, () => output)
        child.kill("SIGTERM")
        expect(await exited, output).toBe(0)
        expect(output).toContain("stopped: everything delivered is committed")
        expect(readFileSync(deadLetters, "utf8")).toContain(`topic ${topic} partition`)
        return stored()
      })
      expect(rows.find((row) => row["n"] === 7)).toMatchObject({ key: "k7", producedAt: expect.stringMatching(/^\d{4}-/) })
    }), 90_000)

  it.effect("postgres-backfill makes a dataset from a query's columns, fills it, and a later run sends only the rows changed", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "example" }, headers: {} })
      const db = yield* Effect.acquireRelease(Effect.promise(() => testSchema()), (db) => Effect.promise(() => db.drop()))
      const table = `${db.name}.orders`
      yield* Effect.promise(async () => {
        await db.sql(`CREATE TABLE ${table} (id int PRIMARY KEY, name text, amount numeric(10,2), updated_at timestamptz NOT NULL)`)
        await db.sql(`INSERT INTO ${table} SELECT i, 'order ' || i, i * 2.5, timestamptz '2024-01-01' + i * interval '1 minute'
          FROM generate_series(1, 500) i`)
      })
      const checkpoint = join(mkdtempSync(join(tmpdir(), "tributary-example-")), "orders.checkpoint.json")
      const env = { DATABASE_URL: databaseUrl() }
      const first = yield* runExample("postgres-backfill", url, "acme-admin", [table, checkpoint, String(dataSource.data.id)], env)
      expect(first.stdout).toContain("stored 500 of 500 rows; 0 dead letters")
      const datasetId = /dataset (\S+)/.exec(first.stdout)![1]!
      yield* Effect.promise(() => db.sql(`UPDATE ${table} SET amount = 0, updated_at = now() WHERE id <= 10`))
      const second = yield* runExample("postgres-backfill", url, "acme-admin", [table, checkpoint, "--dataset", datasetId], env)
      expect(second.stdout).toContain("stored 10 of 10 rows")
      const rows = yield* client.v2.v2Datasets.getData({ path: { id: Number(datasetId) }, urlParams: { pageSize: 1000 } })
      expect(rows.data.pagination.totalItems).toBe(500)
      expect(rows.data.items.filter((row) => row["amount"] === 0)).toHaveLength(10)
    }).pipe(Effect.scoped), 90_000)
})
