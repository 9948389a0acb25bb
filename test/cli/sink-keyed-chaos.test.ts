/**
 * Keyed updates through `tributary sink` under chaos: three members of one group on a
 * 6-partition topic, into a keyed dataset of a reference server that fails 30% of API requests
 * with 503 and drops 10% of the answers to ingestions it stored. 300 keys x 40 versions are
 * produced while members are killed with SIGKILL at random moments and started again (so
 * partitions move between members with batches in flight). A message's Kafka key is its
 * dataset key, so a key's versions are in one partition, in the order they were produced.
 *
 * At the end every key's row holds its last version, no key is missing and the group's lag
 * is 0: a key's updates from one partition were applied in order across retries, dropped
 * answers, kills and rebalances.
 *
 * A second case runs the same chaos over hot keys among fresh ones (3% of the messages update
 * one of 30 hot keys, the rest are keys of their own) against ingestions that take 40-120 ms:
 * neighbouring batches then share a few keys, so batches go in parts (the records of keys an
 * unfinished batch holds wait, the rest go at once), with the split recorded in the group's
 * committed-offset metadata before either part is sent.
 *
 * The kill moments, the bursts and the server's faults come from one seed, printed at the
 * start; set TRIBUTARY_SINK_SEED to repeat a run.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { seededRandom } from "../../src/server/faults.js"
import { startServe, type RunningServer } from "../support/cli.js"
import { apiData, newDataset, readAllRows } from "../support/crash.js"
import { createTopic, groupLag, killAllSinks, produceInBursts, sleep, type SinkChild, startSink, waitFor } from "../support/kafka.js"
import { kafkaBrokers } from "../support/services.js"

const seed = process.env["TRIBUTARY_SINK_SEED"] !== undefined
  ? Number(process.env["TRIBUTARY_SINK_SEED"])
  : Math.floor(Math.random() * 2 ** 31)
const apiKey = "sink-keyed-chaos-key"
const faults = `5xx=0.3,drop=0.1,seed=${seed}`

let server: RunningServer
let slow: RunningServer

beforeAll(async () => {
  console.log(`sink keyed chaos seed ${seed} (TRIBUTARY_SINK_SEED=${seed} repeats it), faults ${faults}`)
  server = await startServe(["--port", "0", "--api-key", apiKey, "--faults", faults])
  slow = await startServe(["--port", "0", "--api-key", apiKey, "--faults", `processing=40-120ms,${faults}`])
})

afterAll(async () => {
  killAllSinks()
  await server?.stop()
  await slow?.stop()
})

interface Message {
  readonly key: string
  readonly value: string
}

/** Version after version: a key's versions 0..39 in produce order, in the partition of its key. */
const everyKeyEveryVersion = (): { readonly messages: ReadonlyArray<Message>; readonly last: ReadonlyMap<string, number> } => {
  const keys = 300
  const versions = 40
  const messages: Array<Message> = []
  const last = new Map<string, number>()
  for (let version = 0; version < versions; version++) {
    for (let k = 0; k < keys; k++) {
      messages.push({ key: `k${k}`, value: JSON.stringify({ key: `k${k}`, version }) })
      last.set(`k${k}`, version)
    }
  }
  return { messages, last }
}

/** 12,000 messages: 3% update one of 30 hot keys (their version is their place), the rest are fresh keys. */
const hotKeysAmongFresh = (random: () => number) => {
  const messages: Array<Message> = []
  const last = new Map<string, number>()
  for (let i = 0; i < 12_000; i++) {
    const key = random() < 0.03 ? `hot${Math.floor(random() * 30)}` : `fresh${i}`
    messages.push({ key, value: JSON.stringify({ key, version: i }) })
    last.set(key, i)
  }
  return { messages, last }
}

