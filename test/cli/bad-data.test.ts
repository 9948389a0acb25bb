/**
 * Bad data, start to finish, as a user meets it: `tributary ingest` into datasets the schema
 * contract evolves, freezes or trims, then `tributary replay` of the dead letters after a fix
 * (from a file, after a SIGKILL, from a dead-letter topic on the real broker), against
 * `tributary serve` on loopback.
 *
 * The tests run side by side against one server, each with datasets, files, topics and
 * schemas of its own: they mostly wait on their child processes (measured on the 2-core
 * machine: 42 s one after another, each describe with its own server).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { binPath, runCli, startServe, type RunningServer } from "../support/cli.js"
import { api as apiCall } from "../support/crash.js"
import { createTopic, groupLag, kafka, startSink, waitFor } from "../support/kafka.js"
import { testSchema } from "../support/postgres.js"
import { databaseUrl, kafkaBrokers } from "../support/services.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-bad-data-"))
const key = "bad-data-key"

/** One API call with the test key (retried while the server answers 429 or 5xx), answering the envelope. */
const api = async (server: RunningServer, method: "GET" | "POST", path: string, body?: unknown): Promise<any> =>
  (await apiCall(server.url, key, method, path, body)).body

/** A v1 dataset created as v1 creates them: no columns at all. */
const v1Dataset = async (server: RunningServer, primaryKeys: ReadonlyArray<string> = []) => {
  const source = await api(server, "POST", "/v1/data-sources", { title: "bad data" })
  const created = await api(server, "POST", "/v1/datasets", { title: "rows", dataSourceId: source.id, primaryKeys })
  return String(created.id)
}

/** A v2 dataset with columns (and a primary key when given). */
const v2Dataset = async (server: RunningServer, schema: ReadonlyArray<{ id: string; dataType: string }>, primaryKey: ReadonlyArray<string> = []) => {
  const source = await api(server, "POST", "/v2/data-sources", { name: "bad data" })
  const created = await api(server, "POST", "/v2/datasets", { name: "rows", dataSourceId: source.data.id, schema, primaryKey })
  return String(created.data.id)
}

const rows = async (server: RunningServer, datasetId: string): Promise<Array<Record<string, unknown>>> => {
  const all: Array<Record<string, unknown>> = []
  for (let page = 0;; page++) {
    const answer = await api(server, "GET", `/v2/datasets/${datasetId}/data?page=${page}&pageSize=100`)
    all.push(...answer.data.items)
    if (answer.data.items.length < 100) return all
  }
}

const columnsOf = async (server: RunningServer, datasetId: string) =>
  ((await api(server, "GET", `/v2/datasets/${datasetId}/schema`)).data.items as Array<{ id: string; dataType: string }>).map((c) => `${c.id}:${c.dataType}`)

const file = (name: string, lines: ReadonlyArray<unknown>) => {
  const path = join(dir, name)
  writeFileSync(path, lines.map((line) => JSON.stringify(line)).join("\n") + "\n")
  return path
}

const letters = (path: string) => readFileSync(path, "utf8").trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))

const cli = (server: RunningServer, args: ReadonlyArray<string>, timeoutMs = 60_000) =>
  runCli([...args, "--api-url", server.url, "--api-key", key], timeoutMs)

/** Every `n` of the stored rows, sorted, and whether one is there twice. */
const storedNs = (stored: ReadonlyArray<Record<string, unknown>>) => stored.map((row) => row.n as number).sort((a, b) => a - b)
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

let server: RunningServer
beforeAll(async () => {
  server = await startServe(["--port", "0", "--api-key", key])
})
afterAll(() => server.stop())

