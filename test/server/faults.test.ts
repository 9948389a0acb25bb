import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import {
  actsOnRequests,
  delayedProcessing,
  formatFaults,
  parseFaults,
  type FaultSpec
} from "../../src/server/faults.js"
import { type NewIngestion } from "../../src/server/core/store/Store.js"
import { IngestionStore, type IngestionStoreService } from "../../src/server/core/store/ports/ingestions.js"
import { type StoreService } from "../../src/server/core/store/Stores.js"
import { runCli, startServe } from "../support/cli.js"
import { clientFor, rawRequest, serverLayer, ServerUrl } from "../support/server.js"
import { storeLayer, testStoreKind } from "../support/stores.js"

const parsed = (spec: string): FaultSpec => Either.getOrThrow(parseFaults(spec))
const problem = (spec: string): string => Either.match(parseFaults(spec), { onLeft: (e) => e, onRight: () => "parsed" })

/** A server with `faults`, for the one test that runs `body` against it. */
const withFaults = <A, E>(faults: string, body: Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof serverLayer>>>) =>
  Effect.provide(body, serverLayer({ faults: parsed(faults) }))

const post = (key: string, body: unknown, headers: Record<string, string> = {}) => ({
  method: "POST",
  headers: { "x-api-key": key, "content-type": "application/json", ...headers },
  body: JSON.stringify(body)
})

/** A client that retries quickly and often, for servers that fail on purpose. */
type Client = Effect.Effect.Success<ReturnType<typeof clientFor>>

/** A v1 data source and a dataset keyed by `id` in it. */
const ordersDataset = (client: Client) =>
  Effect.flatMap(client.v1.v1DataSources.createDataSource({ payload: { title: "Shop" } }), (dataSource) =>
    client.v1.v1Datasets.createDataset({ payload: { title: "Orders", dataSourceId: dataSource.id, primaryKeys: ["id"] } }))

const ingestionCount = (client: Client, datasetId: string) =>
  Effect.map(client.v1.v1Datasets.listIngestions({ path: { datasetId }, urlParams: {} }), (listed) => listed.ingestions.length)

const patientClient = (key: string) => clientFor(key, { maxRetries: 40, baseDelay: "1 millis", maxDelay: "5 millis" })

/** The `count` ingestions of a dataset (v2 list items) once every one ended; within 5 s. */
const pollIngestions = (datasetId: string, count: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 5_000
    for (;;) {
      const listed = yield* rawRequest(`/v2/datasets/${datasetId}/ingestions`, { headers: { "x-api-key": "acme-admin" } })
      const items = listed.body.data.items as ReadonlyArray<{ id: string; status: string; duration: number | null }>
      if (items.length === count && items.every((i) => i.status !== "queued" && i.status !== "processing")) return items
      if (Date.now() > deadline) throw new Error(`ingestions did not end: ${JSON.stringify(items)}`)
      yield* Effect.sleep("10 millis")
    }
  })

/** Status codes of `n` sequential `GET /v1/auth/validate-key`. */
const statuses = (n: number) =>
  Effect.gen(function*() {
    const out: Array<number> = []
    for (let i = 0; i < n; i++) out.push((yield* rawRequest("/v1/auth/validate-key", { headers: { "x-api-key": "acme-admin" } })).status)
    return out
  })

