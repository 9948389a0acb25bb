// Throughput of the reference server's ingest route against a raw node:http baseline.
//
//   npm run build && npm run bench:server-ingest              (3 rounds, 3 s warm-up + 10 s)
//   npm run bench:server-ingest -- --quick                    (1 round, 1 s warm-up + 3 s)
//
// Options: --rounds N  --duration S  --warmup S  --connections N
//          --database-url URL   the Postgres database of the "reference-pg" variant (the reference
//                               server on the Postgres store, in a fresh schema per run); default
//                               DATABASE_URL or the test database; --only raw,reference skips it
//          --variant name=distDir   adds a reference server built from another dist tree
//                                   (repeatable; e.g. a patched copy, to compare a change)
//          --pg-variant name=distDir   the same on the Postgres store (as "reference-pg")
//          --only a,b               runs only these variants (raw is always kept)
//          --server-node-args="…"   extra node flags for the reference servers
//                                   (e.g. --server-node-args="--cpu-prof --cpu-prof-dir=/tmp/prof")
//          --json FILE              also writes every run as JSON
//
// Each variant runs in a child process of its own, pinned to core 1 with taskset; this process
// (and the load generator, autocannon, inside it) is pinned to core 0. Variants are interleaved,
// alternating their order each round, and every run starts a fresh server. Per variant it prints
// requests/s, records/s, the server's CPU µs per request (utime+stime from /proc), its peak RSS
// (VmHWM), p50/p99 latency and the non-2xx count; then the median over rounds of the per-round
// ratios to raw. Machines are noisy: read the ratios and CPU µs/request, not absolute req/s.
// Exits 1 when any answer was not a 2xx success envelope, or on a socket error or timeout.
import { randomBytes } from "node:crypto"
import { writeFileSync } from "node:fs"
import autocannon from "autocannon"
import pg from "pg"
import { apiCall, benchArgs, cpuMicros, fmt, hasTaskset, median, perRoundRatios, pinSelf, portLine, range, startServer, statusKb, table } from "./lib.mjs"

const here = (path) => new URL(path, import.meta.url).pathname

const { values: args } = benchArgs(import.meta.url, {
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    duration: { type: "string" },
    warmup: { type: "string" },
    connections: { type: "string", default: "16" },
    "database-url": { type: "string", default: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/tributary_test" },
    variant: { type: "string", multiple: true, default: [] },
    "pg-variant": { type: "string", multiple: true, default: [] },
    only: { type: "string" },
    "server-node-args": { type: "string", default: "" },
    json: { type: "string" }
  }
})

const rounds = Number(args.rounds ?? (args.quick ? 1 : 3))
const duration = Number(args.duration ?? (args.quick ? 3 : 10))
const warmup = Number(args.warmup ?? (args.quick ? 1 : 3))
const connections = Number(args.connections)
const recordsPerRequest = 100
const apiKey = `trb_${randomBytes(16).toString("hex")}`

const variants = [
  { name: "raw", script: here("./ingest-raw-server.mjs"), extraArgs: [], reference: false },
  { name: "reference", script: here("./ingest-reference-server.mjs"), extraArgs: [], reference: true },
  { name: "reference-pg", script: here("./ingest-reference-server.mjs"), extraArgs: [], reference: true, postgres: true },
  ...[...args.variant.map((spec) => [spec, false]), ...args["pg-variant"].map((spec) => [spec, true])].map(([spec, postgres]) => {
    const [name, dir] = spec.split("=")
    if (!name || !dir) throw new Error(`--variant and --pg-variant want name=distDir, got ${spec}`)
    return { name, script: here("./ingest-reference-server.mjs"), extraArgs: [dir], reference: true, postgres }
  })
].filter((v) => v.name === "raw" || args.only === undefined || args.only.split(",").includes(v.name))

