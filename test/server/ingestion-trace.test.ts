/**
 * The trace of an ingestion: a traced server stores the accepting request's `traceparent` with
 * the ingestion, and the worker's span that processes it links to that request's span (a
 * link, not a child: the request has been answered by then). Read back from a real OTLP
 * receiver on loopback, on the store the suite runs with.
 */
import { randomBytes } from "node:crypto"
import { Layer, ManagedRuntime } from "effect"
import { describe, expect, it } from "vitest"
import * as Telemetry from "../../src/telemetry/index.js"
import { attribute, receiver } from "../support/otlp.js"
import { serverLayer, ServerUrl } from "../support/server.js"

const call = async (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": "acme-admin", "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: await response.json() as any }
}

describe("ingestion tracing (a real OTLP receiver on loopback)", () => {
  it("the processing span links to the span of each request that carried its ingestions", async () => {
    const otlp = await receiver()
    const server = ManagedRuntime.make(
      serverLayer({ traced: true }).pipe(
        Layer.provide(Telemetry.layer({ endpoint: otlp.url, serviceName: "reference-server", exportInterval: "100 millis" }))
      )
    )
    const callers = [0, 1].map(() => ({ traceId: randomBytes(16).toString("hex"), spanId: randomBytes(8).toString("hex") }))
    const ingestionIds: Array<string> = []
    try {
      const base = await server.runPromise(ServerUrl)
      const source = await call(base, "POST", "/v2/data-sources", { name: "traced" })
      expect(source.status).toBe(200)
      const dataset = await call(base, "POST", "/v2/datasets", {
        name: "traced",
        dataSourceId: source.body.data.id,
        schema: [{ id: "id", dataType: "string" }],
        primaryKey: ["id"]
      })
      expect(dataset.status).toBe(200)
      const id = dataset.body.data.id
      for (const [i, caller] of callers.entries()) {
        const accepted = await call(base, "POST", `/v2/datasets/${id}/data`, { records: [{ id: `r${i}` }] }, {
          traceparent: `00-${caller.traceId}-${caller.spanId}-01`
        })
        expect(accepted.status).toBe(200)
        ingestionIds.push(accepted.body.data.ingestionId)
      }
      for (const ingestionId of ingestionIds) {
        for (let tries = 0;; tries++) {
          const detail = await call(base, "GET", `/v2/datasets/${id}/ingestions/${ingestionId}`)
          if (detail.body.data?.status === "success") break
          expect(tries).toBeLessThan(1_000)
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
      }
      // Every request's span and a processing span linked to each, before the server closes.
      await otlp.spansArrived((spans) =>
        callers.every((caller) => {
          const request = spans.find((span) => span.traceId === caller.traceId && span.parentSpanId === caller.spanId)
          return request !== undefined && spans.some((span) =>
            span.name === "ingestion.process" && (span.links ?? []).some((link) => link.spanId === request.spanId)
          )
        })
      )
    } finally {
      await server.dispose()
      otlp.close()
    }
    const processing = otlp.spans.filter((span) => span.name === "ingestion.process")
    expect(processing.length).toBeGreaterThan(0)
    for (const [i, caller] of callers.entries()) {
      // The server's span of the request: a child of the caller's.
      const request = otlp.spans.find((span) => span.traceId === caller.traceId && span.parentSpanId === caller.spanId)
      expect(request, `the server's span of request ${i}`).toBeDefined()
      const linking = processing.filter((span) =>
        (span.links ?? []).some((link) =>
          link.traceId === caller.traceId && link.spanId === request!.spanId &&
          attribute(link, "tributary.ingestion_id") === ingestionIds[i]
        )
      )
      expect(linking, `a processing span linked to request ${i}`).toHaveLength(1)
      // A span of its own trace, not a child of the request's.
      expect(linking[0]!.traceId).not.toBe(caller.traceId)
      expect(String(attribute(linking[0]!, "tributary.ingestion_ids")).split(",")).toContain(ingestionIds[i])
    }
  }, 60_000)
})
