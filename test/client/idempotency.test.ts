import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { acceptsIdempotencyKey, TributaryClient } from "../../src/client/index.js"

const datasetId = "0b7c2f6e-9a55-4d9e-8a43-3c1f0d6b2a11"

const accepted = (res: ServerResponse) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify({
    requestId: "r",
    status: "success",
    data: { ingestionId: "1d0f8a9e-2b3c-4d5e-8f70-112233445566", status: "queued", message: "accepted" }
  }))
}
const unavailable = (res: ServerResponse) => {
  res.writeHead(503, { "content-type": "application/json" })
  res.end(JSON.stringify({ requestId: "r", status: "error", errors: [{ code: "x", message: "busy", type: "server" }] }))
}

/** Answers the n-th request with `statuses[n]` (the last repeats); records each request. */
const scriptedServer = (statuses: ReadonlyArray<200 | 503>) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; seen: Array<IncomingMessage>; close: () => Promise<void> }>((resume) => {
      const seen: Array<IncomingMessage> = []
      const server = createServer((req, res) => {
        seen.push(req)
        req.resume()
        req.on("end", () => {
          const status = statuses[Math.min(seen.length - 1, statuses.length - 1)]
          if (status === 503) unavailable(res)
          else if (req.url === "/v1/data-sources" || req.url?.startsWith("/v2/datasets?")) {
            res.writeHead(404, { "content-type": "application/json" })
            res.end(JSON.stringify({ requestId: "r", status: "error", errors: [{ code: "not_found", message: "no", type: "not_found" }] }))
          } else accepted(res)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({
          url: `http://127.0.0.1:${port}`,
          seen,
          close: () => new Promise<void>((done) => server.close(() => done()))
        }))
      })
    }),
    (s) => Effect.promise(s.close)
  )

const clientOf = (url: string) =>
  Layer.build(
    TributaryClient.layer({
      baseUrl: url,
      apiKey: Redacted.make("k"),
      retry: { maxRetries: 3, baseDelay: "5 millis", maxDelay: "20 millis" }
    })
  ).pipe(Effect.map(Context.get(TributaryClient)))

const keysOf = (seen: ReadonlyArray<IncomingMessage>) => seen.map((req) => req.headers["idempotency-key"])

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe("client Idempotency-Key (against a real HTTP server on loopback)", () => {
  it.scopedLive("a retried call sends the same generated key on every attempt", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([503, 200])
      const client = yield* clientOf(server.url)
      const answer = yield* client.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: { records: [{ a: 1 }] }, headers: {} })
      expect(answer.data.status).toBe("queued")
      const keys = keysOf(server.seen)
      expect(keys).toHaveLength(2)
      expect(keys[0]).toMatch(uuid)
      expect(keys[1]).toBe(keys[0])
    }))

  it.scopedLive("two separate calls get different keys", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([200])
      const client = yield* clientOf(server.url)
      const call = client.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: { records: [{ a: 1 }] }, headers: {} })
      yield* call
      yield* call
      const keys = keysOf(server.seen)
      expect(keys).toHaveLength(2)
      expect(keys[0]).toMatch(uuid)
      expect(keys[1]).toMatch(uuid)
      expect(keys[1]).not.toBe(keys[0])
    }))

  it.scopedLive("a key given by the caller is sent as it is, on every retry", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([503, 503, 200])
      const client = yield* clientOf(server.url)
      yield* client.v2.v2Datasets.ingest({
        path: { id: datasetId },
        payload: { records: [{ a: 1 }] },
        headers: { "idempotency-key": "k" }
      })
      expect(keysOf(server.seen)).toEqual(["k", "k", "k"])
    }))

  it.scopedLive("every listed route gets a key; reads and other writes do not", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([200])
      const client = yield* clientOf(server.url)
      yield* Effect.either(client.v1.v1Datasets.ingest({ path: { datasetId }, payload: { records: [{ a: 1 }] }, headers: {} }))
      yield* client.http.post(`/v2/datasets/${datasetId}/purge`)
      yield* client.http.post(`/v2/datasets/${datasetId}/duplicate`)
      yield* client.http.post("/v2/datasets")
      yield* client.http.post("/v2/data-sources")
      yield* client.http.post("/v2/data-sources/12/purge")
      const keyed = keysOf(server.seen)
      expect(keyed).toHaveLength(6)
      for (const key of keyed) expect(key).toMatch(uuid)
      expect(new Set(keyed).size).toBe(6)

      yield* Effect.either(client.v1.v1DataSources.createDataSource({ payload: { title: "x" } }))
      yield* Effect.either(client.v2.v2Datasets.list({ urlParams: {} }))
      yield* client.http.get(`/v2/datasets/${datasetId}/data`)
      yield* client.http.post(`/v1/datasets/${datasetId}/purge`)
      expect(keysOf(server.seen.slice(6))).toEqual([undefined, undefined, undefined, undefined])
    }))

  it("route matching", () => {
    expect(acceptsIdempotencyKey("POST", "http://h/v2/datasets")).toBe(true)
    expect(acceptsIdempotencyKey("POST", "http://h/base/v2/datasets/abc/data?x=1")).toBe(true)
    expect(acceptsIdempotencyKey("POST", "/v1/datasets/abc/data")).toBe(true)
    expect(acceptsIdempotencyKey("PUT", "http://h/v2/datasets/abc/modifications")).toBe(true)
    expect(acceptsIdempotencyKey("GET", "http://h/v2/datasets/abc/data")).toBe(false)
    expect(acceptsIdempotencyKey("PATCH", "http://h/v2/datasets/abc")).toBe(false)
    expect(acceptsIdempotencyKey("POST", "http://h/v2/datasets/abc/modifications/preview")).toBe(false)
    expect(acceptsIdempotencyKey("POST", "http://h/v1/datasets")).toBe(false)
  })
})
