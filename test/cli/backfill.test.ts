/**
 * `tributary backfill` as a user runs it: a real Postgres table or query, the built command as
 * a child process, a reference server on loopback.
 *
 * The cases run side by side, each with tables, checkpoints and datasets of its own: they
 * mostly wait on their child processes.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServe, type RunningServer } from "../support/cli.js"
import { apiData, compareIds, readAllRows, readDeadLetters } from "../support/crash.js"
import { backfillDone, describeBackfill } from "../../src/cli/backfill.js"
import { bar } from "../../src/cli/progress.js"
import { emptyProgress } from "../../src/pipeline/events.js"
import { killAllBackfills, runBackfill, startBackfill, testSchema } from "../support/postgres.js"
import { databaseUrl } from "../support/services.js"

const apiKey = "backfill-test-key"
let server: RunningServer
let db: Awaited<ReturnType<typeof testSchema>>
let dir: string
let dataSourceId: number

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tributary-backfill-"))
  server = await startServe(["--port", "0", "--api-key", apiKey])
  db = await testSchema()
  dataSourceId = (await apiData(server.url, apiKey, "POST", "/v2/data-sources", { name: "backfill" })).id
})

afterAll(async () => {
  killAllBackfills()
  await server?.stop()
  await db?.drop()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const common = () => ["--api-url", server.url, "--api-key", apiKey]
const files = (name: string) => ["--checkpoint", join(dir, `${name}.checkpoint.json`), "--dead-letter", join(dir, `${name}.dead.ndjson`)]

const dataset = async (name: string, schema: ReadonlyArray<{ id: string; dataType: string }>, primaryKey?: ReadonlyArray<string>) =>
  String((await apiData(server.url, apiKey, "POST", "/v2/datasets", { name, dataSourceId, schema, ...(primaryKey ? { primaryKey } : {}) })).id)

describe.concurrent("tributary backfill", () => {
  it("--create-dataset makes the dataset from the result's columns with the key as primary key, prints its id, and fills it in 4 partitions", async () => {
    const t = `${db.name}.mixed`
    await db.sql(`CREATE TYPE ${db.name}.mood AS ENUM ('calm', 'busy')`)
    await db.sql(`CREATE TABLE ${t} (id bigint PRIMARY KEY, label varchar(20), mood ${db.name}.mood, amount numeric(12,2),
      ratio double precision, at timestamptz, day date, tags text[], active boolean)`)
    await db.sql(`INSERT INTO ${t} SELECT i, 'row ' || i, CASE WHEN i % 2 = 0 THEN 'calm' ELSE 'busy' END::${db.name}.mood,
      i * 1.25, i / 4.0, timestamptz '2024-01-01T00:00:00Z' + i * interval '1 minute', date '2024-01-01' + i,
      ARRAY['t' || (i % 3)], i % 2 = 0 FROM generate_series(1, 1000) i`)
    await db.sql(`UPDATE ${t} SET ratio = 'NaN' WHERE id = 17`)
    await db.sql(`UPDATE ${t} SET at = 'infinity' WHERE id = 503`)
    const result = await runBackfill([
      "--table", t, "--key", "id", "--partitions", "4", "--create-dataset", "mixed", "--data-source", String(dataSourceId),
      ...files("mixed"), ...common()
    ])
    expect(result.code, result.stderr).toBe(0)
    const id = /created dataset (\S+)/.exec(result.stdout)?.[1]
    expect(id, result.stdout).toBeDefined()
    const schema = await apiData(server.url, apiKey, "GET", `/v2/datasets/${id}/schema`)
    expect(schema.items.map((c: { id: string; dataType: string }) => [c.id, c.dataType])).toEqual([
      ["id", "number"], ["label", "string"], ["mood", "string"], ["amount", "number"], ["ratio", "number"],
      ["at", "datetime"], ["day", "datetime"], ["tags", "string"], ["active", "string"]
    ])
    expect(schema.primaryKey).toEqual(["id"])
    const rows = await readAllRows(server.url, apiKey, id!)
    expect(rows).toHaveLength(998)
    const row2 = rows.find((r) => r["id"] === 2)!
    expect(row2).toMatchObject({ label: "row 2", mood: "calm", amount: 2.5, ratio: 0.5, day: "2024-01-03", tags: ["t2"], active: "true" })
    expect(result.stdout).toContain("read 1000 rows: 998 stored, 0 rejected by the service, 2 dead-lettered in total")
    const { letters } = readDeadLetters(join(dir, "mixed.dead.ndjson"))
    expect(letters.map((l: any) => [l.reason.code, l.reason.field, l.position.resume.key]).sort()).toEqual([
      ["not_a_number", "ratio", ["17"]],
      ["unrepresentable_datetime", "at", ["503"]]
    ])
    expect((letters[0] as any).reason.message).toMatch(/row \(id\)=\((17|503)\)/)
    // Done: the same command sends nothing more.
    const again = await runBackfill(["--table", t, "--key", "id", "--partitions", "4", "--dataset", id!, ...files("mixed"), ...common()])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain("read 0 rows")
  }, 60_000)

  it("a query with a composite key, split by sampled quantiles, stores every row once", async () => {
    const t = `${db.name}.pairs`
    await db.sql(`CREATE TABLE ${t} (region text, n int, value double precision, PRIMARY KEY (region, n))`)
    await db.sql(`INSERT INTO ${t} SELECT r, n, n * 0.5 FROM unnest(ARRAY['eu','us','apac']) r, generate_series(1, 700) n`)
    const id = await dataset("pairs", [{ id: "region", dataType: "string" }, { id: "n", dataType: "number" }, { id: "value", dataType: "number" }])
    const result = await runBackfill([
      "--query", `SELECT region, n, value FROM ${t} WHERE n % 7 <> 0`, "--key", "region,n", "--partitions", "3",
      "--dataset", id, ...files("pairs"), ...common()
    ])
    expect(result.code, result.stderr).toBe(0)
    const rows = await readAllRows(server.url, apiKey, id)
    const expected = ["eu", "us", "apac"].flatMap((r) => Array.from({ length: 700 }, (_, i) => i + 1).filter((n) => n % 7 !== 0).map((n) => `${r}/${n}`))
    const { duplicated, missing, unexpected } = compareIds(expected, rows.map((r) => `${r["region"]}/${r["n"]}`))
    expect({ missing: missing.length, duplicated: duplicated.length, unexpected: unexpected.length }).toEqual({ missing: 0, duplicated: 0, unexpected: 0 })
    const checkpoint = JSON.parse(readFileSync(join(dir, "pairs.checkpoint.json"), "utf8"))
    expect(checkpoint.partitions.length).toBeGreaterThan(1)
    expect(checkpoint.partitions.every((p: { done: boolean }) => p.done)).toBe(true)
  }, 60_000)

  it("an empty table ends at once with nothing sent", async () => {
    await db.sql(`CREATE TABLE ${db.name}.empty (id int PRIMARY KEY, v text)`)
    const id = await dataset("empty", [{ id: "id", dataType: "number" }, { id: "v", dataType: "string" }])
    const result = await runBackfill(["--table", `${db.name}.empty`, "--key", "id", "--partitions", "3", "--dataset", id, ...files("empty"), ...common()])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toContain("read 0 rows: 0 stored")
  }, 30_000)

  it("a key with NULLs is refused with a clear error, exit 1, nothing sent", async () => {
    await db.sql(`CREATE TABLE ${db.name}.nullkey (k int, v text)`)
    await db.sql(`INSERT INTO ${db.name}.nullkey VALUES (1, 'a'), (NULL, 'b'), (3, 'c')`)
    const id = await dataset("nullkey", [{ id: "k", dataType: "number" }, { id: "v", dataType: "string" }])
    const result = await runBackfill(["--table", `${db.name}.nullkey`, "--key", "k", "--dataset", id, ...files("nullkey"), ...common()])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("key column k holds NULL in some rows")
    expect(await readAllRows(server.url, apiKey, id)).toEqual([])
  }, 30_000)

  it("a key column not in the result, or both --table and --query, is a clear error", async () => {
    const missing = await runBackfill(["--query", "SELECT 1 AS a", "--key", "b", "--dataset", "1", ...files("bad"), ...common()])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("key column b is not in the result (it has a)")
    const both = await runBackfill(["--query", "SELECT 1 AS a", "--table", "x", "--key", "a", "--dataset", "1", ...common()])
    expect(both.code).toBe(2)
    expect(both.stdout + both.stderr).toContain("give either --table or --query")
  }, 30_000)

  it("TLS settings in the connection string reach the driver; its password never shows", async () => {
    // The test database takes no TLS: a URL that requires it must fail to connect, saying why.
    const url = new URL(databaseUrl())
    url.password = "s3cret-password"
    url.searchParams.set("sslmode", "require")
    const result = await runBackfill(["--database-url", url.toString(), "--table", "t", "--key", "id", "--dataset", "1", ...files("tls"), ...common()])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/cannot connect to postgres:\/\/postgres:\*\*\*@.*sslmode=require: The server does not support SSL/)
    expect(result.stdout + result.stderr).not.toContain("s3cret-password")
  }, 30_000)

  it("--since-column: after 100 rows are updated, the next run sends exactly those 100", async () => {
    const t = `${db.name}.changing`
    await db.sql(`CREATE TABLE ${t} (id int PRIMARY KEY, v int, updated_at timestamptz NOT NULL DEFAULT now())`)
    await db.sql(`INSERT INTO ${t} (id, v, updated_at) SELECT i, 0, timestamptz '2024-01-01' + i * interval '1 second' FROM generate_series(1, 2000) i`)
    const id = await dataset("changing", [
      { id: "id", dataType: "number" }, { id: "v", dataType: "number" }, { id: "updated_at", dataType: "datetime" }
    ], ["id"])
    const args = ["--table", t, "--key", "id", "--since-column", "updated_at", "--partitions", "2", "--dataset", id, ...files("changing"), ...common()]
    const first = await runBackfill(args)
    expect(first.code, first.stderr).toBe(0)
    expect(first.stdout).toContain("read 2000 rows: 2000 stored")
    await db.sql(`UPDATE ${t} SET v = 1, updated_at = now() WHERE id % 20 = 0`)
    const second = await runBackfill(args)
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toContain("read 100 rows: 100 stored")
    const rows = await readAllRows(server.url, apiKey, id)
    expect(rows).toHaveLength(2000)
    expect(rows.filter((r) => r["v"] === 1).map((r) => r["id"]).sort((a: any, b: any) => a - b)).toEqual(
      Array.from({ length: 100 }, (_, i) => (i + 1) * 20)
    )
    const third = await runBackfill(args)
    expect(third.stdout).toContain("read 0 rows")
  }, 60_000)

  it("Ctrl-C: exit 130 with what was delivered committed; the same command then finishes with every row once", async () => {
    const t = `${db.name}.interrupted`
    await db.sql(`CREATE TABLE ${t} (id int PRIMARY KEY, v text)`)
    await db.sql(`INSERT INTO ${t} SELECT i, 'v' || i FROM generate_series(1, 20000) i`)
    const id = await dataset("interrupted", [{ id: "id", dataType: "number" }, { id: "v", dataType: "string" }])
    const args = ["--table", t, "--key", "id", "--partitions", "2", "--dataset", id, ...files("interrupted"), ...common()]
    // One batch at a time: the run lasts seconds, and the interruption lands in the middle of it.
    const running = startBackfill([...args, "--concurrency", "1"])
    const path = join(dir, "interrupted.checkpoint.json")
    // Interrupted once something is committed.
    for (let i = 0; i < 400; i++) {
      await new Promise((r) => setTimeout(r, 50))
      try {
        if (JSON.parse(readFileSync(path, "utf8")).partitions.some((p: { committed: unknown }) => p.committed !== null)) break
      } catch { /* not written yet */ }
    }
    running.child.kill("SIGINT")
    const stopped = await running.done
    expect(stopped.code, stopped.stderr).toBe(130)
    expect(stopped.stderr).toContain("run the same command again to resume")
    const committed = JSON.parse(readFileSync(path, "utf8")).partitions.map((p: { committed: { offset: number } | null }) => p.committed?.offset ?? -1)
    const rest = await runBackfill(args)
    expect(rest.code, rest.stderr).toBe(0)
    const rows = await readAllRows(server.url, apiKey, id)
    const { duplicated, missing } = compareIds(Array.from({ length: 20000 }, (_, i) => String(i + 1)), rows.map((r) => String(r["id"])))
    expect({ missing: missing.length, duplicated: duplicated.length }).toEqual({ missing: 0, duplicated: 0 })
    // The second run read only what the first had not committed.
    expect(rest.stdout).toContain(`read ${20000 - committed.reduce((sum: number, offset: number) => sum + offset + 1, 0)} rows`)
  }, 60_000)
})

