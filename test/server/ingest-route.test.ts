/**
 * The ingest routes served in front of the API (`src/server/http/fastIngest.ts`) answer
 * exactly as the API does. Every request below goes to two real servers with the same seed:
 * one as served (the route in front) and one with an empty fault spec, which sends every
 * request through the API. Their answers must match: status, body, the headers that matter.
 */
import { request as httpRequest } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { pollUntil, serverLayer, ServerUrl } from "../support/server.js"

interface Answer {
  readonly status: number
  readonly body: unknown
  readonly contentType: string | null
  readonly replayed: string | null
  readonly requestIdHeader: string | null
}

const send = (url: string, path: string, init: RequestInit) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(`${url}${path}`, init)
    const text = await response.text()
    return {
      status: response.status,
      body: JSON.parse(text),
      contentType: response.headers.get("content-type"),
      replayed: response.headers.get("idempotent-replayed"),
      requestIdHeader: response.headers.get("x-request-id")
    }
  })

const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

const timestamp = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g

/** Ids become `id1`, `id2`... in order of first appearance, times `<time>` and durations `<ms>`, so two servers' answers compare. */
const normalizer = () => {
  const names = new Map<string, string>()
  return (answer: Answer) => {
    // A replay answers the first request's body, request id included.
    if (answer.replayed === null) expect(answer.requestIdHeader).toBe((answer.body as { requestId: string }).requestId)
    const { requestId: _, ...body } = answer.body as { requestId: string }
    // Durations are each server's own processing time.
    const text = JSON.stringify(body).replace(timestamp, "<time>").replace(/"duration":\d+/g, "\"duration\":\"<ms>\"").replace(uuid, (id) => {
      if (!names.has(id)) names.set(id, `id${names.size + 1}`)
      return names.get(id)!
    })
    return { status: answer.status, body: JSON.parse(text), contentType: answer.contentType, replayed: answer.replayed }
  }
}

const post = (key: string | undefined, body: string, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { ...(key === undefined ? {} : { "x-api-key": key }), "content-type": "application/json", ...headers },
  body
})

const records = (n: number) => JSON.stringify({ records: Array.from({ length: n }, (_, i) => ({ id: `r${i}`, amount: i })) })

