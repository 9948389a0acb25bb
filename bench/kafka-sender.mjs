// One consumer of bench/kafka.mjs, in a process of its own: reads a topic in a consumer group
// into the raw ingest server until `expected` messages are committed, then prints one JSON line
// with what it did and what it cost.
//
// Usage: node bench/kafka-sender.mjs <mode> <brokers> <topic> <group> <baseUrl> <apiKey> <datasetId> <concurrency> <expected> [latency [warmupSeconds]]
//
//   mode raw    the hand-written baseline: kafkajs `eachBatch`, JSON.parse each value, POST
//               100-record bodies (JSON.stringify) with undici.request, at most `concurrency` in
//               flight, GET each ingestion until it is terminal, then commit the batch's offset
//   mode sink   tributary's Kafka source and `run` (built JS from dist/) with the settings
//               `tributary sink` runs it with (`Kafka.sinkDefaults`: 256 batches pending at most,
//               a commit each 25 ms at most), `concurrency` the ceiling of requests in flight,
//               dead letters to a file in the temporary directory
//   latency     (sink only) also measures message-to-commit latency: the time from a message's
//               Kafka timestamp (set by the producer) to the commit that covers it; those of
//               the messages produced after the first warmupSeconds (default 0) again apart
//
// Output: {"mode","records","seconds","cpuMicros","peakRssKb","latency"?: {"p50","p99","max","samples"},
//          "steady"?: the same after the warm-up, "p99BySecond"?: [ms, ...]};
// seconds and CPU run from the first fetched message to the last commit. Exits 1 on any failure.
import { readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { rawIngest, runMode } from "./lib.mjs"

const [mode, brokers, topic, group, baseUrl, apiKey, datasetId, concurrencyText, expectedText, latencyFlag, warmupText] = process.argv.slice(2)
const concurrency = Number(concurrencyText)
const expected = Number(expectedText)
const measureLatency = latencyFlag === "latency" || latencyFlag === "latency-stages"
const measureStages = latencyFlag === "latency-stages"
/** Messages produced in the first this many ms are the warm-up: their latencies are reported apart too. */
const warmupMillis = Number(warmupText ?? 0) * 1000
process.env.KAFKAJS_NO_PARTITIONER_WARNING = "1"

const peakRssKb = () => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? NaN)
const cpuNow = () => {
  const { user, system } = process.cpuUsage()
  return user + system
}
let started
let cpuAtStart
const markStart = () => {
  if (started === undefined) {
    started = performance.now()
    cpuAtStart = cpuNow()
  }
}
const report = (extra = {}) => {
  console.log(JSON.stringify({
    mode,
    records: expected,
    seconds: (performance.now() - started) / 1000,
    cpuMicros: cpuNow() - cpuAtStart,
    peakRssKb: peakRssKb(),
    ...extra
  }))
}

const raw = async () => {
  const { Kafka, logLevel } = await import("kafkajs")
  const { limit, postAndPoll } = await rawIngest({ baseUrl, apiKey, datasetId })
  const permits = limit(concurrency)
  const sendBatch = async (records) => {
    await permits.acquire()
    try {
      await postAndPoll(records)
    } finally {
      permits.release()
    }
  }

  const kafka = new Kafka({ clientId: "bench-raw", brokers: brokers.split(","), logLevel: logLevel.ERROR })
  const consumer = kafka.consumer({ groupId: group })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  let committed = 0
  let done
  const finished = new Promise((r) => (done = r))
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: 4,
    eachBatch: async ({ batch, heartbeat }) => {
      markStart()
      const records = batch.messages.map((m) => JSON.parse(m.value.toString("utf8")))
      const sends = []
      for (let at = 0; at < records.length; at += 100) sends.push(sendBatch(records.slice(at, at + 100)))
      await Promise.all(sends)
      await heartbeat()
      await consumer.commitOffsets([{ topic, partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }])
      committed += batch.messages.length
      if (committed >= expected) done()
    }
  })
  await finished
  report()
  await consumer.disconnect()
}

