// One sender of bench/pipeline.mjs, in a process of its own: sends an NDJSON file to a dataset
// and prints one JSON line with what it did and what it cost.
//
// Usage: node bench/pipeline-sender.mjs <mode> <baseUrl> <apiKey> <datasetId> <file> <concurrency> <workDir> [distDir]
//
//   mode pipeline   tributary's `run` with `Ndjson.fromFile`, a checkpoint file and a dead-letter
//                   file in workDir, `concurrency` batches in flight (built JS from distDir,
//                   default the project's dist/; a patched copy needs node_modules beside it)
//   mode typed      the same `run`, with typed records: each record decoded with an Effect Schema
//                   of its fields (`ts` a Date), one `Typed.map` (the amount in cents), and
//                   encoded with the output schema; the dataset's schema is checked against it
//   mode floor      the raw sender's loop doing what every record needs in the pipeline, with the
//                   pipeline's pure parts and no Effect runtime: the schema check, the key order,
//                   bodies from the records' texts, idempotency keys (no checkpoint writes): the
//                   least a pipeline with these checks could cost
//   mode raw        the hand-written baseline: split the file into lines, JSON.parse each, POST
//                   100-record bodies (JSON.stringify) with an idempotency key through
//                   undici.request, then GET the ingestion until it is terminal; `concurrency`
//                   batches in flight
//
// Output: {"mode","records","accepted","seconds","cpuMicros","peakRssKb","batches"}; seconds and
// cpuMicros cover the send only (not module loading). Exits 1 on any failure.
import { randomUUID } from "node:crypto"
import { createReadStream, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [mode, baseUrl, apiKey, datasetId, file, concurrencyText, workDir, distArg] = process.argv.slice(2)
const concurrency = Number(concurrencyText)
const recordsPerBatch = 100

const peakRssKb = () => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? NaN)
const cpuNow = () => {
  const { user, system } = process.cpuUsage()
  return user + system
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/**
 * Polls an ingestion's detail until it succeeded (20 ms first, 1.5x each time, at most 1 s);
 * answers the records it stored. `raw` and `floor` follow their ingestions the same way.
 */
const storedWhenDone = async (request, pollPath) => {
  const pollHeaders = { "x-api-key": apiKey }
  for (let wait = 20;; wait = Math.min(1000, Math.ceil(wait * 1.5))) {
    const polled = await request(pollPath, { method: "GET", headers: pollHeaders })
    const detail = await polled.body.json()
    if (polled.statusCode !== 200) throw new Error(`GET answered ${polled.statusCode}: ${JSON.stringify(detail)}`)
    const status = detail.data.status
    if (status === "success") {
      const counts = detail.data.summary.ingestion
      return counts.appendedRecordCount + counts.overwrittenRecordCount
    }
    if (status !== "queued" && status !== "processing") throw new Error(`ingestion ended ${status}`)
    await sleep(wait)
  }
}

/**
 * Reads the file's lines, makes each a record with `toRecord(line, n)` and hands on batches of
 * 100 to `dispatch` (which waits while `concurrency` are in flight); answers the records read.
 * `raw` and `floor` read the file the same way.
 */
const readBatches = async (toRecord, dispatch) => {
  let records = 0
  let batch = []
  let rest = ""
  // Answers a full batch, to be dispatched (awaited only then: an await a line would cost
  // the baseline a microtask a record).
  const take = (line) => {
    batch.push(toRecord(line, records++))
    if (batch.length < recordsPerBatch) return undefined
    const full = batch
    batch = []
    return full
  }
  for await (const chunk of createReadStream(file, { encoding: "utf8", highWaterMark: 64 * 1024 })) {
    const lines = (rest + chunk).split("\n")
    rest = lines.pop()
    for (const line of lines) {
      const full = line === "" ? undefined : take(line)
      if (full !== undefined) await dispatch(full)
    }
  }
  const last = rest === "" ? undefined : take(rest)
  if (last !== undefined) await dispatch(last)
  if (batch.length > 0) await dispatch(batch)
  return records
}

// Each mode loads its modules first and answers the function that sends.
const raw = async () => {
  const { request } = await import("undici")
  const headers = { "content-type": "application/json", "x-api-key": apiKey }
  const dataPath = `${baseUrl}/v2/datasets/${datasetId}/data`
  let accepted = 0
  let batches = 0

  const sendBatch = async (records) => {
    const posted = await request(dataPath, {
      method: "POST",
      headers: { ...headers, "idempotency-key": randomUUID() },
      body: JSON.stringify({ records })
    })
    const answer = await posted.body.json()
    if (posted.statusCode !== 200) throw new Error(`POST answered ${posted.statusCode}: ${JSON.stringify(answer)}`)
    // Awaited first: `accepted += await …` reads `accepted` before the wait, and the sends
    // under way at once then overwrote each other's counts.
    const stored = await storedWhenDone(request, `${baseUrl}/v2/datasets/${datasetId}/ingestions/${answer.data.ingestionId}`)
    accepted += stored
    batches++
  }

  const inFlight = new Set()
  const dispatch = async (records) => {
    const sent = sendBatch(records).finally(() => inFlight.delete(sent))
    inFlight.add(sent)
    if (inFlight.size >= concurrency) await Promise.race(inFlight)
  }

  return async () => {
    const records = await readBatches((line) => JSON.parse(line), dispatch)
    await Promise.all(inFlight)
    return { records, accepted, batches }
  }
}

/**
 * The raw sender's loop doing the work every record needs in the pipeline, with the
 * pipeline's own pure parts and no Effect runtime: each line checked against the dataset's
 * schema (`checkElement`), keyed batches entered in the key order (`Conflicts`, a batch
 * waiting for the earlier ones that share a key), bodies from the records' texts
 * (`batchBodyBytes`) and idempotency keys from their coordinates (`idempotencyKey`). No
 * checkpoint is written: what it costs is the least a pipeline with these checks could cost.
 */
const floor = async () => {
  const distDir = distArg ? resolve(distArg) : new URL("../dist", import.meta.url).pathname
  const dist = (path) => import(pathToFileURL(join(distDir, path)).href)
  const [{ request }, { checkElement }, { Conflicts }, { batchBodyBytes }, { idempotencyKey }] = await Promise.all([
    import("undici"),
    dist("src/pipeline/validate.js"),
    dist("src/pipeline/internal/conflicts.js"),
    dist("src/pipeline/batch.js"),
    dist("src/pipeline/internal/ingest.js")
  ])
  const headers = { "content-type": "application/json", "x-api-key": apiKey }
  const schemaReply = await request(`${baseUrl}/v2/datasets/${datasetId}/schema`, { method: "GET", headers: { "x-api-key": apiKey } })
  const schemaBody = await schemaReply.body.json()
  const schema = {
    columns: schemaBody.data.items.map((column) => ({ id: column.id, dataType: column.dataType })),
    primaryKey: schemaBody.data.primaryKey ?? []
  }
  const check = checkElement(schema)
  const conflicts = new Conflicts()
  const dataPath = `${baseUrl}/v2/datasets/${datasetId}/data`
  const partition = file
  // A run of its own each time, as the pipeline's fresh checkpoint gets one: its keys are new.
  const run = `floor-${randomUUID()}`
  let accepted = 0
  let batches = 0

  const sendBatch = async (records, ticket) => {
    if (!conflicts.ready(ticket)) await ticket.item.ready
    const first = records[0].position.offset
    const last = records[records.length - 1].position.offset
    const posted = await request(dataPath, {
      method: "POST",
      headers: { ...headers, "idempotency-key": idempotencyKey(datasetId, run, partition, first, last) },
      body: batchBodyBytes(records)
    })
    const answer = await posted.body.json()
    if (posted.statusCode !== 200) throw new Error(`POST answered ${posted.statusCode}: ${JSON.stringify(answer)}`)
    // Awaited first: `accepted += await …` reads `accepted` before the wait, and the sends
    // under way at once then overwrote each other's counts.
    const stored = await storedWhenDone(request, `${baseUrl}/v2/datasets/${datasetId}/ingestions/${answer.data.ingestionId}`)
    accepted += stored
    batches++
    for (const freed of conflicts.done(ticket)) freed.item.open()
  }

  const inFlight = new Set()
  const dispatch = async (records) => {
    const item = {}
    item.ready = new Promise((open) => (item.open = open))
    const ticket = conflicts.add(item, partition, records.map((record) => record.key))
    const sent = sendBatch(records, ticket).finally(() => inFlight.delete(sent))
    inFlight.add(sent)
    if (inFlight.size >= concurrency) await Promise.race(inFlight)
  }

  let byteOffset = 0
  const toRecord = (line, n) => {
    byteOffset += line.length + 1
    const position = { partition, offset: n, resume: { byteOffset } }
    const checked = check({ _tag: "Record", position, value: JSON.parse(line), json: line }, n)
    if (checked._tag !== "Valid") throw new Error(`line ${n + 1}: ${JSON.stringify(checked)}`)
    return { position: checked.position, json: checked.json, key: checked.key }
  }

  return async () => {
    const records = await readBatches(toRecord, dispatch)
    await Promise.all(inFlight)
    return { records, accepted, batches }
  }
}

const pipeline = async (typed) => {
  const distDir = distArg ? resolve(distArg) : new URL("../dist", import.meta.url).pathname
  const dist = (path) => import(pathToFileURL(join(distDir, path)).href)
  const [{ run }, Checkpoint, DeadLetter, Ndjson, { TributaryClient }, Typed, { Effect, Layer, Redacted, Schema }, NodeFileSystem] =
    await Promise.all([
      dist("src/pipeline/run.js"),
      dist("src/pipeline/Checkpoint.js"),
      dist("src/pipeline/DeadLetter.js"),
      dist("connectors/ndjson/index.js"),
      dist("src/client/Client.js"),
      dist("src/pipeline/Typed.js"),
      import("effect"),
      // The module it uses, not the package's whole index (which loads its HTTP server,
      // sockets and workers too: 27 MB of resident memory for nothing used here).
      import("@effect/platform-node/NodeFileSystem")
    ])
  const fields = {
    id: Schema.String,
    ts: Schema.Date,
    amount: Schema.Number,
    country: Schema.String,
    tags: Schema.Array(Schema.String),
    n: Schema.Int
  }
  const Rec = Schema.Struct(fields)
  const Out = Schema.Struct({ ...fields, amount: Schema.Int })
  const records = typed
    ? Typed.records({
      decode: Rec,
      transform: (recs) => recs.pipe(Typed.map((r) => ({ ...r, amount: Math.round(r.amount * 100) }))),
      encode: Out
    })
    : undefined
  const program = Effect.gen(function*() {
    const client = yield* TributaryClient
    return yield* run(client, {
      source: Ndjson.fromFile(file),
      records,
      destination: { datasetId },
      checkpoint: yield* Checkpoint.file(join(workDir, "checkpoint.json")),
      deadLetters: yield* DeadLetter.ndjsonFile(join(workDir, "dead-letters.ndjson")),
      concurrency
    })
  }).pipe(
    Effect.provide(Layer.merge(
      TributaryClient.layer({ baseUrl, apiKey: Redacted.make(apiKey) }),
      NodeFileSystem.layer
    ))
  )
  return async () => {
    const progress = await Effect.runPromise(program)
    if (progress.deadLettered > 0) throw new Error(`${progress.deadLettered} dead letters`)
    return { records: progress.read, accepted: progress.accepted, batches: null }
  }
}

try {
  const send = await (mode === "raw" ? raw() : mode === "floor" ? floor() : pipeline(mode === "typed"))
  const cpuBefore = cpuNow()
  const started = performance.now()
  const result = await send()
  const seconds = (performance.now() - started) / 1000
  const cpuMicros = cpuNow() - cpuBefore
  process.stdout.write(`${JSON.stringify({ mode, ...result, seconds, cpuMicros, peakRssKb: peakRssKb() })}\n`)
} catch (error) {
  console.error(`${mode} sender failed:`, error)
  process.exit(1)
}
