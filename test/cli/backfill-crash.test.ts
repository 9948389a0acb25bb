/**
 * The delivery guarantee of `tributary backfill` under crashes, on the real Postgres:
 *
 * - one process, 4 partitions, a checkpoint file: killed with SIGKILL at random moments and
 *   started again with the same command, against a server that answers 503 and 429 and drops
 *   answers to ingestions it has committed;
 * - three processes sharing one backfill through a checkpoint table, one of them killed with
 *   SIGKILL: the others take its partitions over once its lease runs out.
 *
 * Both datasets have no primary key (every record appended), so a row sent twice shows as
 * two rows. The kill moments and the server's faults come from one seed, printed at the
 * start; set TRIBUTARY_CRASH_SEED to repeat a run.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { seededRandom } from "../../src/server/faults.js"
import { startServe, type RunningServer } from "../support/cli.js"
import { compareIds, fileText, newDataset, readAllRows, readDeadLetters } from "../support/crash.js"
import { killAllBackfills, startBackfill, testSchema } from "../support/postgres.js"

const seed = process.env["TRIBUTARY_CRASH_SEED"] !== undefined
  ? Number(process.env["TRIBUTARY_CRASH_SEED"])
  : Math.floor(Math.random() * 2 ** 31)
const apiKey = "backfill-crash-key"
const faults = `5xx=0.05,429=0.02,retry-after=0,drop=0.02,seed=${seed}`
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let server: RunningServer
let db: Awaited<ReturnType<typeof testSchema>>
let dir: string

beforeAll(async () => {
  console.log(`backfill crash test seed ${seed} (TRIBUTARY_CRASH_SEED=${seed} repeats it), faults ${faults}`)
  dir = mkdtempSync(join(tmpdir(), "tributary-backfill-crash-"))
  server = await startServe(["--port", "0", "--api-key", apiKey, "--faults", faults])
  db = await testSchema()
})

afterAll(async () => {
  killAllBackfills()
  await server?.stop()
  await db?.drop()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const schema = [
  { id: "id", dataType: "number" },
  { id: "label", dataType: "string" },
  { id: "amount", dataType: "number" },
  { id: "ratio", dataType: "number" },
  { id: "at", dataType: "datetime" },
  { id: "tags", dataType: "string" }
]

/** A table of `rows` mixed-type rows; every 10,007th has a NaN ratio, every 20,011th an infinite time. */
const mixedTable = async (name: string, rows: number) => {
  const t = `${db.name}.${name}`
  await db.sql(`CREATE TABLE ${t} (id int PRIMARY KEY, label text, amount numeric(12,2), ratio double precision, at timestamptz, tags text[])`)
  await db.sql(`INSERT INTO ${t} SELECT i, 'row ' || i, i * 1.25,
      CASE WHEN i % 10007 = 0 THEN 'NaN' ELSE i / 4.0 END,
      CASE WHEN i % 20011 = 0 THEN 'infinity' ELSE timestamptz '2024-01-01' + i * interval '1 second' END,
      ARRAY['t' || (i % 5)] FROM generate_series(1, ${rows}) i`)
  await db.sql(`ANALYZE ${t}`)
  const bad = Array.from({ length: rows }, (_, i) => i + 1).filter((i) => i % 10007 === 0 || i % 20011 === 0)
  const badSet = new Set(bad)
  const good = Array.from({ length: rows }, (_, i) => i + 1).filter((i) => !badSet.has(i)).map(String)
  return { table: t, good, bad }
}

const appendOnlyDataset = (name: string) => newDataset(server.url, apiKey, { name: `${name} ${seed}`, schema })

const checkStored = async (datasetId: string, good: ReadonlyArray<string>, log: ReadonlyArray<string>) => {
  const rows = await readAllRows(server.url, apiKey, datasetId)
  const { duplicated, missing, unexpected } = compareIds(good, rows.map((row) => String(row["id"])))
  const report = [
    `${rows.length} rows stored for ${good.length} good rows: ${missing.length} missing, ${duplicated.length} twice, ${unexpected.length} unexpected`,
    `missing (first 20): ${JSON.stringify(missing.slice(0, 20))}`,
    `duplicated (first 20): ${JSON.stringify(duplicated.slice(0, 20))}`,
    `unexpected (first 20): ${JSON.stringify(unexpected.slice(0, 20))}`,
    ...log
  ].join("\n")
  expect(missing.length + duplicated.length + unexpected.length, report).toBe(0)
  expect(rows.length, report).toBe(good.length)
}

