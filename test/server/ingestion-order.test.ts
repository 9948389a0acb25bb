/**
 * The order guarantee (API-DECISIONS.md, "Order"): the accepted ingestions of one dataset are
 * applied in the order they were accepted, and within one ingestion a primary key that occurs
 * twice ends with its later record. Real servers on loopback, real HTTP: on the memory store, on
 * Postgres, and two servers on one Postgres database taking turns accepting; with several
 * workers each, with random `processing` delays, and with leases that run out mid-work.
 *
 * Each ingestion is posted only once the one before was accepted (answered 200). What is checked
 * is read back through the API: the stored rows (the last version of every key), and the
 * ingestions' own end times (acceptance + duration), which must follow acceptance order.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer } from "effect"
import { parseFaults, seededRandom } from "../../src/server/faults.js"
import * as ReferenceServer from "../../src/server/http/server.js"
import type { WorkerOptions } from "../../src/server/core/ingestion.js"
import { type ServerStores } from "../../src/server/features/stores.js"
import type { StoreError } from "../../src/server/core/errors.js"
import { testSeed } from "../support/server.js"
import { dropSchemaAfterwards, freshSchema, type StoreKind, sqlStoreLayer, storeLayer } from "../support/stores.js"

interface Answer {
  readonly status: number
  readonly body: any
}

const call = (url: string, path: string, body?: unknown) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(`${url}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "x-api-key": "acme-admin", "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, body: JSON.parse(await response.text()) }
  })

/** Starts a reference server (in the test's scope); its URL. */
const startServer = (
  store: Layer.Layer<ServerStores, StoreError>,
  options: { readonly faults?: string; readonly workers?: WorkerOptions } = {}
) =>
  Effect.map(
    Layer.build(ReferenceServer.layer({
      host: "127.0.0.1",
      port: 0,
      seed: testSeed,
      maxBodyBytes: ReferenceServer.defaultMaxBodyBytes,
      store,
      faults: options.faults === undefined ? undefined : Either.getOrThrow(parseFaults(options.faults)),
      workers: options.workers ?? { workers: 4, leaseMillis: 30_000 }
    })),
    (context) => ReferenceServer.serverUrl(Context.get(context, HttpServer.HttpServer).address)
  )

/** A v1 dataset keyed by `id`. */
const keyedDataset = (url: string) =>
  Effect.gen(function*() {
    const source = yield* call(url, "/v1/data-sources", { title: "Shop" })
    const dataset = yield* call(url, "/v1/datasets", { title: "Orders", dataSourceId: source.body.id, primaryKeys: ["id"] })
    expect(dataset.status).toBe(200)
    return dataset.body.id as string
  })

type Record = { readonly id: string; readonly v: number; readonly from: string }

/**
 * `count` ingestions over a few keys (so that most of them meet keys of the ones before), some
 * with a key twice; and what the dataset must hold after them all: each key's last record.
 */
const workload = (seed: number, count: number) => {
  const random = seededRandom(seed)
  const keys = 8
  const ingestions: Array<ReadonlyArray<Record>> = []
  const last = new Map<string, Record>()
  for (let i = 0; i < count; i++) {
    const records: Array<Record> = []
    const size = 1 + Math.floor(random() * 6)
    for (let r = 0; r < size; r++) {
      const record = { id: `k${Math.floor(random() * keys)}`, v: i * 100 + r, from: `ingestion ${i} record ${r}` }
      records.push(record)
      last.set(record.id, record)
    }
    ingestions.push(records)
  }
  const expected = [...last.values()].sort((a, b) => a.id.localeCompare(b.id))
  return { ingestions, expected }
}

/** Posts one ingestion (v1 or v2 by `i`) to the server of turn `i`; its id once accepted. */
const accept = (urls: ReadonlyArray<string>, datasetId: string, records: ReadonlyArray<Record>, i: number) =>
  Effect.gen(function*() {
    const url = urls[i % urls.length]!
    const v2 = Math.floor(i / urls.length) % 2 === 1
    const answer = yield* call(url, `/${v2 ? "v2" : "v1"}/datasets/${datasetId}/data`, { records })
    expect(answer.status).toBe(200)
    return (v2 ? answer.body.data.ingestionId : answer.body.ingestionId) as string
  })

interface Listed {
  readonly id: string
  readonly status: string
  readonly initiatedAt: string
  readonly duration: number | null
}

/** The dataset's ingestions once all `count` ended (within `timeoutMs`), oldest first. */
const settled = (url: string, datasetId: string, count: number, timeoutMs = 15_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const items: Array<Listed> = []
      for (let page = 0; page * 100 < count; page++) {
        const listed = yield* call(url, `/v2/datasets/${datasetId}/ingestions?pageSize=100&page=${page}`)
        items.push(...listed.body.data.items)
      }
      if (items.length === count && items.every((i) => i.status !== "queued" && i.status !== "processing")) {
        return [...items].reverse()
      }
      if (Date.now() > deadline) {
        throw new Error(`ingestions did not end in ${timeoutMs} ms: ${JSON.stringify(items.map((i) => i.status))}`)
      }
      yield* Effect.sleep("20 millis")
    }
  })