describe("backfill progress", () => {
  it("shows rows/s of the rows done (stored or dead-lettered), and the service's outage while it lasts", () => {
    const progress = { ...emptyProgress(0), read: 20_000, accepted: 19_000, deadLettered: 3 }
    expect(describeBackfill(progress, 10_000)).toBe("read 20000  stored 19000  dead-lettered 3  1900 rows/s")
    const down = { ...progress, outage: { since: 4_000, attempts: 3, cause: "connect ECONNREFUSED" } }
    expect(describeBackfill(down, 10_000)).toContain("SERVICE UNREACHABLE for 6s (3 failed tries: connect ECONNREFUSED)")
  })

  it("measures the share done by rows stored or dead-lettered, not read: every row read and 4,000 unsent is not 100%", () => {
    const allRead = { ...emptyProgress(0), read: 100_000, accepted: 96_000, deadLettered: 0 }
    expect(backfillDone(100_000)(allRead)).toBe(0.96)
    expect(bar(backfillDone(100_000)(allRead)!, 2)).toContain("96%  ETA 2s")
    expect(bar(backfillDone(100_000)({ ...allRead, accepted: 99_990, deadLettered: 5 })!, 0)).toContain(" 99%")
    expect(bar(backfillDone(100_000)({ ...allRead, accepted: 99_995, deadLettered: 5 })!, 0)).toMatch(/\[#{24}\] 100%  $/)
    expect(backfillDone(0)(allRead)).toBeUndefined()
  })
})
