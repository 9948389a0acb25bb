// Throughput and memory of the NDJSON pipeline (`run` with `Ndjson.fromFile`) against a
// hand-written raw sender.
//
//   npm run build && npm run bench:pipeline              (3 rounds of 1,000,000 records; 5,000,000 for memory)
//   npm run bench:pipeline -- --quick                    (1 round of 100,000; 500,000 for memory; 20,000 end to end)
//
// Sections (--only overhead,memory,e2e picks some):
//   overhead  a minimal raw node:http ingest server (bench/pipeline-server.mjs) takes the records
//             from (a) the pipeline and (b) a raw sender (JSON.parse each line, POST 100-record
//             bodies with undici.request, GET each ingestion), both with the same concurrency.
//             Rounds are interleaved, alternating the order. Prints records/s, CPU and peak RSS of
//             each sender and the median of the per-round ratios pipeline ÷ raw (goals: records/s
//             >= 0.8, peak RSS <= 1.5x). (d) the floor sender (the raw sender doing the pipeline's
//             per-record work with its pure parts, no Effect runtime, no checkpoint) shows how much
//             of the gap those checks cost by themselves (--no-floor leaves it out).
//             (c) the typed pipeline (decode with an Effect Schema + one map + encode) runs in
//             the same rounds, and its ratio to the untyped pipeline is printed (goal >= 0.8;
//             --no-typed leaves it out).
//   memory    the pipeline's peak RSS for --memory-records against --records, same raw server
//             (goal: within 1.2x, i.e. memory does not grow with the input; judged only when
//             --records is at least 1,000,000: smaller runs end before the heap has grown to its
//             steady size, so --quick prints the ratio without a verdict).
//   e2e       the pipeline (and, for reference, the raw sender) into the real reference server
//             (`tributary serve`), into a fresh dataset with a primary key.
//
// Options: --rounds N  --records N  --memory-records N  --e2e-records N  --concurrency N (8)
//          --variant name=distDir   also runs the pipeline built into another dist tree in the
//                                   overhead section (repeatable; e.g. a patched copy: it needs a
//                                   node_modules symlink beside it)
//          --sender-node-args="…"   extra node flags for the pipeline and typed senders (e.g.
//                                   "--cpu-prof --cpu-prof-dir=/tmp/prof"; read the profiles
//                                   with bench/cpuprofile-top.mjs)
//          --no-typed, --no-floor   leave the typed pipeline or the floor sender out of the overhead section
//          --keep                   keeps the temporary directory (data files, checkpoints)
//          --json FILE              also writes every run as JSON
//
// Every sender runs in a process of its own pinned to core 0 (taskset), every server in one
// pinned to core 1. A run's seconds and CPU are measured inside the sender around the send only
// (module loading excluded); peak RSS is the sender's VmHWM. Each pipeline run gets a fresh
// checkpoint file and dead-letter file. Machines are noisy: read the ratios and CPU µs/record.
// Exits 1 when a run fails or a sender's counts do not add up.
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { once } from "node:events"
import { apiCall, benchArgs, cpuMicros, fmt, hasTaskset, machineLoad, median, perRoundRatios, pinned, pinSelf, portLine, range, servedUrl, startServer, table } from "./lib.mjs"

const here = (path) => new URL(path, import.meta.url).pathname

const { values: args } = benchArgs(import.meta.url, {
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    records: { type: "string" },
    "memory-records": { type: "string" },
    "e2e-records": { type: "string" },
    concurrency: { type: "string", default: "8" },
    only: { type: "string", default: "overhead,memory,e2e" },
    variant: { type: "string", multiple: true, default: [] },
    "sender-node-args": { type: "string", default: "" },
    keep: { type: "boolean", default: false },
    json: { type: "string" },
    "no-typed": { type: "boolean", default: false },
    "no-floor": { type: "boolean", default: false }
  }
})

const rounds = Number(args.rounds ?? (args.quick ? 1 : 3))
const records = Number(args.records ?? (args.quick ? 100_000 : 1_000_000))
const memoryRecords = Number(args["memory-records"] ?? (args.quick ? 500_000 : 5_000_000))
const e2eRecords = Number(args["e2e-records"] ?? (args.quick ? 20_000 : 200_000))
const concurrency = Number(args.concurrency)
const sections = new Set(args.only.split(","))
const recordsPerBatch = 100
const apiKey = `trb_${randomBytes(16).toString("hex")}`
/** The raw server answers for any dataset id; the client takes numbers and UUIDs only. */
const rawDatasetId = "1"

