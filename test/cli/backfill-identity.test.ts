/**
 * A backfill knows what it is and where it sends (`tributary backfill` as a child process, the
 * real Postgres, `tributary serve`): its plan carries a run id per generation and the dataset
 * it is bound to, so
 *
 * - `--create-dataset`, killed with SIGKILL and run again, resumes into the dataset it created,
 *   and run after it finished creates nothing (checkpoint file and checkpoint table), and
 *   processes started at once sharing a checkpoint table fill one dataset;
 * - a resume with `--dataset` another than the bound one is refused, and nothing reaches it;
 * - the table's columns are compared with the dataset's before anything is sent;
 * - a fresh backfill of a changed table into the same dataset is stored, not refused as
 *   reused idempotency keys;
 * - a checkpoint written before runs had an identity (no `run`, no `destination`) resumes.
 *
 * Interrupted runs go against a server that delays every request (20-40 ms), so that a
 * 20,000-row backfill lasts long enough to be killed in the middle of it.
 *
 * The cases run side by side: each has tables, checkpoints and datasets of its own, and
 * mostly waits on its child processes (measured on the 2-core machine: 48 s one after another).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServe, type RunningServer } from "../support/cli.js"
import { apiData, compareIds, readAllRows, readDeadLetters } from "../support/crash.js"
import { type BackfillRun, killAllBackfills, runBackfill, startBackfill, testSchema } from "../support/postgres.js"

const apiKey = "backfill-identity-key"
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Answers at once: for the runs that are not interrupted. */
let server: RunningServer
/** Delays every request by 20-40 ms: for the runs that are killed in the middle. */
let slow: RunningServer
let db: Awaited<ReturnType<typeof testSchema>>
let dir: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tributary-backfill-identity-"))
  ;[server, slow] = await Promise.all([
    startServe(["--port", "0", "--api-key", apiKey]),
    startServe(["--port", "0", "--api-key", apiKey, "--faults", "latency=20-40ms"])
  ])
  db = await testSchema()
})

