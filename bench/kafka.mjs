// Throughput, latency and memory of the Kafka sink (tributary's Kafka source and `run`) against a
// hand-written raw kafkajs consumer, on the real broker.
//
//   npm run services:start && npm run build && npm run bench:kafka     (1,000,000 messages; 20 s at 20k/s)
//   npm run bench:kafka -- --quick                                     (100,000 messages; 5 s at 20k/s)
//
// Sections:
//   throughput  --messages JSON messages (about 100 bytes) pre-produced to a fresh 4-partition
//               topic; then, in the same run and the same order each round (alternating), (a) the
//               raw baseline: a kafkajs `eachBatch` consumer that parses, POSTs 100-record bodies
//               with undici to the minimal raw ingest server (bench/pipeline-server.mjs), polls each
//               ingestion, and commits each batch; (b) the sink, at the same concurrency. Each in a
//               fresh consumer group. Prints records/s from the first fetched message to the last
//               commit, CPU and peak RSS, and the ratio sink ÷ raw (goal >= 0.8).
//   memory      the sink's peak RSS reading a fifth of the topic against the whole of it (flat: the
//               ratio stays near 1).
//   latency     a steady --rate messages/s for --seconds into a fresh topic while a sink reads it:
//               message-to-commit latency (the message's Kafka timestamp to the commit covering it),
//               p50 and p99, of the whole run and of the messages produced after the first
//               --warmup seconds (5): the goals (p50 <= 150 ms, p99 <= 500 ms) are on those. A
//               sink's first second runs on code not yet optimized and catches up for one or two
//               more (on the 2-core machine, with the broker, the producer and the server beside
//               it), and at 20 s those seconds are a tenth of the samples: the whole run's p99 is
//               the warm-up's. The p99 of each second is printed beside, so the warm-up shows.
//
// Options: --messages N  --rounds N (1)  --concurrency N (8)  --rate N (20000)  --seconds N  --warmup N (5)  --only a,b
//          --stages   the latency run asks for batch events, to time each batch's stages (read,
//                     sent, ended, committed); without, it runs as `tributary sink` does (no batch
//                     events: a batch then takes no fiber), which is what its figures are of
//          --sender-node-args="…"   extra node flags for the senders (e.g. "--cpu-prof
//                                   --cpu-prof-dir=/tmp/prof"; read the profiles with bench/cpuprofile-top.mjs)
// Brokers: KAFKA_BROKERS, else .services/env (written by `npm run services:start`), else 127.0.0.1:19092.
// Senders are pinned to core 0 and the raw server to core 1 when taskset exists.
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { createInterface } from "node:readline"
import { benchArgs, fmt, machineLoad, median, perRoundRatios, pinned, portLine, range, startServer, table } from "./lib.mjs"

const { values: args } = benchArgs(import.meta.url, {
  options: {
    quick: { type: "boolean", default: false },
    messages: { type: "string" },
    rounds: { type: "string", default: "1" },
    concurrency: { type: "string", default: "8" },
    rate: { type: "string", default: "20000" },
    seconds: { type: "string" },
    warmup: { type: "string" },
    only: { type: "string", default: "throughput,memory,latency" },
    "sender-node-args": { type: "string", default: "" },
    stages: { type: "boolean", default: false }
  }
})
const messages = Number(args.messages ?? (args.quick ? 100_000 : 1_000_000))
const rounds = Number(args.rounds)
const concurrency = Number(args.concurrency)
const rate = Number(args.rate)
const seconds = Number(args.seconds ?? (args.quick ? 5 : 20))
const warmup = Number(args.warmup ?? (args.quick ? 1 : 5))
const only = new Set(args.only.split(","))
const here = (path) => new URL(path, import.meta.url).pathname

const brokers = process.env.KAFKA_BROKERS ??
  (existsSync(here("../.services/env"))
    ? /^KAFKA_BROKERS=(.*)$/m.exec(readFileSync(here("../.services/env"), "utf8"))?.[1]
    : undefined) ??
  "127.0.0.1:19092"

process.env.KAFKAJS_NO_PARTITIONER_WARNING = "1"
const { Kafka, logLevel } = await import("kafkajs")
const kafka = new Kafka({ clientId: "bench", brokers: brokers.split(","), logLevel: logLevel.ERROR })

const createTopic = async (topic, partitions) => {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true })
  await admin.disconnect()
}

const value = (n) =>
  `{"id":"rec-${String(n).padStart(9, "0")}","ts":"2026-11-01T10:${String(n % 60).padStart(2, "0")}:00Z",` +
  `"amount":${(n % 10_000) / 100},"country":"SI","tags":["a","b"],"n":${n}}`

/** Produces `count` messages from `from` on, in sends of 10,000. */
const produce = async (topic, count, from = 0) => {
  const producer = kafka.producer()
  await producer.connect()
  for (let at = 0; at < count; at += 10_000) {
    const size = Math.min(10_000, count - at)
    await producer.send({ topic, messages: Array.from({ length: size }, (_, i) => ({ value: value(from + at + i) })) })
  }
  await producer.disconnect()
}

/** Runs one sender to completion and answers its JSON line. */
const send = (mode, topic, server, expected, extra = []) =>
  new Promise((resolve, reject) => {
    const [file, argv] = pinned(0, [process.execPath, ...args["sender-node-args"].split(" ").filter(Boolean), here("kafka-sender.mjs"), mode, brokers, topic, `bench-${mode}-${randomUUID()}`, server.url, "bench", "1", String(concurrency), String(expected), ...extra])
    const child = spawn(file, argv, { stdio: ["ignore", "pipe", "inherit"] })
    let line
    createInterface({ input: child.stdout }).on("line", (l) => (line = l))
    child.on("exit", (code) => (code === 0 && line ? resolve(JSON.parse(line)) : reject(new Error(`${mode} sender exited ${code}`))))
  })

