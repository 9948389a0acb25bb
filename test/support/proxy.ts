/**
 * An HTTP proxy on loopback in front of a server: it records every request that passes (method,
 * path, status, when), and may answer a request itself instead of passing it on (`intercept`),
 * so a test can count what a client sends and change what the service looks like while a run
 * goes on.
 */
import { Agent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface Passed {
  readonly at: number
  readonly method: string
  /** The path with its query. */
  readonly url: string
  /** The status the client got (from the target, or from `intercept`); 0 when none was written. */
  status: number
  /** Answered by `intercept`, not by the target. */
  readonly intercepted: boolean
  /** When its answer was written out (or the connection closed); undefined while open. */
  end: number | undefined
}

export interface Proxy {
  readonly url: string
  readonly requests: Array<Passed>
  /** Answers the request itself when it returns true (it must then end `res`). */
  intercept: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined
  /** Milliseconds to hold a request before passing it on (a service's latency); none unless set. */
  delay: ((req: IncomingMessage) => number) | undefined
  readonly close: () => Promise<void>
}

/** Starts a proxy to `target` (`http://host:port`) on a free loopback port. */
export const startProxy = (target: string): Promise<Proxy> =>
  new Promise((resolve, reject) => {
    const to = new URL(target)
    const agent = new Agent({ keepAlive: true, maxSockets: 256 })
    const proxy: { -readonly [K in keyof Proxy]: Proxy[K] } = {
      url: "",
      requests: [],
      intercept: undefined,
      delay: undefined,
      close: () => Promise.resolve()
    }
    const server = createServer((req, res) => {
      const intercepted = proxy.intercept?.(req, res) ?? false
      const passed: Passed = { at: Date.now(), method: req.method ?? "", url: req.url ?? "", status: 0, intercepted, end: undefined }
      proxy.requests.push(passed)
      res.once("close", () => (passed.end = Date.now()))
      if (intercepted) {
        passed.status = res.statusCode
        req.resume()
        return
      }
      const forward = () => {
        const upstream = httpRequest({
          host: to.hostname,
          port: Number(to.port),
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: to.host },
          agent
        }, (answer) => {
          passed.status = answer.statusCode ?? 0
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        })
        upstream.on("error", () => res.destroy())
        req.pipe(upstream)
      }
      const wait = proxy.delay?.(req) ?? 0
      if (wait > 0) setTimeout(forward, wait)
      else forward()
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      proxy.close = () =>
        new Promise<void>((done) => {
          agent.destroy()
          server.closeAllConnections()
          server.close(() => done())
        })
      resolve(proxy)
    })
  })
