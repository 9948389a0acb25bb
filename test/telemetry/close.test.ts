/**
 * Closing the telemetry layer loses no span: an export under way when the layer closes is let
 * finish, and what is left goes out after it. A real HTTP receiver on loopback that answers
 * each export 400 ms late and keeps only the exports it answered (an export the client gave up
 * on is not kept, as a collector would not have it either).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, ManagedRuntime } from "effect"
import { describe, expect, it } from "vitest"
import * as Telemetry from "../../src/telemetry/index.js"

const slowReceiver = async (delayMillis: number) => {
  const names: Array<string> = []
  const server = createServer((req, res) => {
    let body = ""
    let gone = false
    res.on("close", () => {
      if (!res.writableEnded) gone = true
    })
    req.setEncoding("utf8")
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () =>
      setTimeout(() => {
        if (gone) return
        if (req.url === "/v1/traces") {
          for (const resource of JSON.parse(body).resourceSpans ?? []) {
            for (const scope of resource.scopeSpans ?? []) for (const span of scope.spans ?? []) names.push(span.name)
          }
        }
        res.writeHead(200, { "content-type": "application/json" })
        res.end("{}")
      }, delayMillis))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    names,
    close: () => {
      server.closeAllConnections()
      server.close()
    }
  }
}

describe("telemetry layer close", () => {
  it("a span in an export still under way at the close reaches the collector, and so does one ended just before", async () => {
    const receiver = await slowReceiver(400)
    const runtime = ManagedRuntime.make(Telemetry.layer({ endpoint: receiver.url, serviceName: "closing", exportInterval: "50 millis" }))
    try {
      await runtime.runPromise(Effect.withSpan(Effect.void, "early"))
      // The next periodic export takes "early" and waits 400 ms for its answer.
      await new Promise((resolve) => setTimeout(resolve, 150))
      await runtime.runPromise(Effect.withSpan(Effect.void, "late"))
      await runtime.dispose()
      expect([...receiver.names].sort()).toEqual(["early", "late"])
    } finally {
      receiver.close()
    }
  }, 30_000)
})
