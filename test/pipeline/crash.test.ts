/**
 * The delivery guarantee under crashes (DESIGN.md, "Delivery guarantee"): `tributary ingest`
 * is killed with SIGKILL at random moments while a faulty server answers 503 and 429 and
 * drops answers to ingestions it has already committed; each time it is started again with
 * the same command, resuming from its checkpoint, and at the end it runs to completion.
 * The server must then hold exactly the valid records of the source: none lost, none twice.
 *
 * The kill moments and the server's faults come from one seed, printed at the start; set
 * TRIBUTARY_CRASH_SEED to repeat a run.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServe, type RunningServer } from "../support/cli.js"
import {
  apiData,
  compareIds,
  type InvalidKind,
  readAllRows,
  readCheckpoint,
  readDeadLetters,
  runIngest,
  seededRandom,
  type Attempt,
  type CheckpointFile,
  writeSource
} from "../support/crash.js"

const seed = process.env["TRIBUTARY_CRASH_SEED"] !== undefined
  ? Number(process.env["TRIBUTARY_CRASH_SEED"])
  : Math.floor(Math.random() * 2 ** 31)
const apiKey = "crash-test-key"
const validRecords = 100_000
const invalidRecords = 50
const kills = 5
/** A kill lands this long after each (re)start: long enough for the child to get going. */
const killWindowMs = { min: 300, max: 2500 }
const faults = `5xx=0.05,429=0.02,retry-after=0,drop=0.02,seed=${seed}`

const dir = mkdtempSync(join(tmpdir(), "tributary-crash-"))
let server: RunningServer

beforeAll(async () => {
  console.log(`crash test seed ${seed} (TRIBUTARY_CRASH_SEED=${seed} repeats it), faults ${faults}`)
  server = await startServe(["--port", "0", "--api-key", apiKey, "--faults", faults])
})

afterAll(async () => {
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const schema = [
  { id: "id", dataType: "string" },
  { id: "n", dataType: "number" },
  { id: "at", dataType: "datetime" }
]

const describeAttempt = (attempt: Attempt, index: number, checkpoint: CheckpointFile | undefined) => {
  const outcome = attempt.killed ? "killed" : attempt.code === 0 ? "finished" : `exited ${attempt.code ?? attempt.signal}`
  const planned = attempt.killAfterMs === undefined ? "no kill planned" : `kill planned at ${attempt.killAfterMs} ms`
  const committed = checkpoint?.positions["0"]?.offset ?? "nothing"
  return `run ${index + 1}: ${planned}, ${outcome} after ${attempt.elapsedMs} ms; committed line ${committed}, ` +
    `${checkpoint?.cuts.length ?? 0} recorded cut(s) ${JSON.stringify(checkpoint?.cuts.slice(0, 5) ?? [])}`
}

const crashScenario = async (name: string, primaryKey: boolean, scenarioSeed: number) => {
  const started = Date.now()
  const random = seededRandom(scenarioSeed)
  const dataSource = await apiData(server.url, apiKey, "POST", "/v2/data-sources", { name: `crash ${name} ${seed}` })
  const dataset = await apiData(server.url, apiKey, "POST", "/v2/datasets", {
    name: `crash ${name} ${seed}`,
    dataSourceId: dataSource.id,
    schema,
    ...(primaryKey ? { primaryKey: ["id"] } : {})
  })

  // Without a primary key a record without `id` is valid, so that kind only goes in with one.
  const kinds: Array<InvalidKind> = ["malformed-json", "not-an-object", "wrong-type", "bad-datetime", "unknown-column"]
  if (primaryKey) kinds.push("missing-primary-key", "null-primary-key")
  const source = writeSource(join(dir, `${name}.ndjson`), {
    valid: validRecords,
    invalid: invalidRecords,
    kinds,
    random,
    idPrefix: name
  })
  const checkpointPath = join(dir, `${name}.checkpoint.json`)
  const deadLetterPath = join(dir, `${name}.dead-letters.ndjson`)
  const args = [
    source.path,
    "--dataset",
    dataset.id,
    "--checkpoint",
    checkpointPath,
    "--dead-letter",
    deadLetterPath,
    "--api-url",
    server.url,
    "--api-key",
    apiKey,
    "--concurrency",
    "4"
  ]

  const log: Array<string> = []
  let landed = 0
  for (let i = 0; i <= kills; i++) {
    // Five runs killed at a random moment (unless already done), then one left to finish.
    const killAfterMs = i < kills
      ? killWindowMs.min + Math.floor(random() * (killWindowMs.max - killWindowMs.min))
      : undefined
    const attempt = await runIngest(args, killAfterMs)
    log.push(describeAttempt(attempt, i, readCheckpoint(checkpointPath)))
    if (attempt.killed) {
      landed++
      continue
    }
    // Not killed: it ran to the end, and must have succeeded.
    expect(attempt.code, `${log.join("\n")}\n${attempt.stderr.slice(-2000)}`).toBe(0)
    expect(attempt.stdout).toContain(`checkpoint: ${checkpointPath}`)
  }
  const sendingMs = Date.now() - started

  const rows = await readAllRows(server.url, apiKey, dataset.id)
  const { duplicated, missing, unexpected } = compareIds(source.validIds, rows.map((row) => row["id"]))
  const lineOf = new Map(source.validIds.map((id, i) => [id, source.validLines[i]!]))
  const checkpoint = readCheckpoint(checkpointPath)
  const report = [
    `${name}: ${rows.length} rows stored for ${source.validIds.length} valid records; ` +
    `${missing.length} missing, ${duplicated.length} stored more than once, ${unexpected.length} unexpected`,
    `missing (first 20): ${JSON.stringify(missing.slice(0, 20).map((id) => [id, lineOf.get(id)]))}`,
    `duplicated (first 20): ${JSON.stringify(duplicated.slice(0, 20).map(({ id, n }) => [id, lineOf.get(id as string), n]))}`,
    `unexpected (first 20): ${JSON.stringify(unexpected.slice(0, 20))}`,
    ...log
  ].join("\n")
  console.log(`${name}: ${landed} of ${kills} kills landed; ${sendingMs} ms sending, ${Date.now() - started} ms in all\n${log.join("\n")}`)

  expect(missing.length + duplicated.length + unexpected.length, report).toBe(0)
  expect(rows.length, report).toBe(source.validIds.length)

  // Every invalid line is dead-lettered. Letters written after the last commit before a
  // kill are written again by the next run, so a line may appear more than once: compare sets.
  const { letters, unreadable } = readDeadLetters(deadLetterPath)
  expect(unreadable, "dead-letter lines that are not JSON").toEqual([])
  const deadLines = [...new Set(letters.map((letter) => letter.position.offset))].sort((a, b) => a - b)
  expect(deadLines).toEqual(source.invalidLines)

  // The checkpoint is at the last line, with no cut left to honour.
  expect(checkpoint?.positions["0"]?.offset, report).toBe(source.lineCount)
  expect(checkpoint?.cuts, report).toEqual([])
}

describe("crash test: SIGKILL at random moments against a faulty server", () => {
  it("a dataset with a primary key ends with exactly the valid records", async () => {
    await crashScenario("keyed", true, seed)
  }, 240_000)

  it("a dataset without a primary key ends with exactly the valid records, none twice", async () => {
    await crashScenario("unkeyed", false, seed + 1)
  }, 240_000)
})
