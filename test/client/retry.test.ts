import { describe, expect, it } from "@effect/vitest"
import { HttpClientRequest } from "@effect/platform"
import { Context, Duration, Effect, Fiber, Layer, Redacted } from "effect"
import { json, scriptedServer, type Answer } from "../support/http.js"
import { backoffMillis, defaultRetryPolicy, retryAfterMillis, TributaryClient } from "../../src/client/index.js"

const envelope = (status: number) => ({
  requestId: "r",
  status: "error",
  errors: [{ code: "x", message: `answered ${status}`, type: "server" }]
})
const ok: Answer = (_arrival, res) => json(res, 200, { requestId: "r", status: "success" })
const failWith = (status: number, headers: Record<string, string> = {}): Answer => (_arrival, res) =>
  json(res, status, envelope(status), headers)
const dropConnection: Answer = (_arrival, _res, req) => req.socket.destroy()
const neverAnswer: Answer = () => {}
const stallBody: Answer = (_arrival, res) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.write(`{"requestId":"r",`)
}

/** Answers the n-th request with `script[n]`; the last entry repeats. */
const scripted = (script: ReadonlyArray<Answer>) => scriptedServer((_arrival, n) => script[Math.min(n, script.length - 1)]!)

/** A client whose connection pool lives as long as the test's scope. */
const clientOf = (url: string, maxRetries = 5, attemptTimeout: Duration.DurationInput = "30 seconds") =>
  Layer.build(
    TributaryClient.layer({
      baseUrl: url,
      apiKey: Redacted.make("k"),
      retry: { maxRetries, baseDelay: "5 millis", maxDelay: "20 millis", attemptTimeout }
    })
  ).pipe(Effect.map(Context.get(TributaryClient)))

describe("client retries (against a real HTTP server on loopback that fails first)", () => {
  it.scopedLive("retries 5xx until the answer is good", () =>
    Effect.gen(function*() {
      const server = yield* scripted([failWith(503), failWith(500), failWith(502), ok])
      const client = yield* clientOf(server.url)
      const answer = yield* client.v1.v1Auth.validateKey()
      expect(answer.status).toBe("success")
      expect(server.arrivals).toHaveLength(4)
    }))

  it.scopedLive("retries a dropped connection (transport error)", () =>
    Effect.gen(function*() {
      const server = yield* scripted([dropConnection, ok])
      const client = yield* clientOf(server.url)
      yield* client.v1.v1Auth.validateKey()
      expect(server.arrivals).toHaveLength(2)
    }))

  it.scopedLive("retries an attempt that gets no answer within attemptTimeout", () =>
    Effect.gen(function*() {
      const server = yield* scripted([neverAnswer, ok])
      const client = yield* clientOf(server.url, 5, "200 millis")
      const answer = yield* client.v1.v1Auth.validateKey()
      expect(answer.status).toBe("success")
      expect(server.arrivals).toHaveLength(2)
      expect(server.arrivals[1]!.at - server.arrivals[0]!.at).toBeGreaterThanOrEqual(190)
    }))

  it.scopedLive("reports a transport error once the timed-out attempts are spent", () =>
    Effect.gen(function*() {
      const server = yield* scripted([neverAnswer])
      const client = yield* clientOf(server.url, 1, "100 millis")
      const error = yield* Effect.flip(client.http.execute(HttpClientRequest.get("/v1/auth/validate-key")))
      expect(error._tag).toBe("RequestError")
      expect(error.reason).toBe("Transport")
      expect(server.arrivals).toHaveLength(2)
    }))

  it.scopedLive("fails the read of a body that stalls past attemptTimeout", () =>
    Effect.gen(function*() {
      const server = yield* scripted([stallBody])
      const client = yield* clientOf(server.url, 0, "150 millis")
      const response = yield* client.http.execute(HttpClientRequest.get("/v1/auth/validate-key"))
      const error = yield* Effect.flip(response.text)
      expect(error._tag).toBe("ResponseError")
    }))

  it.scopedLive("does not retry a 400; the caller gets the tagged error", () =>
    Effect.gen(function*() {
      const server = yield* scripted([failWith(400), ok])
      const client = yield* clientOf(server.url)
      const error = yield* Effect.flip(client.v1.v1Auth.validateKey())
      expect(error._tag).toBe("BadRequest")
      expect(server.arrivals).toHaveLength(1)
    }))

  it.scopedLive("gives up after maxRetries and reports the last answer", () =>
    Effect.gen(function*() {
      const server = yield* scripted([failWith(503)])
      const client = yield* clientOf(server.url, 2)
      const error = yield* Effect.flip(client.v1.v1Auth.validateKey())
      expect(error._tag).toBe("ServiceUnavailable")
      expect(server.arrivals).toHaveLength(3)
    }))

  it.scopedLive("honours Retry-After as a floor and pauses every other call of the client", () =>
    pausedBy429((client) => Effect.asVoid(client.v1.v1Auth.validateKey())))

  it.scopedLive("a Retry-After answered to a typed call pauses the raw http client too", () =>
    pausedBy429((client) => Effect.flatMap(client.http.execute(HttpClientRequest.get("/v1/auth/validate-key")), (r) => r.text)))

  it.scopedLive("a Retry-After answered to a typed call pauses the pipeline's exchanges too", () =>
    pausedBy429((client) => client.exchanges({ method: "GET", path: "/v1/auth/validate-key" })))
})

