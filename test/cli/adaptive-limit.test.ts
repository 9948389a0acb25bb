/**
 * The adaptive concurrency limit against a real reference server, behind a proxy on loopback
 * that adds 20 ms to every ingest request and, while the test says so, answers half of them
 * `429 rate_limited` with `Retry-After: 0` itself (the server's own faults cannot change while
 * it runs). Three phases, each until the limit shows what it should: clean (the limit rises
 * above 1), 429s (it drops), clean again (it recovers). With `{ fixed: 6 }` the limit never
 * moves, through the same 429s. The proxy's account of requests open at once is the check that
 * the limit is what the service sees. And the command line refuses `--concurrency 0`,
 * `fixed:0` and `abc` as usage errors naming the option.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Context, Deferred, Effect, Fiber, Layer, Redacted, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TributaryClient } from "../../src/client/index.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import type { Progress } from "../../src/pipeline/events.js"
import { run, type PipelineConfig } from "../../src/pipeline/run.js"
import type { Source, SourceElement } from "../../src/pipeline/Source.js"
import { runCli, startServe, type RunningServer } from "../support/cli.js"
import { idAndN, newDataset as newDatasetOn, rowCount as rowCountOn } from "../support/crash.js"
import { startProxy, type Passed, type Proxy } from "../support/proxy.js"
import { kafkaBrokers } from "../support/services.js"

const apiKey = "adaptive-test-key"
const batchSize = 10
let server: RunningServer

beforeAll(async () => {
  server = await startServe(["--port", "0", "--api-key", apiKey])
})
afterAll(() => server?.stop())

const newDataset = (name: string) => newDatasetOn(server.url, apiKey, { name, schema: idAndN })

const rowCount = (datasetId: string) => rowCountOn(server.url, apiKey, datasetId)

const isIngest = (req: IncomingMessage) => req.method === "POST" && /^\/v2\/datasets\/[^/]+\/data$/.test((req.url ?? "").split("?")[0]!)

/**
 * The proxy's behaviour: every ingest request waits 20 ms (a service's latency), and in the
 * 429 phase half of them are answered 429 by the proxy instead.
 */
const shapeService = (proxy: Proxy, state: { rateLimited: boolean }) => {
  let draw = 0
  proxy.intercept = (req: IncomingMessage, res: ServerResponse) => {
    if (!isIngest(req)) return false
    // Every other one: half of them, the same split on every run.
    if (state.rateLimited && draw++ % 2 === 0) {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "0" })
      res.end(JSON.stringify({ errors: [{ code: "rate_limited", message: "rate limited by the test's proxy; retry after 0 s" }] }))
      return true
    }
    return false
  }
}

/** A proxy to the server that holds each ingest request it passes on for 20 ms. */
const delayedProxy = async () => {
  const proxy = await startProxy(server.url)
  proxy.delay = (req) => (isIngest(req) ? 20 : 0)
  return proxy
}

/** Records `r1..` in one partition, produced until `stop` is done. */
const endlessSource = (stop: Deferred.Deferred<void>): Source => ({
  name: "adaptive-test",
  elements: () =>
    Stream.iterate(1, (n) => n + 1).pipe(
      Stream.map((n): SourceElement => ({ _tag: "Record", position: { partition: "0", offset: n }, value: { id: `r${n}`, n } })),
      Stream.haltWhenDeferred(stop)
    )
})

const finiteSource = (count: number): Source => ({
  name: "adaptive-test",
  elements: () =>
    Stream.range(1, count).pipe(
      Stream.map((n): SourceElement => ({ _tag: "Record", position: { partition: "0", offset: n }, value: { id: `r${n}`, n } }))
    )
})

/** A client of `baseUrl` whose pool lives as long as the scope; 429s are retried often, and soon. */
const clientOf = (baseUrl: string) =>
  Effect.map(
    Layer.build(TributaryClient.layer({ baseUrl, apiKey: Redacted.make(apiKey), retry: { maxRetries: 40, maxDelay: "500 millis" } })),
    Context.get(TributaryClient)
  )