// 100 records, ~9.4 KB; the ids repeat on every request, so with the dataset's primary key the
// server's stored rows stay at 100 however long the run.
const body = JSON.stringify({
  records: Array.from({ length: recordsPerRequest }, (_, i) => ({
    id: `rec-${String(i).padStart(6, "0")}`,
    ts: "2026-11-01T10:00:00Z",
    amount: 12.5,
    country: "SI",
    tags: ["a", "b"]
  }))
})

pinSelf()

// ---- servers -----------------------------------------------------------------------------------

/** The Postgres variant's schema for one run: made fresh, dropped after. */
const schemaFor = (variant) => variant.postgres ? `bench_${randomBytes(4).toString("hex")}` : undefined

const dropSchema = async (schema) => {
  const client = new pg.Client({ connectionString: args["database-url"] })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  } finally {
    await client.end()
  }
}

const startVariant = (variant, schema) => {
  const nodeArgs = variant.reference ? args["server-node-args"].split(" ").filter(Boolean) : []
  const env = schema === undefined ? [] : ["env", `BENCH_DATABASE_URL=${args["database-url"]}`, `BENCH_DATABASE_SCHEMA=${schema}`]
  return startServer(
    `${variant.name} server`,
    [...env, process.execPath, ...nodeArgs, variant.script, apiKey, ...variant.extraArgs],
    portLine
  )
}

const call = (url, path, payload) => apiCall(url, apiKey, "POST", path, payload)

/** The ingest path; for the reference server a fresh dataset keyed by `id`. */
const ingestPath = async (variant, url) => {
  if (!variant.reference) return "/v1/datasets/bench/data"
  const source = await call(url, "/v1/data-sources", { title: "bench", timezone: "UTC" })
  const dataset = await call(url, "/v1/datasets", { title: "b", dataSourceId: source.id, primaryKeys: ["id"] })
  return `/v1/datasets/${dataset.id}/data`
}

