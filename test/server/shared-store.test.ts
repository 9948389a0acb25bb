/**
 * Several `tributary serve` processes on one Postgres database behave as one service: real
 * processes (the built CLI), a real database, real HTTP on loopback.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { createServer, type Server, Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, startServe, type RunningServer } from "../support/cli.js"
import { testSeed } from "../support/server.js"
import { databaseUrl } from "../support/services.js"
import { adminQuery, freshSchema } from "../support/stores.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-shared-"))
const seedFile = join(dir, "seed.json")
writeFileSync(seedFile, JSON.stringify(testSeed))

const schema = freshSchema()
const serveArgs = (url = databaseUrl(), extra: ReadonlyArray<string> = []) => [
  "--port",
  "0",
  "--seed",
  seedFile,
  "--database-url",
  url,
  "--database-schema",
  schema,
  "--ingestion-lease",
  "1 second",
  ...extra
]

afterAll(() => Effect.runPromise(adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)))

const call = async (server: RunningServer, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
  const response = await fetch(`${server.url}${path}`, {
    method: init.method ?? "GET",
    headers: { "x-api-key": "acme-admin", "content-type": "application/json", ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
  })
  const text = await response.text()
  return { status: response.status, body: JSON.parse(text) as any }
}

const records = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ id: `r-${from + i}`, n: from + i }))

const until = async <A>(get: () => Promise<A>, done: (a: A) => boolean, timeoutMs = 20_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await get()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`gave up waiting; last: ${JSON.stringify(value).slice(0, 500)}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const newDataset = async (server: RunningServer) => {
  const source = await call(server, "/v1/data-sources", { method: "POST", body: { title: "Shop" } })
  const dataset = await call(server, "/v1/datasets", { method: "POST", body: { title: "Orders", dataSourceId: source.body.id, primaryKeys: ["id"] } })
  return { dataSourceId: source.body.id as number, datasetId: dataset.body.id as string }
}

const ingestionsOf = async (server: RunningServer, datasetId: string) =>
  (await call(server, `/v2/datasets/${datasetId}/ingestions?pageSize=100`)).body.data

/**
 * Posts `count` ingestions of a few keys to `servers` in turn, each once the one before was
 * accepted; then every ingestion must have succeeded, none ended before one accepted before it
 * (acceptance + duration), and the rows must be each key's last record.
 */
const expectOrder = async (servers: ReadonlyArray<RunningServer>, count: number) => {
  const { datasetId } = await newDataset(servers[0]!)
  const last = new Map<string, { id: string; v: number }>()
  const ids: Array<string> = []
  for (let i = 0; i < count; i++) {
    // Keys k0..k6, three or four per ingestion, one of them twice (the later one counts).
    const batch = [0, 1, 2].map((r) => ({ id: `k${(i * 3 + r * 2) % 7}`, v: i * 10 + r }))
    batch.push({ id: batch[0]!.id, v: i * 10 + 9 })
    for (const record of batch) last.set(record.id, record)
    const answer = await call(servers[i % servers.length]!, `/v1/datasets/${datasetId}/data`, { method: "POST", body: { records: batch } })
    expect(answer.status).toBe(200)
    ids.push(answer.body.ingestionId)
  }
  const reader = servers[servers.length - 1]!
  const listAll = async () => {
    const items: Array<{ id: string; status: string; initiatedAt: string; duration: number }> = []
    for (let page = 0; page * 100 < count; page++) {
      items.push(...(await call(reader, `/v2/datasets/${datasetId}/ingestions?pageSize=100&page=${page}`)).body.data.items)
    }
    return items.reverse()
  }
  const ended = await until(listAll, (items) => items.length === count && items.every((i) => i.status === "success"), 15_000)
  expect(ended.map((i) => i.id)).toEqual(ids)
  const endTimes = ended.map((i) => Date.parse(i.initiatedAt) + i.duration)
  const overtaken = endTimes.findIndex((end, i) => i > 0 && end < endTimes[i - 1]!)
  expect(overtaken, `ingestion ${overtaken} ended before the one accepted before it`).toBe(-1)
  const rows = await call(reader, `/v2/datasets/${datasetId}/data?sortBy=id&sortOrder=asc&pageSize=100`)
  expect(rows.body.data.items).toEqual([...last.values()].sort((x, y) => x.id.localeCompare(y.id)))
}

