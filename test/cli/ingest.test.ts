import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { binPath, runCli, startServe, type RunningServer } from "../support/cli.js"
import { api as apiCall } from "../support/crash.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-ingest-cli-"))
const key = "cli-key"

/** One API call with the test key (retried while the server answers 429 or 5xx), answering the envelope. */
const api = async (server: RunningServer, method: "GET" | "POST", path: string, body?: unknown): Promise<any> =>
  (await apiCall(server.url, key, method, path, body)).body

const newDataset = async (server: RunningServer) => {
  const dataSource = await api(server, "POST", "/v2/data-sources", { name: "cli" })
  const dataset = await api(server, "POST", "/v2/datasets", {
    name: "events",
    dataSourceId: dataSource.data.id,
    primaryKey: ["id"],
    schema: [{ id: "id", dataType: "number" }, { id: "kind", dataType: "string" }]
  })
  return String(dataset.data.id)
}

describe("tributary ingest", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServe(["--port", "0", "--api-key", key])
  })
  afterAll(() => server.stop())

  it("sends a file, writes dead letters and a checkpoint, prints a summary and exits 0", async () => {
    const datasetId = await newDataset(server)
    const file = join(dir, "events.ndjson")
    writeFileSync(file, [
      "{\"id\":1,\"kind\":\"a\"}",
      "{\"id\":\"two\",\"kind\":\"b\"}",
      "not json",
      "{\"id\":3,\"kind\":\"c\"}"
    ].join("\n") + "\n")
    const result = await runCli(["ingest", file, "--dataset", datasetId, "--api-url", server.url, "--api-key", key])
    expect(result.stderr).not.toContain("tributary:")
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("read 4 lines: 2 stored, 0 rejected by the service, 2 dead-lettered in total")
    expect(result.stdout).toContain(`dead letters: ${file}.dead-letters.ndjson`)
    const letters = readFileSync(`${file}.dead-letters.ndjson`, "utf8").trim().split("\n").map((l) => JSON.parse(l))
    expect(letters.map((l) => [l.position.offset, l.reason.code])).toEqual([[2, "invalid_type"], [3, "invalid_json"]])
    const checkpoint = JSON.parse(readFileSync(`${file}.checkpoint.json`, "utf8"))
    expect(checkpoint.positions["0"].offset).toBe(4)
    const rows = await api(server, "GET", `/v2/datasets/${datasetId}/data`)
    expect(rows.data.items.map((r: any) => r.id).sort()).toEqual([1, 3])
  })

  it("--dataset takes the dataset's number or its UUID: both name the same dataset", async () => {
    const datasetId = await newDataset(server)
    const uuid = (await api(server, "GET", `/v2/datasets/${datasetId}`)).data.uuid as string
    for (const [n, id] of [[1, datasetId], [2, uuid]] as const) {
      const file = join(dir, `by-${n}.ndjson`)
      writeFileSync(file, `{"id":${n},"kind":"k${n}"}\n`)
      const result = await runCli(["ingest", file, "--dataset", id, "--api-url", server.url, "--api-key", key])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toContain("read 1 line: 1 stored")
    }
    const rows = await api(server, "GET", `/v2/datasets/${uuid}/data`)
    expect(rows.data.items.map((r: any) => r.id).sort()).toEqual([1, 2])
  })

  it("reads standard input with -", async () => {
    const datasetId = await newDataset(server)
    const child = spawn(process.execPath, [binPath, "ingest", "-", "--dataset", datasetId, "--dead-letter", join(dir, "stdin-dead.ndjson")], {
      env: { ...process.env, TRIBUTARY_API_URL: server.url, TRIBUTARY_API_KEY: key },
      cwd: dir
    })
    let stdout = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stdin.end("{\"id\":10,\"kind\":\"x\"}\n{\"id\":11,\"kind\":\"y\"}\n")
    const code = await new Promise((resolve) => child.on("close", resolve))
    expect(code).toBe(0)
    expect(stdout).toContain("read 2 lines: 2 stored")
    expect(stdout).toContain("no checkpoint (standard input)")
  })

  it("fails with one clear line and exit 1 for an unknown dataset or a bad key", async () => {
    const file = join(dir, "one.ndjson")
    writeFileSync(file, "{\"id\":1}\n")
    const unknown = await runCli([
      "ingest", file, "--dataset", "00000000-0000-4000-8000-000000000000", "--api-url", server.url, "--api-key", key,
      "--checkpoint", join(dir, "unknown.checkpoint.json")
    ])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1)
    expect(unknown.stderr).toContain("does not exist")
    const badKey = await runCli([
      "ingest", file, "--dataset", "00000000-0000-4000-8000-000000000000", "--api-url", server.url, "--api-key", "wrong",
      "--checkpoint", join(dir, "badkey.checkpoint.json")
    ])
    expect(badKey.code).toBe(1)
    expect(badKey.stderr).toContain("API key is not valid")
  })

  it("exits 2 on a usage error", async () => {
    const result = await runCli(["ingest", join(dir, "x.ndjson")])
    expect(result.code).toBe(2)
  })

  it("refuses a concurrency or a line limit below 1 as a usage error naming the option", async () => {
    const file = join(dir, "limits.ndjson")
    writeFileSync(file, "{\"id\":1}\n")
    const base = ["ingest", file, "--dataset", "d", "--api-url", server.url, "--api-key", key]
    const zero = await runCli([...base, "--concurrency", "0"])
    expect(zero.code).toBe(2)
    expect(zero.stderr).toContain("--concurrency must be a whole number of at least 1 (an adaptive ceiling) or fixed:N, got '0'")
    const negative = await runCli([...base, "--max-line-bytes", "-5"])
    expect(negative.code).toBe(2)
    expect(negative.stderr).toContain("--max-line-bytes must be at least 1, got -5")
  })
})