describe("parseFaults", () => {
  it("reads every entry of the documented example", () => {
    expect(parsed("5xx=0.05,429=0.02,retry-after=1,latency=5-20ms,drop=0.01,max-body=1mb,seed=7,after=3")).toEqual({
      serverErrorRate: 0.05,
      rateLimitRate: 0.02,
      retryAfterSeconds: 1,
      latencyMs: { min: 5, max: 20 },
      dropRate: 0.01,
      maxBodyBytes: 1024 * 1024,
      seed: 7,
      after: 3
    })
    expect(parsed("latency=12")).toEqual({ latencyMs: { min: 12, max: 12 } })
    expect(parsed(" latency = 12ms , max-body=512kb")).toEqual({ latencyMs: { min: 12, max: 12 }, maxBodyBytes: 512 * 1024 })
    expect(parsed("max-body=300")).toEqual({ maxBodyBytes: 300 })
    expect(formatFaults(parsed("5xx=0.05,latency=5-20ms,max-body=1kb"))).toBe("5xx=0.05,latency=5-20ms,max-body=1024")
    expect(parsed(formatFaults(parsed("429=0.2,retry-after=0,drop=1,seed=9")))).toEqual(parsed("429=0.2,retry-after=0,drop=1,seed=9"))
  })

  it("reads processing like latency: milliseconds or a range", () => {
    expect(parsed("processing=300ms")).toEqual({ processingMs: { min: 300, max: 300 } })
    expect(parsed("processing=100-400,seed=3")).toEqual({ processingMs: { min: 100, max: 400 }, seed: 3 })
    expect(formatFaults(parsed("latency=5ms,processing=100-400ms"))).toBe("latency=5ms,processing=100-400ms")
    expect(problem("processing=soon")).toContain("processing must be milliseconds")
    expect(problem("processing=400-100ms")).toContain("processing range must not end below its start")
  })

  it("processing alone does not act on requests (the fast ingest route stays); anything else, or nothing, does", () => {
    expect(actsOnRequests(parsed("processing=300ms"))).toBe(false)
    expect(actsOnRequests(parsed("processing=300ms,seed=1"))).toBe(false)
    expect(actsOnRequests(parsed("processing=300ms,latency=0"))).toBe(true)
    expect(actsOnRequests(parsed("processing=300ms,after=5"))).toBe(true)
    expect(actsOnRequests(parsed("seed=1"))).toBe(true)
    expect(actsOnRequests({})).toBe(true)
  })

  it.effect("processing draws each ingestion's delay uniformly from its range, the same ones for the same seed", () =>
    Effect.gen(function*() {
      const delaysOf = (range: { min: number; max: number }, seed: number | undefined) => {
        const seen: Array<number | undefined> = []
        const recording = Layer.succeed(IngestionStore, {
          createIngestion: (input: NewIngestion) => Effect.sync(() => void seen.push(input.processingDelayMillis))
        } as unknown as StoreService)
        return Effect.gen(function*() {
          const store = yield* IngestionStore
          for (let i = 0; i < 200; i++) yield* store.createIngestion({ datasetId: "d", initiatedBy: { id: 1, name: "Ada" } }, [])
          return seen as Array<number>
        }).pipe(Effect.provide(Layer.provide(delayedProcessing(range, seed), recording)))
      }
      const first = yield* delaysOf({ min: 100, max: 400 }, 7)
      expect(first.every((delay) => Number.isInteger(delay) && delay >= 100 && delay <= 400)).toBe(true)
      // Spread over the range: both ends' quarters drawn.
      expect(first.some((delay) => delay < 175) && first.some((delay) => delay > 325)).toBe(true)
      expect(yield* delaysOf({ min: 100, max: 400 }, 7)).toEqual(first)
      expect(yield* delaysOf({ min: 100, max: 400 }, 8)).not.toEqual(first)
      expect(new Set(yield* delaysOf({ min: 250, max: 250 }, undefined))).toEqual(new Set([250]))
    }))

  it("names the bad entry", () => {
    expect(problem("5xx=2")).toContain("5xx must be a rate between 0 and 1")
    expect(problem("429=-0.1")).toContain("429 must be a rate between 0 and 1")
    expect(problem("drop=lots")).toContain("drop must be a rate between 0 and 1")
    expect(problem("5xx=0.6,429=0.6")).toBe("5xx and 429 together must not exceed 1")
    expect(problem("latency=20-5ms")).toContain("latency range")
    expect(problem("latency=fast")).toContain("latency must be milliseconds")
    expect(problem("max-body=1gb")).toContain("max-body must be a size")
    expect(problem("retry-after=1.5")).toContain("retry-after must be whole seconds")
    expect(problem("teapot=0.1")).toContain("unknown fault \"teapot\"")
    expect(problem("5xx")).toContain("\"5xx\" is not key=value")
    expect(problem("5xx=0.1,5xx=0.2")).toBe("5xx is given twice")
    expect(problem("")).toBe("the fault spec is empty")
  })
})