describe.concurrent("schema contracts (tributary ingest)", { timeout: 120_000 }, () => {
  const lines = [
    ...range(1, 3).map((n) => ({ n, v: "a" })),
    { n: 4, v: "a", coupon: "SPRING" }, // a new column
    { n: 5, v: "a" },
    { n: 6, v: 6 }, // a number in the string column
    ...range(7, 10).map((n) => ({ n, v: "a" }))
  ]

  it("evolve (the default): a v1 dataset created without columns gains them, as the service adds them", async () => {
    const datasetId = await v1Dataset(server)
    const input = file("evolve.ndjson", lines)
    const done = await cli(server, ["ingest", input, "--dataset", datasetId])
    expect(done.code, done.stderr).toBe(0)
    expect(done.stdout).toContain("read 10 lines: 9 stored, 0 rejected by the service, 1 dead-lettered in total")
    expect(done.stdout).toContain("schema: columns added n (number), v (string), coupon (string)")
    expect(letters(`${input}.dead-letters.ndjson`).map((l) => [l.position.offset, l.reason.code, l.reason.field])).toEqual([
      [6, "invalid_type", "v"]
    ])
    expect(await columnsOf(server, datasetId)).toEqual(["n:number", "v:string", "coupon:string"])
    expect(storedNs(await rows(server, datasetId))).toEqual([1, 2, 3, 4, 5, 7, 8, 9, 10])
  })

  it("freeze: every record with a column the dataset lacks is a dead letter (as before contracts)", async () => {
    const datasetId = await v1Dataset(server)
    const input = file("freeze.ndjson", lines)
    const done = await cli(server, ["ingest", input, "--dataset", datasetId, "--schema-contract", "freeze", "--max-dead-letters", "100%"])
    expect(done.code, done.stderr).toBe(0)
    expect(done.stdout).toContain("read 10 lines: 0 stored, 0 rejected by the service, 10 dead-lettered in total")
    expect(done.stdout).not.toContain("schema:")
    expect(letters(`${input}.dead-letters.ndjson`).every((l) => l.reason.code === "unknown_column" && l.reason.field === "n")).toBe(true)
    expect(await rows(server, datasetId)).toEqual([])
  })

  it("discard_value: new keys and values of the wrong type are dropped, the rest stored; a missing key is still a dead letter", async () => {
    const datasetId = await v2Dataset(server, [{ id: "n", dataType: "number" }, { id: "v", dataType: "string" }], ["n"])
    const input = file("discard.ndjson", [...lines, { v: "no key" }])
    const done = await cli(server, ["ingest", input, "--dataset", datasetId, "--schema-contract", "discard_value"])
    expect(done.code, done.stderr).toBe(0)
    expect(done.stdout).toContain("read 11 lines: 10 stored, 0 rejected by the service, 1 dead-lettered in total")
    expect(done.stdout).toContain("schema: values discarded 2 (")
    expect(done.stdout).toContain("unknown_column coupon 1")
    expect(done.stdout).toContain("invalid_type v 1")
    expect(letters(`${input}.dead-letters.ndjson`).map((l) => [l.position.offset, l.reason.code])).toEqual([[11, "missing_primary_key"]])
    const stored = await rows(server, datasetId)
    expect(storedNs(stored)).toEqual(range(1, 10))
    expect(stored.find((row) => row.n === 6)).toEqual({ n: 6 })
    expect(stored.find((row) => row.n === 4)).toEqual({ n: 4, v: "a" })
    expect(await columnsOf(server, datasetId)).toEqual(["n:number", "v:string"])
  })

  it("what the service refuses is a dead letter with its reason: the 101st column", async () => {
    const datasetId = await v2Dataset(server, range(1, 99).map((i) => ({ id: `c${i}`, dataType: "number" })))
    const input = file("wide.ndjson", [{ c1: 1, extra: 1 }, { c1: 2, another: 2 }, { c1: 3, extra: 3 }])
    const done = await cli(server, ["ingest", input, "--dataset", datasetId])
    expect(done.code, done.stderr).toBe(0)
    expect(done.stdout).toContain("read 3 lines: 2 stored, 0 rejected by the service, 1 dead-lettered in total")
    expect(letters(`${input}.dead-letters.ndjson`).map((l) => [l.position.offset, l.reason.code, l.reason.field])).toEqual([
      [2, "too_many_columns", "another"]
    ])
  })

  it("a bad contract is a usage error naming it", async () => {
    const done = await cli(server, ["ingest", file("x.ndjson", lines), "--dataset", "1", "--schema-contract", "columns=thaw"])
    expect(done.code).toBe(2)
    expect(done.stdout + done.stderr).toContain("'columns=thaw' is not a contract")
  })
})

