/**
 * The port is bound before the API's handler is attached (its layers take a while to build):
 * a request that arrives in between waits and is answered, in order, once the handler is there.
 * Before, node dropped it and its client waited forever. Real HTTP on loopback.
 */
import { request } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import { FrontServer } from "../../src/server/http/front.js"

const get = (port: number, path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const sent = request({ host: "127.0.0.1", port, path }, (response) => {
      let body = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (body += chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }))
    })
    sent.on("error", reject)
    sent.end()
  })

describe("a server still starting", () => {
  it("answers the requests that came before its handler, in order, once the handler is attached", async () => {
    const server = new FrontServer({ maxBodyBytes: 1024, requestTimeoutMillis: 10_000 })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as AddressInfo
    try {
      const seen: Array<string> = []
      const early = [get(port, "/first"), get(port, "/second")]
      // Both requests are in before the handler is (a start-up that takes a while).
      await new Promise((resolve) => setTimeout(resolve, 200))
      server.on("request", (req, res) => {
        seen.push(req.url ?? "")
        res.end(`answered ${req.url}`)
      })
      expect(await Promise.all(early)).toEqual([
        { status: 200, body: "answered /first" },
        { status: 200, body: "answered /second" }
      ])
      expect(seen).toEqual(["/first", "/second"])
      // And later requests go straight to it.
      expect(await get(port, "/later")).toEqual({ status: 200, body: "answered /later" })
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