describe("tributary ingest against a flaky service", () => {
  let server: RunningServer
  beforeAll(async () => {
    // The first two requests (the fixtures) go through; then half the requests fail.
    server = await startServe(["--port", "0", "--api-key", key, "--faults", "5xx=0.5,after=2,seed=11"])
  })
  afterAll(() => server.stop())

  it("shows a window's first retries one by one and counts the rest by cause; every record is stored", async () => {
    const datasetId = await newDataset(server)
    const file = join(dir, "flaky.ndjson")
    writeFileSync(file, Array.from({ length: 5000 }, (_, i) => JSON.stringify({ id: i, kind: "k" })).join("\n") + "\n")
    const started = Date.now()
    const result = await runCli(["ingest", file, "--dataset", datasetId, "--api-url", server.url, "--api-key", key, "--retries", "30"], 120_000)
    const seconds = (Date.now() - started) / 1000
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toContain("read 5000 lines: 5000 stored")
    const lines = result.stderr.trim().split("\n")
    const oneByOne = lines.filter((line) => /; retry \d+ of 30 in \d+\.\d s$/.test(line))
    const counted = lines.flatMap((line) => {
      const match = /^tributary: (\d+) more retr(?:y|ies) in \d+\.\d s, not shown one by one \(HTTP 503 x (\d+)\)$/.exec(line)
      return match === null ? [] : [Number(match[1])]
    })
    // At most five a window of 5 s, however many fail.
    expect(oneByOne.length).toBeGreaterThanOrEqual(5)
    expect(oneByOne.length).toBeLessThanOrEqual(5 * (Math.floor(seconds / 5) + 1))
    expect(counted.length).toBeGreaterThanOrEqual(1)
    expect(counted.reduce((a, b) => a + b, 0)).toBeGreaterThan(10)
    // Nothing else was said but the progress lines (every 5 s off a terminal).
    const progress = lines.filter((line) => /^\d{4}-\d{2}-\d{2}T[\d:.]+Z /.test(line))
    expect(lines.length).toBe(oneByOne.length + counted.length + progress.length)
  })
})

describe("tributary ingest interrupted (Ctrl-C)", () => {
  let slow: RunningServer
  beforeAll(async () => {
    // Added latency keeps the ingest running long enough to be interrupted in the middle.
    slow = await startServe(["--port", "0", "--api-key", key, "--faults", "latency=10-20ms"])
  })
  afterAll(() => slow.stop())

  it("commits what was delivered, says where it stopped, exits 130, and the same command resumes", async () => {
    const datasetId = await newDataset(slow)
    const total = 30_000
    const file = join(dir, "interrupted.ndjson")
    writeFileSync(file, Array.from({ length: total }, (_, i) => JSON.stringify({ id: i, kind: "k" })).join("\n") + "\n")
    const args = ["ingest", file, "--dataset", datasetId, "--api-url", slow.url, "--api-key", key]
    const child = spawn(process.execPath, [binPath, ...args])
    let stderr = ""
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve))
    const committed = () => {
      try {
        return JSON.parse(readFileSync(`${file}.checkpoint.json`, "utf8")).positions["0"]?.offset ?? 0
      } catch {
        return 0
      }
    }
    while (committed() === 0) await new Promise((r) => setTimeout(r, 25))
    child.kill("SIGINT")
    expect(await closed).toBe(130)

    const stoppedAt: number = committed()
    expect(stoppedAt).toBeGreaterThan(0)
    expect(stoppedAt).toBeLessThan(total)
    expect(stderr).toContain(`tributary: interrupted; committed through line ${stoppedAt} in ${file}.checkpoint.json`)

    const resumed = await runCli(args, 60_000)
    expect(resumed.code).toBe(0)
    expect(resumed.stdout).toContain(`read ${total - stoppedAt} lines`)
    const stored = await api(slow, "GET", `/v2/datasets/${datasetId}`)
    expect(stored.data.rowCount).toBe(total)
  }, 90_000)
})

describe("tributary demo (the main job)", () => {
  it("runs the whole product on the embedded defaults and reports where the dead letters went", async () => {
    const result = await runCli(["demo", "--port", "0"], 60_000)
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/reference server on http:\/\/127\.0\.0\.1:\d+/)
    expect(result.stdout).toContain("read 2005 lines: 2000 stored, 0 rejected by the service, 5 dead-lettered in total")
    expect(result.stdout).toMatch(/dead letters: .*dead-letters\.ndjson/)
    expect(result.stdout).toMatch(/now holds 2000 rows/)
    // Its temporary directory is gone when it ends.
    const workDir = /^\((\S+) is removed when the demo ends/m.exec(result.stdout)?.[1]
    expect(workDir).toBeDefined()
    expect(existsSync(workDir!)).toBe(false)
  }, 60_000)
})
