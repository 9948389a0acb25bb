/**
 * Sending apart from tracking, against a reference server whose ingestions stay pending 1-2 s
 * after their acceptance (`processing=1000-2000ms`): a run of 6,000 records (60 batches) with
 * `concurrency: 4` and `maxPending: { batches: 20 }` keeps far more than 4 ingestions pending
 * at once (requests and tracking are apart), never more than 20, stores every record once,
 * and follows the ingestions by reading the list plus about one detail each (counted by a
 * proxy between the run and the server), not a detail every few hundred milliseconds.
 *
 * The same, narrowed to the tracker over a scripted service: ingestions the list shows pending
 * are not read by detail; each is read once, when the list shows it ended.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Stream } from "effect"
import { TributaryClient } from "../../src/client/index.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import type { PipelineEvent, Progress } from "../../src/pipeline/events.js"
import type { Calls, Exchange, Reply } from "../../src/client/transport.js"
import { ingestWire } from "../../src/pipeline/internal/ingestWire.js"
import { makeTracker, olderPages } from "../../src/pipeline/internal/tracking.js"
import { run } from "../../src/pipeline/run.js"
import type { Source, SourceElement } from "../../src/pipeline/Source.js"
import { parseFaults } from "../../src/server/faults.js"
import { apiData, idAndN, maxOverlap, newDataset, readAllRows } from "../support/crash.js"
import { startProxy } from "../support/proxy.js"
import { serverLayer, ServerUrl } from "../support/server.js"

const apiKey = "acme-admin"
const records = 6_000
const batchSize = 100
const batches = records / batchSize
const maxPendingBatches = 20

const faults = parseFaults("processing=1000-2000ms")
if (faults._tag === "Left") throw new Error(faults.left)

/** A client of `baseUrl` whose pool lives as long as the scope. */
const clientOf = (baseUrl: string) =>
  Effect.map(
    Layer.build(TributaryClient.layer({ baseUrl, apiKey: Redacted.make(apiKey) })),
    Context.get(TributaryClient)
  )

/** `count` records `r1..rN` in one partition, from memory. */
const memorySource = (count: number): Source => ({
  name: "tracking-test",
  elements: () =>
    Stream.fromIterable(Array.from({ length: count }, (_, i): SourceElement => ({
      _tag: "Record",
      position: { partition: "0", offset: i + 1 },
      value: { id: `r${i + 1}`, n: i + 1 }
    })))
})