/** Seconds until the newest 100 ingestions are terminal (claims go oldest first). */
const drained = async (baseUrl, ingestPathname) => {
  const started = Date.now()
  const datasetId = ingestPathname.split("/")[3]
  for (;;) {
    const response = await fetch(`${baseUrl}/v2/datasets/${datasetId}/ingestions?pageSize=100`, { headers: { "x-api-key": apiKey } })
    const page = await response.json()
    if (page.data.items.every((i) => i.status !== "queued" && i.status !== "processing")) return (Date.now() - started) / 1000
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

// ---- load --------------------------------------------------------------------------------------

const load = (url, seconds) =>
  autocannon({
    url,
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body,
    connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
    verifyBody: (text) => text.includes("\"status\":\"success\"")
  })

const runOnce = async (variant) => {
  const schema = schemaFor(variant)
  const server = await startVariant(variant, schema)
  try {
    const url = `${server.url}${await ingestPath(variant, server.url)}`
    const check = await call(server.url, new URL(url).pathname, JSON.parse(body))
    if (check.status !== "success") throw new Error(`${variant.name}: unexpected answer ${JSON.stringify(check)}`)
    await load(url, warmup)
    const rssBefore = statusKb(server.pid, "VmRSS")
    const cpuBefore = cpuMicros(server.pid)
    const result = await load(url, duration)
    const drainSeconds = variant.reference ? await drained(server.url, new URL(url).pathname) : 0
    const cpu = cpuMicros(server.pid) - cpuBefore
    const requests = result["2xx"]
    return {
      variant: variant.name,
      seconds: result.duration,
      requests,
      reqPerSec: requests / result.duration,
      recordsPerSec: (requests * recordsPerRequest) / result.duration,
      // Accepted is not stored: the workers may still be behind when the load ends.
      storedPerSec: (requests * recordsPerRequest) / (result.duration + drainSeconds),
      drainSeconds,
      cpuMicrosPerRequest: cpu / Math.max(1, requests),
      cpuShare: cpu / 1e6 / result.duration,
      peakRssMb: statusKb(server.pid, "VmHWM") / 1024,
      rssGrowthMb: (statusKb(server.pid, "VmRSS") - rssBefore) / 1024,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      mismatches: result.mismatches
    }
  } finally {
    await server.stop()
    if (schema !== undefined) await dropSchema(schema)
  }
}

// ---- report ------------------------------------------------------------------------------------

console.log(
  `server-ingest: ${rounds} round(s), ${connections} connections, ${warmup} s warm-up + ${duration} s, ` +
    `${recordsPerRequest} records (${body.length} bytes) per POST; ` +
    (hasTaskset ? "servers on core 1, load generator on core 0" : "no taskset: nothing pinned")
)

const runs = []
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse()
  for (const variant of order) {
    const run = { round, ...(await runOnce(variant)) }
    runs.push(run)
    console.log(
      `round ${round + 1} ${variant.name}: ${fmt(run.reqPerSec)} req/s, ${fmt(run.cpuMicrosPerRequest)} µs CPU/req ` +
        `(${fmt(run.cpuShare * 100)}% of a core), peak RSS ${fmt(run.peakRssMb)} MB, p99 ${fmt(run.p99Ms, 1)} ms` +
        (run.non2xx + run.errors + run.timeouts + run.mismatches > 0
          ? `, FAILED: ${run.non2xx} non-2xx, ${run.errors} errors, ${run.timeouts} timeouts, ${run.mismatches} bad bodies`
          : "")
    )
  }
}

const byVariant = (name) => runs.filter((r) => r.variant === name)
console.log("\nmedians over rounds (peak RSS: max; failures: sum)")
table(
  ["variant", "req/s", "records/s", "stored/s", "drain s", "CPU µs/req", "core %", "peak RSS MB", "RSS growth MB", "p50 ms", "p99 ms", "non-2xx", "errors"],
  variants.map(({ name }) => {
    const rs = byVariant(name)
    const sum = (k) => rs.reduce((n, r) => n + r[k], 0)
    return [
      name,
      fmt(median(rs.map((r) => r.reqPerSec))),
      fmt(median(rs.map((r) => r.recordsPerSec))),
      fmt(median(rs.map((r) => r.storedPerSec))),
      fmt(median(rs.map((r) => r.drainSeconds)), 1),
      fmt(median(rs.map((r) => r.cpuMicrosPerRequest))),
      fmt(median(rs.map((r) => r.cpuShare * 100))),
      fmt(Math.max(...rs.map((r) => r.peakRssMb))),
      fmt(median(rs.map((r) => r.rssGrowthMb)), 1),
      fmt(median(rs.map((r) => r.p50Ms)), 1),
      fmt(median(rs.map((r) => r.p99Ms)), 1),
      sum("non2xx"),
      sum("errors") + sum("timeouts") + sum("mismatches")
    ]
  })
)

console.log("\nratios to raw (median of per-round ratios; range)")
const ratio = (name, key, invert) => range(perRoundRatios(runs, "variant", "raw", name, key, invert))
table(
  ["variant", "records/s ÷ raw", "stored/s ÷ raw", "CPU µs/req ÷ raw", "raw CPU µs ÷ CPU µs"],
  variants.filter((v) => v.name !== "raw").map(({ name }) => [
    name,
    ratio(name, "recordsPerSec", false),
    range(runs.filter((r) => r.variant === name).map((r) => {
      const raw = runs.find((x) => x.variant === "raw" && x.round === r.round)
      return r.storedPerSec / raw.recordsPerSec
    })),
    ratio(name, "cpuMicrosPerRequest", false),
    ratio(name, "cpuMicrosPerRequest", true)
  ])
)

if (args.json) writeFileSync(args.json, `${JSON.stringify({ rounds, connections, warmup, duration, runs }, null, 2)}\n`)

const failed = runs.some((r) => r.non2xx + r.errors + r.timeouts + r.mismatches > 0)
if (failed) console.error("\nsome answers were not a 2xx success envelope (or a request failed)")
process.exit(failed ? 1 : 0)