afterAll(async () => {
  killAllBackfills()
  await Promise.all([server?.stop(), slow?.stop()])
  await db?.drop()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

/**
 * The lease on a checkpoint table's partitions, which a resume after a SIGKILL waits out. 2 s
 * ran out under a loaded machine while its holder lived (the holder then stops with exit 1,
 * "lost their lease", as documented), with the cases running side by side: 5 s, as in
 * backfill-crash.test.ts.
 */
const leaseSeconds = "5"

const api = (on: RunningServer) => ["--api-url", on.url, "--api-key", apiKey]
const deadLetterPath = (name: string) => join(dir, `${name}.dead.ndjson`)

const dataSource = async (on: RunningServer, name: string): Promise<number> =>
  (await apiData(on.url, apiKey, "POST", "/v2/data-sources", { name })).id

const createDataset = async (
  on: RunningServer,
  name: string,
  schema: ReadonlyArray<{ id: string; dataType: string }>,
  primaryKey: ReadonlyArray<string>
) =>
  String(
    (await apiData(on.url, apiKey, "POST", "/v2/datasets", { name, dataSourceId: await dataSource(on, name), schema, primaryKey })).id
  )

/** The ids of a data source's datasets, as the API lists them. */
const datasetsOf = async (on: RunningServer, dataSourceId: number): Promise<Array<string>> => {
  const page = await apiData(on.url, apiKey, "GET", `/v2/datasets?dataSourceId=${dataSourceId}&pageSize=100`)
  return page.items.map((item: { id: unknown }) => String(item.id))
}

/** How many ingestions a dataset was sent. */
const ingestionCount = async (on: RunningServer, datasetId: string): Promise<number> =>
  (await apiData(on.url, apiKey, "GET", `/v2/datasets/${datasetId}/ingestions?pageSize=1`)).pagination.totalItems

/** A table `(id int PRIMARY KEY, v text)` of `rows` rows, v = 'v' || id. */
const simpleTable = async (name: string, rows: number) => {
  const table = `${db.name}.${name}`
  await db.sql(`CREATE TABLE ${table} (id int PRIMARY KEY, v text NOT NULL)`)
  await db.sql(`INSERT INTO ${table} SELECT i, 'v' || i FROM generate_series(1, ${rows}) i`)
  await db.sql(`ANALYZE ${table}`)
  return table
}
const simpleSchema = [{ id: "id", dataType: "number" }, { id: "v", dataType: "string" }]

/** Every id from 1 to `rows` stored exactly once, each with v = `${prefix}${id}`. */
const expectRows = async (on: RunningServer, datasetId: string, rows: number, prefix = "v") => {
  const stored = await readAllRows(on.url, apiKey, datasetId)
  const expected = Array.from({ length: rows }, (_, i) => String(i + 1))
  const { duplicated, missing, unexpected } = compareIds(expected, stored.map((row) => String(row["id"])))
  expect({ stored: stored.length, missing: missing.length, duplicated: duplicated.length, unexpected: unexpected.length }).toEqual({
    stored: rows,
    missing: 0,
    duplicated: 0,
    unexpected: 0
  })
  const wrong = stored.filter((row) => row["v"] !== `${prefix}${row["id"]}`)
  expect(wrong.slice(0, 5), `${wrong.length} rows with another value`).toEqual([])
}

interface Committed {
  /** Rows committed, summed over the partitions (0: nothing yet, or no state yet). */
  readonly rows: number
  readonly done: boolean
}

/** The progress a checkpoint file records. */
const fileProgress = (path: string) => async (): Promise<Committed> => {
  try {
    const partitions: Array<{ committed: { offset: number } | null; done: boolean }> = JSON.parse(readFileSync(path, "utf8")).partitions
    return {
      rows: partitions.reduce((sum, p) => sum + (p.committed === null ? 0 : p.committed.offset + 1), 0),
      done: partitions.every((p) => p.done)
    }
  } catch {
    return { rows: 0, done: false } // not written yet
  }
}

/** The progress a checkpoint table records. */
const tableProgress = (stateTable: string) => async (): Promise<Committed> => {
  try {
    const { rows } = await db.sql(`SELECT committed, done FROM ${stateTable}`)
    return {
      rows: rows.reduce((sum, r) => sum + (r.committed === null ? 0 : r.committed.offset + 1), 0),
      done: rows.length > 0 && rows.every((r) => r.done)
    }
  } catch {
    return { rows: 0, done: false } // not created yet
  }
}

/**
 * Kills the run with SIGKILL once its checkpoint records a commit, and makes sure it was
 * killed in the middle: something committed, not everything.
 */
const killAfterFirstCommit = async (running: BackfillRun, progress: () => Promise<Committed>) => {
  const started = Date.now()
  while (running.child.exitCode === null && Date.now() - started < 60_000) {
    if ((await progress()).rows > 0) break
    await sleep(10)
  }
  running.child.kill("SIGKILL")
  const result = await running.done
  expect(result.signal, `the run was to be killed in the middle, but it ended: exit ${result.code}\n${result.stderr}`).toBe("SIGKILL")
  const state = await progress()
  expect(state.rows).toBeGreaterThan(0)
  expect(state.done).toBe(false)
  return { result, committed: state.rows }
}

describe.concurrent("backfill identity", () => {
  for (const mode of ["file", "table"] as const) {
    it(`--create-dataset (checkpoint ${mode}), killed with SIGKILL in the middle and run again: one dataset, every row once; run once more: still one, nothing read`, async () => {
      const rows = 20_000
      const table = await simpleTable(`created_${mode}`, rows)
      const sourceId = await dataSource(slow, `created ${mode}`)
      const stateTable = `${db.name}.state_created`
      const checkpoint = mode === "file"
        ? ["--checkpoint", join(dir, `created-${mode}.checkpoint.json`)]
        : ["--checkpoint-table", stateTable, "--lease-seconds", leaseSeconds]
      const progress = mode === "file" ? fileProgress(join(dir, `created-${mode}.checkpoint.json`)) : tableProgress(stateTable)
      const args = [
        "--table", table, "--key", "id", "--partitions", "2", "--create-dataset", `created ${mode}`,
        "--data-source", String(sourceId), ...checkpoint, "--dead-letter", deadLetterPath(`created-${mode}`), ...api(slow)
      ]

      const { result: killed } = await killAfterFirstCommit(startBackfill(args), progress)
      const created = /created dataset (\S+)/.exec(killed.stdout)?.[1]
      expect(created, killed.stdout).toBeDefined()
      expect(await datasetsOf(slow, sourceId)).toEqual([created])

      const resumed = await runBackfill(args)
      expect(resumed.code, resumed.stderr).toBe(0)
      expect(resumed.stdout).toMatch(new RegExp(`resuming backfill run [0-9a-f]{8} \\(generation 1\\) into dataset ${created}, which it created`))
      expect(resumed.stdout).not.toContain("created dataset")
      expect(resumed.stdout).toContain("no dead letters")
      expect(await datasetsOf(slow, sourceId)).toEqual([created])
      await expectRows(slow, created!, rows)
      expect(await progress()).toEqual({ rows, done: true })

      const again = await runBackfill(args)
      expect(again.code, again.stderr).toBe(0)
      expect(again.stdout).toContain("read 0 rows")
      expect(again.stdout).not.toContain("created dataset")
      expect(await datasetsOf(slow, sourceId)).toEqual([created])
      await expectRows(slow, created!, rows)
    }, 120_000)
  }

  it("three processes started at once with the same --create-dataset command and one checkpoint table: one dataset, every row once", async () => {
    const rows = 6_000
    const table = await simpleTable("shared_created", rows)
    const sourceId = await dataSource(slow, "shared created")
    const args = (n: number) => [
      "--table", table, "--key", "id", "--partitions", "4", "--parallel", "2", "--checkpoint-table", `${db.name}.state_shared`,
      "--create-dataset", "shared created", "--data-source", String(sourceId), "--dead-letter", deadLetterPath(`shared-${n}`),
      ...api(slow)
    ]
    const results = await Promise.all([0, 1, 2].map((n) => startBackfill(args(n)).done))
    for (const result of results) expect(result.code, result.stderr).toBe(0)
    const datasets = await datasetsOf(slow, sourceId)
    const log = results.map((r) => r.stdout.split("\n")[0]).join("; ")
    expect(datasets, log).toHaveLength(1)
    // One of them created it; the others went into it.
    expect(results.filter((r) => r.stdout.includes(`created dataset ${datasets[0]}\n`)), log).toHaveLength(1)
    await expectRows(slow, datasets[0]!, rows)
  }, 120_000)

  it("a backfill into dataset A interrupted, then resumed with --dataset B: exit 1, one line naming both and what to do, nothing sent to B; --dataset A finishes it", async () => {
    const rows = 20_000
    const table = await simpleTable("bound", rows)
    const a = await createDataset(slow, "bound A", simpleSchema, ["id"])
    const b = await createDataset(slow, "bound B", simpleSchema, ["id"])
    const path = join(dir, "bound.checkpoint.json")
    const args = (datasetId: string) => [
      "--table", table, "--key", "id", "--partitions", "2", "--dataset", datasetId, "--checkpoint", path,
      "--dead-letter", deadLetterPath("bound"), ...api(slow)
    ]
    await killAfterFirstCommit(startBackfill(args(a)), fileProgress(path))
    expect(JSON.parse(readFileSync(path, "utf8")).plan.destination).toBe(a)

    const refused = await runBackfill(args(b))
    expect(refused.code).toBe(1)
    const lines = refused.stderr.trim().split("\n")
    expect(lines, refused.stderr).toHaveLength(1)
    expect(lines[0]).toMatch(new RegExp(`into dataset ${a}, not into dataset ${b}\\b`))
    expect(lines[0]).toContain(`finish it with --dataset ${a}`)
    expect(lines[0]).toContain(`give another --checkpoint (or --checkpoint-table) to backfill into ${b}`)
    expect(refused.stdout).not.toContain("read ")
    expect(await ingestionCount(slow, b)).toBe(0)
    expect(await readAllRows(slow.url, apiKey, b)).toEqual([])
    // The checkpoint still belongs to A, and finishes into it.
    expect(JSON.parse(readFileSync(path, "utf8")).plan.destination).toBe(a)

    const finished = await runBackfill(args(a))
    expect(finished.code, finished.stderr).toBe(0)
    await expectRows(slow, a, rows)
    expect(await ingestionCount(slow, b)).toBe(0)
  }, 120_000)

  it("a table whose columns do not match the dataset: exit 1 before anything is sent, one message naming every mismatch; the same checkpoint then goes into a matching dataset", async () => {
    const table = `${db.name}.mismatched`
    await db.sql(`CREATE TABLE ${table} (id int PRIMARY KEY, name text, amount numeric(12,2), at timestamptz, note text)`)
    await db.sql(`INSERT INTO ${table} SELECT i, 'n' || i, i * 1.5, timestamptz '2024-01-01' + i * interval '1 hour', 'note ' || i
      FROM generate_series(1, 500) i`)
    // amount and at of other types, note missing; id and name match.
    const wrong = await createDataset(server, "mismatched", [
      { id: "id", dataType: "number" }, { id: "name", dataType: "string" }, { id: "amount", dataType: "string" },
      { id: "at", dataType: "number" }
    ], ["id"])
    const path = join(dir, "mismatched.checkpoint.json")
    // freeze: a column the dataset lacks is a mismatch too (under the default, evolve, it is sent
    // and the dataset gains it).
    const args = (datasetId: string) => [
      "--table", table, "--key", "id", "--dataset", datasetId, "--checkpoint", path, "--dead-letter", deadLetterPath("mismatched"),
      "--schema-contract", "freeze", ...api(server)
    ]
    const refused = await runBackfill(args(wrong))
    expect(refused.code).toBe(1)
    const lines = refused.stderr.trim().split("\n")
    expect(lines, refused.stderr).toHaveLength(1)
    const message = lines[0]!
    expect(message).toContain(`do not match dataset ${wrong} in 3 column(s)`)
    expect(message).toContain("amount: number in the source, string in the dataset")
    expect(message).toContain("at: datetime in the source, number in the dataset")
    expect(message).toContain("note: string in the source, not in the dataset")
    expect(message).not.toMatch(/\b(id|name): /)
    expect(await ingestionCount(server, wrong)).toBe(0)
    expect(await readAllRows(server.url, apiKey, wrong)).toEqual([])

    // Nothing was sent: the checkpoint is not bound to the dataset it could not send to.
    const right = await createDataset(server, "matching", [
      { id: "id", dataType: "number" }, { id: "name", dataType: "string" }, { id: "amount", dataType: "number" },
      { id: "at", dataType: "datetime" }, { id: "note", dataType: "string" }
    ], ["id"])
    const fixed = await runBackfill(args(right))
    expect(fixed.code, fixed.stderr).toBe(0)
    expect(fixed.stdout).toContain("read 500 rows: 500 stored")
    const stored = await readAllRows(server.url, apiKey, right)
    expect(stored).toHaveLength(500)
    expect(stored.find((row) => row["id"] === 7)).toMatchObject({ name: "n7", amount: 10.5, note: "note 7" })
    expect(await ingestionCount(server, wrong)).toBe(0)
  }, 60_000)

  it("a fresh backfill (new checkpoint) of a changed table into the dataset an earlier one filled: every row takes the new values, no reused keys", async () => {
    const rows = 3_000
    const table = await simpleTable("changed", rows)
    const datasetId = await createDataset(server, "changed", simpleSchema, ["id"])
    const args = (name: string) => [
      "--table", table, "--key", "id", "--partitions", "3", "--dataset", datasetId, "--checkpoint", join(dir, `${name}.checkpoint.json`),
      "--dead-letter", deadLetterPath(name), ...api(server)
    ]
    const first = await runBackfill(args("changed-1"))
    expect(first.code, first.stderr).toBe(0)
    expect(first.stdout).toContain(`read ${rows} rows: ${rows} stored`)
    await expectRows(server, datasetId, rows, "v")

    // The same keys, the same row count (so the same partitions and batch boundaries), other values.
    await db.sql(`UPDATE ${table} SET v = 'changed' || id`)
    const second = await runBackfill(args("changed-2"))
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toContain(`read ${rows} rows: ${rows} stored, 0 rejected by the service, 0 dead-lettered in total`)
    expect(second.stdout).toContain("no dead letters")
    const { letters } = readDeadLetters(deadLetterPath("changed-2"))
    expect(letters.filter((l) => l.reason.code === "idempotency_key_reused")).toEqual([])
    await expectRows(server, datasetId, rows, "changed")
    // Each run its own identity.
    const run1 = JSON.parse(readFileSync(join(dir, "changed-1.checkpoint.json"), "utf8")).plan.run
    const run2 = JSON.parse(readFileSync(join(dir, "changed-2.checkpoint.json"), "utf8")).plan.run
    expect(run1).toMatch(/^[0-9a-f-]{36}$/)
    expect(run2).toMatch(/^[0-9a-f-]{36}$/)
    expect(run2).not.toBe(run1)
  }, 60_000)

  it("an incremental backfill with --create-dataset: the next generation goes on into the dataset it created, a run with nothing new says so", async () => {
    const table = `${db.name}.incremental`
    await db.sql(`CREATE TABLE ${table} (id int PRIMARY KEY, v text NOT NULL, changed int NOT NULL)`)
    await db.sql(`INSERT INTO ${table} SELECT i, 'v' || i, 1 FROM generate_series(1, 500) i`)
    const source = await dataSource(server, "incremental")
    const args = [
      "--table", table, "--key", "id", "--since-column", "changed", "--create-dataset", "incremental", "--data-source", String(source),
      "--checkpoint", join(dir, "incremental.checkpoint.json"), "--dead-letter", deadLetterPath("incremental"), ...api(server)
    ]
    const first = await runBackfill(args)
    expect(first.code, first.stderr).toBe(0)
    expect(first.stdout).toMatch(/created dataset \d+/)
    const datasets = await datasetsOf(server, source)
    expect(datasets).toHaveLength(1)

    await db.sql(`INSERT INTO ${table} SELECT i, 'v' || i, 2 FROM generate_series(501, 700) i`)
    const second = await runBackfill(args)
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).not.toContain("created dataset")
    expect(second.stdout).toContain(`into dataset ${datasets[0]}, which it created`)
    expect(second.stdout).toContain("read 200 rows: 200 stored")
    expect(await datasetsOf(server, source)).toEqual(datasets)
    await expectRows(server, datasets[0]!, 700, "v")

    const third = await runBackfill(args)
    expect(third.code, third.stderr).toBe(0)
    expect(third.stdout).toContain("read 0 rows")
    expect(await datasetsOf(server, source)).toEqual(datasets)
  }, 60_000)

  it("a checkpoint file written before runs had an identity (no run, no destination) resumes with its old keys and finishes", async () => {
    const rows = 20_000
    const table = await simpleTable("old_file", rows)
    const datasetId = await createDataset(slow, "old file", simpleSchema, ["id"])
    const path = join(dir, "old.checkpoint.json")
    const args = [
      "--table", table, "--key", "id", "--partitions", "2", "--dataset", datasetId, "--checkpoint", path,
      "--dead-letter", deadLetterPath("old-file"), ...api(slow)
    ]
    const { committed } = await killAfterFirstCommit(startBackfill(args), fileProgress(path))
    const state = JSON.parse(readFileSync(path, "utf8"))
    expect(state.plan.run).toBeDefined()
    expect(state.plan.destination).toBe(datasetId)
    delete state.plan.run
    delete state.plan.destination
    writeFileSync(path, JSON.stringify(state, null, 2))

    const resumed = await runBackfill(args)
    expect(resumed.code, resumed.stderr).toBe(0)
    // It went on from the commits, rather than starting over.
    expect(resumed.stdout).toContain(`read ${rows - committed} rows`)
    expect(resumed.stdout).toContain("no dead letters")
    await expectRows(slow, datasetId, rows)
    const after = JSON.parse(readFileSync(path, "utf8"))
    expect(after.partitions.every((p: { done: boolean }) => p.done)).toBe(true)
    // It kept no run of its own (its keys stay the old ones), and is now bound to its dataset.
    expect(after.plan.run).toBeUndefined()
    expect(after.plan.destination).toBe(datasetId)
  }, 120_000)

  it("a checkpoint table made before runs had an identity (no run, destination columns) gets them and resumes", async () => {
    const rows = 20_000
    const table = await simpleTable("old_table", rows)
    const datasetId = await createDataset(slow, "old table", simpleSchema, ["id"])
    const stateTable = `${db.name}.state_old`
    const args = [
      "--table", table, "--key", "id", "--partitions", "2", "--dataset", datasetId, "--checkpoint-table", stateTable,
      "--lease-seconds", leaseSeconds, "--dead-letter", deadLetterPath("old-table"), ...api(slow)
    ]
    const { committed } = await killAfterFirstCommit(startBackfill(args), tableProgress(stateTable))
    await db.sql(`ALTER TABLE ${stateTable} DROP COLUMN run, DROP COLUMN destination`)

    const resumed = await runBackfill(args)
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stdout).toContain(`read ${rows - committed} rows`)
    expect(resumed.stdout).toContain("no dead letters")
    await expectRows(slow, datasetId, rows)
    const after = (await db.sql(`SELECT done, run, destination FROM ${stateTable}`)).rows
    expect(after.map((r) => [r.done, r.run, r.destination])).toEqual([[true, null, datasetId], [true, null, datasetId]])
  }, 120_000)
})