const pipelines = [
  { name: "pipeline", mode: "pipeline", dist: undefined },
  ...args.variant.map((spec) => {
    const [name, dir] = spec.split("=")
    if (!name || !dir) throw new Error(`--variant wants name=distDir, got ${spec}`)
    return { name, mode: "pipeline", dist: dir }
  })
]
const rawSender = { name: "raw", mode: "raw", dist: undefined }
/** The typed pipeline (decode + one map + encode), compared with the untyped one in the same rounds. */
const typedSender = { name: "typed", mode: "typed", dist: undefined }
/** The raw sender doing what every record needs in the pipeline, without the runtime (`--no-floor` leaves it out). */
const floorSender = { name: "floor", mode: "floor", dist: undefined }

pinSelf()

// ---- data --------------------------------------------------------------------------------------

const work = mkdtempSync(join(tmpdir(), "tributary-bench-pipeline-"))
const cleanUp = () => {
  if (!args.keep) rmSync(work, { recursive: true, force: true })
}
process.on("exit", cleanUp)

/** An NDJSON file of `count` records of about 100 bytes, keyed by a unique `id`. */
const generate = async (count) => {
  const path = join(work, `records-${count}.ndjson`)
  const out = createWriteStream(path)
  const lines = []
  for (let n = 1; n <= count; n++) {
    lines.push(
      `{"id":"rec-${String(n).padStart(9, "0")}","ts":"2026-11-01T10:${String(n % 60).padStart(2, "0")}:00Z",` +
        `"amount":${(n % 10_000) / 100},"country":"SI","tags":["a","b"],"n":${n}}`
    )
    if (lines.length === 10_000 || n === count) {
      if (!out.write(`${lines.join("\n")}\n`)) await once(out, "drain")
      lines.length = 0
    }
  }
  out.end()
  await once(out, "finish")
  return path
}

// ---- servers -----------------------------------------------------------------------------------

const startRawServer = () =>
  startServer("raw server", [process.execPath, here("./pipeline-server.mjs"), apiKey], portLine)

const startReferenceServer = () =>
  startServer(
    "reference server",
    [process.execPath, here("../bin/tributary.js"), "serve", "--host", "127.0.0.1", "--port", "0", "--api-key", apiKey],
    servedUrl
  )

const call = (url, method, path, payload) => apiCall(url, apiKey, method, path, payload)

/** A data source and a dataset with the records' columns and primary key `id`. */
const createDataset = async (url) => {
  const source = await call(url, "POST", "/v2/data-sources", { name: "bench" })
  const dataset = await call(url, "POST", "/v2/datasets", {
    name: `bench-${randomBytes(3).toString("hex")}`,
    dataSourceId: source.data.id,
    schema: [
      { id: "id", dataType: "string" },
      { id: "ts", dataType: "datetime" },
      { id: "amount", dataType: "number" },
      { id: "country", dataType: "string" },
      { id: "tags", dataType: "string" },
      { id: "n", dataType: "number" }
    ],
    primaryKey: ["id"]
  })
  return dataset.data.id
}

// ---- senders -----------------------------------------------------------------------------------

let runNumber = 0

/** Runs one sender to the end of `file`; answers its report plus the server's CPU meanwhile. */
const send = async (sender, server, datasetId, file, expected) => {
  const dir = mkdtempSync(join(work, `run-${++runNumber}-`))
  const nodeArgs = sender.mode !== "raw" ? args["sender-node-args"].split(" ").filter(Boolean) : []
  const command = [
    process.execPath,
    ...nodeArgs,
    here("./pipeline-sender.mjs"),
    sender.mode,
    server.url,
    apiKey,
    datasetId,
    file,
    String(concurrency),
    dir,
    ...(sender.dist ? [sender.dist] : [])
  ]
  const statsBefore = server.name === "raw server" ? await call(server.url, "GET", "/stats") : undefined
  const serverCpuBefore = cpuMicros(server.pid)
  const [bin, argv] = pinned(0, command)
  const child = spawn(bin, argv, { stdio: ["ignore", "pipe", "inherit"] })
  let output = ""
  child.stdout.on("data", (chunk) => (output += chunk))
  const [code] = await once(child, "exit")
  const serverCpu = cpuMicros(server.pid) - serverCpuBefore
  if (code !== 0) throw new Error(`${sender.name} sender exited with ${code}`)
  const report = JSON.parse(output.trim().split("\n").pop())
  const problems = []
  if (report.records !== expected) problems.push(`read ${report.records} of ${expected} records`)
  if (statsBefore !== undefined) {
    const stats = await call(server.url, "GET", "/stats")
    // Batches are told apart by their idempotency keys: a POST again under a key (a retry after
    // a dropped connection) is not another batch, and is only counted.
    // Fewer batches than full ones would have lost records; more are batches cut short (by the
    // linger timer, when the sender stalled for half a second), told but not a failure: this
    // server does not count records, the end-to-end section's row counts are the check.
    const batches = stats.keys - statsBefore.keys
    const full = Math.ceil(expected / recordsPerBatch)
    const retried = stats.posts - statsBefore.posts - batches
    if (batches < full) problems.push(`${batches} batches (idempotency keys) for ${expected} records`)
    if (batches > full) console.log(`${sender.name}: ${batches} batches for ${expected} records (${batches - full} cut short)`)
    if (retried > 0) console.log(`${sender.name}: ${retried} POST(s) retried under a key already sent`)
  } else if (report.accepted !== expected) {
    problems.push(`${report.accepted} of ${expected} records stored`)
  }
  if (!args.keep) rmSync(dir, { recursive: true, force: true })
  return {
    sender: sender.name,
    records: report.records,
    seconds: report.seconds,
    recordsPerSec: report.records / report.seconds,
    cpuSeconds: report.cpuMicros / 1e6,
    cpuMicrosPerRecord: report.cpuMicros / report.records,
    senderCore: report.cpuMicros / 1e6 / report.seconds,
    peakRssMb: report.peakRssKb / 1024,
    serverCore: serverCpu / 1e6 / report.seconds,
    problems
  }
}