/** Each case: a path and a request, given the dataset id of the server it goes to. */
const cases: ReadonlyArray<readonly [string, (datasetId: string) => readonly [string, RequestInit]]> = [
  ["v1 accepted", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", records(3))]],
  ["v2 accepted", (id) => [`/v2/datasets/${id}/data`, post("acme-editor", records(2))]],
  ["v1 with a key", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", records(1), { "idempotency-key": "k-1" })]],
  ["v1 replayed", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", records(1), { "idempotency-key": "k-1" })]],
  ["v1 key reused", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", records(2), { "idempotency-key": "k-1" })]],
  ["v2 with a key", (id) => [`/v2/datasets/${id}/data`, post("acme-editor", records(1), { "idempotency-key": "k-2" })]],
  ["v2 replayed", (id) => [`/v2/datasets/${id}/data`, post("acme-editor", records(1), { "idempotency-key": "k-2" })]],
  ["no key", (id) => [`/v1/datasets/${id}/data`, post(undefined, records(1))]],
  ["unknown key", (id) => [`/v2/datasets/${id}/data`, post("nope", records(1))]],
  ["viewer", (id) => [`/v1/datasets/${id}/data`, post("acme-viewer", records(1))]],
  ["another organization", (id) => [`/v2/datasets/${id}/data`, post("globex-admin", records(1))]],
  ["unknown dataset", () => [`/v1/datasets/${crypto.randomUUID()}/data`, post("acme-editor", records(1))]],
  ["v1 id not a UUID", () => ["/v1/datasets/nope/data", post("acme-editor", records(1))]],
  ["v2 id not an id", () => ["/v2/datasets/nope/data", post("acme-editor", records(1))]],
  ["bad key and bad id", () => ["/v1/datasets/nope/data", post("nope", "{")]],
  ["not JSON", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", "{\"records\": [")]],
  ["empty body", (id) => [`/v2/datasets/${id}/data`, post("acme-editor", "")]],
  ["no records", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", "{\"records\":[]}")]],
  ["101 records", (id) => [`/v2/datasets/${id}/data`, post("acme-editor", records(101))]],
  ["records not an array", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", "{\"records\":{}}")]],
  ["v1 record not an object", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", "{\"records\":[{\"id\":\"a\"},7]}")]],
  ["v2 null record", (id) => [`/v2/datasets/${id}/data`, post("acme-editor", "{\"records\":[null]}")]],
  ["bad body beats a bad header", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", "{", { "idempotency-key": "" })]],
  ["key header too long", (id) => [`/v1/datasets/${id}/data`, post("acme-editor", records(1), { "idempotency-key": "k".repeat(256) })]],
  ["form body", (id) => [`/v1/datasets/${id}/data`, { ...post("acme-editor", "records=1"), headers: { "x-api-key": "acme-editor", "content-type": "application/x-www-form-urlencoded" } }]],
  ["query string", (id) => [`/v2/datasets/${id}/data?x=1`, post("acme-editor", records(1))]],
  ["PUT on the data path", (id) => [`/v2/datasets/${id}/data`, { ...post("acme-editor", records(1)), method: "PUT" }]]
]

/** A data source and a dataset keyed by `id`, made through v1 as a user would. */
const dataset = (url: string) =>
  Effect.gen(function*() {
    const source = yield* send(url, "/v1/data-sources", post("acme-admin", JSON.stringify({ title: "Shop" })))
    const made = yield* send(
      url,
      "/v1/datasets",
      post("acme-admin", JSON.stringify({ title: "Orders", dataSourceId: (source.body as { id: number }).id, primaryKeys: ["id"] }))
    )
    return (made.body as { id: string }).id
  })

/**
 * Sends each case to the server in front (`front`) and to the one through the API (`api`), each
 * made for that server's world (its ids), and expects the same answers. The worlds' ids are
 * named first, in the same order on both sides; the views answered compare later reads.
 */
const sameAnswers = <W extends object>(
  [front, frontWorld]: readonly [string, W],
  [api, apiWorld]: readonly [string, W],
  cases: ReadonlyArray<readonly [string, (world: W) => readonly [string, RequestInit]]>
) =>
  Effect.gen(function*() {
    const [frontView, apiView] = [normalizer(), normalizer()]
    for (const [view, world] of [[frontView, frontWorld], [apiView, apiWorld]] as const) {
      view({ status: 0, body: { requestId: "", ...world }, contentType: null, replayed: null, requestIdHeader: "" })
    }
    for (const [name, make] of cases) {
      const [frontPath, frontInit] = make(frontWorld)
      const [apiPath, apiInit] = make(apiWorld)
      const got = frontView(yield* send(front, frontPath, frontInit))
      const expected = apiView(yield* send(api, apiPath, apiInit))
      expect({ name, ...got }).toEqual({ name, ...expected })
    }
    return { frontView, apiView }
  })

const urlOf = (layer: Layer.Layer<ServerUrl, unknown>) => Effect.map(Layer.build(layer), (context) => Context.get(context, ServerUrl))

describe("ingest route in front of the API", () => {
  it.scopedLive("answers every request as the API does, in the same order of checks", () =>
    Effect.gen(function*() {
      const front = yield* urlOf(serverLayer())
      // An empty fault spec injects nothing, but sends every request through the API.
      const api = yield* urlOf(serverLayer({ faults: {} }))
      const [frontDataset, apiDataset] = [yield* dataset(front), yield* dataset(api)]
      const { frontView, apiView } = yield* sameAnswers(
        [front, { id: frontDataset }],
        [api, { id: apiDataset }],
        cases.map(([name, make]) => [name, (w: { readonly id: string }) => make(w.id)] as const)
      )
      // The accepted ingestions were stored and processed the same way on both.
      const settled = (url: string, id: string) =>
        pollUntil(
          send(url, `/v2/datasets/${id}/ingestions?pageSize=100`, { headers: { "x-api-key": "acme-admin" } }),
          (a) => (a.body as { data: { items: Array<{ status: string }> } }).data.items.every((i) => i.status !== "queued" && i.status !== "processing")
        )
      yield* settled(front, frontDataset)
      yield* settled(api, apiDataset)
      const rows = (url: string, id: string) => send(url, `/v2/datasets/${id}/data?pageSize=100`, { headers: { "x-api-key": "acme-admin" } })
      const stored = frontView(yield* rows(front, frontDataset))
      // r0-r2, and the object beside the v1 non-object record ("a").
      expect((stored.body as { data: { items: Array<unknown> } }).data.items).toHaveLength(4)
      expect(stored).toEqual(apiView(yield* rows(api, apiDataset)))
    }), { timeout: 30_000 })

  it.scopedLive.each(["v1", "v2"])("%s: a chunked body over the limit is 413 with the envelope, and the connection is closed", (version) =>
    Effect.gen(function*() {
      const url = new URL(yield* urlOf(serverLayer({ maxBodyBytes: 1024 })))
      const id = yield* dataset(url.origin)
      const answer = yield* Effect.promise(() =>
        new Promise<{ status: number; body: any; connection: string | undefined }>((resolve, reject) => {
          const req = httpRequest({
            host: url.hostname,
            port: url.port,
            method: "POST",
            path: `/${version}/datasets/${id}/data`,
            headers: { "x-api-key": "acme-editor", "content-type": "application/json", "transfer-encoding": "chunked" }
          }, (res) => {
            let text = ""
            res.on("data", (chunk) => (text += chunk))
            res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text), connection: res.headers.connection }))
          })
          // Written ahead of the answer; a write after the server closed is expected to fail.
          req.on("error", (error) => (error as NodeJS.ErrnoException).code === "EPIPE" || error.message === "socket hang up" ? undefined : reject(error))
          req.write(`{"records":[{"id":"${"x".repeat(4096)}"}`)
          req.end("]}")
        })
      )
      expect(answer.status).toBe(413)
      expect(answer.connection).toBe("close")
      expect(answer.body).toMatchObject({
        status: "error",
        errors: [{ code: "payload_too_large", message: "the request body is over the size limit" }]
      })
      // Nothing was accepted.
      const listed = yield* send(url.origin, `/v1/datasets/${id}/ingestions`, { headers: { "x-api-key": "acme-admin" } })
      expect((listed.body as { ingestions: Array<unknown> }).ingestions).toEqual([])
    }))
})