describe.concurrent("tributary replay", { timeout: 240_000 }, () => {
  const schema = [{ id: "n", dataType: "number" }, { id: "v", dataType: "string" }, { id: "amount", dataType: "number" }]

  /** 400 lines, 5% bad: every 40th names `amt` for `amount` (frozen: a dead letter), every 40th from 20 has a number in `v`. */
  const fivePercentBad = (name: string) =>
    file(name, range(1, 400).map((n) =>
      n % 40 === 0 ? { n, v: "x", amt: n } : n % 40 === 20 ? { n, v: n, amount: n } : { n, v: "x", amount: n }
    ))

  const ingestFrozen = async (input: string, datasetId: string) => {
    const done = await cli(server, ["ingest", input, "--dataset", datasetId, "--schema-contract", "freeze"])
    expect(done.code, done.stderr).toBe(0)
    expect(done.stdout).toContain("read 400 lines: 380 stored, 0 rejected by the service, 20 dead-lettered in total")
  }

  it("fixes 5% bad lines with --rename and --set: every line stored once; again (resumed or fresh): nothing new", async () => {
    const datasetId = await v2Dataset(server, schema) // append-only: a line stored twice would be two rows
    const input = fivePercentBad("five.ndjson")
    await ingestFrozen(input, datasetId)
    const deadLetters = `${input}.dead-letters.ndjson`
    expect(letters(deadLetters).every((l) => l.v === 2 && l.source === `ndjson:${input}` && typeof l.run === "string" && l.dataset === datasetId)).toBe(true)

    const dry = await cli(server, ["replay", deadLetters, "--dry-run"])
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toBe(`would replay 20 of 20 letters into dataset ${datasetId}\n  invalid_type v: 10\n  unknown_column amt: 10\n`)
    expect(await rows(server, datasetId)).toHaveLength(380)

    const fix = ["replay", deadLetters, "--rename", "amt=amount", "--set", "v=fixed"]
    const first = await cli(server, fix)
    expect(first.code, first.stderr).toBe(0)
    expect(first.stdout).toContain("replayed 20 letters: 20 stored, 0 dead-lettered again")
    const stored = await rows(server, datasetId)
    expect(storedNs(stored)).toEqual(range(1, 400))
    expect(stored.filter((row) => row.v === "fixed").map((row) => row.n as number).sort((a, b) => a - b)).toEqual(
      range(1, 400).filter((n) => n % 20 === 0)
    )
    expect(stored.find((row) => row.n === 40)).toEqual({ n: 40, v: "fixed", amount: 40 })

    // The same command again resumes a finished replay: nothing to send.
    const again = await cli(server, fix)
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain("replayed 0 letters: 0 stored")
    // A fresh replay (its checkpoint gone) sends the same batches under the same keys: the service replays them.
    rmSync(`${deadLetters}.replay.checkpoint.json`)
    const fresh = await cli(server, fix)
    expect(fresh.code, fresh.stderr).toBe(0)
    expect(fresh.stdout).toContain("replayed 20 letters: 0 stored, already stored earlier 20")
    expect(await rows(server, datasetId)).toHaveLength(400)
  })

  it("a replay that fails again writes a new file (never the one it reads), which a further fix replays", async () => {
    const datasetId = await v2Dataset(server, schema)
    const input = fivePercentBad("again.ndjson")
    await ingestFrozen(input, datasetId)
    const deadLetters = `${input}.dead-letters.ndjson`
    const before = readFileSync(deadLetters, "utf8")

    const refused = await cli(server, ["replay", deadLetters, "--dead-letter", deadLetters])
    expect(refused.code).toBe(2)

    const partly = await cli(server, ["replay", deadLetters, "--rename", "amt=amount"])
    expect(partly.code, partly.stderr).toBe(0)
    expect(partly.stdout).toContain("replayed 20 letters: 10 stored, 10 dead-lettered again")
    expect(readFileSync(deadLetters, "utf8")).toBe(before)
    const failedAgain = letters(`${deadLetters}.replay-dead-letters.ndjson`)
    // With their original positions, source and run: a later replay keys them as their origin.
    expect(failedAgain.map((l) => [l.position.partition, l.position.offset, l.reason.code])).toEqual(
      range(1, 400).filter((n) => n % 40 === 20).map((n) => ["0", n, "invalid_type"])
    )
    expect(new Set(failedAgain.map((l) => `${l.source} ${l.run} ${l.dataset}`)).size).toBe(1)
    expect(failedAgain[0].source).toBe(`ndjson:${input}`)

    const rest = await cli(server, ["replay", `${deadLetters}.replay-dead-letters.ndjson`, "--set", "v=fixed", "--reason", "invalid_type"])
    expect(rest.code, rest.stderr).toBe(0)
    expect(rest.stdout).toContain("replayed 10 letters: 10 stored, 0 dead-lettered again")
    expect(storedNs(await rows(server, datasetId))).toEqual(range(1, 400))
  })

  it("filters by reason, field, stage, partition and position range", async () => {
    const datasetId = await v2Dataset(server, schema)
    const input = fivePercentBad("filters.ndjson")
    await ingestFrozen(input, datasetId)
    const deadLetters = `${input}.dead-letters.ndjson`
    const dry = async (...args: Array<string>) => (await cli(server, ["replay", deadLetters, "--dry-run", ...args])).stdout.split("\n")[0]
    // Dry runs only read the file: all at once.
    expect(await Promise.all([
      dry("--reason", "unknown_column"),
      dry("--reason", "invalid_type v,unknown_column amt"),
      dry("--field", "v"),
      dry("--stage", "service"),
      dry("--partition", "0", "--from", "100", "--to", "200")
    ])).toEqual([
      `would replay 10 of 20 letters into dataset ${datasetId}`,
      `would replay 20 of 20 letters into dataset ${datasetId}`,
      `would replay 10 of 20 letters into dataset ${datasetId}`,
      "nothing to replay: 20 letters read, none selected",
      `would replay 6 of 20 letters into dataset ${datasetId}`
    ])
  })

  it("SIGKILL mid-replay, then the same command: nothing lost, nothing stored twice", async () => {
    // Each ingestion takes its time and at most two are pending at once (`--max-pending 2`),
    // so the 30 batches take 15 rounds of at least 150 ms: the replay is caught with batches
    // under way even when the kill comes late on a loaded machine (without the bound, CI saw
    // all 3000 stored before it).
    const slow = await startServe(["--port", "0", "--api-key", key, "--faults", "processing=150"])
    try {
      const datasetId = await v2Dataset(slow, schema)
      const input = file("kill.ndjson", range(1, 3000).map((n) => ({ n, v: "x", amt: n })))
      const ingest = await runCli(["ingest", input, "--dataset", datasetId, "--schema-contract", "freeze", "--max-dead-letters", "100%", "--api-url", slow.url, "--api-key", key], 120_000)
      expect(ingest.code, ingest.stderr).toBe(0)
      const deadLetters = `${input}.dead-letters.ndjson`
      const checkpoint = `${deadLetters}.replay.checkpoint.json`
      const args = ["replay", deadLetters, "--rename", "amt=amount", "--concurrency", "fixed:2", "--max-pending", "2", "--api-url", slow.url, "--api-key", key]
      const child: ChildProcess = spawn(process.execPath, [binPath, ...args], { stdio: "ignore" })
      const exited = new Promise((resolve) => child.on("close", resolve))
      // Killed once it has committed something and before it is done.
      await waitFor(async () => {
        if (!existsSync(checkpoint)) return false
        const positions = Object.values(JSON.parse(readFileSync(checkpoint, "utf8")).positions ?? {}) as Array<{ offset: number }>
        return positions.some((p) => p.offset > 0)
      }, 60_000, () => "no commit in the replay checkpoint")
      child.kill("SIGKILL")
      await exited
      const between = (await rows(slow, datasetId)).length
      expect(between).toBeLessThan(3000)
      const resumed = await runCli(args, 120_000)
      expect(resumed.code, resumed.stderr).toBe(0)
      const stored = storedNs(await rows(slow, datasetId))
      expect(stored).toEqual(range(1, 3000))
    } finally {
      await slow.stop()
    }
  })
})

