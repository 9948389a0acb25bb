import type { IncomingMessage } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Fiber } from "effect"
import { Transport } from "../../src/client/index.js"
import { json, scriptedServer, type Answer } from "../support/http.js"

/** Exchanges on a dispatcher that lives as long as the test, with an API key on every request. */
const exchangesTo = (baseUrl: string, attemptTimeout: Duration.DurationInput = "30 seconds") =>
  Effect.map(Transport.makeDispatcher(attemptTimeout), (dispatcher) => Transport.exchanges(dispatcher, baseUrl, { "x-api-key": "k" }))

const echo: Answer = (arrival, res) =>
  json(res, 201, { method: arrival.method, url: arrival.url, body: arrival.body, type: arrival.headers["content-type"] ?? null }, {
    "x-custom": "yes"
  })

describe("Transport.exchanges (a real HTTP server on loopback)", () => {
  it.scopedLive("sends method, path, headers and a JSON body; answers status, headers and the whole text", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(() => echo)
      const send = yield* exchangesTo(server.url)
      const reply = yield* send({ method: "POST", path: "/v2/things", body: "{\"a\":1}", headers: { "idempotency-key": "key-1" } })
      expect(reply.status).toBe(201)
      expect(reply.headers["x-custom"]).toBe("yes")
      expect(JSON.parse(reply.text)).toEqual({ method: "POST", url: "/v2/things", body: "{\"a\":1}", type: "application/json" })
      expect(server.arrivals[0]!.headers["x-api-key"]).toBe("k")
      expect(server.arrivals[0]!.headers["idempotency-key"]).toBe("key-1")

      const get = yield* send({ method: "GET", path: "/v2/things/1" })
      expect(JSON.parse(get.text)).toMatchObject({ method: "GET", body: "", type: null })
      expect(server.arrivals[1]!.headers["x-api-key"]).toBe("k")
    }))

  it.scopedLive("reads an answer that arrives in many pieces whole, characters split between pieces included", () =>
    Effect.gen(function*() {
      // 1 MB of text with a two-byte character cut in half between the two writes.
      const text = `{"note":"${"é".repeat(500_000)}"}`
      const bytes = Buffer.from(text)
      const cut = bytes.indexOf("é") + 2 * 250_000 + 1 // inside the 250,001st "é"
      const server = yield* scriptedServer(() => (_arrival, res) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.write(bytes.subarray(0, cut))
        setTimeout(() => res.end(bytes.subarray(cut)), 20)
      })
      const send = yield* exchangesTo(server.url)
      const reply = yield* send({ method: "GET", path: "/big" })
      expect(reply.status).toBe(200)
      expect(reply.text.length).toBe(text.length)
      expect(reply.text === text).toBe(true)
    }))

  it.scopedLive("puts paths under the base URL's own path", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(() => echo)
      const send = yield* exchangesTo(`${server.url}/ingest/`)
      yield* send({ method: "GET", path: "/v2/datasets/7" })
      expect(server.arrivals[0]!.url).toBe("/ingest/v2/datasets/7")
    }))

  it.scopedLive("a refused connection is an ExchangeError naming the request", () =>
    Effect.gen(function*() {
      const send = yield* exchangesTo("http://127.0.0.1:1")
      const error = yield* Effect.flip(send({ method: "GET", path: "/nothing" }))
      expect(error._tag).toBe("ExchangeError")
      expect(error.message).toMatch(/^GET \/nothing: /)
    }))

  it.scopedLive("an answer that does not come within the attempt timeout is an ExchangeError", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(() => () => {})
      const send = yield* exchangesTo(server.url, "150 millis")
      const started = Date.now()
      const error = yield* Effect.flip(send({ method: "GET", path: "/slow" }))
      expect(error._tag).toBe("ExchangeError")
      expect(Date.now() - started).toBeGreaterThanOrEqual(140)
    }))

  it.scopedLive("interrupting an exchange aborts it: the server sees the connection close", () =>
    Effect.gen(function*() {
      let closed: (() => void) | undefined
      const seenClose = new Promise<void>((resolve) => (closed = resolve))
      const server = yield* scriptedServer(() => (_arrival, _res, req: IncomingMessage) => req.socket.once("close", () => closed!()))
      const send = yield* exchangesTo(server.url)
      const fiber = yield* Effect.fork(send({ method: "GET", path: "/slow" }))
      while (server.arrivals.length === 0) yield* Effect.sleep("5 millis")
      yield* Fiber.interrupt(fiber)
      yield* Effect.promise(() => seenClose)
    }))
})
