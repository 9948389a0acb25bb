/**
 * `tributary sink` rides out an outage of its service: a durable reference server (Postgres,
 * a schema of its own) is killed with SIGKILL while messages keep being produced, stays down
 * 20 s (longer than the ~15 s after which a sink used to give up and exit), and is started
 * again on the same port and database. Throughout, the sink keeps running; during the outage
 * `/ready` answers 503, `/metrics` shows `tributary_service_outage 1`, its stderr says so and
 * the group's committed offsets do not move; afterwards every valid message is stored exactly
 * once (an append-only dataset: a message stored twice would be two rows), bad messages are
 * dead letters, the group's lag is 0 and `tributary_service_outage` is 0 again.
 */
import { randomUUID } from "node:crypto"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { startServe, type RunningServer } from "../support/cli.js"
import { apiData, compareIds, idAndN, newDataset, readAllRows } from "../support/crash.js"
import { createTopic, groupLag, kafka, killAllSinks, sleep, startSink, waitFor } from "../support/kafka.js"
import { databaseUrl, kafkaBrokers } from "../support/services.js"
import { adminQuery, freshSchema } from "../support/stores.js"

const apiKey = "outage-test-key"
const schema = freshSchema()
const servers: Array<RunningServer> = []

const serve = async (port: number) => {
  const server = await startServe([
    "--port",
    String(port),
    "--api-key",
    apiKey,
    "--database-url",
    databaseUrl(),
    "--database-schema",
    schema,
    // An ingestion a killed server had taken is taken again 1 s after the restart, not 30 s.
    "--ingestion-lease",
    "1 second"
  ])
  servers.push(server)
  return server
}

afterAll(async () => {
  killAllSinks()
  for (const server of servers) server.child.kill("SIGKILL")
  await Effect.runPromise(adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
})

/** Offsets the group has committed, summed over the topic's partitions. */
const committedTotal = async (group: string, topic: string): Promise<number> => {
  const admin = kafka().admin()
  await admin.connect()
  try {
    const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] })
    return (committed?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0)
  } finally {
    await admin.disconnect()
  }
}

const metricValue = (text: string, name: string): number | undefined => {
  const match = new RegExp(`^${name} (\\S+)$`, "m").exec(text)
  return match === null ? undefined : Number(match[1])
}

