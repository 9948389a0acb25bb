import type { IncomingMessage } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Chunk, Effect, Fiber, Stream } from "effect"
import { Agent } from "undici"
import { Transport } from "../../src/client/index.js"
import { json, scriptedServer, type Answer } from "../support/http.js"

/** The direct client on a dispatcher that lives as long as the test. */
const directClient = Effect.map(
  Effect.acquireRelease(Effect.sync(() => new Agent()), (agent) => Effect.promise(() => agent.destroy())),
  Transport.direct
)

const echo: Answer = (arrival, res) =>
  json(res, 201, { method: arrival.method, url: arrival.url, body: arrival.body, type: arrival.headers["content-type"] ?? null }, {
    "x-custom": "yes",
    "set-cookie": "session=abc; Path=/"
  })

describe("Transport.direct (a real HTTP server on loopback)", () => {
  it.scopedLive("sends method, path, query and headers, and reads status, headers, cookies, text and json", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(() => echo)
      const client = yield* directClient
      const response = yield* client.execute(
        HttpClientRequest.get(`${server.url}/v2/things`, { urlParams: { page: 2, q: "a b" }, headers: { "x-api-key": "k" } })
      )
      expect(response.status).toBe(201)
      expect(response.headers["x-custom"]).toBe("yes")
      expect(response.cookies.cookies["session"]?.value).toBe("abc")
      const body = yield* response.json
      expect(body).toEqual({ method: "GET", url: "/v2/things?page=2&q=a+b", body: "", type: null })
      expect(yield* response.text).toBe(JSON.stringify(body)) // a second read answers the same text
      expect(server.arrivals[0]!.headers["x-api-key"]).toBe("k")
    }))

  it.scopedLive("sends string, byte, stream and form bodies with their content type", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(() => echo)
      const client = yield* directClient
      const post = (body: HttpBody.HttpBody) =>
        Effect.flatMap(client.execute(HttpClientRequest.post(`${server.url}/data`, { body })), (r) => r.json)
      expect(yield* post(HttpBody.raw("{\"a\":1}", { contentType: "application/json" }))).toMatchObject({ body: "{\"a\":1}", type: "application/json" })
      expect(yield* post(HttpBody.text("héllo", "text/plain"))).toMatchObject({ body: "héllo", type: "text/plain" })
      const streamed = HttpBody.stream(Stream.make(new TextEncoder().encode("one,"), new TextEncoder().encode("two")), "text/csv")
      expect(yield* post(streamed)).toMatchObject({ body: "one,two", type: "text/csv" })
      const form = new FormData()
      form.set("name", "tributary")
      const multipart = (yield* post(HttpBody.formData(form))) as { body: string; type: string }
      expect(multipart.type).toMatch(/^multipart\/form-data; boundary=/)
      expect(multipart.body).toContain("name=\"name\"")
      expect(multipart.body).toContain("tributary")
    }))

  it.scopedLive("reads a body as a stream of bytes", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(() => echo)
      const client = yield* directClient
      const response = yield* client.execute(HttpClientRequest.get(`${server.url}/bytes`))
      const bytes = yield* Stream.runCollect(response.stream)
      const text = Buffer.concat(Chunk.toReadonlyArray(bytes)).toString("utf8")
      expect(JSON.parse(text)).toMatchObject({ url: "/bytes" })
    }))

  it.scopedLive("a refused connection is a RequestError with reason Transport", () =>
    Effect.gen(function*() {
      const client = yield* directClient
      const error = yield* Effect.flip(client.execute(HttpClientRequest.get("http://127.0.0.1:1/nothing")))
      expect(error._tag).toBe("RequestError")
      expect(error.reason).toBe("Transport")
    }))

  it.scopedLive("a bad URL is a RequestError with reason InvalidUrl", () =>
    Effect.gen(function*() {
      const client = yield* directClient
      const error = yield* Effect.flip(client.execute(HttpClientRequest.get("not a url")))
      expect(error.reason).toBe("InvalidUrl")
    }))

  it.scopedLive("interrupting a request aborts it: the server sees the connection close", () =>
    Effect.gen(function*() {
      let closed: (() => void) | undefined
      const seenClose = new Promise<void>((resolve) => (closed = resolve))
      const server = yield* scriptedServer(() => (_arrival, _res, req: IncomingMessage) => req.socket.once("close", () => closed!()))
      const client = yield* directClient
      const fiber = yield* Effect.fork(client.execute(HttpClientRequest.get(`${server.url}/slow`)))
      while (server.arrivals.length === 0) yield* Effect.sleep("5 millis")
      yield* Fiber.interrupt(fiber)
      yield* Effect.promise(() => seenClose)
    }))
})