describe.concurrent("tributary sink: column added, and replay from a dead-letter topic (real broker)", { timeout: 240_000 }, () => {
  it("logs a new column with topic, partition and offset; its frozen dead letters replay from the topic once", async () => {
    const suffix = Math.random().toString(36).slice(2, 8)
    const topic = `bad-data-${suffix}`
    const letterTopic = `bad-data-letters-${suffix}`
    await createTopic(topic, 2)
    await createTopic(letterTopic, 1)
    const evolving = await v2Dataset(server, [{ id: "n", dataType: "number" }])
    const frozen = await v2Dataset(server, [{ id: "n", dataType: "number" }])
    const producer = kafka().producer()
    await producer.connect()
    await producer.send({
      topic,
      acks: -1,
      messages: range(1, 60).map((n) => ({ key: String(n), value: JSON.stringify(n % 10 === 0 ? { n, coupon: `C${n}` } : { n }), partition: n % 2 }))
    })
    await producer.disconnect()

    const sink = async (datasetId: string, group: string, extra: ReadonlyArray<string>) => {
      const member = startSink([
        "--brokers", kafkaBrokers().join(","), "--topic", topic, "--group", group, "--dataset", datasetId,
        "--api-url", server.url, "--api-key", key, "--session-timeout", "3s", ...extra
      ])
      await waitFor(async () => member.output().includes("sink: group"), 30_000, member.output)
      await waitFor(async () => (await groupLag(group, topic)) === 0, 60_000, member.output)
      member.child.kill("SIGTERM")
      await member.exited
      return member.output()
    }

    // Two groups into two datasets: side by side.
    const [evolved] = await Promise.all([
      sink(evolving, `evolve-${suffix}`, ["--dead-letter", join(dir, `sink-${suffix}.ndjson`)]),
      sink(frozen, `freeze-${suffix}`, ["--dead-letter-topic", letterTopic, "--schema-contract", "freeze"])
    ])
    const added = evolved.split("\n").filter((line) => line.includes("column \"coupon\""))
    expect(added).toHaveLength(1)
    expect(added[0]).toMatch(new RegExp(`sink: column "coupon" \\(string\\) added by topic ${topic} partition 0 offset \\d+$`))
    expect(storedNs(await rows(server, evolving))).toEqual(range(1, 60))

    expect(await rows(server, frozen)).toHaveLength(54)

    const replay = ["replay", "--from-topic", letterTopic, "--brokers", kafkaBrokers().join(","), "--checkpoint", join(dir, `topic-${suffix}.checkpoint.json`), "--dead-letter", join(dir, `topic-${suffix}.again.ndjson`)]
    const dry = await cli(server, [...replay, "--dry-run"])
    expect(dry.stdout).toBe(`would replay 6 of 6 letters into dataset ${frozen}\n  unknown_column coupon: 6\n`)
    const first = await cli(server, [...replay, "--drop", "coupon"])
    expect(first.code, first.stderr).toBe(0)
    expect(first.stdout).toContain("replayed 6 letters: 6 stored, 0 dead-lettered again")
    rmSync(join(dir, `topic-${suffix}.checkpoint.json`))
    const fresh = await cli(server, [...replay, "--drop", "coupon"])
    expect(fresh.stdout).toContain("replayed 6 letters: 0 stored, already stored earlier 6")
    expect(storedNs(await rows(server, frozen))).toEqual(range(1, 60))
  })
})