describe("exchange retries (the pipeline's hot path, against a real HTTP server on loopback)", () => {
  it.scopedLive("retries 5xx, 429 and dropped connections with the same request, then answers the good reply", () =>
    Effect.gen(function*() {
      const server = yield* scripted([failWith(503), dropConnection, failWith(429), ok])
      const client = yield* clientOf(server.url)
      const reply = yield* client.exchanges({ method: "POST", path: "/v2/datasets/7/data", body: "{\"records\":[]}", headers: { "idempotency-key": "key-1" } })
      expect(reply.status).toBe(200)
      expect(JSON.parse(reply.text)).toEqual({ requestId: "r", status: "success" })
      expect(server.arrivals).toHaveLength(4)
      for (const arrival of server.arrivals) {
        expect(arrival.body).toBe("{\"records\":[]}")
        expect(arrival.headers["idempotency-key"]).toBe("key-1")
        expect(arrival.headers["x-api-key"]).toBe("k")
      }
    }))

  it.scopedLive("does not retry a 4xx; answers it as it came", () =>
    Effect.gen(function*() {
      const server = yield* scripted([failWith(413), ok])
      const client = yield* clientOf(server.url)
      const reply = yield* client.exchanges({ method: "POST", path: "/v2/datasets/7/data", body: "{}" })
      expect(reply.status).toBe(413)
      expect(server.arrivals).toHaveLength(1)
    }))

  it.scopedLive("answers the last reply once the retries are spent, and fails when the last attempt got no answer", () =>
    Effect.gen(function*() {
      const failing = yield* scripted([failWith(503)])
      const client = yield* clientOf(failing.url, 2)
      expect((yield* client.exchanges({ method: "GET", path: "/x" })).status).toBe(503)
      expect(failing.arrivals).toHaveLength(3)

      const silent = yield* scripted([neverAnswer])
      const impatient = yield* clientOf(silent.url, 1, "100 millis")
      const error = yield* Effect.flip(impatient.exchanges({ method: "GET", path: "/x" }))
      expect(error._tag).toBe("ExchangeError")
      expect(silent.arrivals).toHaveLength(2)
    }))
})

/**
 * A typed call is answered 429 with `Retry-After: 1`; `second` is started while the client
 * is paused, and neither the retry nor `second` may reach the server before the second is up.
 */
const pausedBy429 = (second: (client: TributaryClient["Type"]) => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const server = yield* scripted([failWith(429, { "retry-after": "1" }), ok])
    const client = yield* clientOf(server.url)
    const first = yield* Effect.fork(client.v1.v1Auth.validateKey())
    while (server.arrivals.length === 0) yield* Effect.sleep("5 millis")
    yield* Effect.sleep("50 millis") // the 429 has been answered; the client is now paused
    yield* second(client)
    yield* Fiber.join(first)
    const [rateLimited, ...later] = server.arrivals.map((a) => a.at)
    expect(later).toHaveLength(2)
    for (const arrival of later) expect(arrival - rateLimited!).toBeGreaterThanOrEqual(950)
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
