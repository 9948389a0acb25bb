/**
 * `tributary sink` on the real broker, into a reference server that answers 503 and 429 at
 * random and drops answers to ingestions it has already stored:
 *
 * - SIGTERM drains, commits and exits 0, and a later member resumes from there;
 * - three sink processes share a 6-partition topic while it is being produced to; one of
 *   them at a time is killed with SIGKILL (or stopped with SIGTERM) at random moments and
 *   started again, so partitions move between members while batches are in flight. At the
 *   end the append-only dataset holds every valid message exactly once, every bad message is
 *   a dead letter on the dead-letter topic, and the group's lag is 0.
 *
 * The kill moments, the messages and the server's faults come from one seed, printed at the
 * start; set TRIBUTARY_SINK_SEED to repeat a run.
 *
 * The cases run side by side, each on topics, groups and datasets of its own: they mostly
 * wait on the broker, the server and their members (measured on the 2-core machine: 72 s one
 * after another, the chaos case alone 29 s).
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { seededRandom } from "../../src/server/faults.js"
import { startServe, type RunningServer } from "../support/cli.js"
import { compareIds, idAndN, newDataset as newDatasetOn, readAllRows, rowCount as rowCountOn } from "../support/crash.js"
import { createTopic, groupLag, kafka, killAllSinks, produceInBursts, readTopic, sleep, type SinkChild, startSink, waitFor } from "../support/kafka.js"
import { kafkaBrokers, kafkaSaslBrokers, kafkaTls } from "../support/services.js"

const seed = process.env["TRIBUTARY_SINK_SEED"] !== undefined
  ? Number(process.env["TRIBUTARY_SINK_SEED"])
  : Math.floor(Math.random() * 2 ** 31)
const apiKey = "sink-test-key"
const faults = `5xx=0.03,429=0.02,retry-after=0,drop=0.02,latency=1-15ms,seed=${seed}`

let server: RunningServer

beforeAll(async () => {
  console.log(`sink test seed ${seed} (TRIBUTARY_SINK_SEED=${seed} repeats it), faults ${faults}`)
  server = await startServe(["--port", "0", "--api-key", apiKey, "--faults", faults])
})

afterAll(async () => {
  killAllSinks()
  await server?.stop()
})

const newDataset = (name: string) => newDatasetOn(server.url, apiKey, { name, schema: idAndN })

const rowCount = (datasetId: string) => rowCountOn(server.url, apiKey, datasetId)

const sinkArgs = (options: {
  topic: string
  group: string
  datasetId: string
  brokers?: ReadonlyArray<string>
  extra?: ReadonlyArray<string>
}) => [
  "--brokers",
  (options.brokers ?? kafkaBrokers()).join(","),
  "--topic",
  options.topic,
  "--group",
  options.group,
  "--dataset",
  options.datasetId,
  "--api-url",
  server.url,
  "--api-key",
  apiKey,
  "--session-timeout",
  "3s",
  "--drain-timeout",
  "10s",
  ...(options.extra ?? [])
]

/** Waits until the sink has said it is up (its signal handlers are installed then). */
/** The member's exit, or a failure with its output when it has not exited in time (a drain that hangs). */
const exitedWithin = (member: SinkChild, timeoutMs: number) =>
  Promise.race([
    member.exited,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`the member did not exit within ${timeoutMs} ms of SIGTERM:\n${member.output().slice(-5000)}`)), timeoutMs)
    )
  ])

const isUp = (member: SinkChild) => waitFor(async () => member.output().includes("sink: group"), 30_000, member.output)

const produce = async (topic: string, values: ReadonlyArray<{ key: string; value: string }>) => {
  const producer = kafka().producer()
  await producer.connect()
  await producer.send({ topic, acks: -1, messages: [...values] })
  await producer.disconnect()
}