describe("tracking apart from sending", () => {
  layer(serverLayer({ faults: faults.right }), { excludeTestServices: true })("against processing=1000-2000ms", (it) => {
    it.effect(
      "60 batches, concurrency 4, maxPending 20: pending rises far above 4 and never above 20, every record stored once, about one detail read per ingestion",
      () =>
        Effect.gen(function*() {
          const serverUrl = yield* ServerUrl
          // An append-only dataset: a record stored twice would be two rows.
          const datasetId = yield* Effect.promise(() => newDataset(serverUrl, apiKey, { name: "tracking", schema: idAndN }))

          const proxy = yield* Effect.acquireRelease(Effect.promise(() => startProxy(serverUrl)), (p) => Effect.promise(() => p.close()))
          const client = yield* clientOf(proxy.url)
          const progress: Array<Progress> = []
          const done: Array<Extract<PipelineEvent, { _tag: "BatchDone" }>> = []
          const started = Date.now()
          const final = yield* run(client, {
            source: memorySource(records),
            destination: { datasetId },
            checkpoint: yield* Checkpoint.memory(),
            deadLetters: yield* DeadLetter.memory,
            batch: { max: batchSize },
            concurrency: 4,
            maxPending: { batches: maxPendingBatches },
            progressInterval: "50 millis",
            onEvent: (event) =>
              Effect.sync(() => {
                if (event._tag === "Progress") progress.push(event.progress)
                if (event._tag === "BatchDone") done.push(event)
              })
          })
          const elapsed = Date.now() - started

          // Every record stored once, read back from the service.
          expect(final.accepted).toBe(records)
          expect(final.deadLettered).toBe(0)
          const rows = yield* Effect.promise(() => readAllRows(serverUrl, apiKey, datasetId))
          const ids = rows.map((row) => String(row["id"]))
          expect(ids).toHaveLength(records)
          expect(new Set(ids).size).toBe(records)
          expect(ids.filter((id) => !/^r\d+$/.test(id) || Number(id.slice(1)) > records)).toEqual([])

          // The bound holds at every report, and far more than 4 were pending at some moment.
          const samples = progress.map((p) => ({ inFlight: p.inFlight, pending: p.pending }))
          const over = samples.filter((s) => s.inFlight > maxPendingBatches || s.pending > maxPendingBatches)
          expect(over).toEqual([])
          const mostPending = Math.max(...samples.map((s) => s.pending))
          expect(mostPending, JSON.stringify(samples)).toBeGreaterThanOrEqual(12)

          // The service's own account: its ingestions overlapped as much (accepted, then 1-2 s pending).
          const listed = yield* Effect.promise(() =>
            apiData(serverUrl, apiKey, "GET", `/v2/datasets/${datasetId}/ingestions?pageSize=100`)
          )
          const ingestions: Array<{ id: string; status: string; initiatedAt: string; duration: number | null }> = listed.items
          expect(ingestions).toHaveLength(batches)
          expect(ingestions.filter((i) => i.status !== "success").map((i) => i.status)).toEqual([])
          const intervals = ingestions.map((i) => {
            const start = Date.parse(i.initiatedAt)
            return [start, start + (i.duration ?? 0)] as const
          })
          expect(intervals.every(([start, end]) => end - start >= 900)).toBe(true)
          expect(maxOverlap(intervals)).toBeGreaterThanOrEqual(12)

          // What the run sent: one POST per batch, the list, and about one detail per ingestion.
          const ingestionIds = new Set(done.map((d) => d.ingestionId))
          expect(ingestionIds.size).toBe(batches)
          expect(new Set(ingestions.map((i) => i.id))).toEqual(ingestionIds)
          const path = (url: string) => url.split("?")[0]!
          const posts = proxy.requests.filter((r) => r.method === "POST" && path(r.url) === `/v2/datasets/${datasetId}/data`)
          const lists = proxy.requests.filter((r) => r.method === "GET" && path(r.url) === `/v2/datasets/${datasetId}/ingestions`)
          const detailsOf = new Map<string, number>()
          for (const r of proxy.requests) {
            const match = new RegExp(`^/v2/datasets/${datasetId}/ingestions/([^/]+)$`).exec(path(r.url))
            if (r.method === "GET" && match) detailsOf.set(match[1]!, (detailsOf.get(match[1]!) ?? 0) + 1)
          }
          const details = [...detailsOf.values()].reduce((a, b) => a + b, 0)
          const summary = `${elapsed} ms; ${proxy.requests.length} requests: ${posts.length} posts, ${lists.length} list reads, ` +
            `${details} detail reads (most for one ingestion: ${Math.max(...detailsOf.values())}); most pending at once ${mostPending}`
          console.log(`tracking: ${summary}`)
          expect(posts).toHaveLength(batches)
          expect(new Set(detailsOf.keys())).toEqual(ingestionIds)
          expect(details / batches, summary).toBeLessThanOrEqual(3)
          // Nothing else went to the service, and nothing failed.
          expect(proxy.requests.length).toBe(posts.length + lists.length + details + 1) // + the schema read
          expect(proxy.requests.filter((r) => r.status !== 200).map((r) => `${r.method} ${r.url} ${r.status}`)).toEqual([])
        }).pipe(Effect.scoped),
      60_000
    )
  })
})