describe("several serve processes on one Postgres database (real processes)", () => {
  let a: RunningServer
  let b: RunningServer
  const started: Array<RunningServer> = []

  beforeAll(async () => {
    // Started at once: their migrations take turns.
    ;[a, b] = await Promise.all([startServe(serveArgs()), startServe(serveArgs())])
    started.push(a, b)
  }, 60_000)

  afterAll(async () => {
    await Promise.all(started.map((server) => server.stop()))
  })

  it("a resource made on one is visible on the other, and both say where the data is", async () => {
    expect(a.output()).toContain(`store: Postgres ${databaseUrl()} (schema ${schema})`)
    const { dataSourceId, datasetId } = await newDataset(a)
    const source = await call(b, `/v2/data-sources/${dataSourceId}`)
    expect(source.status).toBe(200)
    expect(source.body.data.name).toBe("Shop")
    const dataset = await call(b, `/v2/datasets/${datasetId}`)
    expect(dataset.body.data).toMatchObject({ name: "Orders", dataSourceId })
  })

  it("50 concurrent ingests with one Idempotency-Key, split across both, make exactly one ingestion", async () => {
    const { datasetId } = await newDataset(a)
    const body = { records: records(0, 100) }
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call(i % 2 === 0 ? a : b, `/v2/datasets/${datasetId}/data`, { method: "POST", body, headers: { "idempotency-key": "same-key" } }))
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array(50).fill(200))
    const ids = new Set(answers.map((answer) => answer.body.data.ingestionId))
    expect(ids.size).toBe(1)
    const listed = await ingestionsOf(b, datasetId)
    expect(listed.pagination.totalItems).toBe(1)
    const detail = await until(() => call(a, `/v2/datasets/${datasetId}`), (d) => d.body.data.rowCount === 100)
    expect(detail.body.data.ingestionInfo.status).toBe("success")
    // The same key with another body is refused on either server.
    const reused = await call(b, `/v2/datasets/${datasetId}/data`, {
      method: "POST",
      body: { records: records(0, 1) },
      headers: { "idempotency-key": "same-key" }
    })
    expect(reused.status).toBe(422)
  })

  it("kill -9 of a server right after it accepted ingestions: the others finish every one of them, once", async () => {
    const { datasetId } = await newDataset(a)
    // A third server that takes ingestions and is killed at once; only it and `a` have workers.
    const c = await startServe(serveArgs())
    started.push(c)
    const accepted: Array<string> = []
    for (let i = 0; i < 20; i++) {
      const answer = await call(c, `/v1/datasets/${datasetId}/data`, { method: "POST", body: { records: records(i * 50, 50) } })
      expect(answer.status).toBe(200)
      accepted.push(answer.body.ingestionId)
    }
    c.child.kill("SIGKILL")
    const finished = await until(
      () => ingestionsOf(a, datasetId),
      (page) => page.items.length === 20 && page.items.every((i: { status: string }) => i.status === "success"),
      30_000
    )
    expect(new Set(finished.items.map((i: { id: string }) => i.id))).toEqual(new Set(accepted))
    const detail = await call(b, `/v2/datasets/${datasetId}`)
    expect(detail.body.data.rowCount).toBe(1000)
    // Every ingestion appended its own 50 rows once: none was applied twice.
    for (const id of accepted) {
      const one = await call(a, `/v2/datasets/${datasetId}/ingestions/${id}`)
      expect(one.body.data.summary.ingestion).toMatchObject({ appendedRecordCount: 50, overwrittenRecordCount: 0 })
    }
  }, 60_000)

  it("a restarted server still has everything, with the same ids; its seed changes nothing", async () => {
    const { dataSourceId, datasetId } = await newDataset(a)
    await call(a, `/v1/datasets/${datasetId}/data`, { method: "POST", body: { records: records(0, 10) } })
    await until(() => call(a, `/v2/datasets/${datasetId}`), (d) => d.body.data.rowCount === 10)
    const before = await call(a, "/v2/auth/validate-key")
    await a.stop()
    a = await startServe(serveArgs())
    started.push(a)
    expect((await call(a, "/v2/auth/validate-key")).body.data).toEqual(before.body.data)
    expect((await call(a, `/v2/data-sources/${dataSourceId}`)).body.data.name).toBe("Shop")
    const rows = await call(a, `/v2/datasets/${datasetId}/data?sortBy=n&sortOrder=desc&pageSize=3`)
    expect(rows.body.data.items.map((r: { n: number }) => r.n)).toEqual([9, 8, 7])
    expect(rows.body.data.pagination.totalItems).toBe(10)
    const accounts = await call(a, "/v1/accounts")
    expect(accounts.body.accounts.map((x: { name: string }) => x.name)).toEqual(["Acme", "Client Co"])
  }, 60_000)

  it("ingestions of overlapping keys, accepted by both in turn, apply in acceptance order (4 workers each)", async () => {
    await expectOrder([a, b], 150)
  }, 30_000)

  it("so they do with random processing delays (--faults processing=0-200ms) on both", async () => {
    const delayed = await Promise.all([1, 2].map((seed) => startServe(serveArgs(databaseUrl(), ["--faults", `processing=0-200ms,seed=${seed}`]))))
    started.push(...delayed)
    await expectOrder(delayed, 40)
  }, 30_000)

  it("--workers 0 without --database-url is a usage error", async () => {
    const finished = await runCli(["serve", "--port", "0", "--workers", "0"])
    expect(finished.code).toBe(2)
    expect(finished.stderr).toContain("--workers 0 needs --database-url")
  })
})

