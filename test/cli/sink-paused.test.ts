/**
 * `tributary sink` members paused past their group session (SIGSTOP, as a machine whose cores
 * are all busy starves them) with batches in flight, then resumed (SIGCONT): each comes back
 * as a member the group has dropped, whose partitions another member took meanwhile and
 * committed past. Three members on a 6-partition topic produced to in bursts (so that batches
 * are cut by the linger timer, and a batch cut anew would not be cut as before), into a slow
 * reference server that answers 503 and 429 at random and drops answers: every message stored
 * once, lag 0. Before the Kafka source's fix a resumed member's late commits wrote its old
 * state over the new owners' commits, and their batches were sent again under other keys
 * (from 29 to 672 rows twice, in each of four runs).
 *
 * The pauses and the server's faults come from one seed, printed at the start; set
 * TRIBUTARY_SINK_SEED to repeat a run. Alone in its file: three members and a producer are
 * load enough for the machine's two cores.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, expect, it } from "vitest"
import { seededRandom } from "../../src/server/faults.js"
import { startServe, type RunningServer } from "../support/cli.js"
import { compareIds, idAndN, newDataset, readAllRows, rowCount } from "../support/crash.js"
import { createTopic, groupLag, killAllSinks, produceInBursts, type SinkChild, sleep, startSink, waitFor } from "../support/kafka.js"
import { kafkaBrokers } from "../support/services.js"

const seed = process.env["TRIBUTARY_SINK_SEED"] !== undefined
  ? Number(process.env["TRIBUTARY_SINK_SEED"])
  : Math.floor(Math.random() * 2 ** 31)
const apiKey = "sink-paused-key"
const faults = `5xx=0.03,429=0.02,retry-after=0,drop=0.02,latency=30-120ms,seed=${seed}`

let server: RunningServer

beforeAll(async () => {
  console.log(`sink paused test seed ${seed} (TRIBUTARY_SINK_SEED=${seed} repeats it), faults ${faults}`)
  server = await startServe(["--port", "0", "--api-key", apiKey, "--faults", faults])
})

afterAll(async () => {
  killAllSinks()
  await server?.stop()
})

it("members paused past their session with batches in flight, then resumed, under bursts of produce: every message once, lag 0", async () => {
  const random = seededRandom(seed)
  const id = randomUUID()
  const topic = `sink-paused-${id}`
  const group = topic
  await createTopic(topic, 6)
  const datasetId = await newDataset(server.url, apiKey, { name: `paused ${id}`, schema: idAndN })
  const stored = () => rowCount(server.url, apiKey, datasetId)

  const ids = Array.from({ length: 12_000 }, (_, n) => `p${String(n).padStart(6, "0")}`)
  const messages = ids.map((key, n) => ({ key, value: JSON.stringify({ id: key, n }) }))
  const args = [
    ...["--brokers", kafkaBrokers().join(","), "--topic", topic, "--group", group, "--dataset", datasetId],
    ...["--api-url", server.url, "--api-key", apiKey, "--session-timeout", "3s", "--drain-timeout", "10s", "--concurrency", "4"],
    ...["--dead-letter", `/tmp/${group}.ndjson`]
  ]
  const members: Array<SinkChild> = [startSink(args), startSink(args), startSink(args)]
  const log: Array<string> = []
  const started = Date.now()

  // Bursts with pauses longer than the linger (500 ms) between some of them.
  const producing = produceInBursts(topic, messages, { random, burst: { min: 100, max: 600 }, maxPauseMs: 900, started }).then((line) => {
    log.push(line)
  })

  // One member at a time stops for longer than its session timeout (3 s), and goes on.
  for (let i = 0; i < 4; i++) {
    await sleep(1500 + Math.floor(random() * 2000))
    const which = Math.floor(random() * members.length)
    const pause = 3500 + Math.floor(random() * 3000)
    members[which]!.child.kill("SIGSTOP")
    await sleep(pause)
    members[which]!.child.kill("SIGCONT")
    log.push(`${Date.now() - started} ms: member ${which} paused ${pause} ms`)
  }
  await producing

  const describe = async () =>
    `${log.join("\n")}\nrows ${await stored()} of ${ids.length}, lag ${await groupLag(group, topic)}\n` +
    members.map((m, i) => `member ${i}:\n${m.output().slice(-3000)}`).join("\n")
  await waitFor(async () => (await groupLag(group, topic)) === 0 && (await stored()) >= ids.length, 120_000, describe)
  for (const member of members) member.child.kill("SIGTERM")
  for (const member of members) expect(await member.exited, member.output()).toEqual({ code: 0, signal: null })
  // The pauses did what they were for: the group dropped the paused members.
  expect(members.some((m) => m.output().includes("The coordinator is not aware of this member")), await describe()).toBe(true)
  console.log(`sink paused (seed ${seed}): ${log.join("; ")}; done in ${Date.now() - started} ms`)

  const rows = await readAllRows(server.url, apiKey, datasetId)
  const { duplicated, missing, unexpected } = compareIds(ids, rows.map((row) => row["id"]))
  expect({ duplicated: duplicated.slice(0, 20), missing: missing.slice(0, 20), unexpected: unexpected.slice(0, 20) }, await describe())
    .toEqual({ duplicated: [], missing: [], unexpected: [] })
  expect(rows).toHaveLength(ids.length)
}, 300_000)
