/**
 * The plain sink and backfill on the real Kafka broker and the real Postgres, into a real
 * reference server on loopback: the sink drains and resolves when its signal aborts, with its
 * offsets committed; the backfill keeps the CLI's checkpoint, so a second run sends nothing.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient, type Tributary } from "../../src/plain/index.js"
import { createTopic, groupLag, kafka } from "../support/kafka.js"
import { testSchema } from "../support/postgres.js"
import { serverLayer, ServerUrl } from "../support/server.js"
import { databaseUrl, kafkaBrokers } from "../support/services.js"

const server = ManagedRuntime.make(serverLayer())
let tributary: Tributary
const dir = mkdtempSync(join(tmpdir(), "tributary-plain-connectors-"))

beforeAll(async () => {
  tributary = createClient({ baseUrl: await server.runPromise(ServerUrl), apiKey: "acme-admin" })
})
afterAll(async () => {
  await tributary.close()
  await server.dispose()
})

const dataset = async (schema: ReadonlyArray<{ readonly id: string; readonly dataType: "string" | "number" }>, primaryKey: ReadonlyArray<string>) => {
  const source = await tributary.v2.v2DataSources.create({ payload: { name: "plain connectors" } })
  const created = await tributary.v2.v2Datasets.create({
    payload: { name: `plain ${randomUUID()}`, dataSourceId: source.data.id, schema: [...schema], primaryKey: [...primaryKey] }
  })
  return created.data.id
}

const rowCount = async (id: number) => (await tributary.v2.v2Datasets.get({ path: { id } })).data.rowCount

describe("plain sink and backfill (real Kafka, real Postgres)", () => {
  it("the sink moves a topic into a dataset until its signal aborts, then drains, commits and resolves", async () => {
    const topic = `plain-${randomUUID()}`
    const group = `plain-${randomUUID()}`
    await createTopic(topic, 2)
    const producer = kafka().producer()
    await producer.connect()
    await producer.send({
      topic,
      messages: [
        ...Array.from({ length: 300 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ id: `m${i}`, n: i }) })),
        { key: "bad", value: "not json" }
      ]
    })
    await producer.disconnect()
    const id = await dataset([{ id: "id", dataType: "string" }, { id: "n", dataType: "number" }], ["id"])
    const controller = new AbortController()
    const letters: Array<unknown> = []
    let committed = 0
    const final = await tributary.sink({
      brokers: kafkaBrokers(),
      topics: topic,
      group,
      dataset: id,
      sessionTimeoutMillis: 6000,
      deadLetters: (batch) => void letters.push(...batch),
      signal: controller.signal,
      onEvent: (event) => {
        // Everything is in once both partitions committed through their ends (301 messages).
        if (event._tag === "Committed") committed = event.position.offset
        if (event._tag === "Progress" && event.progress.accepted + event.progress.deadLettered === 301) controller.abort()
      },
      progressIntervalMillis: 100
    })
    expect(committed).toBeGreaterThan(0)
    expect(final.accepted).toBe(300)
    expect(letters).toHaveLength(1)
    expect(await rowCount(id)).toBe(300)
    expect(await groupLag(group, topic)).toBe(0)
  }, 90_000)

  it("the backfill sends a table once; run again with the same checkpoint, it has nothing left to send", async () => {
    const schema = await testSchema()
    try {
      await schema.sql(`CREATE TABLE ${schema.name}.orders (id integer PRIMARY KEY, amount numeric)`)
      await schema.sql(`INSERT INTO ${schema.name}.orders SELECT i, i * 1.5 FROM generate_series(1, 450) i`)
      const id = await dataset([{ id: "id", dataType: "number" }, { id: "amount", dataType: "number" }], ["id"])
      const options = {
        databaseUrl: databaseUrl(),
        table: `${schema.name}.orders`,
        key: "id",
        dataset: id,
        partitions: 2,
        checkpoint: join(dir, "backfill.checkpoint.json"),
        deadLetters: join(dir, "backfill.dead-letters.ndjson")
      }
      const first = await tributary.backfill(options)
      expect(first.accepted).toBe(450)
      expect(await rowCount(id)).toBe(450)
      const messages: Array<string> = []
      const second = await tributary.backfill({ ...options, onMessage: (line) => void messages.push(line) })
      expect(second.read).toBe(0)
    } finally {
      await schema.drop()
    }
  }, 90_000)
})
