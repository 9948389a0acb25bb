/**
 * The delivery guarantee of a one-to-many transform under crashes: the typed ETL example
 * (`examples/typed-etl.ts`: orders decoded, exploded into lines, enriched with a lookup) is
 * killed with SIGKILL at random moments while a faulty server answers 503 and 429 and drops
 * answers to ingestions it has already committed; each time it is started again with the same
 * command, and at the end it runs to completion. The dataset (no primary key, so a line stored
 * twice would show) must then hold every line of every good order exactly once.
 *
 * The kill moments and the server's faults come from one seed, printed at the start; set
 * TRIBUTARY_CRASH_SEED to repeat a run.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import { startServe, type RunningServer } from "../support/cli.js"
import { compareIds, crashSeed, killAllIngests, newDataset, readAllRows, readCheckpoint, readDeadLetters, runIngest } from "../support/crash.js"
import { seededRandom } from "../../src/server/faults.js"

const seed = crashSeed()
const apiKey = "typed-crash-key"
const orders = 8_000
const kills = 4
const faults = `5xx=0.05,429=0.02,retry-after=0,drop=0.02,seed=${seed}`

let dir: string
let server: RunningServer

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tributary-typed-crash-"))
  console.log(`typed crash test seed ${seed} (TRIBUTARY_CRASH_SEED=${seed} repeats it), faults ${faults}`)
  server = await startServe(["--port", "0", "--api-key", apiKey, "--faults", faults])
})

afterAll(async () => {
  killAllIngests()
  await server?.stop()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const countries = ["FR", "DE", "SI", "GB", "US", "HR"]

/**
 * Orders of 0 to 6 items (0: dropped), with a few that do not decode and a few whose country
 * the lookup does not know (each of their lines is dead-lettered); the expected line ids.
 */
const writeOrders = (path: string, random: () => number) => {
  const lines: Array<string> = []
  const expected: Array<string> = []
  const decodeFailures: Array<number> = []
  const lookupFailures: Array<number> = []
  for (let i = 1; i <= orders; i++) {
    const orderId = `O-${i}`
    const items = Math.floor(random() * 7)
    if (i % 397 === 0) {
      lines.push(JSON.stringify({ orderId, placedAt: "2026-11-02T10:00:00Z", country: "FR", amount: "lots", items: 1, tags: [] }))
      decodeFailures.push(i)
      continue
    }
    const unknown = i % 251 === 0 && items > 0
    const country = unknown ? "ZZ" : countries[Math.floor(random() * countries.length)]!
    lines.push(JSON.stringify({ orderId, placedAt: "2026-11-02T10:00:00Z", country, amount: 10 + i, items, tags: i % 2 ? ["gift"] : [] }))
    if (unknown) lookupFailures.push(i)
    else for (let j = 1; j <= items; j++) expected.push(`${orderId}-${j}`)
  }
  writeFileSync(path, lines.join("\n") + "\n")
  return { expected, decodeFailures, lookupFailures }
}

it("SIGKILL at random moments: every order line stored exactly once, every failure dead-lettered", async () => {
  const random = seededRandom(seed)
  // The output schema's columns, written out: the job checks them against its schema at start.
  const datasetId = await newDataset(server.url, apiKey, {
    name: `typed crash ${seed}`,
    schema: [
      { id: "lineId", dataType: "string" },
      { id: "orderId", dataType: "string" },
      { id: "line", dataType: "number" },
      { id: "amount", dataType: "number" },
      { id: "placedAt", dataType: "datetime" },
      { id: "region", dataType: "string" },
      { id: "tags", dataType: "string" },
      { id: "note", dataType: "string" }
    ]
  })
  const file = join(dir, "orders.ndjson")
  const source = writeOrders(file, random)
  const checkpointPath = `${file}.checkpoint.json`
  const job = { checkpointPath, command: ["--import", "tsx", "examples/typed-etl.ts"], env: { TRIBUTARY_API_URL: server.url, TRIBUTARY_API_KEY: apiKey } }

  const log: Array<string> = []
  let landed = 0
  for (let i = 0; i <= kills; i++) {
    const killAfterMs = i < kills ? 150 + Math.floor(random() * 1_850) : undefined
    const attempt = await runIngest([file, datasetId], { ...job, killAfterMs }, 90_000)
    const checkpoint = readCheckpoint(checkpointPath)
    log.push(
      `run ${i + 1}: ${attempt.killed ? `killed ${killAfterMs} ms after the first commit` : `exited ${attempt.code}`} after ${attempt.elapsedMs} ms; ` +
        `committed ${JSON.stringify(checkpoint?.positions["0"] ?? null)}, cuts ${JSON.stringify(checkpoint?.cuts.slice(0, 3) ?? [])}`
    )
    if (attempt.killed) {
      landed++
      continue
    }
    expect(attempt.code, `${log.join("\n")}\n${attempt.stderr.slice(-2000)}`).toBe(0)
    expect(attempt.stdout).toContain(`checkpoint: ${checkpointPath}`)
  }
  console.log(`typed crash: ${landed} of ${kills} kills landed\n${log.join("\n")}`)

  const rows = await readAllRows(server.url, apiKey, datasetId)
  const { duplicated, missing, unexpected } = compareIds(source.expected, rows.map((row) => row["lineId"]))
  const report = `${rows.length} rows for ${source.expected.length} lines; ${missing.length} missing ${JSON.stringify(missing.slice(0, 10))}, ` +
    `${duplicated.length} twice ${JSON.stringify(duplicated.slice(0, 10))}, ${unexpected.length} unexpected\n${log.join("\n")}`
  expect(missing.length + duplicated.length + unexpected.length, report).toBe(0)
  expect(rows.length, report).toBe(source.expected.length)

  // Decode failures at their lines; lookup failures at each child of their order.
  const { letters, unreadable } = readDeadLetters(`${file}.dead-letters.ndjson`)
  expect(unreadable).toEqual([])
  const decoded = new Set(letters.filter((l) => l.stage === "decode").map((l) => l.position.offset))
  expect([...decoded].sort((a, b) => a - b)).toEqual(source.decodeFailures)
  const transformed = new Set(letters.filter((l) => l.stage === "transform").map((l) => l.position.offset))
  expect([...transformed].sort((a, b) => a - b)).toEqual(source.lookupFailures)

  const checkpoint = readCheckpoint(checkpointPath)
  expect(checkpoint?.positions["0"]?.offset, report).toBe(orders)
  expect(checkpoint?.cuts, report).toEqual([])
}, 180_000)
