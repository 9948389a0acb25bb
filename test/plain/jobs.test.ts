/**
 * Plain jobs and the writer against a real reference server on loopback: every kind of
 * input, dead letters and progress, typed records from a schema value, a job aborted from
 * the plain API and resumed with `run`, and the writer's batches, back-pressure and close.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { createServer, request as httpRequest } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Readable } from "node:stream"
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer, ManagedRuntime, Redacted, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Ndjson from "../../connectors/ndjson/index.js"
import { TributaryClient } from "../../src/client/index.js"
import { defaultPaths as cliDefaultPaths } from "../../src/cli/ingest.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import type { PipelineEvent } from "../../src/pipeline/events.js"
import { run } from "../../src/pipeline/run.js"
import { defaultPaths } from "../../src/plain/jobs.js"
import { createClient, JobError, type Tributary } from "../../src/plain/index.js"
import { serverLayer, ServerUrl } from "../support/server.js"

const server = ManagedRuntime.make(serverLayer())
let url: string
let tributary: Tributary
const dir = mkdtempSync(join(tmpdir(), "tributary-plain-"))

beforeAll(async () => {
  url = await server.runPromise(ServerUrl)
  tributary = createClient({ baseUrl: url, apiKey: "acme-admin" })
})
afterAll(async () => {
  await tributary.close()
  await server.dispose()
})

/** A fresh dataset `{ id: string, amount: number }`, keyed by `id` unless told otherwise. */
const dataset = async (primaryKey: ReadonlyArray<string> = ["id"]) => {
  const source = await tributary.v2.v2DataSources.create({ payload: { name: "plain jobs" } })
  const created = await tributary.v2.v2Datasets.create({
    payload: {
      name: `plain ${randomUUID()}`,
      dataSourceId: source.data.id,
      schema: [{ id: "id", dataType: "string" }, { id: "amount", dataType: "number" }],
      primaryKey: [...primaryKey]
    }
  })
  return created.data.id
}

const rowCount = async (id: number) => (await tributary.v2.v2Datasets.get({ path: { id } })).data.rowCount

const records = (n: number, from = 1) => Array.from({ length: n }, (_, i) => ({ id: `r${from + i}`, amount: from + i }))