const storedRows = (url: string, datasetId: string) =>
  Effect.map(
    call(url, `/v2/datasets/${datasetId}/data?pageSize=100&sortBy=id&sortOrder=asc`),
    (answer) => answer.body.data.items as ReadonlyArray<Record>
  )

/**
 * Runs the workload against the servers at `urls` (taking turns) and checks the outcome as read
 * back from the last of them: every ingestion succeeded, each ended no earlier than the one
 * accepted before it, and the rows are each key's last record.
 */
const checkOrder = (urls: ReadonlyArray<string>, seed: number, count: number) =>
  Effect.gen(function*() {
    const datasetId = yield* keyedDataset(urls[0]!)
    const { expected, ingestions } = workload(seed, count)
    const ids: Array<string> = []
    for (let i = 0; i < ingestions.length; i++) ids.push(yield* accept(urls, datasetId, ingestions[i]!, i))
    const reader = urls[urls.length - 1]!
    const ended = yield* settled(reader, datasetId, count)
    expect(ended.map((i) => i.id)).toEqual(ids)
    expect(ended.map((i) => i.status)).toEqual(ids.map(() => "success"))
    const endTimes = ended.map((i) => Date.parse(i.initiatedAt) + i.duration!)
    for (let i = 1; i < endTimes.length; i++) {
      if (endTimes[i]! < endTimes[i - 1]!) {
        throw new Error(`ingestion ${i} ended ${endTimes[i - 1]! - endTimes[i]!} ms before ingestion ${i - 1}, accepted before it`)
      }
    }
    expect(yield* storedRows(reader, datasetId)).toEqual(expected)
    return ended
  })

const orderSuite = (kind: StoreKind) =>
  describe(`ingestion order: ${kind} store, 4 workers`, () => {
    it.live("ingestions of overlapping keys, each posted once the one before was accepted, end with each key's last record", () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* startServer(storeLayer(kind))
        yield* checkOrder([url], 1, 150)
      })))

    it.live("within one ingestion, a key that occurs twice ends with its later record", () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* startServer(storeLayer(kind))
        const datasetId = yield* keyedDataset(url)
        const records = [{ id: "a", n: 1 }, { id: "b", n: 1 }, { id: "a", n: 2 }, { id: "a", n: 3 }, { id: "b", n: 2 }]
        yield* accept([url], datasetId, records as any, 0)
        yield* accept([url], datasetId, [{ id: "b", n: 3 }, { id: "c", n: 1 }, { id: "b", n: 4 }] as any, 1)
        const [first, second] = yield* settled(url, datasetId, 2)
        expect([first!.status, second!.status]).toEqual(["success", "success"])
        expect(yield* storedRows(url, datasetId)).toEqual([{ id: "a", n: 3 }, { id: "b", n: 4 }, { id: "c", n: 1 }])
        const detail = yield* call(url, `/v2/datasets/${datasetId}/ingestions/${first!.id}`)
        expect(detail.body.data.summary.ingestion).toMatchObject({ appendedRecordCount: 2, overwrittenRecordCount: 3 })
      })))

    it.live("with random processing delays (processing=0-250ms), a later ingestion never ends before an earlier one", () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* startServer(storeLayer(kind), { faults: "processing=0-250ms,seed=7" })
        const ended = yield* checkOrder([url], 2, 30)
        // The delays were there: every ingestion took at least its own, some near the top.
        expect(Math.max(...ended.map((i) => i.duration!))).toBeGreaterThanOrEqual(150)
      })))
  })

orderSuite("memory")
orderSuite("postgres")

describe("ingestion order: two servers on one Postgres database, taking turns accepting", () => {
  /** Two servers with their own stores (pools, workers) on one fresh schema. */
  const twoServers = (options: { readonly faults?: string; readonly workers?: WorkerOptions } = {}) =>
    Effect.gen(function*() {
      const schema = freshSchema()
      // Added first, so it runs last: after both servers stopped.
      yield* dropSchemaAfterwards(schema)
      const first = yield* startServer(sqlStoreLayer({ schema, keep: true }), options)
      const second = yield* startServer(sqlStoreLayer({ schema, keep: true }), options)
      return [first, second] as const
    })

  it.live("ingestions alternate between the servers (4 workers each) and still apply in acceptance order", () =>
    Effect.scoped(Effect.gen(function*() {
      const urls = yield* twoServers()
      yield* checkOrder(urls, 3, 150)
    })))

  it.live("with random processing delays on both servers, a later ingestion never ends before an earlier one", () =>
    Effect.scoped(Effect.gen(function*() {
      const urls = yield* twoServers({ faults: "processing=0-250ms,seed=9" })
      yield* checkOrder(urls, 4, 30)
    })))

  it.live("with leases that run out mid-work (20 ms), claims taken over between the servers keep the order", () =>
    Effect.scoped(Effect.gen(function*() {
      const urls = yield* twoServers({ workers: { workers: 4, leaseMillis: 20 } })
      yield* checkOrder(urls, 5, 150)
    })))
})
