import { describe, expect, it } from "@effect/vitest"
import { HttpClientRequest } from "@effect/platform"
import { Context, Effect, Layer, Redacted, Tracer } from "effect"
import { TributaryClient } from "../../src/client/index.js"
import { json, scriptedServer } from "../support/http.js"

/** Runs `use` with a tracer that records the names of the spans it starts. */
const withRecordedSpans = <A, E>(use: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const names: Array<string> = []
    const native = yield* Effect.tracer
    const recording = Tracer.make({
      span: (name, ...rest) => {
        names.push(name)
        return native.span(name, ...rest)
      },
      context: native.context
    })
    yield* Effect.withTracer(use, recording)
    return names
  })

const clientOf = (url: string, traceRequests?: boolean) =>
  Layer.build(TributaryClient.layer({ baseUrl: url, apiKey: Redacted.make("k"), traceRequests })).pipe(
    Effect.map(Context.get(TributaryClient))
  )

describe("client tracing (against a real HTTP server on loopback)", () => {
  it.scopedLive("traces typed calls, and raw http calls and exchanges only when traceRequests is on", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(() => (_arrival, res) => json(res, 200, { requestId: "r", status: "success" }))
      const quiet = yield* clientOf(server.url)
      const traced = yield* clientOf(server.url, true)
      const raw = (client: typeof quiet) => client.http.execute(HttpClientRequest.get("/v1/auth/validate-key"))
      // A body as bytes, as the pipeline sends it.
      const exchange = (client: typeof quiet) =>
        client.exchanges({ method: "POST", path: "/v1/auth/validate-key", body: Buffer.from("{\"é\":1}") })

      expect(yield* withRecordedSpans(raw(quiet))).toEqual([])
      expect(yield* withRecordedSpans(raw(traced))).toEqual(["http.client GET"])
      expect(yield* withRecordedSpans(exchange(quiet))).toEqual([])
      expect(yield* withRecordedSpans(exchange(traced))).toEqual(["http.client POST"])
      expect(server.arrivals.map((arrival) => arrival.body).slice(-2)).toEqual(["{\"é\":1}", "{\"é\":1}"])
      const typed = yield* withRecordedSpans(quiet.v1.v1Auth.validateKey())
      expect(typed.some((name) => name.startsWith("http.client"))).toBe(true)
    }))
})
