// Throughput and memory of `tributary backfill`'s engine (the Postgres source and `run`) against
// a hand-written raw pg-cursor reader, on the real Postgres.
//
//   npm run build && npm run bench:postgres                 (1,000,000 rows, 3 rounds)
//   npm run bench:postgres -- --quick                       (100,000 rows, 1 round)
//
// Sections:
//   throughput  a fresh table of --rows rows (id, ts, amount, country, tags, n: the columns of the
//               raw ingest server's schema); then, in the same run and alternating order each round,
//               (a) the raw baseline: one pg-cursor read --chunk rows at a time, 100-record bodies
//               POSTed with undici to the minimal raw ingest server (bench/pipeline-server.mjs),
//               each ingestion polled, at --concurrency in flight; (b) the backfill with 1
//               partition; (c) the backfill with 4 partitions; same chunk size and concurrency.
//               Prints rows/s, CPU and peak RSS, backfill ÷ raw (goal >= 0.8) and the speed-up of
//               4 partitions over 1. Each reader's time and CPU start once its modules are loaded
//               (printed apart), as in bench:pipeline and bench:tracking; the backfill's own set-up
//               (describing the relation, planning, the checkpoint) is timed.
//   memory      the backfill's peak RSS over a fifth of the table against the whole of it (flat:
//               the ratio stays near 1).
//
// Options: --rows N  --rounds N (3; 1 with --quick: single rounds of one build move by a third on a
//          shared machine, so the verdict is the median of interleaved rounds)  --concurrency N (8)
//          --chunk N (1000)  --only a,b
//          --sender-node-args="…"   extra node flags for the senders (e.g. "--cpu-prof
//                                   --cpu-prof-dir=/tmp/prof"; read the profiles with bench/cpuprofile-top.mjs)
// Database: DATABASE_URL, else .services/env, else postgres://postgres@127.0.0.1:5432/tributary_test.
// Senders are pinned to core 0 and the raw server to core 1 when taskset exists.
import { spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { createInterface } from "node:readline"
import pg from "pg"
import { benchArgs, fmt, machineLoad, median, perRoundRatios, pinned, portLine, range, startServer, table } from "./lib.mjs"

const { values: args } = benchArgs(import.meta.url, {
  options: {
    quick: { type: "boolean", default: false },
    rows: { type: "string" },
    rounds: { type: "string" },
    concurrency: { type: "string", default: "8" },
    chunk: { type: "string", default: "1000" },
    only: { type: "string", default: "throughput,memory" },
    "sender-node-args": { type: "string", default: "" }
  }
})
const rows = Number(args.rows ?? (args.quick ? 100_000 : 1_000_000))
const rounds = Number(args.rounds ?? (args.quick ? 1 : 3))
const concurrency = Number(args.concurrency)
const chunk = Number(args.chunk)
const only = new Set(args.only.split(","))
const here = (path) => new URL(path, import.meta.url).pathname

const databaseUrl = process.env.DATABASE_URL ??
  (existsSync(here("../.services/env"))
    ? /^DATABASE_URL=(.*)$/m.exec(readFileSync(here("../.services/env"), "utf8"))?.[1]
    : undefined) ??
  "postgres://postgres@127.0.0.1:5432/tributary_test"

const schema = `bench_postgres_${process.pid}`
const db = new pg.Client(databaseUrl)
await db.connect()

/** A table of `count` rows with the columns of the raw server's schema. */
const createTable = async (name, count) => {
  await db.query(`CREATE TABLE ${schema}.${name} (id text PRIMARY KEY, ts timestamptz, amount numeric(10,2), country text, tags text[], n int)`)
  await db.query(`INSERT INTO ${schema}.${name}
    SELECT 'rec-' || lpad(i::text, 9, '0'), timestamptz '2026-11-01T10:00:00Z' + (i % 60) * interval '1 minute',
           (i % 10000) / 100.0, 'SI', ARRAY['a', 'b'], i
    FROM generate_series(1, ${count}) i`)
  await db.query(`ANALYZE ${schema}.${name}`)
}

/** Runs one sender to completion and answers its JSON line. */
const send = (mode, relation, server, partitions) =>
  new Promise((resolve, reject) => {
    const [file, argv] = pinned(0, [process.execPath, ...args["sender-node-args"].split(" ").filter(Boolean), here("postgres-sender.mjs"), mode, databaseUrl, relation, server.url, "bench", "1", String(concurrency), String(partitions), String(chunk)])
    const child = spawn(file, argv, { stdio: ["ignore", "pipe", "inherit"] })
    let line
    createInterface({ input: child.stdout }).on("line", (l) => (line = l))
    child.on("exit", (code) => (code === 0 && line ? resolve(JSON.parse(line)) : reject(new Error(`${mode} sender exited ${code}`))))
  })

console.log(`postgres bench: ${fmt(rows)} rows, concurrency ${concurrency}, chunk ${chunk}, node ${process.version}\n${machineLoad()}`)
const server = await startServer("raw ingest server", [process.execPath, here("pipeline-server.mjs"), "bench"], portLine)
const describe = (r) =>
  `${fmt(r.records / r.seconds)} rows/s, ${fmt(r.seconds, 1)} s, CPU ${fmt(r.cpuMicros / 1e6, 1)} s ` +
  `(${fmt(r.cpuMicros / r.records, 1)} µs/row), peak RSS ${fmt(r.peakRssKb / 1024)} MB; modules loaded in ${fmt(r.loadSeconds, 2)} s before`

try {
  await db.query(`CREATE SCHEMA ${schema}`)
  const creating = performance.now()
  await createTable("rows", rows)
  console.log(`\n== made a table of ${fmt(rows)} rows in ${fmt((performance.now() - creating) / 1000, 1)} s`)
  const relation = `${schema}.rows`

  if (only.has("throughput")) {
    console.log(`\n== 1. throughput: ${rounds} round(s)`)
    const runs = []
    const order = [["raw", 1], ["backfill", 1], ["backfill", 4]]
    for (let round = 1; round <= rounds; round++) {
      for (const [mode, partitions] of round % 2 === 1 ? order : [...order].reverse()) {
        const r = { round, ...(await send(mode, relation, server, partitions)) }
        if (r.records !== rows) throw new Error(`${r.mode} read ${r.records} rows, expected ${rows}`)
        runs.push({ ...r, rate: r.records / r.seconds })
        console.log(`round ${round} ${r.mode}: ${describe(r)}`)
      }
    }
    table(["reader", "rows/s", "CPU µs/row", "peak RSS MB"], ["raw", "backfill-1", "backfill-4"].map((mode) => {
      const mine = runs.filter((r) => r.mode === mode)
      return [mode, fmt(median(mine.map((r) => r.rate))), fmt(median(mine.map((r) => r.cpuMicros / r.records)), 1), fmt(Math.max(...mine.map((r) => r.peakRssKb)) / 1024)]
    }))
    const ratios = perRoundRatios(runs, "mode", "raw", "backfill-1", "rate", false)
    console.log(`backfill (1 partition) ÷ raw rows/s: ${range(ratios)} (goal >= 0.8: ${median(ratios) >= 0.8 ? "met" : "not met"})`)
    console.log(`backfill (4 partitions) ÷ raw rows/s: ${range(perRoundRatios(runs, "mode", "raw", "backfill-4", "rate", false))}`)
    console.log(`4 partitions ÷ 1 partition rows/s: ${range(perRoundRatios(runs, "mode", "backfill-1", "backfill-4", "rate", false))}`)
  }

  if (only.has("memory")) {
    console.log("\n== 2. memory: the backfill (4 partitions) over a fifth of the rows, then all of them")
    await createTable("fifth", Math.floor(rows / 5))
    const small = await send("backfill", `${schema}.fifth`, server, 4)
    const big = await send("backfill", relation, server, 4)
    console.log(`${fmt(small.records)} rows: peak RSS ${fmt(small.peakRssKb / 1024)} MB; ${fmt(big.records)}: ${fmt(big.peakRssKb / 1024)} MB; ` +
      `ratio ${fmt(big.peakRssKb / small.peakRssKb, 2)} (flat: near 1)`)
  }
  console.log(`\n${machineLoad()}`)
} finally {
  await server.stop()
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await db.end()
}