// ---- report ------------------------------------------------------------------------------------

const runLine = (label, run) =>
  console.log(
    `${label} ${run.sender}: ${fmt(run.recordsPerSec)} records/s, ${fmt(run.seconds, 1)} s, ` +
      `CPU ${fmt(run.cpuSeconds, 1)} s (${fmt(run.cpuMicrosPerRecord, 1)} µs/record), peak RSS ${fmt(run.peakRssMb)} MB, ` +
      `server ${fmt(run.serverCore * 100)}% of a core` +
      (run.problems.length > 0 ? `, FAILED: ${run.problems.join("; ")}` : "")
  )

const all = []
const record = (section, round, run) => {
  all.push({ section, round, ...run })
  return run
}

console.log(
  `pipeline bench: concurrency ${concurrency}, ${recordsPerBatch} records per batch; ` +
    (hasTaskset ? "senders on core 0, servers on core 1" : "no taskset: nothing pinned") +
    `\nnode ${process.version}, temp dir ${work}\n${machineLoad()}`
)

const needsMain = sections.has("overhead") || sections.has("memory")
const mainFile = needsMain ? await generate(records) : undefined
let failed = false

// ---- 1. overhead ---------------------------------------------------------------------------

const overheadRuns = []
if (sections.has("overhead")) {
  console.log(`\n== 1. pipeline overhead: ${fmt(records)} records into a raw node:http server, ${rounds} round(s)`)
  const server = await startRawServer()
  try {
    const senders = [rawSender, ...(args["no-floor"] ? [] : [floorSender]), ...pipelines, ...(args["no-typed"] ? [] : [typedSender])]
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? senders : [...senders].reverse()
      for (const sender of order) {
        const run = record("overhead", round, await send(sender, server, rawDatasetId, mainFile, records))
        overheadRuns.push({ round, ...run })
        runLine(`round ${round + 1}`, run)
      }
    }
  } finally {
    await server.stop()
  }
  const of = (name) => overheadRuns.filter((r) => r.sender === name)
  console.log("\nmedians over rounds (peak RSS: max)")
  table(
    ["sender", "records/s", "seconds", "CPU s", "CPU µs/record", "sender core %", "peak RSS MB", "server core %"],
    [rawSender, ...(args["no-floor"] ? [] : [floorSender]), ...pipelines, ...(args["no-typed"] ? [] : [typedSender])].map(({ name }) => {
      const rs = of(name)
      return [
        name,
        fmt(median(rs.map((r) => r.recordsPerSec))),
        fmt(median(rs.map((r) => r.seconds)), 1),
        fmt(median(rs.map((r) => r.cpuSeconds)), 1),
        fmt(median(rs.map((r) => r.cpuMicrosPerRecord)), 1),
        fmt(median(rs.map((r) => r.senderCore * 100))),
        fmt(Math.max(...rs.map((r) => r.peakRssMb))),
        fmt(median(rs.map((r) => r.serverCore * 100)))
      ]
    })
  )
  const ratios = (name, key, invert) => perRoundRatios(overheadRuns, "sender", "raw", name, key, invert)
  console.log("\nratios to raw (median of per-round ratios; range); goals: records/s ratio >= 0.8, peak RSS <= 1.5x raw")
  table(
    ["sender", "records/s ÷ raw", "raw CPU µs/record ÷ CPU µs/record", "peak RSS ÷ raw", "goals"],
    [...(args["no-floor"] ? [] : [floorSender]), ...pipelines].map(({ name }) => {
      const speed = ratios(name, "recordsPerSec", false)
      const rss = ratios(name, "peakRssMb", false)
      return [
        name,
        range(speed),
        range(ratios(name, "cpuMicrosPerRecord", true)),
        range(rss),
        name === "floor" ? "(reference)" : `${median(speed) >= 0.8 ? "met" : "NOT met"}, ${median(rss) <= 1.5 ? "met" : "NOT met"}`
      ]
    })
  )
  if (!args["no-typed"]) {
    const typed = perRoundRatios(overheadRuns, "sender", "pipeline", "typed", "recordsPerSec", false)
    const cpu = perRoundRatios(overheadRuns, "sender", "pipeline", "typed", "cpuMicrosPerRecord", true)
    console.log("\ntyped records (decode + one map + encode) against the untyped pipeline; goal: records/s ratio >= 0.8")
    table(
      ["sender", "records/s ÷ pipeline", "pipeline CPU µs/record ÷ CPU µs/record", "goal"],
      [["typed", range(typed), range(cpu), median(typed) >= 0.8 ? "met" : "NOT met"]]
    )
  }
}