console.log(`kafka bench: brokers ${brokers}, concurrency ${concurrency}, node ${process.version}\n${machineLoad()}`)
const server = await startServer("raw ingest server", [process.execPath, here("pipeline-server.mjs"), "bench"], portLine)
const runs = []
const describe = (r) =>
  `${fmt(r.records / r.seconds)} records/s, ${fmt(r.seconds, 1)} s, CPU ${fmt(r.cpuMicros / 1e6, 1)} s ` +
  `(${fmt(r.cpuMicros / r.records, 1)} µs/record), peak RSS ${fmt(r.peakRssKb / 1024)} MB`

try {
  if (only.has("throughput") || only.has("memory")) {
    const topic = `bench-${randomUUID()}`
    await createTopic(topic, 4)
    const producing = performance.now()
    await produce(topic, messages)
    console.log(`\n== produced ${fmt(messages)} messages to a 4-partition topic in ${fmt((performance.now() - producing) / 1000, 1)} s`)

    if (only.has("throughput")) {
      console.log(`\n== 1. throughput: ${rounds} round(s)`)
      for (let round = 1; round <= rounds; round++) {
        for (const mode of round % 2 === 1 ? ["raw", "sink"] : ["sink", "raw"]) {
          const r = { round, ...(await send(mode, topic, server, messages)) }
          runs.push(r)
          console.log(`round ${round} ${mode}: ${describe(r)}`)
        }
      }
      table(["sender", "records/s", "CPU µs/record", "peak RSS MB"], ["raw", "sink"].map((mode) => {
        const mine = runs.filter((r) => r.mode === mode)
        return [mode, fmt(median(mine.map((r) => r.records / r.seconds))), fmt(median(mine.map((r) => r.cpuMicros / r.records)), 1), fmt(Math.max(...mine.map((r) => r.peakRssKb)) / 1024)]
      }))
      const withRate = runs.map((r) => ({ ...r, rate: r.records / r.seconds }))
      const ratios = perRoundRatios(withRate, "mode", "raw", "sink", "rate", false)
      console.log(`sink ÷ raw records/s: ${range(ratios)} (goal >= 0.8: ${median(ratios) >= 0.8 ? "met" : "not met"})`)
    }

    if (only.has("memory")) {
      console.log("\n== 2. memory: the sink over a fifth of the topic, then all of it")
      const small = await send("sink", topic, server, Math.floor(messages / 5))
      const big = await send("sink", topic, server, messages)
      console.log(`${fmt(messages / 5)} messages: peak RSS ${fmt(small.peakRssKb / 1024)} MB; ${fmt(messages)}: ${fmt(big.peakRssKb / 1024)} MB; ` +
        `ratio ${fmt(big.peakRssKb / small.peakRssKb, 2)} (flat: near 1)`)
    }
  }

  if (only.has("latency")) {
    console.log(`\n== 3. latency: ${fmt(rate)} messages/s for ${seconds} s`)
    const topic = `bench-latency-${randomUUID()}`
    await createTopic(topic, 4)
    const total = rate * seconds
    const sinking = send("sink", topic, server, total, [args.stages ? "latency-stages" : "latency", String(warmup)])
    await new Promise((r) => setTimeout(r, 5000)) // the sink joins its group first
    const producer = kafka.producer()
    await producer.connect()
    const begin = performance.now()
    const tick = 50 // ms: rate / 20 messages every tick
    for (let sent = 0, n = 0; sent < total; n++) {
      const size = Math.min(total - sent, Math.round((rate * tick) / 1000))
      await producer.send({ topic, messages: Array.from({ length: size }, (_, i) => ({ value: value(sent + i) })) })
      sent += size
      const wait = begin + (n + 1) * tick - performance.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    }
    const producedIn = (performance.now() - begin) / 1000
    await producer.disconnect()
    const r = await sinking
    console.log(`produced ${fmt(total)} in ${fmt(producedIn, 1)} s (${fmt(total / producedIn)}/s); message-to-commit latency ` +
      `p50 ${fmt(r.latency.p50)} ms, p99 ${fmt(r.latency.p99)} ms, max ${fmt(r.latency.max)} ms over ${fmt(r.latency.samples)} messages; ` +
      `peak RSS ${fmt(r.peakRssKb / 1024)} MB`)
    if (r.steady !== null) {
      const met = r.steady.p50 <= 150 && r.steady.p99 <= 500
      console.log(`after the first ${warmup} s (the warm-up): p50 ${fmt(r.steady.p50)} ms, p99 ${fmt(r.steady.p99)} ms, max ${fmt(r.steady.max)} ms ` +
        `over ${fmt(r.steady.samples)} messages (goals p50 <= 150 ms, p99 <= 500 ms: ${met ? "met" : "not met"})`)
    }
    console.log(`p99 of the messages produced in each second: ${r.p99BySecond.map((ms) => (ms === null ? "-" : fmt(ms))).join(" ")} ms`)
    if (args.stages) {
      console.log(`by stage, p50 after the message was produced: read ${fmt(r.stages.read)} ms, batch sent ${fmt(r.stages.sent)} ms, ` +
        `ingestion ended ${fmt(r.stages.ended)} ms, committed ${fmt(r.latency.p50)} ms`)
    } else {
      console.log(`(--stages times each batch's stages, with batch events on: a fiber a batch)`)
    }
  }
  console.log(`\n${machineLoad()}`)
} finally {
  await server.stop()
}
