/**
 * Every route of the contract, raw requests to them, and the answer invariants the hostile
 * suites (fuzz and permission matrix) hold every answer to.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import { expect } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { Errors, TributaryApi } from "../../src/api/index.js"
import { ServerUrl } from "./server.js"

/** One endpoint of `TributaryApi`, as the suites address it. */
export interface Route {
  /** `v1Datasets.ingest` */
  readonly name: string
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  /** The template: `/v2/datasets/:id/ingestions/:ingestionId` */
  readonly path: string
  readonly version: "v1" | "v2"
  /** Reads change nothing; every other method is a mutation. */
  readonly mutates: boolean
  readonly payload: Option.Option<Schema.Schema<any, any>>
  readonly urlParams: Option.Option<Schema.Schema<any, any>>
  readonly headers: Option.Option<Schema.Schema<any, any>>
  readonly success: Schema.Schema<any, any>
}

/** Every route of the contract, read from it (a route added to the API is fuzzed and checked too). */
export const routes: ReadonlyArray<Route> = (() => {
  const found: Array<Route> = []
  HttpApi.reflect(TributaryApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group }) => {
      found.push({
        name: `${group.identifier}.${endpoint.name}`,
        method: endpoint.method as Route["method"],
        path: endpoint.path,
        version: endpoint.path.startsWith("/v1/") ? "v1" : "v2",
        mutates: endpoint.method !== "GET",
        payload: endpoint.payloadSchema as unknown as Option.Option<Schema.Schema<any, any>>,
        urlParams: endpoint.urlParamsSchema as unknown as Option.Option<Schema.Schema<any, any>>,
        headers: endpoint.headersSchema as unknown as Option.Option<Schema.Schema<any, any>>,
        success: endpoint.successSchema as unknown as Schema.Schema<any, any>
      })
    }
  })
  return found
})()

/** The resources a route's path parameters name. */
export interface Fixture {
  readonly accountId: number
  readonly dataSourceId: number
  /** The dataset's UUID: v1 paths name it so. */
  readonly datasetId: string
  /** The same dataset's number: v2 paths name it so. */
  readonly datasetNumber: number
  readonly ingestionId: string
  /** A metric over the dataset (`<dataSourceId>|<key>`, encoded in paths). */
  readonly metricId: string
  /** A board of the test seed (Acme's first). */
  readonly boardId: number
  /** An integration of the shipped catalog. */
  readonly integrationId: number
  /** One of Acme's seeded spare connections still there, a different one each time (suites delete some). */
  readonly connectionId: number
  /** A client account of its own, holding nothing (`/v2/accounts/:id`). */
  readonly spareAccountId: number
  /** A viewer invited for it (`/v2/users/:id`). */
  readonly userId: number
}

/** The path parameters of a template, in order (`["id", "ingestionId"]`). */
export const pathParams = (template: string): ReadonlyArray<string> =>
  [...template.matchAll(/:(\w+)/g)].map((m) => m[1]!)

/**
 * What a path parameter names: `:id` is a data source under `/v2/data-sources`, a metric
 * under `/v2/metrics`, a board under `/v2/boards` and `/v2/databoards`, an integration under
 * `/v2/integrations`, a connection under `/v2/connections`, a dataset (by number) under
 * `/v2/datasets`; `:datasetId` is a dataset by UUID (v1).
 */
export const paramKind = (template: string, param: string): keyof Fixture =>
  param === "accountId"
    ? "accountId"
    : param === "id" && template.startsWith("/v2/accounts")
    ? "spareAccountId"
    : param === "id" && template.startsWith("/v2/users")
    ? "userId"
    : param === "dataSourceId" || (param === "id" && template.startsWith("/v2/data-sources"))
    ? "dataSourceId"
    : param === "ingestionId"
    ? "ingestionId"
    : template.startsWith("/v2/metrics/")
    ? "metricId"
    : template.startsWith("/v2/boards/") || template.startsWith("/v2/databoards/")
    ? "boardId"
    : template.startsWith("/v2/integrations/")
    ? "integrationId"
    : template.startsWith("/v2/connections/")
    ? "connectionId"
    : param === "id"
    ? "datasetNumber"
    : "datasetId"

