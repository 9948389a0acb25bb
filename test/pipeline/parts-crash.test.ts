/**
 * Keyed batches in parts under SIGKILL: `tributary ingest` of keyed updates where each batch
 * shares a few keys with the batch before, against `tributary serve` whose ingestions take
 * 40-120 ms and which answers 503s and drops answers, killed at random moments and started
 * again with the same command until it finishes. A batch whose shared keys are still held by
 * the batch before goes in two parts (`src/pipeline/internal/parts.ts`), and which records
 * wait depends on timing: the split is recorded with the batch's cut before either part is
 * sent, so a restart sends the same parts under the same keys. Every key must end at its last
 * version, and the service must have seen batches in parts.
 *
 * The kill moments and the server's faults come from one seed, printed at the start; set
 * TRIBUTARY_CRASH_SEED to repeat a run.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { seededRandom } from "../../src/server/faults.js"
import { startServe, type RunningServer } from "../support/cli.js"
import { crashSeed, idAndVersion, ingestionDetails, killAllIngests, newDataset, readAllRows, readCheckpoint, runIngest } from "../support/crash.js"

const seed = crashSeed()
const apiKey = "parts-crash-key"
const batches = 150
const perBatch = 100
/** Of each batch's records, how many update keys of the batch before. */
const shared = 3
const kills = 4
const faults = `processing=40-120ms,5xx=0.05,drop=0.02,seed=${seed}`

let dir: string
let server: RunningServer

/** Whether a checkpoint's text holds a cut recorded with its split. */
const hasSplit = (text: string | undefined) => text !== undefined && text.includes("\"held\"")

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tributary-parts-crash-"))
  console.log(`parts crash test seed ${seed} (TRIBUTARY_CRASH_SEED=${seed} repeats it), faults ${faults}`)
  server = await startServe(["--port", "0", "--api-key", apiKey, "--faults", faults])
})

afterAll(async () => {
  killAllIngests()
  await server?.stop()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe("keyed batches in parts under SIGKILL (tributary ingest against tributary serve --faults)", () => {
  it("every key ends at its last version, the batches that went in parts included", async () => {
    const random = seededRandom(seed)
    // Line l is version l. Batch b: keys of its own, and `shared` keys of batch b-1 at random
    // places, so a batch's shared records are at random offsets and its parts interleave.
    const lines: Array<string> = []
    const lastVersion = new Map<string, number>()
    for (let b = 0; b < batches; b++) {
      const sharedAt = new Set(Array.from({ length: shared }, () => Math.floor(random() * perBatch)))
      for (let i = 0; i < perBatch; i++) {
        const id = b > 0 && sharedAt.has(i) ? `k${b - 1}-${Math.floor(random() * (perBatch - shared))}` : `k${b}-${i}`
        const version = lines.length + 1
        lines.push(JSON.stringify({ id, version }))
        lastVersion.set(id, version)
      }
    }
    const source = join(dir, "updates.ndjson")
    writeFileSync(source, `${lines.join("\n")}\n`)
    const datasetId = await newDataset(server.url, apiKey, { name: `parts crash ${seed}`, schema: idAndVersion, primaryKey: ["id"] })
    const checkpointPath = join(dir, "updates.checkpoint.json")
    const args = [
      source,
      "--dataset",
      datasetId,
      "--checkpoint",
      checkpointPath,
      "--dead-letter",
      join(dir, "updates.dead-letters.ndjson"),
      "--api-url",
      server.url,
      "--api-key",
      apiKey,
      "--concurrency",
      "8"
    ]
    const log: Array<string> = []
    let splitsSeen = 0
    for (let i = 0; i <= kills; i++) {
      const killAfterMs = i < kills ? 150 + Math.floor(random() * 1_000) : undefined
      // The first run's kill clock starts once it recorded a split: a later run sends the cuts
      // the first one recorded as they were recorded (whole ones whole), so a first run killed
      // before any split (seen on a loaded machine: it took a second to start) left none to see.
      const attempt = await runIngest(args, { checkpointPath, killAfterMs, ...(i === 0 ? { anchor: hasSplit } : {}) })
      const cuts = readCheckpoint(checkpointPath)?.cuts ?? []
      const inParts = cuts.filter((cut) => (cut as { held?: ReadonlyArray<number> }).held !== undefined).length
      splitsSeen += inParts
      log.push(`run ${i + 1}: ${attempt.killed ? "killed" : `exited ${attempt.code}`} after ${attempt.elapsedMs} ms; ${cuts.length} cut(s) left, ${inParts} in parts`)
      if (!attempt.killed) {
        expect(attempt.code, `${log.join("\n")}\n${attempt.stderr.slice(-2000)}`).toBe(0)
        break
      }
    }
    console.log(`parts crash (seed ${seed}):\n${log.join("\n")}`)

    const rows = await readAllRows(server.url, apiKey, datasetId)
    const stale = rows.filter((row) => lastVersion.get(String(row["id"])) !== Number(row["version"]))
    expect(rows.length, log.join("\n")).toBe(lastVersion.size)
    expect(stale.slice(0, 10), `${stale.length} stale keys\n${log.join("\n")}`).toEqual([])

    // Batches went in parts: ingestions of fewer records than a batch, beside the whole ones.
    // (The checkpoint shows splits only of a killed run; a run may finish before its kill.)
    const sizes: Array<number> = (await ingestionDetails(server.url, apiKey, datasetId))
      .map((detail) => detail.summary?.ingestion?.receivedRecordCount ?? 0)
    const parts = sizes.filter((size) => size > 0 && size < perBatch).length
    console.log(`parts crash (seed ${seed}): ${parts} of ${sizes.length} ingestions were parts of a batch`)
    expect(parts > 0 || splitsSeen > 0, `${JSON.stringify(sizes)}\n${log.join("\n")}`).toBe(true)
  }, 300_000)
})