describe("plain jobs (a real reference server on loopback)", () => {
  it("ingests an array, an AsyncIterable, a byte Readable and an object Readable; dead letters go to a function; progress is reported", async () => {
    const id = await dataset()
    const letters: Array<unknown> = []
    const progress: Array<number> = []
    const common = {
      dataset: id,
      deadLetters: (batch: ReadonlyArray<unknown>) => void letters.push(...batch),
      onProgress: (p: { readonly accepted: number }) => void progress.push(p.accepted)
    }
    const fromArray = await tributary.ingest({ ...common, from: [...records(150), { id: "bad", amount: "x" }] })
    expect(fromArray.accepted).toBe(150)
    expect(fromArray.deadLettered).toBe(1)
    expect(progress.at(-1)).toBe(150)

    async function* generated() {
      for (const record of records(120, 151)) yield record
    }
    expect((await tributary.ingest({ ...common, from: generated() })).accepted).toBe(120)
    const text = records(30, 271).map((r) => JSON.stringify(r)).join("\n") + "\n{not json\n"
    const bytes = Readable.from([Buffer.from(text)], { objectMode: false })
    const fromBytes = await tributary.ingest({ ...common, from: bytes })
    expect([fromBytes.accepted, fromBytes.deadLettered]).toEqual([30, 1])
    expect((await tributary.ingest({ ...common, from: Readable.from(records(20, 301)) })).accepted).toBe(20)

    expect(await rowCount(id)).toBe(320)
    expect(letters.map((letter: any) => letter.reason.code)).toEqual(["invalid_type", "invalid_json"])
  })

  it("decodes, transforms and encodes with a Schema passed as a value (no Effect code by the caller)", async () => {
    const id = await dataset()
    const Input = Schema.Struct({ id: Schema.String, cents: Schema.NumberFromString })
    const Output = Schema.Struct({ id: Schema.String, amount: Schema.Number })
    const letters: Array<any> = []
    const done = await tributary.ingest({
      dataset: id,
      from: [{ id: "a", cents: "250" }, { id: "b", cents: "many" }, { id: "c", cents: "-1" }],
      schema: Input,
      output: Output,
      transform: async (order) => {
        if (order.cents < 0) throw new Error("negative amount")
        return { id: order.id, amount: order.cents / 100 }
      },
      deadLetters: (batch) => void letters.push(...batch)
    })
    expect(done.accepted).toBe(1)
    expect(letters.map((letter) => letter.position.offset)).toEqual([2, 3])
    expect(letters[0].reason.field).toBe("cents")
    expect([letters[1].reason.code, letters[1].reason.message]).toEqual(["transform_failed", "negative amount"])
  })

  it("uses the CLI's files beside an NDJSON file; aborted, it commits what was delivered; `run` resumes it with the same run and stores each record once", async () => {
    const id = await dataset([])
    const total = 3000
    const file = join(dir, "resume.ndjson")
    writeFileSync(file, records(total).map((r) => JSON.stringify(r)).join("\n") + "\n")
    expect(defaultPaths(file)).toEqual(cliDefaultPaths(file))

    const controller = new AbortController()
    const started: Array<PipelineEvent> = []
    const stopped = await tributary.ingest({
      dataset: id,
      from: file,
      concurrency: { fixed: 1 },
      signal: controller.signal,
      onEvent: (event) => {
        if (event._tag === "Started") started.push(event)
        // Stops once something is committed: the rest is for the resume.
        if (event._tag === "Committed") controller.abort(new Error("stop"))
      }
    }).catch((e: unknown) => e)
    expect((stopped as Error).message).toBe("stop")
    const checkpoint = JSON.parse(readFileSync(`${file}.checkpoint.json`, "utf8"))
    const committed: number = checkpoint.positions["0"].offset
    expect(committed).toBeGreaterThan(0)
    expect(committed).toBeLessThan(total)

    // Resumed with the Effect API, as a user moving between the two would.
    const events: Array<PipelineEvent> = []
    const resumed = await Effect.runPromise(Effect.gen(function*() {
      const client = yield* TributaryClient
      return yield* run(client, {
        source: Ndjson.fromFile(file),
        destination: { datasetId: id },
        checkpoint: yield* Checkpoint.file(`${file}.checkpoint.json`),
        deadLetters: yield* DeadLetter.ndjsonFile(`${file}.dead-letters.ndjson`),
        onEvent: (event) => Effect.sync(() => void events.push(event))
      })
    }).pipe(
      Effect.provide(Layer.merge(TributaryClient.layer({ baseUrl: url, apiKey: Redacted.make("acme-admin") }), NodeContext.layer))
    ))
    const resumedEvent = events.find((event) => event._tag === "Resumed") as Extract<PipelineEvent, { _tag: "Resumed" }>
    expect(resumedEvent.run?.id).toBe((started[0] as Extract<PipelineEvent, { _tag: "Started" }>).run?.id)
    // No primary key: a record stored twice would be two rows.
    expect(resumed.read).toBe(total - committed)
    expect(await rowCount(id)).toBe(total)
  })

  it("a failing job rejects with a JobError naming why", async () => {
    const error = await tributary.ingest({ dataset: 999_999, from: records(1), deadLetters: () => undefined }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(JobError)
    expect((error as JobError).code).toBe("SchemaError")
    expect((error as JobError).message).toContain("999999")
  })
})

describe("plain writer (a real reference server on loopback)", () => {
  it("batches records written one by one, flushes, and closes with everything stored", async () => {
    const id = await dataset()
    const sent: Array<number> = []
    const writer = tributary.writer({
      dataset: id,
      deadLetters: () => undefined,
      onEvent: (event) => void (event._tag === "BatchSent" && sent.push(event.records))
    })
    for (const record of records(250)) await writer.write(record)
    await writer.flush()
    expect(await rowCount(id)).toBe(250)
    await writer.write({ id: "late", amount: 1 })
    const final = await writer.close()
    expect(final.accepted).toBe(251)
    expect(Math.max(...sent)).toBeLessThanOrEqual(100)
    expect(await rowCount(id)).toBe(251)
    await expect(writer.write({ id: "after", amount: 1 })).rejects.toThrow("closed")
  })

  it("holds writes while the service holds its answers (back-pressure), then stores every one", async () => {
    const id = await dataset()
    // A proxy that holds every request until released, in front of the reference server.
    let release: () => void = () => undefined
    const released = new Promise<void>((resolve) => (release = resolve))
    let arrived: () => void = () => undefined
    const firstArrival = new Promise<void>((resolve) => (arrived = resolve))
    const target = new URL(url)
    const proxy = createServer((req, res) => {
      if (req.method === "POST") arrived()
      const forward = () =>
        req.pipe(httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        }))
      if (req.method === "POST") void released.then(forward)
      else forward()
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
    const held = createClient({ baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, apiKey: "acme-admin" })
    try {
      const writer = held.writer({ dataset: id, maxBuffered: 10, concurrency: { fixed: 1 }, maxPending: { batches: 2 }, deadLetters: () => undefined })
      const total = 3000
      let accepted = 0
      const writes = records(total).map((record) => writer.write(record).then(() => void accepted++))
      await firstArrival
      await new Promise((resolve) => setImmediate(resolve))
      // The buffer, the pending bound and the batches pulled ahead hold far fewer than 3000.
      expect(accepted).toBeLessThan(total)
      release()
      await Promise.all(writes)
      const final = await writer.close({ timeout: 60_000 })
      expect(final.accepted).toBe(total)
      expect(await rowCount(id)).toBe(total)
    } finally {
      await held.close()
      proxy.closeAllConnections()
      proxy.close()
    }
  })
})