/**
 * A TCP proxy to Postgres that the test can cut and restore: the database "goes away" for the
 * server behind it, while the machine's Postgres keeps running for everyone else.
 */
const makeProxy = (target: { host: string; port: number }) => {
  let server: Server | undefined
  const sockets = new Set<Socket>()
  let port = 0
  const open = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = new Socket()
        sockets.add(client)
        sockets.add(upstream)
        upstream.connect(target.port, target.host)
        client.pipe(upstream).pipe(client)
        const close = () => {
          client.destroy()
          upstream.destroy()
          sockets.delete(client)
          sockets.delete(upstream)
        }
        client.on("error", close).on("close", close)
        upstream.on("error", close).on("close", close)
      })
      server.listen(port, "127.0.0.1", () => {
        port = (server!.address() as { port: number }).port
        resolve()
      })
    })
  const cut = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy()
      sockets.clear()
      server!.close(() => resolve())
    })
  return { open, cut, port: () => port }
}

describe("the database going away under a server", () => {
  it("answers 503 with the envelope meanwhile, loses no accepted ingestion, and recovers", async () => {
    const target = new URL(databaseUrl())
    const proxy = makeProxy({ host: target.hostname, port: Number(target.port || 5432) })
    await proxy.open()
    const viaProxy = new URL(databaseUrl())
    viaProxy.port = String(proxy.port())
    const server = await startServe(serveArgs(viaProxy.toString()))
    try {
      const { datasetId } = await newDataset(server)
      const first = await call(server, `/v1/datasets/${datasetId}/data`, { method: "POST", body: { records: records(0, 10) } })
      expect(first.status).toBe(200)
      await proxy.cut()
      const during = await Promise.all([
        call(server, `/v1/datasets/${datasetId}/data`, { method: "POST", body: { records: records(10, 10) } }),
        call(server, `/v2/datasets/${datasetId}`),
        call(server, "/v1/auth/validate-key")
      ])
      for (const answer of during) {
        expect(answer.status).toBe(503)
        expect(answer.body).toMatchObject({ status: "error", errors: [{ code: "service_unavailable", type: "server" }] })
        expect(typeof answer.body.requestId).toBe("string")
      }
      await proxy.open()
      // The client retries a 503; here, by hand: the same request now goes through.
      const retried = await until(
        () => call(server, `/v1/datasets/${datasetId}/data`, { method: "POST", body: { records: records(10, 10) } }),
        (answer) => answer.status === 200
      )
      expect(retried.status).toBe(200)
      const detail = await until(() => call(server, `/v2/datasets/${datasetId}`), (d) => d.body.data?.rowCount === 20, 30_000)
      expect(detail.body.data.ingestionInfo.status).toBe("success")
      const listed = await ingestionsOf(server, datasetId)
      expect(listed.items.map((i: { status: string }) => i.status)).toEqual(["success", "success"])
    } finally {
      await server.stop()
      await proxy.cut().catch(() => undefined)
    }
  }, 60_000)
})