describe.concurrent("every source's dead letters round-trip through replay: Postgres (tributary backfill)", { timeout: 240_000 }, () => {
  it("a row with a value the service cannot take is a letter whose fix (--set) stores it, keyed by its origin", async () => {
    const db = await testSchema()
    try {
      await db.sql(`CREATE TABLE ${db.name}.m (id integer PRIMARY KEY, ratio double precision, label text)`)
      await db.sql(`INSERT INTO ${db.name}.m SELECT i, CASE WHEN i % 10 = 0 THEN 'NaN'::float8 ELSE i / 2.0 END, 'r' || i FROM generate_series(1, 50) i`)
      const datasetId = await v2Dataset(server, [{ id: "id", dataType: "number" }, { id: "ratio", dataType: "number" }, { id: "label", dataType: "string" }])
      const deadLetters = join(dir, "backfill.dead-letters.ndjson")
      const backfill = await cli(server, [
        "backfill", "--database-url", databaseUrl(), "--table", `${db.name}.m`, "--key", "id", "--dataset", datasetId,
        "--checkpoint", join(dir, "backfill.checkpoint.json"), "--dead-letter", deadLetters
      ], 120_000)
      expect(backfill.code, backfill.stderr).toBe(0)
      expect(backfill.stdout).toContain("read 50 rows: 45 stored")
      const written = letters(deadLetters)
      expect(written.map((l) => [l.reason.code, l.reason.field, l.stage])).toEqual(Array(5).fill(["not_a_number", "ratio", "source"]))
      // The row as it would have been sent, the bad value as the database's text: replayable.
      expect(JSON.parse(written[0].raw)).toEqual({ id: 10, ratio: "NaN", label: "r10" })
      expect(written[0].source).toMatch(/^postgres:/)

      const replay = await cli(server, ["replay", deadLetters, "--set", "ratio=null"])
      expect(replay.code, replay.stderr).toBe(0)
      expect(replay.stdout).toContain("replayed 5 letters: 5 stored, 0 dead-lettered again")
      const stored = await rows(server, datasetId)
      expect(stored.map((row) => row.id as number).sort((a, b) => a - b)).toEqual(range(1, 50))
      expect(stored.find((row) => row.id === 30)).toEqual({ id: 30, ratio: null, label: "r30" })
    } finally {
      await db.drop()
    }
  })
})