// ---- 2. memory -----------------------------------------------------------------------------

/** Below this many records the smaller run has not reached its steady heap (--quick's 100,000 gave 1.49). */
const steadyRecords = 1_000_000

if (sections.has("memory")) {
  console.log(`\n== 2. memory: pipeline peak RSS for ${fmt(memoryRecords)} records against ${fmt(records)}`)
  const bigFile = await generate(memoryRecords)
  const server = await startRawServer()
  const rows = []
  try {
    let small = overheadRuns.filter((r) => r.sender === "pipeline")
    if (small.length === 0) {
      small = [record("memory", 0, await send(pipelines[0], server, rawDatasetId, mainFile, records))]
      runLine(`${fmt(records)}`, small[0])
    }
    const big = record("memory", 0, await send(pipelines[0], server, rawDatasetId, bigFile, memoryRecords))
    runLine(`${fmt(memoryRecords)}`, big)
    const smallRss = Math.max(...small.map((r) => r.peakRssMb))
    rows.push(
      [fmt(records), small.length, fmt(median(small.map((r) => r.recordsPerSec))), fmt(smallRss), "1.00", ""],
      [
        fmt(memoryRecords),
        1,
        fmt(big.recordsPerSec),
        fmt(big.peakRssMb),
        fmt(big.peakRssMb / smallRss, 2),
        records < steadyRecords
          ? `not judged: under ${fmt(steadyRecords)} records the heap has not grown to its steady size`
          : big.peakRssMb / smallRss <= 1.2
          ? "met"
          : "NOT met"
      ]
    )
  } finally {
    await server.stop()
  }
  console.log()
  table(["records", "runs", "records/s", "peak RSS MB (max)", "÷ smaller", "goal <= 1.2"], rows)
}

// ---- 3. end to end -------------------------------------------------------------------------

if (sections.has("e2e")) {
  console.log(`\n== 3. end to end: ${fmt(e2eRecords)} records into the reference server (tributary serve)`)
  const file = await generate(e2eRecords)
  const rows = []
  for (const sender of [pipelines[0], rawSender]) {
    const server = await startReferenceServer()
    try {
      const datasetId = await createDataset(server.url)
      const run = record("e2e", 0, await send(sender, server, datasetId, file, e2eRecords))
      runLine("e2e", run)
      const rowCount = (await call(server.url, "GET", `/v2/datasets/${datasetId}`)).data.rowCount
      if (rowCount !== e2eRecords) run.problems.push(`the dataset holds ${rowCount} rows`)
      rows.push([
        sender.name,
        fmt(run.recordsPerSec),
        fmt(run.seconds, 1),
        fmt(run.cpuMicrosPerRecord, 1),
        fmt(run.peakRssMb),
        fmt(run.serverCore * 100),
        fmt(rowCount)
      ])
    } finally {
      await server.stop()
    }
  }
  console.log()
  table(["sender", "records/s", "seconds", "sender CPU µs/record", "peak RSS MB", "server core %", "rows stored"], rows)
}

failed = all.some((r) => r.problems.length > 0)
if (args.json) writeFileSync(args.json, `${JSON.stringify({ records, memoryRecords, e2eRecords, concurrency, rounds, runs: all }, null, 2)}\n`)
console.log(`\n${machineLoad()}`)
if (failed) console.error("\nsome runs did not deliver every record (see FAILED above)")
process.exit(failed ? 1 : 0)
