// One reader of bench/postgres.mjs, in a process of its own: reads a Postgres table into the
// raw ingest server, then prints one JSON line with what it did and what it cost.
//
// Usage: node bench/postgres-sender.mjs <mode> <databaseUrl> <relation> <baseUrl> <apiKey> <datasetId> <concurrency> <partitions> <chunkRows>
//
//   mode raw       the hand-written baseline: one pg-cursor over `SELECT * FROM relation ORDER BY id`
//                  read `chunkRows` at a time (pg's own type parsing, dates turned into ISO text),
//                  100-record bodies POSTed with undici.request, at most `concurrency` in flight, each
//                  ingestion polled until it is terminal
//   mode backfill  tributary's Postgres source and `run` (built JS from dist/) with `partitions`
//                  partitions, the same chunk size and concurrency, a checkpoint file in the
//                  temporary directory
//
// Output: {"mode","records","seconds","cpuMicros","loadSeconds","peakRssKb"}: seconds and cpuMicros
// cover the read, from the moment the modules are loaded to the end (as bench:pipeline's and
// bench:tracking's senders measure); loadSeconds is the module loading before it (about 0.6 s
// for the backfill's modules, 0.09 s for pg and undici: on a 1M-row run, 7% of the backfill's
// time). Exits 1 on any failure.
import { readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { rawIngest, runMode } from "./lib.mjs"

const [mode, databaseUrl, relation, baseUrl, apiKey, datasetId, concurrencyText, partitionsText, chunkText] = process.argv.slice(2)
const concurrency = Number(concurrencyText)
const partitions = Number(partitionsText)
const chunkRows = Number(chunkText)

const peakRssKb = () => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? NaN)
const cpuNow = () => {
  const { user, system } = process.cpuUsage()
  return user + system
}
let started = performance.now()
let cpuAtStart = cpuNow()
let loadSeconds = 0
/** The modules are loaded: the timed read starts here. */
const loaded = () => {
  const now = performance.now()
  loadSeconds = (now - started) / 1000
  started = now
  cpuAtStart = cpuNow()
}
const report = (records) =>
  console.log(JSON.stringify({
    mode: mode === "backfill" ? `backfill-${partitions}` : mode,
    records,
    seconds: (performance.now() - started) / 1000,
    cpuMicros: cpuNow() - cpuAtStart,
    loadSeconds,
    peakRssKb: peakRssKb()
  }))

const raw = async () => {
  const { default: pg } = await import("pg")
  const { default: Cursor } = await import("pg-cursor")
  const { limit, postAndPoll } = await rawIngest({ baseUrl, apiKey, datasetId })
  loaded()
  const permits = limit(concurrency)
  let failure
  const sendBatch = (records) =>
    postAndPoll(records).catch((error) => (failure = error)).finally(permits.release)
  const client = new pg.Client(databaseUrl)
  await client.connect()
  await client.query("BEGIN READ ONLY")
  const cursor = client.query(new Cursor(`SELECT * FROM ${relation} ORDER BY id`))
  let records = 0
  const inFlight = new Set()
  for (;;) {
    const rows = await cursor.read(chunkRows)
    if (rows.length === 0) break
    for (const row of rows) {
      row.ts = row.ts.toISOString()
      row.amount = Number(row.amount)
    }
    for (let at = 0; at < rows.length; at += 100) {
      await permits.acquire()
      if (failure) throw failure
      const sending = sendBatch(rows.slice(at, at + 100))
      inFlight.add(sending)
      sending.then(() => inFlight.delete(sending))
    }
    records += rows.length
  }
  await Promise.all(inFlight)
  if (failure) throw failure
  await cursor.close()
  await client.query("COMMIT")
  await client.end()
  report(records)
}

const backfill = async () => {
  const dist = new URL("../dist/", import.meta.url)
  const { Effect, Redacted } = await import("effect")
  const Postgres = await import(new URL("connectors/postgres/index.js", dist).href)
  const { TributaryClient } = await import(new URL("src/client/index.js", dist).href)
  const { DeadLetter, run } = await import(new URL("src/pipeline/index.js", dist).href)
  loaded()
  const checkpoint = join(tmpdir(), `bench-postgres-${process.pid}.checkpoint.json`)
  const program = Effect.gen(function*() {
    const client = yield* TributaryClient
    const source = yield* Postgres.make({
      relation: { _tag: "Table", name: relation },
      key: ["id"],
      partitions,
      chunkRows,
      checkpoint: { _tag: "File", path: checkpoint }
    })
    const progress = yield* run(client, {
      source,
      destination: { datasetId },
      deadLetters: yield* DeadLetter.ndjsonFile(join(tmpdir(), `bench-postgres-${process.pid}.dead-letters.ndjson`)),
      concurrency
    })
    if (progress.deadLettered > 0) throw new Error(`${progress.deadLettered} dead letters`)
    return progress.read
  })
  const records = await Effect.runPromise(program.pipe(
    Effect.provide(Postgres.layer({ url: Redacted.make(databaseUrl), maxConnections: partitions + 2 })),
    Effect.provide(TributaryClient.layer({ baseUrl, apiKey: Redacted.make(apiKey) }))
  ))
  rmSync(checkpoint, { force: true })
  report(records)
}

runMode({ raw, backfill }, mode)