const chaos = async (
  name: string,
  server: RunningServer,
  data: (random: () => number) => { readonly messages: ReadonlyArray<Message>; readonly last: ReadonlyMap<string, number> },
  random: () => number
) => {
  const id = randomUUID()
  const topic = `sink-keyed-chaos-${id}`
  const group = topic
  await createTopic(topic, 6)
  const datasetId = await newDataset(server.url, apiKey, {
    name: `keyed chaos ${id}`,
    schema: [{ id: "key", dataType: "string" }, { id: "version", dataType: "number" }],
    primaryKey: ["key"]
  })

  const { last, messages } = data(random)
  const keys = last.size

  const args = [
    "--brokers", kafkaBrokers().join(","),
    "--topic", topic,
    "--group", group,
    "--dataset", datasetId,
    "--api-url", server.url,
    "--api-key", apiKey,
    "--session-timeout", "3s",
    "--drain-timeout", "10s",
    "--concurrency", "8",
    "--dead-letter", `/tmp/${group}.dead-letters.ndjson`
  ]
  const members: Array<SinkChild> = [startSink(args), startSink(args), startSink(args)]
  const everyone: Array<SinkChild> = [...members]
  const log: Array<string> = []
  const started = Date.now()

  // Live traffic: bursts, each sent whole before the next, so a key's versions keep their order.
  const producing = produceInBursts(topic, messages, { random, burst: { min: 200, max: 800 }, maxPauseMs: 800, started }).then((line) => {
    log.push(line)
  })

  // Chaos: one member at a time is killed with SIGKILL and started again a moment later.
  const kills = 4
  for (let i = 0; i < kills; i++) {
    await sleep(1000 + Math.floor(random() * 2500))
    const which = Math.floor(random() * members.length)
    const member = members[which]!
    member.child.kill("SIGKILL")
    const exit = await member.exited
    log.push(`${Date.now() - started} ms: member ${which} killed (${exit.code ?? exit.signal})`)
    await sleep(Math.floor(random() * 1000))
    members[which] = startSink(args)
    everyone.push(members[which]!)
  }
  await producing

  const rowsNow = async () => (await apiData(server.url, apiKey, "GET", `/v2/datasets/${datasetId}/data?pageSize=1`)).pagination.totalItems
  const describe = async () =>
    `${log.join("\n")}\nrows ${await rowsNow()} of ${keys}, lag ${await groupLag(group, topic)}\n` +
    members.map((m, i) => `member ${i}:\n${m.output().slice(-3000)}`).join("\n")
  await waitFor(async () => (await groupLag(group, topic)) === 0, 60_000, describe)
  log.push(`lag 0 after ${Date.now() - started} ms`)
  // A consumer that crashed and started again left its group meanwhile: told, as it makes a run rarer.
  const restarts = everyone.reduce((n, m) => n + m.output().split("\n").filter((line) => /Restarting the consumer/.test(line)).length, 0)
  log.push(`${restarts} consumer restarts`)
  console.log(`sink keyed chaos, ${name} (seed ${seed}): ${log.join("; ")}`)

  const rows = await readAllRows(server.url, apiKey, datasetId)
  const byKey = new Map<string, Array<unknown>>()
  for (const row of rows) byKey.set(String(row["key"]), [...(byKey.get(String(row["key"])) ?? []), row["version"]])
  const missing = [...last.keys()].filter((key) => !byKey.has(key))
  const repeated = [...byKey].filter(([, found]) => found.length > 1).map(([key]) => key)
  const stale = [...byKey].filter(([key, found]) => found.some((v) => v !== last.get(key))).map(([key, found]) => `${key}@${found.join(",")}`)
  expect({ missing, repeated, stale: stale.slice(0, 30), staleCount: stale.length }, await describe())
    .toEqual({ missing: [], repeated: [], stale: [], staleCount: 0 })
  expect(rows).toHaveLength(keys)
  expect(await groupLag(group, topic)).toBe(0)
}

describe("tributary sink: keyed updates under kills, rebalances, 503s and dropped answers", () => {
  it("three members on 6 partitions, killed and restarted at random under live produce: every key once, at its last version; lag 0", async () => {
    await chaos("every key, every version", server, everyKeyEveryVersion, seededRandom(seed))
  }, 150_000)

  it("the same over hot keys among fresh ones against ingestions that take their time: batches in parts, every key at its last version; lag 0", async () => {
    await chaos("hot keys among fresh ones", slow, hotKeysAmongFresh, seededRandom(seed + 1))
  }, 150_000)
})