const sink = async () => {
  const dist = new URL("../dist/", import.meta.url)
  const { Effect, Layer, Redacted, Schedule } = await import("effect")
  const Kafka = await import(new URL("connectors/kafka/index.js", dist).href)
  const { TributaryClient } = await import(new URL("src/client/index.js", dist).href)
  const { DeadLetter, run } = await import(new URL("src/pipeline/index.js", dist).href)

  // Message-to-commit latency: each message's Kafka timestamp until the commit that covers it.
  const produced = new Map() // partition -> [offset, timestamp][] in offset order
  const samples = []
  // [produced at, latency] of every message, for the warm-up's share and the latency by second.
  const timed = []
  const decode = measureLatency
    ? (message) => {
      const name = `${message.topic}:${message.partition}`
      let list = produced.get(name)
      if (list === undefined) produced.set(name, list = [])
      // [offset, produced at, read, sent, ended]
      list.push([Number(message.offset), Number(message.timestamp), Date.now(), 0, 0])
      return JSON.parse(message.value.toString("utf8"))
    }
    : undefined
  // By stage: how long after it was produced a message was read, its batch sent (the post
  // began), its ingestion ended, and its commit written.
  const stages = { read: [], sent: [], ended: [] }
  const mark = (partition, first, last, field) => {
    const now = Date.now()
    for (const entry of produced.get(partition) ?? []) if (entry[0] >= first && entry[0] <= last) entry[field] = now
  }
  const onCommitted = (position) => {
    const list = produced.get(position.partition)
    if (list === undefined) return
    const now = Date.now()
    let i = 0
    while (i < list.length && list[i][0] <= Number(position.offset)) {
      const [, at, read, sent, ended] = list[i++]
      samples.push(now - at)
      timed.push([at, now - at])
      stages.read.push(read - at)
      if (sent > 0) stages.sent.push(sent - at)
      if (ended > 0) stages.ended.push(ended - at)
    }
    list.splice(0, i)
  }
  const onEvent = (event) => {
    if (event._tag === "Committed") onCommitted(event.position)
    else if (measureLatency && event._tag === "BatchSent") mark(event.partition, event.first, event.last, 3)
    else if (measureLatency && event._tag === "BatchDone") mark(event.partition, event.first, event.last, 4)
  }

  const program = Effect.gen(function*() {
    const client = yield* TributaryClient
    const source = yield* Kafka.make({ groupId: group, topics: [topic], decode })
    const running = yield* Effect.fork(run(client, {
      source,
      destination: { datasetId },
      deadLetters: yield* DeadLetter.ndjsonFile(join(tmpdir(), `bench-kafka-${process.pid}.dead-letters.ndjson`)),
      concurrency,
      // As `tributary sink` runs it (Kafka.runUntilStopped).
      ...Kafka.sinkDefaults,
      // `tributary sink` asks for no batch events (a batch then costs no fiber); --stages asks
      // for them, to time each batch's stages.
      batchEvents: measureStages,
      onEvent: (event) => Effect.sync(() => onEvent(event))
    }))
    yield* source.partitions.pipe(
      Effect.repeat({ until: (ps) => ps.some((p) => p.end !== undefined), schedule: Schedule.spaced("2 millis") })
    )
    markStart()
    yield* source.partitions.pipe(
      Effect.repeat({
        until: (ps) => ps.reduce((n, p) => n + (p.committed ?? 0), 0) >= expected,
        schedule: Schedule.spaced("5 millis")
      })
    )
    const seconds = (performance.now() - started) / 1000
    const cpu = cpuNow() - cpuAtStart
    yield* source.stop
    yield* running.await
    samples.sort((a, b) => a - b)
    const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]
    const quantile = (xs, q) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]
    let first = Infinity
    for (const [producedAt] of timed) if (producedAt < first) first = producedAt
    const steady = timed.filter(([producedAt]) => producedAt >= first + warmupMillis).map(([, l]) => l).sort((a, b) => a - b)
    // The p99 of the messages produced in each second of the run.
    const bySecond = []
    for (const [producedAt, l] of timed) (bySecond[Math.floor((producedAt - first) / 1000)] ??= []).push(l)
    const p99BySecond = Array.from(bySecond, (xs) => (xs === undefined ? null : quantile(xs.sort((a, b) => a - b), 0.99)))
    const p50Of = (xs) => xs.length === 0 ? null : xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
    console.log(JSON.stringify({
      mode,
      records: expected,
      seconds,
      cpuMicros: cpu,
      peakRssKb: peakRssKb(),
      ...(measureLatency
        ? {
          latency: { p50: at(0.5), p99: at(0.99), max: samples[samples.length - 1], samples: samples.length },
          steady: steady.length === 0
            ? null
            : { p50: quantile(steady, 0.5), p99: quantile(steady, 0.99), max: steady[steady.length - 1], samples: steady.length },
          p99BySecond,
          stages: Object.fromEntries(Object.entries(stages).map(([name, xs]) => [name, p50Of(xs)]))
        }
        : {})
    }))
  })
  await Effect.runPromise(program.pipe(
    Effect.scoped,
    Effect.provide(Kafka.layer({ brokers: brokers.split(","), clientId: "bench-sink" })),
    Effect.provide(TributaryClient.layer({ baseUrl, apiKey: Redacted.make(apiKey) })),
    Effect.provide(Layer.empty)
  ))
}

runMode({ raw, sink }, mode)