/** The most intervals that were open at one moment. */
const mostOpenAtOnce = (requests: ReadonlyArray<Passed>) => {
  const edges = requests.flatMap((r) => [[r.at, 1], [r.end ?? Number.MAX_SAFE_INTEGER, -1]] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let open = 0
  let most = 0
  for (const [, step] of edges) most = Math.max(most, (open += step))
  return most
}

const waitUntil = (check: () => boolean, timeoutMs: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (!check()) {
      if (Date.now() > deadline) return false
      yield* Effect.sleep("25 millis")
    }
    return true
  })

interface Sample {
  readonly at: number
  readonly phase: 1 | 2 | 3
  readonly limit: number
  readonly tag: "Progress" | "LimitChanged"
}

describe("adaptive concurrency against a reference server", () => {
  it("rises above 1 while the service keeps up, drops under 429s, recovers after them; the service never sees more at once than the ceiling", async () => {
    const datasetId = await newDataset("adaptive")
    const proxy = await delayedProxy()
    const state = { rateLimited: false }
    shapeService(proxy, state)
    try {
      const outcome = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const client = yield* clientOf(proxy.url)
        const stop = yield* Deferred.make<void>()
        let phase: 1 | 2 | 3 = 1
        let limit = 0
        const samples: Array<Sample> = []
        const note = (tag: Sample["tag"], value: number) => {
          limit = value
          samples.push({ at: Date.now(), phase, limit: value, tag })
        }
        const config: PipelineConfig<never, never> = {
          source: endlessSource(stop),
          destination: { datasetId },
          checkpoint: yield* Checkpoint.memory(),
          deadLetters: yield* DeadLetter.memory,
          batch: { max: batchSize, linger: "20 millis" },
          concurrency: 16,
          progressInterval: "50 millis",
          onEvent: (event) =>
            Effect.sync(() => {
              if (event._tag === "Progress") note("Progress", event.progress.concurrencyLimit)
              if (event._tag === "LimitChanged") note("LimitChanged", event.limit)
            })
        }
        const running = yield* Effect.fork(run(client, config))
        const log: Array<string> = []
        const started = Date.now()
        const reached = (what: string, ok: boolean) => log.push(`${Date.now() - started} ms: ${what}: ${ok ? "yes" : "NO (timed out)"}, limit ${limit}`)

        // 1: clean, until the limit is well above 1 (15 s at most).
        // Each phase lasts past its goal by more than the 250 ms between LimitChanged samples,
        // so every phase's change is seen as an event however fast the machine reaches it.
        const hold = Effect.sleep("300 millis")
        reached("clean: limit >= 8", yield* waitUntil(() => limit >= 8, 15_000))
        const peak = limit
        yield* hold
        phase = 2
        state.rateLimited = true
        // 2: half the ingest requests answered 429, until the limit is down to 2 (10 s at most).
        reached("429s: limit <= 2", yield* waitUntil(() => limit <= 2, 10_000))
        const low = limit
        yield* hold
        phase = 3
        state.rateLimited = false
        // 3: clean again, until the limit is back at 5 or more (15 s at most).
        reached("clean again: limit >= 5", yield* waitUntil(() => limit >= 5, 15_000))
        yield* hold
        yield* Deferred.succeed(stop, undefined)
        const final: Progress = yield* Fiber.join(running)
        return { samples, final, peak, low, log }
      })))

      const { final, log, samples } = outcome
      const inPhase = (p: 1 | 2 | 3) => samples.filter((s) => s.phase === p).map((s) => s.limit)
      const posts = proxy.requests.filter((r) => r.method === "POST" && /\/data$/.test(r.url.split("?")[0]!))
      const rateLimited = posts.filter((r) => r.status === 429)
      const summary = `${log.join("; ")}; ${posts.length} posts (${rateLimited.length} answered 429); ` +
        `limits by phase: ${[1, 2, 3].map((p) => inPhase(p as 1 | 2 | 3).join(",")).join(" | ")}`
      console.log(`adaptive limit: ${summary}`)

      // Clean: it started at 1 and rose above it.
      expect(inPhase(1)[0], summary).toBe(1)
      expect(Math.max(...inPhase(1)), summary).toBeGreaterThanOrEqual(8)
      // Under 429s: it dropped, to 2 or less.
      expect(rateLimited.length, summary).toBeGreaterThan(0)
      expect(Math.min(...inPhase(2)), summary).toBeLessThanOrEqual(2)
      expect(outcome.low, summary).toBeLessThan(outcome.peak)
      // Clean again: it recovered.
      expect(Math.max(...inPhase(3)), summary).toBeGreaterThanOrEqual(5)
      // Never outside 1..16, and LimitChanged events were sent.
      expect(samples.filter((s) => s.limit < 1 || s.limit > 16)).toEqual([])
      expect(samples.filter((s) => s.tag === "LimitChanged").length, summary).toBeGreaterThanOrEqual(3)
      // The service never saw more ingest requests at once than the ceiling.
      expect(mostOpenAtOnce(posts), summary).toBeLessThanOrEqual(16)
      // Everything read was stored, once (an append-only dataset: a duplicate is another row).
      expect(final.accepted).toBe(final.read)
      expect(final.deadLettered).toBe(0)
      expect(await rowCount(datasetId)).toBe(final.read)
    } finally {
      await proxy.close()
    }
  }, 90_000)

  it("{ fixed: 6 } keeps 6 through 429s: no LimitChanged, every Progress says 6, and the service sees 6 at once", async () => {
    const datasetId = await newDataset("fixed")
    const proxy = await delayedProxy()
    shapeService(proxy, { rateLimited: true })
    const records = 3_000
    try {
      const { events, final } = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const client = yield* clientOf(proxy.url)
        const events: Array<{ tag: string; limit: number }> = []
        const final = yield* run(client, {
          source: finiteSource(records),
          destination: { datasetId },
          checkpoint: yield* Checkpoint.memory(),
          deadLetters: yield* DeadLetter.memory,
          batch: { max: batchSize, linger: "20 millis" },
          concurrency: { fixed: 6 },
          progressInterval: "50 millis",
          onEvent: (event) =>
            Effect.sync(() => {
              if (event._tag === "Progress") events.push({ tag: "Progress", limit: event.progress.concurrencyLimit })
              if (event._tag === "LimitChanged") events.push({ tag: "LimitChanged", limit: event.limit })
            })
        })
        return { events, final }
      })))
      const posts = proxy.requests.filter((r) => r.method === "POST" && /\/data$/.test(r.url.split("?")[0]!))
      expect(posts.filter((r) => r.status === 429).length).toBeGreaterThan(records / batchSize / 4)
      expect(events.filter((e) => e.tag === "LimitChanged")).toEqual([])
      expect(events.length).toBeGreaterThan(3)
      expect(events.filter((e) => e.limit !== 6)).toEqual([])
      expect(final.concurrencyLimit).toBe(6)
      expect(mostOpenAtOnce(posts)).toBe(6)
      expect(final.accepted).toBe(records)
      expect(await rowCount(datasetId)).toBe(records)
    } finally {
      await proxy.close()
    }
  }, 60_000)
})

