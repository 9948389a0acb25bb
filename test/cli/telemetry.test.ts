/**
 * `--otlp-endpoint` on the one-shot commands, as a user runs them: the built `tributary
 * backfill` (a real Postgres table) and `tributary ingest` (an NDJSON file) into a reference
 * server, exporting to an OTLP/HTTP receiver on loopback. What arrives is the sink's metric
 * set, with the run's own figures: records read, stored and dead-lettered, the concurrency
 * limit, batches and pending ingestions, labelled with the dataset and the source.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, startServe, type RunningServer } from "../support/cli.js"
import { apiData } from "../support/crash.js"
import { latest, receiver, type Receiver } from "../support/otlp.js"
import { killAllBackfills, runBackfill, testSchema } from "../support/postgres.js"

const apiKey = "telemetry-test-key"
let server: RunningServer
let db: Awaited<ReturnType<typeof testSchema>>
let dir: string
let otlp: Receiver
let dataSourceId: number

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tributary-otlp-"))
  server = await startServe(["--port", "0", "--api-key", apiKey])
  db = await testSchema()
  otlp = await receiver()
  dataSourceId = (await apiData(server.url, apiKey, "POST", "/v2/data-sources", { name: "otlp" })).id
})

afterAll(async () => {
  killAllBackfills()
  await server?.stop()
  await db?.drop()
  otlp?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const dataset = async (name: string) =>
  String((await apiData(server.url, apiKey, "POST", "/v2/datasets", {
    name,
    dataSourceId,
    schema: [{ id: "id", dataType: "number" }, { id: "amount", dataType: "number" }],
    primaryKey: ["id"]
  })).id)

/** The gauges and counters every one-shot run exports (the sink's Prometheus set). */
const runMetrics = [
  "tributary.records.read",
  "tributary.records.stored",
  "tributary.records.dead_lettered",
  "tributary.columns.added",
  "tributary.values.discarded",
  "tributary.batches.in_flight",
  "tributary.batches.waiting",
  "tributary.ingestions.pending",
  "tributary.concurrency.limit",
  "tributary.service.outage",
  "tributary.oldest_unacked.ms",
  "tributary.committed.position"
]

describe("--otlp-endpoint: the run's metrics reach the receiver", () => {
  it("tributary backfill exports the sink's metric set with its figures, labelled with its dataset and source", async () => {
    const t = `${db.name}.orders`
    await db.sql(`CREATE TABLE ${t} (id bigint PRIMARY KEY, amount double precision)`)
    await db.sql(`INSERT INTO ${t} SELECT i, i * 1.5 FROM generate_series(1, 300) i`)
    await db.sql(`UPDATE ${t} SET amount = 'NaN' WHERE id IN (7, 70)`)
    const id = await dataset("backfilled")
    const result = await runBackfill([
      "--table", t, "--key", "id", "--dataset", id, "--checkpoint", join(dir, "b.checkpoint.json"), "--dead-letter", join(dir, "b.dead.ndjson"),
      "--api-url", server.url, "--api-key", apiKey, "--otlp-endpoint", otlp.url
    ])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toContain("read 300 rows: 298 stored")
    const points = otlp.points.filter((p) => p.attributes["dataset"] === id)
    expect(new Set(points.map((p) => p.name))).toEqual(new Set(runMetrics))
    expect(String(points[0]!.attributes["source"])).toMatch(/^postgres:/)
    expect(latest(points, "tributary.records.read")).toBe(300)
    expect(latest(points, "tributary.records.stored")).toBe(298)
    expect(latest(points, "tributary.records.dead_lettered")).toBe(2)
    expect(latest(points, "tributary.concurrency.limit")).toBeGreaterThan(0)
    expect(latest(points, "tributary.batches.in_flight")).toBe(0)
    expect(latest(points, "tributary.service.outage")).toBe(0)
  }, 60_000)

  it("tributary ingest exports the same set", async () => {
    const id = await dataset("ingested")
    const input = join(dir, "orders.ndjson")
    writeFileSync(input, Array.from({ length: 250 }, (_, i) => JSON.stringify({ id: i + 1, amount: i === 9 ? "ten" : i })).join("\n") + "\n")
    const result = await runCli([
      "ingest", input, "--dataset", id, "--checkpoint", join(dir, "i.checkpoint.json"), "--dead-letter", join(dir, "i.dead.ndjson"),
      "--api-url", server.url, "--api-key", apiKey, "--otlp-endpoint", otlp.url
    ], 60_000)
    expect(result.code, result.stderr).toBe(0)
    const points = otlp.points.filter((p) => p.attributes["dataset"] === id)
    expect(new Set(points.map((p) => p.name))).toEqual(new Set(runMetrics))
    expect(latest(points, "tributary.records.read")).toBe(250)
    expect(latest(points, "tributary.records.stored")).toBe(249)
    expect(latest(points, "tributary.records.dead_lettered")).toBe(1)
    expect(latest(points, "tributary.committed.position", { partition: "0" })).toBe(250)
  }, 60_000)
})
