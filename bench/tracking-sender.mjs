// One sender of bench/tracking.mjs, in a process of its own: tributary's `run` with
// `Ndjson.fromFile` sends an NDJSON file to a dataset of the reference server and prints one JSON
// line with what it did, what it cost, and what its Progress events showed.
//
// Usage: node bench/tracking-sender.mjs <baseUrl> <apiKey> <datasetId> <file> <workDir> <concurrency> <maxPending> <keyOrder>
//
//   concurrency   N (the ceiling of the adaptive limit) or fixed:N
//   maxPending    batches pending at once (`maxPending.batches`)
//   keyOrder      terminal | accepted
//
// A checkpoint file and a dead-letter file go to workDir. Progress is sampled every 250 ms.
// Output: {"records","accepted","seconds","cpuMicros","peakRssKb","peak": {inFlight, pending,
// waiting, concurrencyLimit},"steady","tail"}; seconds and cpuMicros cover the run only (not
// module loading); steady is the records/s accepted between the Progress samples at 10% and 90%
// of the total (null when too few samples fall between); tail is the seconds from the first
// sample with every record read to the end (within a sample's 250 ms).
// Exits 1 on any failure (dead letters included).
import { readFileSync } from "node:fs"
import { join } from "node:path"

const [baseUrl, apiKey, datasetId, file, workDir, concurrencyText, maxPendingText, keyOrder] = process.argv.slice(2)
const concurrency = concurrencyText.startsWith("fixed:") ? { fixed: Number(concurrencyText.slice(6)) } : Number(concurrencyText)
const maxPending = Number(maxPendingText)
if (keyOrder !== "terminal" && keyOrder !== "accepted") throw new Error(`keyOrder must be terminal or accepted, got ${keyOrder}`)

const peakRssKb = () => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? NaN)
const cpuNow = () => {
  const { user, system } = process.cpuUsage()
  return user + system
}

const dist = (path) => import(new URL(`../dist/${path}`, import.meta.url).href)
const [{ run }, Checkpoint, DeadLetter, Ndjson, { TributaryClient }, { Effect, Layer, Redacted }, NodeFileSystem] =
  await Promise.all([
    dist("src/pipeline/run.js"),
    dist("src/pipeline/Checkpoint.js"),
    dist("src/pipeline/DeadLetter.js"),
    dist("connectors/ndjson/index.js"),
    dist("src/client/Client.js"),
    import("effect"),
    // The module it uses, not the package's whole index (which loads its HTTP server,
    // sockets and workers too: 27 MB of resident memory for nothing used here).
    import("@effect/platform-node/NodeFileSystem")
  ])

const peak = { inFlight: 0, pending: 0, waiting: 0, concurrencyLimit: 0 }
const samples = [] // [ms since start, records accepted, records read]
let started
const onEvent = (event) =>
  Effect.sync(() => {
    if (event._tag !== "Progress") return
    for (const key of Object.keys(peak)) peak[key] = Math.max(peak[key], event.progress[key])
    samples.push([performance.now() - started, event.progress.accepted, event.progress.read])
  })

/** Seconds from the first sample with every record read to the run's end: the run's tail. */
const tailSeconds = (read, seconds) => {
  const at = samples.find(([, , r]) => r >= read)
  return at === undefined ? null : Math.max(0, seconds - at[0] / 1000)
}

/** Records/s accepted between the samples at 10% and 90% of the total: the rate without start-up and tail. */
const steadyRate = (total) => {
  const from = samples.find(([, accepted]) => accepted >= 0.1 * total)
  const to = samples.find(([, accepted]) => accepted >= 0.9 * total)
  return from && to && to[0] > from[0] ? ((to[1] - from[1]) / (to[0] - from[0])) * 1000 : null
}

const program = Effect.gen(function*() {
  const client = yield* TributaryClient
  return yield* run(client, {
    source: Ndjson.fromFile(file),
    destination: { datasetId },
    checkpoint: yield* Checkpoint.file(join(workDir, "checkpoint.json")),
    deadLetters: yield* DeadLetter.ndjsonFile(join(workDir, "dead-letters.ndjson")),
    concurrency,
    maxPending: { batches: maxPending },
    keyOrder,
    onEvent,
    // Only its progress is read (as the command line does).
    batchEvents: false,
    progressInterval: "250 millis"
  })
}).pipe(
  Effect.provide(Layer.merge(
    TributaryClient.layer({ baseUrl, apiKey: Redacted.make(apiKey) }),
    NodeFileSystem.layer
  ))
)

try {
  const cpuBefore = cpuNow()
  started = performance.now()
  const progress = await Effect.runPromise(program)
  const seconds = (performance.now() - started) / 1000
  const cpuMicros = cpuNow() - cpuBefore
  if (progress.deadLettered > 0) throw new Error(`${progress.deadLettered} dead letters`)
  process.stdout.write(
    `${JSON.stringify({ records: progress.read, accepted: progress.accepted, seconds, cpuMicros, peakRssKb: peakRssKb(), peak, steady: steadyRate(progress.accepted), tail: tailSeconds(progress.read, seconds) })}\n`
  )
  process.exit(0)
} catch (error) {
  console.error("tracking sender failed:", error)
  process.exit(1)
}