describe("--concurrency on the command line", () => {
  const dir = mkdtempSync(join(tmpdir(), "tributary-adaptive-"))
  const file = join(dir, "one.ndjson")
  writeFileSync(file, "{\"id\":\"a\",\"n\":1}\n")

  const commands: Record<string, () => ReadonlyArray<string>> = {
    ingest: () => ["ingest", file, "--dataset", "1", "--api-url", server.url, "--api-key", apiKey, "--checkpoint", join(dir, "c.json")],
    sink: () => [
      "sink", "--brokers", kafkaBrokers().join(","), "--topic", "never-created", "--group", "never-joined", "--dataset", "1",
      "--api-url", server.url, "--api-key", apiKey, "--dead-letter", join(dir, "dead.ndjson")
    ],
    backfill: () => [
      "backfill", "--database-url", "postgres://nobody@127.0.0.1:1/none", "--table", "t", "--key", "id", "--dataset", "1",
      "--api-url", server.url, "--api-key", apiKey
    ]
  }

  for (const [name, args] of Object.entries(commands)) {
    it(`${name}: --concurrency 0, fixed:0 and abc are usage errors (exit 2) naming the option`, async () => {
      for (const value of ["0", "fixed:0", "abc"]) {
        const result = await runCli([...args(), "--concurrency", value])
        expect(result.code, `${name} --concurrency ${value}: ${result.stderr}`).toBe(2)
        expect(result.stderr).toContain(`--concurrency must be a whole number of at least 1 (an adaptive ceiling) or fixed:N, got '${value}'`)
      }
    }, 60_000)
  }
})