/** A scripted v2 service's answers: a page of the list, an ingestion's detail (one record stored). */
const scripted = {
  reply: (body: unknown): Reply => ({ status: 200, headers: {}, text: JSON.stringify({ data: body }) }),
  page: (ids: ReadonlyArray<string>, page: number, total: number, status: string): Reply =>
    scripted.reply({
      items: ids.map((id) => ({ id, status, initiatedAt: null, initiatedBy: null, duration: null })),
      pagination: { page, pageSize: 100, totalItems: total, totalPages: Math.ceil(total / 100) }
    }),
  detail: (id: string, status: string): Reply =>
    scripted.reply({
      id,
      status,
      initiatedAt: null,
      initiatedBy: null,
      duration: null,
      summary: {
        ingestion: { receivedRecordCount: 1, appendedRecordCount: 1, overwrittenRecordCount: 0, rejectedRecordCount: 0 },
        dataset: null
      },
      errors: []
    })
}

describe("the tracker over a scripted service", () => {
  for (const form of ["exchanges", "calls"] as const) {
    it.live(`an ingestion the list shows pending is not read by detail: one detail each, once the list shows it ended (reads as ${form})`, () =>
      Effect.gen(function*() {
        const wire = ingestWire("v2", 1)
        const started = Date.now()
        const endsAt = 1_500
        const ids = Array.from({ length: 5 }, (_, i) => `00000000-0000-4000-8000-00000000000${i}`)
        const reads: Array<{ at: number; what: string }> = []
        const status = () => (Date.now() - started >= endsAt ? "success" : "processing")
        // Answered when asked, not when an effect is made: the tracker makes its list read once.
        const answer = (exchange: Exchange): Reply => {
          const at = Date.now() - started
          if (exchange.path === wire.listPath) {
            reads.push({ at, what: "list" })
            return scripted.page(ids, 0, ids.length, status())
          }
          const id = exchange.path.split("/").at(-1)!
          reads.push({ at, what: `detail ${id.slice(-1)}` })
          return scripted.detail(id, status())
        }
        const calls: Calls = (exchange, done) => {
          const timer = setTimeout(() => done(answer(exchange)), 1)
          return () => clearTimeout(timer)
        }
        const tracker = yield* makeTracker({
          wire,
          poll: { initial: "20 millis", max: "1 second" },
          exchanges: form === "exchanges" ? (exchange) => Effect.sync(() => answer(exchange)) : () => Effect.dieMessage("the calls are used"),
          calls: form === "calls" ? calls : undefined
        })
        const ended = yield* Effect.forEach(ids, (id) => tracker.track(id), { concurrency: "unbounded" })
        expect(ended.map((detail) => detail._tag)).toEqual(ids.map(() => "Succeeded"))
        const timeline = reads.map((r) => `${r.at} ${r.what}`).join(", ")
        const lists = reads.filter((r) => r.what === "list")
        const details = reads.filter((r) => r.what !== "list")
        expect(lists.length, timeline).toBeGreaterThan(1)
        // Read while the list still showed it pending: none should be.
        const early = details.filter((r) => r.at < endsAt)
        expect(early.length, timeline).toBe(0)
        expect(details.length, timeline).toBe(ids.length)
        expect(tracker.pending()).toBe(0)
      }).pipe(Effect.scoped), 10_000)
  }

  /**
   * Follows `count` ingestions of a scripted v2 service to their end: they end `endsAt` ms after
   * the start, and its list is paged newest first (the newest last in `ids`). Answers the ids and
   * every read, with its time.
   */
  const followPaged = (count: number, endsAt: number) =>
    Effect.gen(function*() {
      const started = Date.now()
      const ids = Array.from({ length: count }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`)
      const newestFirst = [...ids].reverse()
      const reads: Array<{ readonly at: number; readonly what: string; readonly id?: string }> = []
      const status = () => (Date.now() - started >= endsAt ? "success" : "processing")
      const answer = (exchange: Exchange): Reply => {
        const at = Date.now() - started
        const url = new URL(exchange.path, "http://service")
        if (url.pathname.endsWith("/ingestions")) {
          const page = Number(url.searchParams.get("page"))
          reads.push({ at, what: `list ${page}` })
          return scripted.page(newestFirst.slice(page * 100, page * 100 + 100), page, ids.length, status())
        }
        const id = url.pathname.split("/").at(-1)!
        reads.push({ at, what: "detail", id })
        return scripted.detail(id, status())
      }
      const tracker = yield* makeTracker({
        wire: ingestWire("v2", 1),
        poll: { initial: "20 millis", max: "1 second" },
        exchanges: (exchange) => Effect.sync(() => answer(exchange))
      })
      const ended = yield* Effect.forEach(ids, (id) => tracker.track(id), { concurrency: "unbounded" })
      expect(ended.every((detail) => detail._tag === "Succeeded")).toBe(true)
      expect(tracker.pending()).toBe(0)
      return { ids, reads }
    })

  it.live("more pending than a page holds: the older pages are read too (every 250 ms at most), and none is read by detail while they show it pending", () =>
    Effect.gen(function*() {
      const endsAt = 1_500
      const { ids, reads } = yield* followPaged(250, endsAt)
      const details = reads.filter((r) => r.what === "detail")
      const older = reads.filter((r) => r.what === "list 1" || r.what === "list 2")
      // Without the older pages, the 150 they hold were read by detail while pending, ten times each.
      expect(details.filter((r) => r.at < endsAt).length).toBe(0)
      expect(details.length).toBe(ids.length)
      expect(older.length).toBeGreaterThan(0)
      // Spaced: at most one round of older pages each 250 ms (two pages a round here).
      const rounds = reads.filter((r) => r.what === "list 1").map((r) => r.at)
      for (let i = 1; i < rounds.length; i++) expect(rounds[i]! - rounds[i - 1]!).toBeGreaterThanOrEqual(240)
    }).pipe(Effect.scoped), 10_000)

  it("the older pages for some pending ingestions: from the page that should hold the oldest, up towards the first, at most 20", () => {
    expect(olderPages(0, 100)).toEqual([1])
    expect(olderPages(100, 100)).toEqual([1])
    expect(olderPages(101, 100)).toEqual([2, 1])
    expect(olderPages(250, 100)).toEqual([3, 2, 1])
    expect(olderPages(8000, 100)).toEqual(Array.from({ length: 20 }, (_, i) => 80 - i))
  })

  it.live("far more pending than 20 pages hold: the deepest pages are read, where the oldest are, and only the newest are read by detail while pending", () =>
    Effect.gen(function*() {
      const endsAt = 1_500
      const { ids, reads } = yield* followPaged(3_000, endsAt)
      const earlyDetails = new Set(reads.filter((r) => r.what === "detail" && r.at < endsAt).map((r) => r.id!))
      // Pages 30 down to 11 are read (30, the one more for ended ones, is past the end here):
      // the oldest 1,900; with the first page, all but the 1,000 on pages 1-10.
      const oldest = new Set(ids.slice(0, 1_900))
      expect([...earlyDetails].filter((id) => oldest.has(id))).toEqual([])
      expect(earlyDetails.size).toBeLessThanOrEqual(1_000)
    }).pipe(Effect.scoped), 20_000)

  it.live("a poller that stops on a defect fails every ingestion it followed, and any followed after, instead of leaving them waiting", () =>
    Effect.gen(function*() {
      const wire = ingestWire("v2", 1)
      const tracker = yield* makeTracker({
        wire,
        poll: { initial: "5 millis", max: "20 millis" },
        exchanges: () => Effect.die(new Error("a bug in a round"))
      })
      const first = yield* Effect.flip(tracker.track("00000000-0000-4000-8000-000000000001")).pipe(Effect.timeout("5 seconds"))
      expect(first).toMatch(/^following ingestions stopped: .*a bug in a round/)
      const later = yield* Effect.flip(tracker.track("00000000-0000-4000-8000-000000000002")).pipe(Effect.timeout("5 seconds"))
      expect(later).toBe(first)
    }).pipe(Effect.scoped), 10_000)
})
