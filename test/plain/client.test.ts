/**
 * The plain client against a real reference server on loopback (and, for retries and
 * aborts, a scripted HTTP server): Promise methods over v1 and v2, errors as `Error`s with
 * the service's fields, an `AbortSignal` on every call, retries under one idempotency key.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, ManagedRuntime, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiError, ConnectionError, createClient, InvalidRequestError, type Tributary, TributaryError } from "../../src/plain/index.js"
import { json, scriptedServer } from "../support/http.js"
import { serverLayer, ServerUrl } from "../support/server.js"

const server = ManagedRuntime.make(serverLayer())
let tributary: Tributary

beforeAll(async () => {
  tributary = createClient({ baseUrl: await server.runPromise(ServerUrl), apiKey: "acme-admin" })
})
afterAll(async () => {
  await tributary.close()
  await server.dispose()
})

/** A scripted server for one test, closed after it. */
const scripted = async (answer: Parameters<typeof scriptedServer>[0]) => {
  const scope = Effect.runSync(Scope.make())
  const started = await Effect.runPromise(Scope.extend(scriptedServer(answer), scope))
  return { ...started, close: () => Effect.runPromise(Scope.close(scope, Effect.void.pipe(Effect.exit) as any)) }
}

describe("plain client (a real reference server on loopback)", () => {
  it("answers v1 and v2 operations as Promises of their decoded bodies", async () => {
    const { accounts } = await tributary.v1.v1Accounts.listAccounts()
    expect(accounts.map((account) => account.name)).toContain("Acme")
    const source = await tributary.v2.v2DataSources.create({ payload: { name: "plain" } })
    const dataset = await tributary.v2.v2Datasets.create({
      payload: { name: "plain", dataSourceId: source.data.id, schema: [{ id: "id", dataType: "string" }], primaryKey: ["id"] }
    })
    const read = await tributary.v2.v2Datasets.get({ path: { id: dataset.data.id } })
    expect(read.data.name).toBe("plain")
  })

  it("rejects with an ApiError carrying status, code, field and requestId, and the caller's frames", async () => {
    const error = await tributary.v2.v2Datasets.get({ path: { id: 999_999 } }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toBeInstanceOf(TributaryError)
    expect(error).toBeInstanceOf(Error)
    const apiError = error as ApiError
    expect(apiError.status).toBe(404)
    expect(apiError.code).toBe("not_found")
    expect(apiError.requestId).toMatch(/^[0-9a-f-]{36}$/)
    expect(apiError.name).toBe("ApiError")
    // Nothing of the fiber: no Cause, no FiberFailure; the caller's file is in the stack.
    expect(apiError.stack).not.toMatch(/Cause|FiberFailure|fiberRuntime/)
    expect(apiError.stack).toContain("client.test.ts")
    expect(Object.keys(apiError).sort()).toEqual(["code", "errors", "field", "requestId", "status"])

    const invalid = await tributary.v1.v1DataSources.createDataSource({ payload: { accountId: 1, title: 5 as any } as any }).catch((e: unknown) => e)
    expect(invalid).toBeInstanceOf(InvalidRequestError)
    expect((invalid as InvalidRequestError).message).toContain("title")
    // The service's own check: an unknown time zone.
    const refused = await tributary.v1.v1DataSources.createDataSource({ payload: { accountId: 1, title: "t", timezone: "Mars/Olympus" } as any })
      .catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(ApiError)
    expect([(refused as ApiError).status, (refused as ApiError).field]).toEqual([400, "timezone"])
  })

  it("rejects with a ConnectionError when nothing answers, after its retries", async () => {
    const closed = createClient({ baseUrl: "http://127.0.0.1:9", apiKey: "k", maxRetries: 1, retry: { baseDelay: "1 millis" } })
    const error = await closed.v1.v1Accounts.listAccounts().catch((e: unknown) => e)
    await closed.close()
    expect(error).toBeInstanceOf(ConnectionError)
    expect((error as ConnectionError).code).toBe("transport")
  })

  it("retries a 503 under the same Idempotency-Key, and keeps a key the caller gives", async () => {
    const scriptedServer = await scripted((_arrival, index) => (_a, res) =>
      index % 2 === 0
        ? json(res, 503, { requestId: "r", status: "error", errors: [{ code: "unavailable", message: "busy" }] })
        : json(res, 200, { requestId: "r", status: "success", data: { id: 7, name: "s" } })
    )
    const client = createClient({ baseUrl: scriptedServer.url, apiKey: "k", retry: { baseDelay: "1 millis" } })
    try {
      await client.v2.v2DataSources.create({ payload: { name: "s" } }).catch(() => undefined)
      await client.v2.v2DataSources.create({ payload: { name: "s" }, headers: { "idempotency-key": "mine" } }).catch(() => undefined)
    } finally {
      await client.close()
      await scriptedServer.close()
    }
    const keys = scriptedServer.arrivals.map((arrival) => arrival.headers["idempotency-key"])
    expect(keys).toHaveLength(4)
    expect(keys[0]).toBeTypeOf("string")
    expect(keys[1]).toBe(keys[0])
    expect(keys.slice(2)).toEqual(["mine", "mine"])
  })

  it("aborts a call in flight with the signal's reason", async () => {
    const controller = new AbortController()
    let closed: () => void = () => undefined
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve))
    // Answers nothing; aborts the call once its request arrived, and sees the connection go.
    const silent = createServer((req) => {
      req.on("close", () => closed())
      controller.abort(new Error("the caller gave up"))
    })
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    const client = createClient({ baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, apiKey: "k" })
    try {
      const error = await client.v1.v1Accounts.listAccounts({ signal: controller.signal }).catch((e: unknown) => e)
      expect((error as Error).message).toBe("the caller gave up")
      await connectionClosed
      // An already aborted signal: nothing is sent.
      const again = await client.v1.v1Accounts.listAccounts({ signal: controller.signal }).catch((e: unknown) => e)
      expect((again as Error).message).toBe("the caller gave up")
    } finally {
      await client.close()
      silent.closeAllConnections()
      silent.close()
    }
  })
})