describe.concurrent("backfill under SIGKILL against a faulty server", () => {
  it("100,000 rows in 4 partitions, killed at random moments and resumed: every good row stored once, NaN and infinity rows dead-lettered with their key", async () => {
    const random = seededRandom(seed)
    const { bad, good, table } = await mixedTable("crash", 100_000)
    const datasetId = await appendOnlyDataset("crash")
    const checkpoint = join(dir, "crash.checkpoint.json")
    const deadLetters = join(dir, "crash.dead.ndjson")
    const args = [
      "--table", table, "--key", "id", "--partitions", "4", "--dataset", datasetId, "--checkpoint", checkpoint,
      "--dead-letter", deadLetters, "--api-url", server.url, "--api-key", apiKey
    ]
    const log: Array<string> = []
    const kills = 3
    for (let i = 0; i <= kills; i++) {
      const running = startBackfill(args)
      const before = fileText(checkpoint)
      let killed = false
      if (i < kills) {
        // A random moment after this run's first checkpoint write.
        const killAfter = 200 + Math.floor(random() * 2200)
        void (async () => {
          for (let waited = 0; waited < 20_000 && fileText(checkpoint) === before; waited += 20) await sleep(20)
          await sleep(killAfter)
          killed = running.child.kill("SIGKILL")
        })()
        const result = await running.done
        log.push(`run ${i + 1}: kill ${killAfter} ms after the first write: ${result.signal ?? `exit ${result.code}`}`)
        if (!killed || result.signal !== "SIGKILL") {
          // It finished before the kill: it must have succeeded.
          expect(result.code, `${log.join("\n")}\n${result.stderr}`).toBe(0)
          break
        }
      } else {
        const result = await running.done
        log.push(`run ${i + 1}: ${result.signal ?? `exit ${result.code}`}`)
        expect(result.code, `${log.join("\n")}\n${result.stderr}`).toBe(0)
      }
    }
    console.log(`backfill crash: ${log.join("; ")}`)
    await checkStored(datasetId, good, log)
    const { letters, unreadable } = readDeadLetters(deadLetters)
    expect(unreadable).toEqual([])
    // Letters written after the last commit before a kill are written again: compare sets.
    const deadKeys = [...new Set(letters.map((l: any) => Number(l.position.resume.key[0])))].sort((a, b) => a - b)
    expect(deadKeys).toEqual(bad)
    for (const letter of letters as Array<any>) expect(letter.reason.message).toContain(`row (id)=(${letter.position.resume.key[0]})`)
    // Temporary files of writes cut short by a kill are cleared by the next run.
    expect(readdirSync(dir).filter((name) => name.startsWith("crash.checkpoint.json.") && name.endsWith(".tmp"))).toEqual([])
    const state = JSON.parse(readFileSync(checkpoint, "utf8"))
    expect(state.partitions.map((p: { done: boolean; cuts: Array<unknown> }) => [p.done, p.cuts.length])).toEqual([
      [true, 0], [true, 0], [true, 0], [true, 0]
    ])
  }, 180_000)

  it("three processes share a backfill through a checkpoint table; one killed with SIGKILL, its partitions are taken over and every row is stored once", async () => {
    const random = seededRandom(seed + 1)
    const { good, table } = await mixedTable("shared", 60_000)
    const datasetId = await appendOnlyDataset("shared")
    const stateTable = `${db.name}.backfill_state`
    const args = (n: number) => [
      "--table", table, "--key", "id", "--partitions", "6", "--parallel", "2", "--checkpoint-table", stateTable,
      // 5 s: a lease of 2 s ran out under a loaded machine while its holder was alive, and the
      // holder then stopped with exit 1 ("lost their lease"), as documented, failing the test.
      "--lease-seconds", "5", "--dataset", datasetId, "--dead-letter", join(dir, `shared-${n}.dead.ndjson`),
      "--api-url", server.url, "--api-key", apiKey
    ]
    const workers = [0, 1, 2].map((n) => startBackfill(args(n)))
    // The victim is killed once it has committed something of a partition it holds.
    const victim = workers[Math.floor(random() * 3)]!
    const committedRows = async () => {
      try {
        return (await db.sql(`SELECT count(*)::int AS n FROM ${stateTable} WHERE committed IS NOT NULL`)).rows[0].n as number
      } catch {
        return 0 // not created yet
      }
    }
    while ((await committedRows()) === 0) await sleep(20)
    await sleep(Math.floor(random() * 1000))
    const killed = victim.child.kill("SIGKILL")
    const results = await Promise.all(workers.map((w) => w.done))
    const log = results.map((r, i) => `worker ${i}: ${r.signal ?? `exit ${r.code}`}${workers[i] === victim ? " (the victim)" : ""}`)
    console.log(`shared backfill: ${log.join("; ")}`)
    for (const [i, result] of results.entries()) {
      if (workers[i] !== victim || !killed) expect(result.code, `${log.join("\n")}\n${result.stderr}`).toBe(0)
    }
    const partitions = (await db.sql(`SELECT partition, done, owner FROM ${stateTable} ORDER BY partition`)).rows
    expect(partitions.map((p) => [p.partition, p.done, p.owner])).toEqual([0, 1, 2, 3, 4, 5].map((p) => [p, true, null]))
    await checkStored(datasetId, good, log)
  }, 180_000)
})