describe.concurrent("tributary sink (real broker, faulty reference server)", () => {
  it("SIGTERM stops fetching, commits what was delivered and exits 0; the next member resumes from there", async () => {
    const id = randomUUID()
    const topic = `sink-term-${id}`
    const group = `sink-term-${id}`
    await createTopic(topic, 2)
    const datasetId = await newDataset(`sigterm ${id}`)
    const ids = Array.from({ length: 10_000 }, (_, i) => `t${i}`)
    await produce(topic, ids.map((id, n) => ({ key: id, value: JSON.stringify({ id, n }) })))

    const first = startSink(sinkArgs({ topic, group, datasetId, extra: ["--dead-letter", `/tmp/${group}.ndjson`, "--metrics-port", "0"] }))
    await waitFor(async () => (await rowCount(datasetId)) >= 300, 30_000, first.output)
    // Monitoring while it runs: ready once it holds partitions, and Prometheus metrics.
    const metricsUrl = /metrics on (http:\/\/[^/\s]+)/.exec(first.output())?.[1]
    expect(metricsUrl, first.output()).toBeDefined()
    expect((await fetch(`${metricsUrl}/health`)).status).toBe(200)
    await waitFor(async () => (await fetch(`${metricsUrl}/ready`)).status === 200, 10_000, first.output)
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text()
    expect(metrics).toMatch(new RegExp(`tributary_partition_lag\\{partition="${topic}:[01]"\\} \\d+`))
    expect(metrics).toContain("# TYPE tributary_records_stored_total counter")
    first.child.kill("SIGTERM")
    const { code } = await first.exited
    expect(code, first.output()).toBe(0)
    expect(first.output()).toContain("sink: stopped; committed through")

    const second = startSink(sinkArgs({ topic, group, datasetId, extra: ["--dead-letter", `/tmp/${group}.ndjson`] }))
    await waitFor(async () => (await groupLag(group, topic)) === 0, 60_000, second.output)
    await isUp(second)
    second.child.kill("SIGINT")
    const secondExit = await second.exited
    expect(secondExit, second.output()).toEqual({ code: 0, signal: null })
    const rows = await readAllRows(server.url, apiKey, datasetId)
    const { duplicated, missing, unexpected } = compareIds(ids, rows.map((row) => row["id"]))
    expect({ duplicated, missing, unexpected }).toEqual({ duplicated: [], missing: [], unexpected: [] })
  }, 120_000)

  /**
   * A one-partition topic holding 200 messages and a dataset for them; `args` are a sink's
   * arguments through `brokers` (a secured listener of the test broker) with `extra`.
   */
  const securedCase = async (kind: string, brokers: ReadonlyArray<string>) => {
    const id = randomUUID()
    const topic = `sink-${kind}-${id}`
    const group = topic
    await createTopic(topic, 1)
    const datasetId = await newDataset(`${kind} ${id}`)
    await produce(topic, Array.from({ length: 200 }, (_, n) => ({ key: `${kind}${n}`, value: JSON.stringify({ id: `${kind}${n}`, n }) })))
    const args = (extra: ReadonlyArray<string>) =>
      sinkArgs({ topic, group, datasetId, brokers, extra: ["--dead-letter", `/tmp/${group}.ndjson`, ...extra] })
    /** Waits until `member` stored all 200 and the group's lag is 0, then stops it with SIGTERM (exit 0). */
    const deliversAll = async (member: SinkChild) => {
      await waitFor(async () => (await groupLag(group, topic)) === 0 && (await rowCount(datasetId)) === 200, 60_000, member.output)
      member.child.kill("SIGTERM")
      expect((await member.exited).code, member.output()).toBe(0)
    }
    return { args, deliversAll }
  }

  it("connects with SASL/PLAIN (password from the environment, never printed); a wrong password stops it with a clear line", async () => {
    const { args, deliversAll } = await securedCase("sasl", kafkaSaslBrokers())
    const saslArgs = args(["--sasl-mechanism", "plain", "--sasl-username", "tributary"])
    const secret = "tributary-secret"
    // The refused member never joins the group: both at once.
    const member = startSink(saslArgs, { TRIBUTARY_KAFKA_SASL_PASSWORD: secret })
    const refused = startSink(saslArgs, { TRIBUTARY_KAFKA_SASL_PASSWORD: "not-the-password" })
    const [, { code }] = await Promise.all([deliversAll(member), refused.exited])
    expect(member.output()).not.toContain(secret)

    expect(code, refused.output()).toBe(1)
    expect(refused.output()).toMatch(/SASL|authentication/i)
    expect(refused.output()).not.toContain("not-the-password")
  }, 120_000)

  it("connects with TLS trusting the given authority (--tls-ca); without it the broker's self-signed certificate is refused", async () => {
    const tls = kafkaTls()
    const { args, deliversAll } = await securedCase("tls", tls.brokers)
    // The untrusted member never connects (kafkajs retries the handshake for seconds before it
    // gives up): both at once.
    const untrusted = startSink(args(["--tls"]))
    const [, { code }] = await Promise.all([deliversAll(startSink(args(["--tls-ca", tls.ca]))), untrusted.exited])
    expect(code, untrusted.output()).toBe(1)
    expect(untrusted.output()).toContain("self-signed certificate")
  }, 120_000)

  // Alone, not beside the file's other cases: their load on top of three members, a producer
  // and the server starved the members of CPU until their group sessions ran out (seen with
  // the machine's two cores otherwise busy), which this case is not about.
  it.sequential("three members on 6 partitions under live produce, killed and restarted at random: every valid message once, every bad one dead-lettered, lag 0", async () => {
    const random = seededRandom(seed)
    const id = randomUUID()
    const topic = `sink-chaos-${id}`
    const deadLetterTopic = `sink-chaos-dead-${id}`
    const group = `sink-chaos-${id}`
    await createTopic(topic, 6)
    await createTopic(deadLetterTopic, 1)
    const datasetId = await newDataset(`chaos ${id}`)

    const valid = 12_000
    const badEvery = 331
    const expected: Array<string> = []
    const bad: Array<string> = []
    const messages: Array<{ key: string; value: string }> = []
    for (let n = 0; n < valid; n++) {
      const key = `c${String(n).padStart(6, "0")}`
      expected.push(key)
      messages.push({ key, value: JSON.stringify({ id: key, n }) })
      if (n % badEvery === 0) {
        const badId = `bad-${n}`
        bad.push(badId)
        const kinds = [`{${badId}`, JSON.stringify([badId]), JSON.stringify({ id: badId, n: "not a number" })]
        messages.push({ key: badId, value: kinds[bad.length % kinds.length]! })
      }
    }

    const args = sinkArgs({ topic, group, datasetId, extra: ["--dead-letter-topic", deadLetterTopic, "--concurrency", "4"] })
    const members: Array<SinkChild> = [startSink(args), startSink(args), startSink(args)]
    const log: Array<string> = []
    const started = Date.now()

    // Live traffic: the messages in bursts over about ten seconds, while members come and go.
    const producing = produceInBursts(topic, messages, { random, burst: { min: 200, max: 1000 }, maxPauseMs: 600, started }).then((line) => {
      log.push(line)
    })

    // Chaos: one member at a time is killed (or, once, stopped) and started again.
    const events = 4
    for (let i = 0; i < events; i++) {
      await sleep(1500 + Math.floor(random() * 3000))
      const which = Math.floor(random() * members.length)
      const member = members[which]!
      const graceful = i === 2
      // A signal before the command is up ends node itself, with nothing to drain yet.
      if (graceful) await isUp(member)
      member.child.kill(graceful ? "SIGTERM" : "SIGKILL")
      const exit = await exitedWithin(member, 60_000)
      log.push(`${Date.now() - started} ms: member ${which} ${graceful ? "stopped" : "killed"} (exit ${exit.code ?? exit.signal})`)
      if (graceful) expect(exit, member.output()).toEqual({ code: 0, signal: null })
      await sleep(Math.floor(random() * 1500))
      members[which] = startSink(args)
    }
    await producing

    const describe = async () =>
      `${log.join("\n")}\nrows ${await rowCount(datasetId)} of ${valid}, lag ${await groupLag(group, topic)}\n` +
      members.map((m, i) => `member ${i}:\n${m.output().slice(-3000)}`).join("\n")
    await waitFor(async () => (await groupLag(group, topic)) === 0 && (await rowCount(datasetId)) >= valid, 120_000, describe)

    for (const member of members) await isUp(member)
    for (const member of members) member.child.kill("SIGTERM")
    for (const member of members) expect(await exitedWithin(member, 60_000), member.output()).toEqual({ code: 0, signal: null })
    console.log(`sink chaos (seed ${seed}): ${log.join("; ")}; done in ${Date.now() - started} ms`)

    const rows = await readAllRows(server.url, apiKey, datasetId)
    const { duplicated, missing, unexpected } = compareIds(expected, rows.map((row) => row["id"]))
    expect({ duplicated: duplicated.slice(0, 20), missing: missing.slice(0, 20), unexpected: unexpected.slice(0, 20) }, await describe())
      .toEqual({ duplicated: [], missing: [], unexpected: [] })
    expect(rows).toHaveLength(valid)
    expect(await groupLag(group, topic)).toBe(0)

    // Dead letters are written at least once (again after a kill before their commit).
    const letters = (await readTopic(deadLetterTopic)).map((text) => JSON.parse(text))
    const named = new Set(letters.map((letter) => {
      expect(letter.position.partition).toMatch(new RegExp(`^${topic}:[0-5]$`))
      if (letter.stage === "source") expect(letter.reason.message).toMatch(new RegExp(`^topic ${topic} partition [0-5] offset \\d+: `))
      return letter.record?.id ?? /bad-\d+/.exec(letter.raw)?.[0]
    }))
    expect([...named].sort()).toEqual([...bad].sort())
  }, 300_000)

  it.sequential("a member joins and another leaves while batches are in flight at a slow, faulty server: no duplicate, no loss", async () => {
    const slow = await startServe(["--port", "0", "--api-key", apiKey, "--faults", `latency=100-250ms,5xx=0.03,429=0.02,retry-after=0,drop=0.02,seed=${seed}`])
    try {
      const id = randomUUID()
      const topic = `sink-rebalance-${id}`
      const group = `sink-rebalance-${id}`
      await createTopic(topic, 4)
      const datasetId = await newDatasetOn(slow.url, apiKey, { name: `rebalance ${id}`, schema: idAndN })
      const count = () => rowCountOn(slow.url, apiKey, datasetId)
      const ids = Array.from({ length: 8000 }, (_, n) => `r${String(n).padStart(5, "0")}`)
      await produce(topic, ids.map((id, n) => ({ key: id, value: JSON.stringify({ id, n }) })))
      const args = [...sinkArgs({ topic, group, datasetId, extra: ["--concurrency", "8", "--dead-letter", `/tmp/${group}.ndjson`] })]
      args[args.indexOf("--api-url") + 1] = slow.url

      const first = startSink(args)
      await waitFor(async () => (await count()) >= 800, 60_000, first.output)
      const second = startSink(args) // joins: the group rebalances with the first member's batches in flight
      await isUp(second)
      await waitFor(async () => (await count()) >= 4000, 60_000, async () => `${first.output()}\n${second.output()}`)
      first.child.kill("SIGTERM") // leaves: the second member takes every partition, with its own batches in flight
      expect(await first.exited, first.output()).toEqual({ code: 0, signal: null })
      // The first member's leaving gives the second every partition.
      await waitFor(async () => (second.output().match(/sink: assigned/g)?.length ?? 0) >= 2, 30_000, second.output)
      await waitFor(async () => (await groupLag(group, topic)) === 0, 90_000, second.output)
      second.child.kill("SIGTERM")
      expect(await second.exited, second.output()).toEqual({ code: 0, signal: null })
      // The first member gave its partitions up when the second joined.
      expect(first.output()).toContain("sink: revoked")

      const rows = await readAllRows(slow.url, apiKey, datasetId)
      const { duplicated, missing, unexpected } = compareIds(ids, rows.map((row) => row["id"]))
      expect({ duplicated: duplicated.slice(0, 20), missing: missing.slice(0, 20), unexpected: unexpected.slice(0, 20) })
        .toEqual({ duplicated: [], missing: [], unexpected: [] })
    } finally {
      await slow.stop()
    }
  }, 240_000)
})
