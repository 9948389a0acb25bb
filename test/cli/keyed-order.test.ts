/**
 * Keyed updates end with the last version of every key, whatever the faults: `tributary ingest`
 * against `tributary serve --faults 5xx=0.3,drop=0.1`, both as child processes, as a user runs
 * them. Before batches of shared keys were kept in order, half of the keys ended stale here
 * (a failed batch was retried after a later batch of the same keys was applied).
 *
 * The two cases run side by side, each into a dataset of its own.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, startServe, type RunningServer } from "../support/cli.js"
import { api as apiCall } from "../support/crash.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-keyed-order-"))
const key = "order-key"

/** One API call with the test key (retried while the server answers 429 or 5xx), answering the envelope. */
const api = async (server: RunningServer, method: "GET" | "POST", path: string, body?: unknown): Promise<any> =>
  (await apiCall(server.url, key, method, path, body)).body

const keyedDataset = async (server: RunningServer, primaryKey: ReadonlyArray<string>) => {
  const dataSource = await api(server, "POST", "/v2/data-sources", { name: "order" })
  const dataset = await api(server, "POST", "/v2/datasets", {
    name: "updates",
    dataSourceId: dataSource.data.id,
    primaryKey,
    schema: [{ id: "key", dataType: "string" }, { id: "version", dataType: "number" }]
  })
  return String(dataset.data.id)
}

const rowsOf = async (server: RunningServer, datasetId: string) => {
  const rows: Array<Record<string, unknown>> = []
  for (let page = 0;; page++) {
    const answer = await api(server, "GET", `/v2/datasets/${datasetId}/data?page=${page}&pageSize=1000`)
    rows.push(...answer.data.items)
    if (answer.data.items.length < 1000) return rows
  }
}

/** `versions` updates of each of `keys` keys, in file order: a key's versions 0.. in turn. */
const updates = (keys: number, versions: number) => {
  const lines: Array<string> = []
  for (let version = 0; version < versions; version++) {
    for (let k = 0; k < keys; k++) lines.push(JSON.stringify({ key: `k${k}`, version }))
  }
  return lines.join("\n") + "\n"
}

describe.concurrent("keyed updates under faults (tributary ingest against tributary serve --faults)", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServe(["--port", "0", "--api-key", key, "--faults", "5xx=0.3,drop=0.1"])
  })
  afterAll(() => server.stop())

  it("the last version of every key wins, with every batch in flight at once allowed", async () => {
    const keys = 150
    const versions = 40
    const datasetId = await keyedDataset(server, ["key"])
    const file = join(dir, "updates.ndjson")
    writeFileSync(file, updates(keys, versions))
    const result = await runCli(
      ["ingest", file, "--dataset", datasetId, "--concurrency", "fixed:8", "--retries", "20", "--api-url", server.url, "--api-key", key],
      90_000
    )
    expect(result.code, result.stderr).toBe(0)
    // Dropped answers are retried under the same keys and replayed: counted apart, all stored once.
    const summary = /read (\d+) lines: (\d+) stored(?:, already stored earlier (\d+))?/.exec(result.stdout)
    expect(summary, result.stdout).not.toBeNull()
    expect(Number(summary![1])).toBe(keys * versions)
    expect(Number(summary![2]) + Number(summary![3] ?? 0)).toBe(keys * versions)
    const rows = await rowsOf(server, datasetId)
    expect(rows).toHaveLength(keys)
    const stale = rows.filter((row) => row.version !== versions - 1)
    expect(stale.map((row) => `${row.key}@${row.version}`)).toEqual([])
  }, 120_000)

  it("--key-order accepted: the same, relying on the server applying ingestions in the order it accepted them", async () => {
    const keys = 150
    const versions = 40
    const datasetId = await keyedDataset(server, ["key"])
    const file = join(dir, "updates-accepted.ndjson")
    writeFileSync(file, updates(keys, versions))
    const result = await runCli(
      ["ingest", file, "--dataset", datasetId, "--key-order", "accepted", "--retries", "20", "--api-url", server.url, "--api-key", key],
      90_000
    )
    expect(result.code, result.stderr).toBe(0)
    const rows = await rowsOf(server, datasetId)
    expect(rows).toHaveLength(keys)
    expect(rows.filter((row) => row.version !== versions - 1).map((row) => `${row.key}@${row.version}`)).toEqual([])
  }, 120_000)
})