/** A GET with `key` (none: no header). */
const get = (key: string | undefined, extra: RequestInit = {}): RequestInit => ({
  method: "GET",
  headers: key === undefined ? {} : { "x-api-key": key },
  ...extra
})

describe("ingestion detail route in front of the API", () => {
  it.scopedLive("answers every read of an ingestion as the API does", () =>
    Effect.gen(function*() {
      const front = yield* urlOf(serverLayer())
      const api = yield* urlOf(serverLayer({ faults: {} }))
      /** Two datasets, an ingestion stored whole, one with a rejected record, one in the other dataset; all ended. */
      const world = (url: string) =>
        Effect.gen(function*() {
          const [first, second] = [yield* dataset(url), yield* dataset(url)]
          const ingest = (id: string, body: string) =>
            Effect.map(send(url, `/v2/datasets/${id}/data`, post("acme-editor", body)), (a) => (a.body as { data: { ingestionId: string } }).data.ingestionId)
          const stored = yield* ingest(first, records(2))
          const rejected = yield* ingest(first, JSON.stringify({ records: [{ id: "r9", amount: "not a number" }, { id: "r8", amount: 8 }] }))
          const elsewhere = yield* ingest(second, records(1))
          for (const [id, ingestion] of [[first, stored], [first, rejected], [second, elsewhere]] as const) {
            yield* pollUntil(
              send(url, `/v2/datasets/${id}/ingestions/${ingestion}`, get("acme-admin")),
              (a) => !["queued", "processing"].includes((a.body as { data: { status: string } }).data.status)
            )
          }
          return { first, stored, rejected, elsewhere }
        })
      const unknown = "6f1c4a3e-2b7d-4e8f-9a0b-1c2d3e4f5a6b"
      const cases: ReadonlyArray<readonly [string, (w: Effect.Effect.Success<ReturnType<typeof world>>) => readonly [string, RequestInit]]> = [
        ["stored", (w) => [`/v2/datasets/${w.first}/ingestions/${w.stored}`, get("acme-editor")]],
        ["with a rejected record", (w) => [`/v2/datasets/${w.first}/ingestions/${w.rejected}`, get("acme-editor")]],
        ["its id in capitals", (w) => [`/v2/datasets/${w.first}/ingestions/${w.stored.toUpperCase()}`, get("acme-editor")]],
        ["the dataset id in capitals", (w) => [`/v2/datasets/${w.first.toUpperCase()}/ingestions/${w.stored}`, get("acme-editor")]],
        ["a viewer", (w) => [`/v2/datasets/${w.first}/ingestions/${w.stored}`, get("acme-viewer")]],
        ["another organization", (w) => [`/v2/datasets/${w.first}/ingestions/${w.stored}`, get("globex-admin")]],
        ["no key", (w) => [`/v2/datasets/${w.first}/ingestions/${w.stored}`, get(undefined)]],
        ["unknown key", (w) => [`/v2/datasets/${w.first}/ingestions/${w.stored}`, get("nope")]],
        ["unknown key and bad ids", () => ["/v2/datasets/nope/ingestions/nope", get("nope")]],
        ["unknown ingestion", (w) => [`/v2/datasets/${w.first}/ingestions/${unknown}`, get("acme-editor")]],
        ["another dataset's ingestion", (w) => [`/v2/datasets/${w.first}/ingestions/${w.elsewhere}`, get("acme-editor")]],
        ["unknown dataset", (w) => [`/v2/datasets/${unknown}/ingestions/${w.stored}`, get("acme-editor")]],
        ["ingestion id not a UUID", (w) => [`/v2/datasets/${w.first}/ingestions/nope`, get("acme-editor")]],
        ["dataset id not an id", (w) => [`/v2/datasets/nope/ingestions/${w.stored}`, get("acme-editor")]],
        ["dataset number 0", (w) => [`/v2/datasets/0/ingestions/${w.stored}`, get("acme-editor")]],
        ["both ids bad", () => ["/v2/datasets/nope/ingestions/nope", get("acme-editor")]],
        ["unknown dataset number", (w) => [`/v2/datasets/99999/ingestions/${w.stored}`, get("acme-editor")]],
        ["a query string", (w) => [`/v2/datasets/${w.first}/ingestions/${w.stored}?x=1`, get("acme-editor")]],
        ["a trailing slash", (w) => [`/v2/datasets/${w.first}/ingestions/${w.stored}/`, get("acme-editor")]],
        ["percent-encoded", (w) => [`/v2/datasets/${w.first}/ingestions/%${w.stored.charCodeAt(0).toString(16)}${w.stored.slice(1)}`, get("acme-editor")]],
        ["v1's detail", (w) => [`/v1/datasets/${w.first}/ingestions/${w.stored}`, get("acme-editor")]]
      ]
      const [frontWorld, apiWorld] = [yield* world(front), yield* world(api)]
      yield* sameAnswers([front, frontWorld], [api, apiWorld], cases)
      // The cases above reached both kinds of answer: the detail, and the errors.
      const stored = yield* send(front, `/v2/datasets/${frontWorld.first}/ingestions/${frontWorld.rejected}`, get("acme-editor"))
      expect(stored.status).toBe(200)
      expect(stored.body).toMatchObject({ status: "success", data: { status: "success", summary: { ingestion: { rejectedRecordCount: 1 } } } })
      expect((stored.body as { data: { errors: Array<unknown> } }).data.errors).toHaveLength(1)
    }), { timeout: 30_000 })
})

describe("routes in front of the API with the processing fault", () => {
  it.scopedLive("say the server's faults as the API's answers do", () =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer({ faults: { processingMs: { min: 1, max: 2 } } }))
      const id = yield* dataset(url)
      const ingested = yield* send(url, `/v2/datasets/${id}/data`, post("acme-editor", records(1)))
      const ingestionId = (ingested.body as { data: { ingestionId: string } }).data.ingestionId
      const faultsOf = (path: string, init: RequestInit) =>
        Effect.promise(async () => (await fetch(`${url}${path}`, init)).headers.get("x-tributary-faults"))
      const throughApi = yield* faultsOf(`/v2/datasets/${id}/ingestions`, get("acme-editor"))
      expect(throughApi).toBe("processing=1-2ms")
      expect(yield* faultsOf(`/v2/datasets/${id}/data`, post("acme-editor", records(1)))).toBe(throughApi)
      expect(yield* faultsOf(`/v2/datasets/${id}/ingestions/${ingestionId}`, get("acme-editor"))).toBe(throughApi)
      // An error answer of a route in front too.
      expect(yield* faultsOf(`/v2/datasets/${id}/ingestions/${ingestionId}`, get("nope"))).toBe(throughApi)
    }))
})
