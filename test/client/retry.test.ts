import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Redacted } from "effect"
import { backoffMillis, defaultRetryPolicy, retryAfterMillis, TributaryClient } from "../../src/client/index.js"

type Answer = (req: IncomingMessage, res: ServerResponse) => void

const ok: Answer = (_req, res) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify({ requestId: "r", status: "success" }))
}
const failWith = (status: number, headers: Record<string, string> = {}): Answer => (_req, res) => {
  res.writeHead(status, { "content-type": "application/json", ...headers })
  res.end(JSON.stringify({ requestId: "r", status: "error", errors: [{ code: "x", message: `answered ${status}`, type: "server" }] }))
}
const dropConnection: Answer = (req) => req.socket.destroy()

/**
 * A raw HTTP server that answers the n-th request with `script[n]` (the last entry
 * repeats) and records when each request arrived.
 */
const scriptedServer = (script: ReadonlyArray<Answer>) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; arrivals: Array<number> }>((resume) => {
      const arrivals: Array<number> = []
      const server = createServer((req, res) => {
        arrivals.push(Date.now())
        script[Math.min(arrivals.length - 1, script.length - 1)]!(req, res)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed(Object.assign({ url: `http://127.0.0.1:${port}`, arrivals }, { server })))
      })
    }),
    (s) =>
      Effect.async<void>((resume) => {
        ;(s as unknown as { server: ReturnType<typeof createServer> }).server.close(() => resume(Effect.void))
      })
  )

/** A client whose connection pool lives as long as the test's scope. */
const clientOf = (url: string, maxRetries = 5) =>
  Layer.build(
    TributaryClient.layer({
      baseUrl: url,
      apiKey: Redacted.make("k"),
      retry: { maxRetries, baseDelay: "5 millis", maxDelay: "20 millis" }
    })
  ).pipe(Effect.map(Context.get(TributaryClient)))

describe("client retries (against a real HTTP server on loopback that fails first)", () => {
  it.scopedLive("retries 5xx until the answer is good", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([failWith(503), failWith(500), failWith(502), ok])
      const client = yield* clientOf(server.url)
      const answer = yield* client.v1.v1Auth.validateKey()
      expect(answer.status).toBe("success")
      expect(server.arrivals).toHaveLength(4)
    }))

  it.scopedLive("retries a dropped connection (transport error)", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([dropConnection, ok])
      const client = yield* clientOf(server.url)
      yield* client.v1.v1Auth.validateKey()
      expect(server.arrivals).toHaveLength(2)
    }))

  it.scopedLive("does not retry a 400; the caller gets the tagged error", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([failWith(400), ok])
      const client = yield* clientOf(server.url)
      const error = yield* Effect.flip(client.v1.v1Auth.validateKey())
      expect(error._tag).toBe("BadRequest")
      expect(server.arrivals).toHaveLength(1)
    }))

  it.scopedLive("gives up after maxRetries and reports the last answer", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([failWith(503)])
      const client = yield* clientOf(server.url, 2)
      const error = yield* Effect.flip(client.v1.v1Auth.validateKey())
      expect(error._tag).toBe("ServiceUnavailable")
      expect(server.arrivals).toHaveLength(3)
    }))

  it.scopedLive("honours Retry-After as a floor and pauses every other call of the client", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([failWith(429, { "retry-after": "1" }), ok])
      const client = yield* clientOf(server.url)
      const first = yield* Effect.fork(client.v1.v1Auth.validateKey())
      while (server.arrivals.length === 0) yield* Effect.sleep("5 millis")
      yield* Effect.sleep("50 millis") // the 429 has been answered; the client is now paused
      const second = yield* Effect.fork(client.v1.v1Auth.validateKey())
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      const [rateLimited, ...later] = server.arrivals
      expect(later).toHaveLength(2)
      for (const arrival of later) expect(arrival - rateLimited!).toBeGreaterThanOrEqual(950)
    }))
})

describe("backoff arithmetic", () => {
  it("full jitter stays within the doubling ceiling and the cap", () => {
    expect(backoffMillis(defaultRetryPolicy, 0, 0.999)).toBeLessThan(100)
    expect(backoffMillis(defaultRetryPolicy, 3, 0.5)).toBe(400)
    expect(backoffMillis(defaultRetryPolicy, 20, 0.5)).toBe(5000)
    expect(backoffMillis(defaultRetryPolicy, 3, 0)).toBe(0)
  })

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-11-22T10:00:00Z")
    expect(retryAfterMillis("2", now)).toBe(2000)
    expect(retryAfterMillis("Sun, 22 Nov 2026 10:00:03 GMT", now)).toBe(3000)
    expect(retryAfterMillis("soon", now)).toBeUndefined()
    expect(retryAfterMillis(undefined, now)).toBeUndefined()
  })
})