/** The template with each parameter replaced by `value(param)` (used as it is: no encoding). */
export const fillPath = (template: string, value: (param: string) => string): string =>
  template.replace(/:(\w+)/g, (_, param: string) => value(param))

/** The route's path naming the fixture's resources. */
export const pathTo = (route: Route, fixture: Fixture): string =>
  fillPath(route.path, (param) => encodeURIComponent(String(fixture[paramKind(route.path, param)])))

/** A raw answer: status, headers, the body as text and parsed (undefined when not JSON). */
export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: any
}

export interface Call {
  readonly method: string
  /** Path and query, as sent. */
  readonly path: string
  /** `undefined`: no `x-api-key` header at all. */
  readonly key?: string | undefined
  readonly body?: string | Uint8Array | undefined
  /** `undefined`: `application/json` when there is a body; `null`: no content type. */
  readonly contentType?: string | null | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** Sends one request over real HTTP to the server at `ServerUrl`. */
export const call = (request: Call): Effect.Effect<Answer, never, ServerUrl> =>
  Effect.flatMap(ServerUrl, (url) => Effect.promise(() => callAt(url, request)))

/** {@link call} against a known base URL (inside FastCheck properties). */
export const callAt = async (url: string, request: Call): Promise<Answer> => {
  const headers: Record<string, string> = { ...request.headers }
  if (request.key !== undefined) headers["x-api-key"] = request.key
  if (request.body !== undefined && request.contentType !== null) {
    headers["content-type"] = request.contentType ?? "application/json"
  }
  const response = await fetch(`${url}${request.path}`, {
    method: request.method,
    headers,
    // fetch labels a string body text/plain: bytes go without a content type when none is asked for.
    ...(request.body === undefined
      ? {}
      : { body: request.contentType === null && typeof request.body === "string" ? Buffer.from(request.body) : request.body }),
    signal: AbortSignal.timeout(15_000)
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, json: parseJson(text) }
}

/** The JSON of an answer's text; `undefined` when it is not JSON. */
export const parseJson = (text: string): any => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Error bodies stay small whatever the input: at most 100 characters of any value are echoed. */
export const maxErrorBodyBytes = 4096

const decodeEnvelope = Schema.decodeUnknownEither(Errors.ErrorEnvelope)

/**
 * What every answer must be: never 5xx; JSON with a `requestId` equal to the `x-request-id`
 * header (but for an idempotent replay); a non-2xx answer is the error envelope `{ requestId, status: "error", errors: [{
 * code, message, field, type }] }` of at most 4 KB.
 */
export const expectWellFormed = (answer: Answer, context: string) => {
  const seen = `${context} -> ${answer.status} ${answer.text.slice(0, 300)}`
  expect(answer.status, seen).toBeLessThan(500)
  expect(answer.json, seen).toBeTypeOf("object")
  expect(answer.json, seen).not.toBeNull()
  const requestId = answer.headers.get("x-request-id")
  expect(requestId, seen).toBeTruthy()
  // An idempotent replay is the first answer's body, requestId included (decided: same status,
  // same body); the header names the request that got the replay.
  if (answer.headers.get("idempotent-replayed") === "true") expect(answer.json.requestId, seen).toBeTypeOf("string")
  else expect(answer.json.requestId, seen).toBe(requestId)
  if (answer.status >= 200 && answer.status < 300) return
  expect(answer.json.status, seen).toBe("error")
  expect(Array.isArray(answer.json.errors) && answer.json.errors.length > 0, seen).toBe(true)
  for (const item of answer.json.errors) {
    // On the wire every item has all four keys (decoding would fill the missing ones).
    expect(Object.keys(item).sort(), seen).toEqual(["code", "field", "message", "type"])
    expect(item.code, seen).toBeTypeOf("string")
    expect(item.message, seen).toBeTypeOf("string")
    expect(item.type, seen).toBeTypeOf("string")
    expect(item.field === null || typeof item.field === "string", seen).toBe(true)
  }
  expect(decodeEnvelope(answer.json)._tag, seen).toBe("Right")
  expect(Buffer.byteLength(answer.text), seen).toBeLessThanOrEqual(maxErrorBodyBytes)
}

/** The first problem of an error answer. */
export const firstProblem = (answer: Answer): { code: string; message: string; field: string | null; type: string } =>
  answer.json?.errors?.[0] ?? { code: "", message: "", field: null, type: "" }

let fixtures = 0

/**
 * A data source and a dataset (`id` number key, `name` string, `at` datetime) in it, both
 * called `name`, one ingestion of it, and a metric over it once the ingestion is done (a
 * metric needs a dataset that received data), made through the API with `key`; a spare
 * account and an invited viewer, made with `adminKey`.
 */
export const makeFixture = (key: string, name = "Fixture", adminKey = "acme-admin"): Effect.Effect<Fixture, never, ServerUrl> =>
  Effect.gen(function*() {
    const ok = (answer: Answer, what: string) => {
      expect(answer.status, `${what}: ${answer.text.slice(0, 300)}`).toBe(200)
      return answer.json
    }
    const validated = ok(yield* call({ method: "GET", path: "/v1/accounts", key }), "accounts")
    const accountId = validated.accounts[0].id as number
    const dataSource = ok(
      yield* call({ method: "POST", path: "/v2/data-sources", key, body: JSON.stringify({ name }) }),
      "data source"
    )
    const dataset = ok(
      yield* call({
        method: "POST",
        path: "/v2/datasets",
        key,
        body: JSON.stringify({
          name,
          dataSourceId: dataSource.data.id,
          schema: [{ id: "id", dataType: "number" }, { id: "name", dataType: "string" }, { id: "at", dataType: "datetime" }],
          primaryKey: ["id"]
        })
      }),
      "dataset"
    )
    const datasetNumber = dataset.data.id as number
    const datasetId = dataset.data.uuid as string
    const ingestion = ok(
      yield* call({
        method: "POST",
        path: `/v2/datasets/${datasetNumber}/data`,
        key,
        body: JSON.stringify({ records: [{ id: 1, name: "one", at: "2026-01-05" }, { id: 2, name: "two", at: "2026-01-06" }] })
      }),
      "ingest"
    )
    const url = yield* ServerUrl
    yield* Effect.promise(() => settleAt(url, datasetId, ingestion.data.ingestionId))
    const metric = ok(
      yield* call({
        method: "POST",
        path: "/v2/metrics",
        key,
        body: JSON.stringify({
          name: `${name} metric`,
          datasetId: datasetNumber,
          measure: { id: "id", displayName: "Id" },
          date: { id: "at", displayName: "At" },
          dimensions: [{ id: "name", displayName: "Name" }]
        })
      }),
      "metric"
    )
    const serial = `${process.pid}-${++fixtures}`
    const spare = ok(
      yield* call({ method: "POST", path: "/v2/accounts", key: adminKey, body: JSON.stringify({ name: `Spare ${serial}` }) }),
      "account"
    )
    const user = ok(
      yield* call({
        method: "POST",
        path: "/v2/users",
        key: adminKey,
        body: JSON.stringify({ email: `fixture-${serial}@acme.test`, role: "viewer" })
      }),
      "user"
    )
    return {
      accountId,
      dataSourceId: dataSource.data.id,
      datasetId,
      datasetNumber,
      ingestionId: ingestion.data.ingestionId,
      metricId: metric.data.id,
      boardId: 1,
      integrationId: 1,
      connectionId: nextOf<{ readonly id: number }>(ok(yield* call({ method: "GET", path: "/v2/connections?search=spare&pageSize=100", key: "acme-admin" }), "connections")
        .data.items).id,
      spareAccountId: spare.data.id,
      userId: user.data.id
    }
  })

let spare = 0
/** The next of some items, round the list: fixtures made one after another name different spares. */
const nextOf = <A>(items: ReadonlyArray<A>): A => items[spare++ % items.length]!

/** Waits until an ingestion (of any dataset) is terminal, so that rows and counts settle. */
export const settleAt = async (url: string, datasetId: string, ingestionId: string) => {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const answer = await callAt(url, { method: "GET", path: `/v2/datasets/${datasetId}/ingestions/${ingestionId}`, key: "acme-admin" })
    const status = answer.json?.data?.status
    if (status !== "queued" && status !== "processing") return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