describe("tributary sink through an outage of a durable server", () => {
  it("keeps running through 20 s of a killed server, reports the outage, then stores every valid message once and catches up", async () => {
    const id = randomUUID()
    const topic = `sink-outage-${id}`
    const group = `sink-outage-${id}`
    const deadLetterFile = join(tmpdir(), `${group}.dead-letters.ndjson`)
    await createTopic(topic, 3)

    let server = await serve(0)
    const port = Number(new URL(server.url).port)
    const datasetId = await newDataset(server.url, apiKey, { name: "outage", schema: idAndN })

    const sink = startSink([
      "--brokers",
      kafkaBrokers().join(","),
      "--topic",
      topic,
      "--group",
      group,
      "--dataset",
      datasetId,
      "--api-url",
      server.url,
      "--api-key",
      apiKey,
      "--dead-letter",
      deadLetterFile,
      "--metrics-port",
      "0",
      "--drain-timeout",
      "10s"
    ])
    const log: Array<string> = []
    const started = Date.now()
    const note = (line: string) => log.push(`${((Date.now() - started) / 1000).toFixed(1)} s: ${line}`)
    let sinkExit: { code: number | null; signal: NodeJS.Signals | null } | undefined
    void sink.exited.then((exit) => {
      sinkExit = exit
      note(`sink exited ${JSON.stringify(exit)}`)
    })
    const describeState = () => `${log.join("\n")}\n--- sink output ---\n${sink.output().slice(-6000)}`
    const stillRunning = (when: string) => expect(sinkExit, `sink stopped ${when}\n${describeState()}`).toBeUndefined()

    await waitFor(async () => /metrics on http:\/\/[^/\s]+/.test(sink.output()), 30_000, describeState)
    const metricsUrl = /metrics on (http:\/\/[^/\s]+)/.exec(sink.output())![1]!
    const ready = async () => {
      const response = await fetch(`${metricsUrl}/ready`)
      return { status: response.status, text: await response.text() }
    }
    const metrics = async () => (await fetch(`${metricsUrl}/metrics`)).text()

    // Live traffic for the whole test: a burst every 250 ms, a bad message now and then.
    const valid: Array<string> = []
    const bad: Array<string> = []
    let producing = true
    const producer = kafka().producer()
    await producer.connect()
    const production = (async () => {
      for (let burst = 0; producing; burst++) {
        const messages: Array<{ key: string; value: string }> = []
        for (let i = 0; i < 40; i++) {
          const key = `m${burst}-${i}`
          if (i === 17 && burst % 5 === 0) {
            bad.push(key)
            messages.push({ key, value: `{"id":"${key}", not json` })
          } else {
            valid.push(key)
            messages.push({ key, value: JSON.stringify({ id: key, n: burst * 100 + i }) })
          }
        }
        await producer.send({ topic, acks: -1, messages })
        await sleep(250)
      }
    })()

    try {
      // The sink is up and storing.
      await waitFor(async () => (await ready()).status === 200, 30_000, describeState)
      await waitFor(
        async () => (await apiData(server.url, apiKey, "GET", `/v2/datasets/${datasetId}/data?pageSize=1`)).pagination.totalItems >= 400,
        30_000,
        describeState
      )
      expect(metricValue(await metrics(), "tributary_service_outage")).toBe(0)

      // The server dies, with the sink's requests under way.
      server.child.kill("SIGKILL")
      await new Promise((resolve) => server.child.once("close", resolve))
      const killedAt = Date.now()
      note("server killed")

      // Down 20 s: the sink keeps running, and once its retries are spent it says the service is out.
      let seen503: string | undefined
      let seenOutageMetric = false
      let committedAtOutage: number | undefined
      while (Date.now() - killedAt < 20_000 || ((seen503 === undefined || !seenOutageMetric) && Date.now() - killedAt < 40_000)) {
        stillRunning(`${Date.now() - killedAt} ms into the outage`)
        const answer = await ready()
        const text = await metrics()
        if (answer.status === 503 && seen503 === undefined) {
          seen503 = answer.text
          committedAtOutage = await committedTotal(group, topic)
          note(`/ready 503 (${answer.text.trim()}); committed ${committedAtOutage}`)
        }
        if (metricValue(text, "tributary_service_outage") === 1 && !seenOutageMetric) {
          seenOutageMetric = true
          note(`tributary_service_outage 1, outage seconds ${metricValue(text, "tributary_service_outage_seconds")}`)
        }
        await sleep(500)
      }
      const committedBeforeRestart = await committedTotal(group, topic)
      note(`restarting after ${Date.now() - killedAt} ms down; committed ${committedBeforeRestart}`)
      expect(seen503, describeState()).toBeDefined()
      expect(seen503).toContain("the service cannot be reached")
      expect(seenOutageMetric, describeState()).toBe(true)
      // Nothing new became terminal while the service was out, so nothing new was committed.
      expect(committedBeforeRestart, describeState()).toBe(committedAtOutage)
      expect(sink.output()).toContain("sink: the service cannot be reached")
      expect(sink.output()).toMatch(/OUTAGE for \d+s \(\d+ failed tries: /)
      stillRunning("at the end of the outage")

      // The same server again: same port, same database.
      server = await serve(port)
      note("server restarted")
      await sleep(3000)
      producing = false
      await production
      await producer.disconnect()
      note(`produced ${valid.length} valid and ${bad.length} bad messages`)

      await waitFor(
        async () =>
          (await groupLag(group, topic)) === 0 &&
          (await apiData(server.url, apiKey, "GET", `/v2/datasets/${datasetId}/data?pageSize=1`)).pagination.totalItems >= valid.length,
        60_000,
        async () => `lag ${await groupLag(group, topic)}\n${describeState()}`
      )
      note("caught up")
      stillRunning("after catching up")
      await waitFor(async () => (await ready()).status === 200, 10_000, describeState)
      const after = await metrics()
      expect(metricValue(after, "tributary_service_outage")).toBe(0)
      expect(metricValue(after, "tributary_service_outage_seconds")).toBe(0)
      expect(sink.output()).toMatch(/sink: the service answers again after \d+s \(\d+ failed tries\); carrying on/)

      // Every valid message once, nothing else; every bad one a dead letter.
      const rows = await readAllRows(server.url, apiKey, datasetId)
      const { duplicated, missing, unexpected } = compareIds(valid, rows.map((row) => row["id"]))
      expect({ duplicated: duplicated.slice(0, 20), missing: missing.slice(0, 20), unexpected: unexpected.slice(0, 20) }, describeState())
        .toEqual({ duplicated: [], missing: [], unexpected: [] })
      expect(rows).toHaveLength(valid.length)
      expect(await groupLag(group, topic)).toBe(0)
      const letters = existsSync(deadLetterFile)
        ? readFileSync(deadLetterFile, "utf8").trim().split("\n").map((line) => JSON.parse(line))
        : []
      expect(new Set(letters.map((l) => /"id":"([^"]+)"/.exec(l.raw ?? "")?.[1]))).toEqual(new Set(bad))

      sink.child.kill("SIGTERM")
      const exit = await sink.exited
      expect(exit, describeState()).toEqual({ code: 0, signal: null })
      console.log(`sink outage: ${log.join("; ")}`)
    } finally {
      producing = false
      await production.catch(() => undefined)
      await producer.disconnect().catch(() => undefined)
      sink.child.kill("SIGKILL")
      await server.stop()
      rmSync(deadLetterFile, { force: true })
    }
  }, 150_000)
})
