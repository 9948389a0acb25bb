/**
 * A succeeded ingestion lets its keys go as soon as it is known to have succeeded: when a list
 * shows it `success`, before its detail (counts, rejected records) is read.
 *
 * The tracker over a scripted service: `succeeded` is told from the list while the detail is
 * still on its way, never for an ingestion that failed, and with the detail when no list can be
 * read. Then a run against a reference server whose ingestions take 200-300 ms, through a proxy
 * that holds every detail read 1.5 s: three batches of the same 100 keys, each waiting for the
 * one before; the second goes as soon as a list shows the first succeeded, not when the first's
 * detail is answered, and every key ends at its last version.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Stream } from "effect"
import { TributaryClient } from "../../src/client/index.js"
import type { Exchange, Reply } from "../../src/client/transport.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import { ingestWire } from "../../src/pipeline/internal/ingestWire.js"
import { makeTracker, type Terminal } from "../../src/pipeline/internal/tracking.js"
import { run } from "../../src/pipeline/run.js"
import type { Source, SourceElement } from "../../src/pipeline/Source.js"
import { parseFaults } from "../../src/server/faults.js"
import { idAndVersion, newDataset, readAllRows } from "../support/crash.js"
import { startProxy } from "../support/proxy.js"
import { serverLayer, ServerUrl } from "../support/server.js"

/** A scripted v2 service's answers. */
const reply = (body: unknown, status = 200): Reply => ({ status, headers: {}, text: JSON.stringify({ data: body }) })
const page = (ids: ReadonlyArray<string>, status: string): Reply =>
  reply({
    items: ids.map((id) => ({ id, status, initiatedAt: null, initiatedBy: null, duration: null })),
    pagination: { page: 0, pageSize: 100, totalItems: ids.length, totalPages: 1 }
  })
const detail = (id: string, status: string): Reply =>
  reply({
    id,
    status,
    initiatedAt: null,
    initiatedBy: null,
    duration: null,
    summary: {
      ingestion: { receivedRecordCount: 1, appendedRecordCount: status === "success" ? 1 : 0, overwrittenRecordCount: 0, rejectedRecordCount: 0 },
      dataset: null
    },
    errors: status === "success" ? [] : [{ code: "failed", field: null, message: "it failed", record: null }]
  })

/**
 * Follows one ingestion of a service whose ingestions end after `endsAt` ms with `status`, whose
 * detail answers take `detailMillis` and whose list answers as `list` says: answers when
 * `succeeded` and `done` were called, and what `done` got.
 */
const followOne = (options: {
  readonly status: "success" | "failed"
  readonly endsAt: number
  readonly detailMillis: number
  readonly list: "reads" | "refused"
}) =>
  Effect.gen(function*() {
    const wire = ingestWire("v2", 1)
    const id = "00000000-0000-4000-8000-000000000001"
    const started = Date.now()
    const statusNow = () => (Date.now() - started >= options.endsAt ? options.status : "processing")
    const answer = (exchange: Exchange): Effect.Effect<Reply> =>
      exchange.path === wire.listPath
        ? Effect.sync(() => options.list === "reads" ? page([id], statusNow()) : reply({ message: "no list here" }, 404))
        : Effect.delay(Effect.sync(() => detail(id, statusNow())), options.detailMillis)
    const tracker = yield* makeTracker({ wire, poll: { initial: "20 millis", max: "200 millis" }, exchanges: answer })
    let succeededAt: number | undefined
    let calls = 0
    const outcome = yield* Effect.async<{ readonly doneAt: number; readonly got: Terminal | string }>((resume) => {
      const cancel = tracker.follow(id, (got) => resume(Effect.succeed({ doneAt: Date.now() - started, got })), undefined, () => {
        calls++
        succeededAt = Date.now() - started
      })
      return Effect.sync(cancel)
    })
    return { ...outcome, succeededAt, calls }
  })