describe("fault injection on the reference server", () => {
  it.live("5xx=1 answers every API call 503 injected_fault with the envelope and its requestId", () =>
    withFaults(
      "5xx=1",
      Effect.gen(function*() {
        for (const path of ["/v1/auth/validate-key", "/v1/accounts", "/v2/auth/validate-key", "/v1/no-such-route"]) {
          const answer = yield* rawRequest(path, { headers: { "x-api-key": "acme-admin" } })
          expect(answer.status).toBe(503)
          expect(answer.body).toMatchObject({ status: "error", errors: [{ code: "injected_fault", type: "server" }] })
          expect(answer.body.requestId).toBe(answer.headers.get("x-request-id"))
        }
        const created = yield* rawRequest("/v1/data-sources", post("acme-admin", { title: "x" }))
        expect(created.status).toBe(503)
      })
    ))

  it.live("a 503 or 429 is answered without running the operation", () =>
    withFaults(
      "5xx=0.4,429=0.2,retry-after=0,seed=11",
      Effect.gen(function*() {
        const answered = new Map<string, number>()
        for (let i = 0; i < 20; i++) {
          const title = `source ${i}`
          answered.set(title, (yield* rawRequest("/v1/data-sources", post("acme-admin", { title }))).status)
        }
        const statusesSeen = new Set(answered.values())
        expect([...statusesSeen].sort()).toEqual([200, 429, 503])
        const admin = yield* patientClient("acme-admin")
        const { accounts } = yield* admin.v1.v1Accounts.listAccounts()
        const { dataSources } = yield* admin.v1.v1Accounts.listDataSources({ path: { accountId: accounts[0]!.id } })
        const created = [...answered].filter(([, status]) => status === 200).map(([title]) => title)
        expect(dataSources.map((d) => d.title).sort()).toEqual(created.sort())
      })
    ))

  it.live("after=N lets the first N API requests through", () =>
    withFaults("5xx=1,after=2", Effect.map(statuses(4), (seen) => expect(seen).toEqual([200, 200, 503, 503]))))

  it.live("429=1 answers 429 rate_limited with Retry-After (1 s by default)", () =>
    Effect.gen(function*() {
      yield* withFaults(
        "429=1,retry-after=7",
        Effect.gen(function*() {
          const answer = yield* rawRequest("/v2/auth/validate-key", { headers: { "x-api-key": "acme-admin" } })
          expect(answer.status).toBe(429)
          expect(answer.headers.get("retry-after")).toBe("7")
          expect(answer.body).toMatchObject({ status: "error", errors: [{ code: "rate_limited", type: "rate_limit" }] })
          expect(answer.body.requestId).toBe(answer.headers.get("x-request-id"))
        })
      )
      yield* withFaults(
        "429=1",
        Effect.gen(function*() {
          const answer = yield* rawRequest("/v1/auth/validate-key", { headers: { "x-api-key": "acme-admin" } })
          expect(answer.status).toBe(429)
          expect(answer.headers.get("retry-after")).toBe("1")
        })
      )
    }))

  it.live("latency delays each API request by at least its minimum", () =>
    withFaults(
      "latency=40-60ms",
      Effect.gen(function*() {
        for (let i = 0; i < 3; i++) {
          const started = performance.now()
          const answer = yield* rawRequest("/v1/auth/validate-key", { headers: { "x-api-key": "acme-admin" } })
          expect(answer.status).toBe(200)
          expect(performance.now() - started).toBeGreaterThanOrEqual(40)
        }
      })
    ))

  it.live("/openapi.json and /docs get no faults", () =>
    withFaults(
      "5xx=0.5,429=0.5,latency=400ms",
      Effect.gen(function*() {
        for (const path of ["/openapi.json", "/docs", "/openapi.json"]) {
          const started = performance.now()
          const answer = yield* rawRequest(path)
          expect(answer.status).toBe(200)
          expect(performance.now() - started).toBeLessThan(400)
        }
        expect((yield* rawRequest("/v1/auth/validate-key", { headers: { "x-api-key": "acme-admin" } })).status).not.toBe(200)
      })
    ))

  it.live("drop=1 commits the ingestion, then drops the connection without an answer", () =>
    withFaults(
      "drop=1",
      Effect.gen(function*() {
        // Only POST .../data is dropped: the fixtures and the checks go through.
        const admin = yield* clientFor("acme-admin")
        const dataset = yield* ordersDataset(admin)
        const url = yield* ServerUrl
        const outcome = yield* Effect.promise(() =>
          fetch(`${url}/v1/datasets/${dataset.id}/data`, post("acme-admin", { records: [{ id: 1 }] })).then(
            (response) => `answered ${response.status}`,
            (error: Error) => `failed: ${error.message}`
          )
        )
        expect(outcome).toMatch(/^failed/)
        expect(yield* ingestionCount(admin, dataset.id)).toBe(1)
      })
    ))

  it.live("with drops, a retried ingest with an Idempotency-Key is recorded once", () =>
    withFaults(
      "drop=0.6,seed=3",
      Effect.gen(function*() {
        const admin = yield* patientClient("acme-admin")
        const dataset = yield* ordersDataset(admin)
        for (let i = 0; i < 5; i++) {
          yield* admin.v1.v1Datasets.ingest({
            path: { datasetId: dataset.id },
            payload: { records: [{ id: i }] },
            headers: { "idempotency-key": `batch-${i}` }
          })
        }
        expect(yield* ingestionCount(admin, dataset.id)).toBe(5)
      })
    ))

  it.live("the same seed gives the same fault sequence", () =>
    Effect.gen(function*() {
      const first = yield* withFaults("5xx=0.3,429=0.3,retry-after=0,seed=42", statuses(30))
      const again = yield* withFaults("5xx=0.3,429=0.3,retry-after=0,seed=42", statuses(30))
      const other = yield* withFaults("5xx=0.3,429=0.3,retry-after=0,seed=43", statuses(30))
      expect(again).toEqual(first)
      expect(other).not.toEqual(first)
      expect(new Set(first)).toEqual(new Set([200, 429, 503]))
    }))

  it.live("the typed client gets through 5xx=0.5,429=0.2,retry-after=0 by retrying", () =>
    withFaults(
      "5xx=0.5,429=0.2,retry-after=0,seed=5",
      Effect.gen(function*() {
        const admin = yield* patientClient("acme-admin")
        const dataset = yield* ordersDataset(admin)
        for (let i = 0; i < 5; i++) {
          yield* admin.v1.v1Datasets.ingest({ path: { datasetId: dataset.id }, payload: { records: [{ id: i }] }, headers: {} })
        }
        expect(yield* ingestionCount(admin, dataset.id)).toBe(5)
        const v2 = yield* admin.v2.v2Auth.validateKey()
        expect(v2.data.valid).toBe(true)
      })
    ))

  it.live("processing=300ms: an ingestion is not terminal at 100 ms, and ends 300 ms after its acceptance (v1, v2; fast route and API)", () =>
    Effect.forEach(["processing=300ms", "processing=300ms,after=1000"], (faults) =>
      withFaults(
        faults,
        Effect.gen(function*() {
          const admin = yield* clientFor("acme-admin")
          const dataset = yield* ordersDataset(admin)
          const v1 = yield* admin.v1.v1Datasets.ingest({ path: { datasetId: dataset.id }, payload: { records: [{ id: 1 }] }, headers: {} })
          const v2 = (yield* rawRequest(`/v2/datasets/${dataset.id}/data`, post("acme-admin", { records: [{ id: 2 }] }))).body
          const accepted = performance.now()
          yield* Effect.sleep("100 millis")
          const early = yield* admin.v1.v1Datasets.getIngestion({ path: { datasetId: dataset.id, ingestionId: v1.ingestionId } })
          expect(early.status).toBe("processing")
          const listed = (yield* rawRequest(`/v2/datasets/${dataset.id}/ingestions`, { headers: { "x-api-key": "acme-admin" } })).body
          expect(listed.data.items.map((i: { status: string }) => i.status)).toEqual(["queued", "queued"])
          expect(performance.now() - accepted).toBeLessThan(300)
          const ended = yield* pollIngestions(dataset.id, 2)
          expect(ended.map((i) => i.id).sort()).toEqual([v1.ingestionId, v2.data.ingestionId].sort())
          for (const ingestion of ended) {
            expect(ingestion.status).toBe("success")
            // Acceptance to end: the delay at least; then soon (the bound leaves room for a loaded machine).
            expect(ingestion.duration).toBeGreaterThanOrEqual(300)
            expect(ingestion.duration).toBeLessThan(2_000)
          }
        })
      ), { discard: true }))

  it.live("processing=MIN-MAX: each ingestion (of datasets of their own) ends within the range after its acceptance", () =>
    withFaults(
      "processing=150-450ms,seed=4",
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const durations: Array<number> = []
        const datasets: Array<string> = []
        for (let i = 0; i < 8; i++) {
          const dataset = yield* ordersDataset(admin)
          yield* admin.v1.v1Datasets.ingest({ path: { datasetId: dataset.id }, payload: { records: [{ id: i }] }, headers: {} })
          datasets.push(dataset.id)
        }
        for (const datasetId of datasets) durations.push((yield* pollIngestions(datasetId, 1))[0]!.duration!)
        for (const duration of durations) {
          expect(duration).toBeGreaterThanOrEqual(150)
          // The upper bound leaves room for a loaded machine (a worker's wake-up can come late).
          expect(duration).toBeLessThan(450 + 2_000)
        }
        // Drawn, not fixed: the seed's eight delays spread over the range.
        expect(Math.max(...durations) - Math.min(...durations)).toBeGreaterThanOrEqual(100)
      })
    ))

  it.live("an idle worker waits for a delayed ingestion to come due without spinning", () =>
    Effect.gen(function*() {
      let claims = 0
      const counting = Layer.effect(
        IngestionStore,
        Effect.map(IngestionStore, (store): IngestionStoreService => ({
          ...store,
          claimIngestions: (owner, leaseMillis, max) => Effect.suspend(() => (claims++, store.claimIngestions(owner, leaseMillis, max)))
        }))
      ).pipe(Layer.provideMerge(storeLayer(testStoreKind())))
      yield* Effect.provide(
        Effect.gen(function*() {
          const admin = yield* clientFor("acme-admin")
          const dataset = yield* ordersDataset(admin)
          const before = claims
          yield* admin.v1.v1Datasets.ingest({ path: { datasetId: dataset.id }, payload: { records: [{ id: 1 }] }, headers: {} })
          const [ended] = yield* pollIngestions(dataset.id, 1)
          expect(ended!.duration).toBeGreaterThanOrEqual(600)
          // Woken by the new ingestion, then when it came due (and by the 1 s look of the
          // Postgres store's workers): a handful of claims, not one per turn of the event loop.
          expect(claims - before).toBeLessThanOrEqual(6)
        }),
        serverLayer({ faults: parsed("processing=600ms"), store: counting })
      )
    }))

  it.live("a delayed ingestion that comes due between a worker's empty claim and its wait is still processed", () =>
    Effect.gen(function*() {
      // The claim that finds nothing due is held until the ingestion is due: the worker then
      // waits, and no other ingestion arrives to wake it.
      const late = Layer.effect(
        IngestionStore,
        Effect.map(IngestionStore, (store): IngestionStoreService => ({
          ...store,
          claimIngestions: (owner, leaseMillis, max) =>
            Effect.tap(store.claimIngestions(owner, leaseMillis, max), (claims) => claims.length === 0 ? Effect.sleep("400 millis") : Effect.void)
        }))
      ).pipe(Layer.provideMerge(storeLayer(testStoreKind())))
      yield* Effect.provide(
        Effect.gen(function*() {
          const admin = yield* clientFor("acme-admin")
          const dataset = yield* ordersDataset(admin)
          yield* admin.v1.v1Datasets.ingest({ path: { datasetId: dataset.id }, payload: { records: [{ id: 1 }] }, headers: {} })
          const [ended] = yield* pollIngestions(dataset.id, 1).pipe(Effect.timeout("10 seconds"))
          expect(ended!.status).toBe("success")
        }),
        serverLayer({ faults: parsed("processing=300ms"), store: late })
      )
    }), 20_000)

  it.live("max-body sets the body limit", () =>
    withFaults(
      "max-body=1kb",
      Effect.gen(function*() {
        const small = yield* rawRequest("/v1/data-sources", post("acme-admin", { title: "x".repeat(900) }))
        expect(small.status).toBe(200)
        const large = yield* rawRequest("/v1/data-sources", post("acme-admin", { title: "x".repeat(1100) }))
        expect(large.status).toBe(413)
        expect(large.body).toMatchObject({ errors: [{ code: "payload_too_large" }] })
      })
    ))
})

