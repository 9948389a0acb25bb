/**
 * Every run knows what it is: the cases a new user met, each run as the user runs it
 * (`tributary ingest` against `tributary serve`, child processes).
 *
 * The cases run side by side, each with datasets and files of its own: they mostly wait on
 * their child processes (measured on the 2-core machine: 14 s one after another).
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { binPath, type Finished, runCli, startServe, type RunningServer } from "../support/cli.js"
import { api as apiCall } from "../support/crash.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-run-identity-"))
const key = "identity-key"

/** One API call with the test key (retried while the server answers 429 or 5xx), answering the envelope. */
const api = async (server: RunningServer, method: "GET" | "POST", path: string, body?: unknown): Promise<any> =>
  (await apiCall(server.url, key, method, path, body)).body

/** An append-only dataset (no primary key): every stored record is a row. */
const dataset = async (server: RunningServer, columns = [{ id: "n", dataType: "number" }, { id: "v", dataType: "string" }]) => {
  const dataSource = await api(server, "POST", "/v2/data-sources", { name: "identity" })
  const created = await api(server, "POST", "/v2/datasets", { name: "rows", dataSourceId: dataSource.data.id, schema: columns, primaryKey: [] })
  return String(created.data.id)
}

const rowCount = async (server: RunningServer, datasetId: string): Promise<number> => {
  // Ingestions end a moment after the run's last commit: the count settles.
  let last = -1
  for (let i = 0; i < 50; i++) {
    const count = (await api(server, "GET", `/v2/datasets/${datasetId}/data?pageSize=1`)).data.pagination.totalItems as number
    if (count === last) return count
    last = count
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return last
}

const lines = (n: number, v: string) => Array.from({ length: n }, (_, i) => JSON.stringify({ n: i, v })).join("\n") + "\n"

/** `tributary ingest - ...` with `input` on stdin. */
const ingestStdin = (server: RunningServer, datasetId: string, input: string, extra: ReadonlyArray<string> = []) =>
  new Promise<Finished>((resolve) => {
    const child = spawn(process.execPath, [
      binPath,
      "ingest",
      "-",
      "--dataset",
      datasetId,
      "--dead-letter",
      join(dir, `stdin-${datasetId}.dead-letters.ndjson`),
      "--api-url",
      server.url,
      "--api-key",
      key,
      ...extra
    ])
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(input)
  })

const ingestFile = (server: RunningServer, file: string, datasetId: string, extra: ReadonlyArray<string> = []) =>
  runCli(["ingest", file, "--dataset", datasetId, "--api-url", server.url, "--api-key", key, ...extra], 60_000)

describe.concurrent("run identity (tributary ingest)", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServe(["--port", "0", "--api-key", key])
  })
  afterAll(() => server.stop())

  it("purge, then the same data again from stdin: stored again, not answered from the first run", async () => {
    const datasetId = await dataset(server)
    const first = await ingestStdin(server, datasetId, lines(1000, "a"))
    expect(first.code, first.stderr).toBe(0)
    expect(await rowCount(server, datasetId)).toBe(1000)
    await api(server, "POST", `/v2/datasets/${datasetId}/purge`, {})
    expect(await rowCount(server, datasetId)).toBe(0)
    const second = await ingestStdin(server, datasetId, lines(1000, "a"))
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toContain("read 1000 lines: 1000 stored")
    expect(await rowCount(server, datasetId)).toBe(1000)
  })

  it("a second stdin run with other data into the same dataset is stored, not refused as a reused key", async () => {
    const datasetId = await dataset(server)
    expect((await ingestStdin(server, datasetId, lines(500, "a"))).code).toBe(0)
    const second = await ingestStdin(server, datasetId, lines(500, "b"))
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toContain("read 500 lines: 500 stored, 0 rejected by the service, 0 dead-lettered in total")
    expect(await rowCount(server, datasetId)).toBe(1000)
  })

  it("two fresh runs of one file (the checkpoint removed between them) store it twice: the user asked twice", async () => {
    const datasetId = await dataset(server)
    const file = join(dir, "twice.ndjson")
    writeFileSync(file, lines(300, "a"))
    expect((await ingestFile(server, file, datasetId)).code).toBe(0)
    rmSync(`${file}.checkpoint.json`)
    const again = await ingestFile(server, file, datasetId)
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain("read 300 lines: 300 stored")
    expect(await rowCount(server, datasetId)).toBe(600)
  })

  it("a checkpoint names its dataset: resuming into another is a clear error, --restart starts over into it", async () => {
    const wrong = await dataset(server, [{ id: "other", dataType: "string" }])
    const right = await dataset(server)
    const file = join(dir, "bound.ndjson")
    writeFileSync(file, lines(200, "a"))
    // Everything is dead-lettered (unknown columns, frozen): the run stops loudly, naming the reason.
    const first = await ingestFile(server, file, wrong, ["--schema-contract", "freeze"])
    expect(first.code).toBe(1)
    expect(first.stderr).toMatch(/dead letters, more than the 10% of the \d+ read allowed \(most: unknown_column n \d+/)
    const second = await ingestFile(server, file, right)
    expect(second.code).toBe(1)
    expect(second.stderr.trim().split("\n")).toHaveLength(1)
    expect(second.stderr).toContain(`into dataset ${wrong}, not into dataset ${right}: run with --restart to start over into dataset ${right}`)
    expect(await rowCount(server, right)).toBe(0)
    const restarted = await ingestFile(server, file, right, ["--restart"])
    expect(restarted.code, restarted.stderr).toBe(0)
    expect(restarted.stdout).toContain("read 200 lines: 200 stored")
    expect(await rowCount(server, right)).toBe(200)
  })

  it("a file replaced by another at the same path is not resumed over; one that grew is", async () => {
    const datasetId = await dataset(server)
    const file = join(dir, "replaced.ndjson")
    writeFileSync(file, lines(100, "a"))
    expect((await ingestFile(server, file, datasetId)).code).toBe(0)
    writeFileSync(file, lines(100, "a") + lines(50, "grown"))
    const grown = await ingestFile(server, file, datasetId)
    expect(grown.code, grown.stderr).toBe(0)
    expect(grown.stderr).toContain("resuming run")
    expect(grown.stderr).toContain("after line 100")
    expect(grown.stderr).toContain("its earlier run read 100, stored 100, dead-lettered 0")
    expect(grown.stdout).toContain("read 50 lines: 50 stored")
    writeFileSync(file, lines(400, "replaced"))
    const replaced = await ingestFile(server, file, datasetId)
    expect(replaced.code).toBe(1)
    expect(replaced.stderr).toContain("is not the one run")
    expect(replaced.stderr).toContain("--restart")
    expect(await rowCount(server, datasetId)).toBe(150)
  })

  it("a checkpoint written before runs had an identity still resumes where it stood", async () => {
    const datasetId = await dataset(server)
    const file = join(dir, "old.ndjson")
    writeFileSync(file, lines(100, "a"))
    const text = readFileSync(file, "utf8")
    const fortiethEnd = text.split("\n").slice(0, 40).join("\n").length + 1
    writeFileSync(
      `${file}.checkpoint.json`,
      JSON.stringify({ version: 1, positions: { "0": { partition: "0", offset: 40, resume: { byteOffset: fortiethEnd } } }, cuts: [] })
    )
    const resumed = await ingestFile(server, file, datasetId)
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stderr).toContain("resuming a run after line 40")
    expect(resumed.stdout).toContain("read 60 lines: 60 stored")
    expect(await rowCount(server, datasetId)).toBe(60)
  })

  it("a checkpoint names the service's address: a resume elsewhere says where the run sent before", async () => {
    const other = await startServe(["--port", "0", "--api-key", key])
    try {
      const first = await startServe(["--port", "0", "--api-key", key])
      let datasetId: string
      const file = join(dir, "moved.ndjson")
      try {
        datasetId = await dataset(first)
        writeFileSync(file, lines(50, "a"))
        expect((await ingestFile(first, file, datasetId)).code).toBe(0)
      } finally {
        await first.stop()
      }
      // The same dataset number on the other server (both fresh, made the same way).
      expect(await dataset(other)).toBe(datasetId)
      writeFileSync(file, lines(50, "a") + lines(20, "b"))
      const moved = await ingestFile(other, file, datasetId)
      expect(moved.code, moved.stderr).toBe(0)
      expect(moved.stderr).toContain(`it sent to ${first.url} before, to another address now`)
      expect(moved.stdout).toContain("read 20 lines: 20 stored")
    } finally {
      await other.stop()
    }
  })

  it("--max-dead-letters takes a count or a share; 100% never stops; the summary names the top reasons", async () => {
    const datasetId = await dataset(server)
    const file = join(dir, "bad.ndjson")
    writeFileSync(file, lines(40, "a") + Array.from({ length: 10 }, (_, i) => JSON.stringify({ n: `x${i}`, v: "a" })).join("\n") + "\n")
    const tolerant = await ingestFile(server, file, datasetId, ["--max-dead-letters", "100%"])
    expect(tolerant.code, tolerant.stderr).toBe(0)
    expect(tolerant.stdout).toContain("10 dead-lettered in total")
    expect(tolerant.stdout).toContain("(most: invalid_type n 10)")
    const counted = await ingestFile(server, file, datasetId, ["--restart", "--max-dead-letters", "5"])
    expect(counted.code).toBe(1)
    expect(counted.stderr).toContain("more than the 5 allowed (most: invalid_type n")
    const usage = await ingestFile(server, file, datasetId, ["--max-dead-letters", "lots"])
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain("--max-dead-letters must be a count (500) or a share of the records read (10%), got 'lots'")
  })
})