describe("the tracker tells of a success before the detail", () => {
  it.live("the list shows it succeeded: told then, while its detail (1 s to answer) is still to come", () =>
    Effect.gen(function*() {
      const { calls, doneAt, got, succeededAt } = yield* followOne({ status: "success", endsAt: 300, detailMillis: 1_000, list: "reads" })
      expect(typeof got === "string" ? got : got._tag).toBe("Succeeded")
      expect(calls).toBe(1)
      expect(succeededAt).toBeDefined()
      expect(succeededAt!).toBeGreaterThanOrEqual(300)
      // Told from the list, the detail read (begun after it) answered a second later.
      expect(doneAt - succeededAt!).toBeGreaterThanOrEqual(900)
    }).pipe(Effect.scoped), 10_000)

  it.live("it failed: never told it succeeded; the detail says how it ended", () =>
    Effect.gen(function*() {
      const { calls, got, succeededAt } = yield* followOne({ status: "failed", endsAt: 100, detailMillis: 50, list: "reads" })
      expect(typeof got === "string" ? got : got._tag).toBe("Failed")
      expect(calls).toBe(0)
      expect(succeededAt).toBeUndefined()
    }).pipe(Effect.scoped), 10_000)

  it.live("no list to read: told with the detail, once, before it is answered", () =>
    Effect.gen(function*() {
      const { calls, doneAt, got, succeededAt } = yield* followOne({ status: "success", endsAt: 100, detailMillis: 10, list: "refused" })
      expect(typeof got === "string" ? got : got._tag).toBe("Succeeded")
      expect(calls).toBe(1)
      expect(succeededAt!).toBeLessThanOrEqual(doneAt)
    }).pipe(Effect.scoped), 10_000)
})

const apiKey = "acme-admin"
const perBatch = 100
const batches = 3
const detailHoldMillis = 1_500
const faults = parseFaults("processing=200-300ms")
if (faults._tag === "Left") throw new Error(faults.left)

/** Batch b: the keys k0..k99 at version b (each batch shares every key with the one before). */
const sameKeysSource: Source = {
  name: "early-release-test",
  elements: () =>
    Stream.fromIterable(Array.from({ length: batches * perBatch }, (_, n): SourceElement => ({
      _tag: "Record",
      position: { partition: "0", offset: n + 1 },
      value: { id: `k${n % perBatch}`, version: Math.floor(n / perBatch) }
    })))
}

describe("a run lets a succeeded batch's keys go before its detail is read", () => {
  layer(serverLayer({ faults: faults.right }), { excludeTestServices: true })("processing=200-300ms, detail reads held 1.5 s", (it) => {
    it.effect("three batches of the same keys, each waiting for the one before: the second posted once a list shows the first succeeded, a second before its detail is answered; every key at its last version", () =>
      Effect.gen(function*() {
        const serverUrl = yield* ServerUrl
        const datasetId = yield* Effect.promise(() => newDataset(serverUrl, apiKey, { name: "early", schema: idAndVersion, primaryKey: ["id"] }))
        const proxy = yield* Effect.acquireRelease(Effect.promise(() => startProxy(serverUrl)), (p) => Effect.promise(() => p.close()))
        const isDetail = (url: string) => new RegExp(`^/v2/datasets/${datasetId}/ingestions/[^/?]+$`).test(url)
        proxy.delay = (req) => (isDetail(req.url ?? "") ? detailHoldMillis : 0)
        const client = yield* Effect.map(
          Layer.build(TributaryClient.layer({ baseUrl: proxy.url, apiKey: Redacted.make(apiKey) })),
          Context.get(TributaryClient)
        )
        const final = yield* run(client, {
          source: sameKeysSource,
          destination: { datasetId },
          checkpoint: yield* Checkpoint.memory(),
          deadLetters: yield* DeadLetter.memory,
          batch: { max: perBatch },
          concurrency: { fixed: 4 }
        })
        expect(final.accepted).toBe(batches * perBatch)
        expect(final.deadLettered).toBe(0)

        // Every key at the version of the last batch.
        const rows = yield* Effect.promise(() => readAllRows(serverUrl, apiKey, datasetId))
        expect(rows).toHaveLength(perBatch)
        expect(rows.filter((row) => Number(row["version"]) !== batches - 1)).toEqual([])

        // One post a batch (each went whole: it shares every key), in order, each after the one
        // before had ended at the service (200 ms at least), and the second before the first
        // batch's detail was answered: it went when a list showed the first succeeded.
        const posts = proxy.requests.filter((r) => r.method === "POST" && r.url === `/v2/datasets/${datasetId}/data`)
        const details = proxy.requests.filter((r) => r.method === "GET" && isDetail(r.url))
        expect(posts).toHaveLength(batches)
        const firstAnswer = Math.min(...details.map((r) => r.end ?? Infinity))
        const timeline = proxy.requests.map((r) => `${r.at - posts[0]!.at} ${r.method} ${r.url} -> ${(r.end ?? 0) - posts[0]!.at}`).join("\n")
        expect(posts[1]!.at, timeline).toBeLessThan(firstAnswer)
        expect(firstAnswer - posts[1]!.at, timeline).toBeGreaterThanOrEqual(1_000)
        for (let i = 1; i < posts.length; i++) expect(posts[i]!.at - posts[i - 1]!.at, timeline).toBeGreaterThanOrEqual(150)
      }).pipe(Effect.scoped), 30_000)
  })
})
