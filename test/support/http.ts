/**
 * A scripted HTTP server on loopback: real HTTP, answers chosen by the test.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

export interface Arrival {
  readonly at: number
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

export type Answer = (arrival: Arrival, res: ServerResponse, req: IncomingMessage) => void

export const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers })
  res.end(JSON.stringify(body))
}

/**
 * Starts a server that hands each request (with its body read) to `answer`, and records
 * every arrival. Closed with the scope.
 */
export const scriptedServer = (answer: (arrival: Arrival, index: number) => Answer) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly arrivals: Array<Arrival>; readonly close: () => void }>((resume) => {
      const arrivals: Array<Arrival> = []
      const server = createServer((req, res) => {
        let body = ""
        req.setEncoding("utf8")
        req.on("data", (chunk) => (body += chunk))
        req.on("end", () => {
          const arrival: Arrival = { at: Date.now(), method: req.method ?? "", url: req.url ?? "", headers: req.headers, body }
          arrivals.push(arrival)
          answer(arrival, arrivals.length - 1)(arrival, res, req)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, arrivals, close: () => server.close() }))
      })
    }),
    (server) => Effect.sync(() => server.close())
  )