describe("tributary serve --faults (needs npm run build)", () => {
  it("a bad spec is a usage error (exit 2) naming the entry", async () => {
    const result = await runCli(["serve", "--port", "0", "--faults", "5xx=2"])
    expect(result.code).toBe(2)
    expect(result.stdout + result.stderr).toContain("5xx must be a rate between 0 and 1")
    const unknown = await runCli(["serve", "--port", "0", "--faults", "latency=5ms,jitter=1"])
    expect(unknown.code).toBe(2)
    expect(unknown.stdout + unknown.stderr).toContain("unknown fault \"jitter\"")
  })

  it("prints the active faults and injects them", async () => {
    const server = await startServe(["--port", "0", "--api-key", "k", "--faults", "429=1,retry-after=3"])
    try {
      expect(server.output()).toContain("faults 429=1,retry-after=3")
      const answer = await fetch(`${server.url}/v1/auth/validate-key`, { headers: { "x-api-key": "k" } })
      expect(answer.status).toBe(429)
      expect(answer.headers.get("retry-after")).toBe("3")
      // Every answer tells the server's faults, injected ones too: how the web console shows them.
      expect(answer.headers.get("x-tributary-faults")).toBe("429=1,retry-after=3")
      expect((await fetch(`${server.url}/openapi.json`)).status).toBe(200)
      // The console's files are not API routes: no faults.
      expect((await fetch(`${server.url}/console`)).status).toBe(200)
    } finally {
      await server.stop()
    }
  })
})
