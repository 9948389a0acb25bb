/**
 * The reference server under hostile input. Two parts:
 *
 * 1. A property per route of the contract (read from `TributaryApi`, so a new route is fuzzed
 *    too): random keys, paths (valid ids and bad ones: `01`, `0x1`, `1e3`, `%201`, `-1`, huge
 *    numbers, UUID-like junk), query strings, headers and bodies (valid ones from the
 *    endpoint's payload schema, wrong types, missing fields, `__proto__` / `constructor` /
 *    `prototype` keys, nesting 64 to 3,000 levels deep, 100 KB strings, huge numbers, NUL
 *    bytes, invalid UTF-8, empty bodies, bodies that are not JSON). Every answer: never 5xx;
 *    JSON whose `requestId` is the `x-request-id` header; a 2xx decodes with the endpoint's
 *    success schema; anything else is the error envelope of at most 4 KB; a refused request
 *    stores nothing (the organizations' data sources, datasets, ingestions and rows are
 *    counted through the API after every request); nothing reaches `Object.prototype`.
 * 2. The limits decided for hostile input, one test per decision and route: nesting depth,
 *    content type, body size (chunked too), canonical integer ids, control characters in
 *    names, bounded echo, invalid UTF-8, non-object records, unknown `sortBy`, oversized headers.
 *
 * Seeded and bounded: FastCheck stops at the first counterexample without shrinking (a
 * shrink re-sends 100 KB bodies hundreds of times).
 */
import { request as httpRequest } from "node:http"
import { describe, expect, layer } from "@effect/vitest"
import { Arbitrary, Effect, FastCheck as fc, Option, Schema } from "effect"
import { MaxRecordsPerIngestion } from "../../src/api/index.js"
import {
  type Answer,
  call,
  callAt,
  type Call,
  expectWellFormed,
  firstProblem,
  type Fixture,
  fillPath,
  makeFixture,
  paramKind,
  parseJson,
  settleAt,
  pathTo,
  type Route,
  routes
} from "../support/routes.js"
import { ServerUrl, serverLayer } from "../support/server.js"

/**
 * Random runs per route, after the hostile examples (`hostileExamples`): 55 routes x 16 runs
 * keep this file and the permission matrix under two minutes together on two busy cores.
 */
const numRuns = 16
const seed = 20261123

/** The deepest nesting a request body (or an ingested record) may have. */
const maxDepth = 64

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

/** `depth` levels of arrays (`[[[]]]` is 3) or of objects (`{"a":{"a":1}}` is 2). */
const nested = (depth: number, kind: "array" | "object" = "array"): string =>
  kind === "array" ? "[".repeat(depth) + "]".repeat(depth) : "{\"a\":".repeat(depth - 1) + "{}" + "}".repeat(depth - 1)

const hugeString = "h".repeat(100 * 1024)

/** JSON number texts at and past the edges of a double. */
const hugeNumbers = ["1e308", "-1e308", "1e400", "-1e400", "123456789012345678901234567890", "5e-324", "-0", "9007199254740993"]

/** Values of the wrong type for whatever field they replace. */
const strangeValue = fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, "", "x", [], {}, [null], { a: 1 }, "\u0000", "NaN")

const pollutionKeys = ["__proto__", "constructor", "prototype"] as const

/** Inserts `member` (`"key":value`) as the first member of an object text, or wraps the value. */
const withMember = (text: string, member: string): string =>
  text.startsWith("{") ? (text === "{}" ? `{${member}}` : `{${member},${text.slice(1)}`) : `{${member},"value":${text}}`

/** A body as sent: bytes or text, a content type (null: none), and what kind it is (for messages). */
interface Body {
  readonly kind: string
  readonly body: string | Uint8Array | undefined
  readonly contentType?: string | null
}

const stringify = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? "null"
  } catch {
    return "{}"
  }
}

/** Replaces the value of one top-level key (if any) of an object. */
const replaceKey = (value: unknown, pick: number, by: unknown): unknown => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return by
  const keys = Object.keys(value)
  if (keys.length === 0) return { [`k${pick}`]: by }
  return { ...value, [keys[pick % keys.length]!]: by }
}

const dropKey = (value: unknown, pick: number): unknown => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return {}
  const keys = Object.keys(value)
  if (keys.length === 0) return value
  const { [keys[pick % keys.length]!]: _, ...rest } = value as Record<string, unknown>
  return rest
}

/** Raw bytes that are not UTF-8: a lone continuation byte, an overlong '/', a surrogate, 0xFF. */
const badUtf8 = fc.constantFrom(
  Uint8Array.of(0x80),
  Uint8Array.of(0xc0, 0xaf),
  Uint8Array.of(0xed, 0xa0, 0x80),
  Uint8Array.of(0xff, 0xfe),
  Uint8Array.of(0xc3, 0x28)
)

/** The bytes of `text` with `bad` inside its first string value (or as one). */
const withBadBytes = (text: string, bad: Uint8Array): Uint8Array => {
  const at = text.indexOf(":\"")
  const [before, after] = at >= 0 ? [text.slice(0, at + 2), text.slice(at + 2)] : ["{\"x\":\"", `"${text.startsWith("{") ? "}" : "}"}`]
  return Buffer.concat([Buffer.from(before), bad, Buffer.from(after)])
}

/** Bodies for a route: valid ones from its payload schema and every kind of hostile one. */
const bodiesFor = (route: Route, valid: fc.Arbitrary<unknown>): fc.Arbitrary<Body> => {
  const validText = valid.map(stringify)
  const json = (kind: string) => (body: string): Body => ({ kind, body })
  return fc.oneof(
    { weight: 6, arbitrary: validText.map(json("valid")) },
    { weight: 2, arbitrary: fc.tuple(valid, fc.nat(), strangeValue).map(([v, pick, by]) => json("wrong type")(stringify(replaceKey(v, pick, by)))) },
    { weight: 2, arbitrary: fc.tuple(valid, fc.nat()).map(([v, pick]) => json("missing field")(stringify(dropKey(v, pick)))) },
    {
      weight: 2,
      arbitrary: fc.tuple(validText, fc.constantFrom(...pollutionKeys), fc.boolean()).map(([text, key, nestedToo]) => {
        const polluting = `"${key}":{"polluted":true,"prototype":{"polluted":true}}`
        const top = withMember(text, polluting)
        // Also one level down, inside the first object value (records, columns).
        return json(`${key} key`)(nestedToo ? top.replace(/\[\{/, `[{${polluting},`) : top)
      })
    },
    {
      weight: 2,
      arbitrary: fc.tuple(validText, fc.constantFrom(maxDepth, maxDepth + 1, 100, 3000), fc.constantFrom("array", "object") as fc.Arbitrary<"array" | "object">, fc.boolean())
        .map(([text, depth, kind, whole]) =>
          json(`nested ${depth} (${kind}${whole ? ", whole body" : ""})`)(
            whole ? nested(depth, kind) : isIngest(route)
              ? `{"records":[{"id":1,"deep":${nested(depth, kind)}}]}`
              : withMember(text, `"deep":${nested(depth, kind)}`)
          )
        )
    },
    {
      weight: 1,
      arbitrary: fc.tuple(valid, fc.nat()).map(([v, pick]) => json("100 KB string")(stringify(replaceKey(v, pick, hugeString))))
    },
    {
      weight: 1,
      arbitrary: fc.tuple(validText, fc.constantFrom(...hugeNumbers)).map(([text, n]) => {
        const replaced = text.replace(/:(-?\d+(\.\d+)?([eE][-+]?\d+)?)/, `:${n}`)
        return json(`number ${n}`)(replaced === text ? withMember(text, `"n":${n}`) : replaced)
      })
    },
    {
      weight: 1,
      arbitrary: validText.map((text) => {
        const replaced = text.replace(/:"/, ":\"\\u0000")
        return json("NUL byte")(replaced === text ? withMember(text, "\"name\":\"a\\u0000b\"") : replaced)
      })
    },
    { weight: 1, arbitrary: fc.tuple(validText, badUtf8).map(([text, bad]): Body => ({ kind: "invalid UTF-8", body: withBadBytes(text, bad) })) },
    {
      weight: 2,
      arbitrary: fc.constantFrom<Body>(
        { kind: "empty", body: "" },
        { kind: "no body", body: undefined },
        { kind: "null", body: "null" },
        { kind: "array", body: "[]" },
        { kind: "string", body: "\"x\"" },
        { kind: "truncated", body: "{\"name\":" },
        { kind: "duplicate keys", body: "{\"name\":\"a\",\"name\":\"b\",\"title\":\"a\",\"title\":\"b\"}" },
        { kind: "form", body: "title=x&name=x", contentType: "application/x-www-form-urlencoded" }
      )
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map(json("text")) },
    {
      weight: 1,
      arbitrary: fc.tuple(validText, fc.constantFrom<string | null>(null, "text/plain", "APPLICATION/JSON; charset=UTF-8", "application/json;charset=latin1", "application/jsonx", "multipart/form-data"))
        .map(([text, contentType]): Body => ({ kind: `content type ${contentType}`, body: text, contentType }))
    }
  )
}

/**
 * A path parameter, as a function of the current valid id (the fixture may be replaced
 * between runs): mostly that id, else a bad or unknown one.
 */
const paramValue = (kind: keyof Fixture): fc.Arbitrary<(valid: string) => string> => {
  const integer = kind === "accountId" || kind === "dataSourceId" || kind === "boardId" || kind === "integrationId" ||
    kind === "connectionId" || kind === "spareAccountId" || kind === "userId"
  const derived: ReadonlyArray<(v: string) => string> = integer
    ? [
      (v) => `0${v}`,
      (v) => `0x${Number(v).toString(16)}`,
      (v) => `${v}e0`,
      (v) => `${Number(v) / 10}e1`,
      (v) => `%20${v}`,
      (v) => `${v}%20`,
      (v) => `+${v}`,
      (v) => `${v}.0`
    ]
    : [(v) => v.toUpperCase(), (v) => `${v}0`, (v) => v.slice(0, -1), (v) => `%20${v}`]
  const fixed = integer
    ? ["-1", "0", "9007199254740993", "1".repeat(400), "NaN", "Infinity", "%00", "__proto__", "constructor", "%2e%2e", "00000000-0000-4000-8000-000000000000"]
    : ["00000000-0000-0000-0000-000000000000", "__proto__", "prototype", "%00", "1", "01", "not-a-uuid", "a".repeat(5000)]
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant((v: string) => v) },
    { weight: 2, arbitrary: fc.constantFrom(...derived) },
    { weight: 2, arbitrary: fc.constantFrom(...fixed).map((junk) => () => junk) },
    { weight: 1, arbitrary: fc.uuid().map((uuid) => () => uuid) },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((text) => () => encodeURIComponent(text)) }
  )
}

const queryKeys = fc.constantFrom("__proto__", "constructor", "prototype", "page", "pageSize", "sortBy", "sortOrder", "search", "dataSourceId", "connectionId", "x")
const queryValues = fc.oneof(
  fc.constantFrom("-1", "0", "1e3", "0x10", "", "1.5", "9007199254740993", "name", "nope", "desc", "%", "a".repeat(3000)),
  fc.string({ maxLength: 30 })
)

/** A query string: from the route's own parameters (encoded), plus junk pairs, or raw bad escapes. */
const queryFor = (route: Route): fc.Arbitrary<string> => {
  const own = Option.match(route.urlParams, {
    onNone: () => fc.constant<Record<string, string>>({}),
    onSome: (schema) => Arbitrary.make(schema).map((value) => Schema.encodeSync(schema)(value) as Record<string, string>)
  })
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant("") },
    {
      weight: 6,
      arbitrary: fc.tuple(own, fc.array(fc.tuple(queryKeys, queryValues), { maxLength: 3 })).map(([params, junk]) => {
        const search = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined))
        for (const [k, v] of junk) search.append(k, v)
        const text = search.toString()
        return text === "" ? "" : `?${text}`
      })
    },
    { weight: 1, arbitrary: fc.constantFrom("?%zz=%", "?page=%E0%A4%A", "?&&=&", "?sortBy[]=name&sortBy=name") }
  )
}

const keys = fc.oneof(
  { weight: 8, arbitrary: fc.constant<string | undefined>("acme-admin") },
  { weight: 4, arbitrary: fc.constantFrom<string | undefined>("acme-editor", "acme-viewer", "globex-admin") },
  { weight: 2, arbitrary: fc.constantFrom<string | undefined>(undefined, "", "nope", "acme-admin ", "k".repeat(4000)) }
)

const printable = fc.string({ maxLength: 60 }).map((s) => s.replace(/[^\x20-\x7e]/g, "?"))

/** Extra headers: idempotency keys (reused, empty, too long), `x-account-id`, a spoofed request id, junk. */
const headersFor = (fixture: Fixture): fc.Arbitrary<Record<string, string>> =>
  fc.record(
    {
      "idempotency-key": fc.constantFrom("k-1", "k-2", "", "x".repeat(300)),
      "x-account-id": fc.constantFrom(String(fixture.accountId), `0${fixture.accountId}`, "-1", "abc", "99999"),
      "x-request-id": fc.constant("spoofed"),
      "x-junk": printable
    },
    { requiredKeys: [] }
  )

// ---------------------------------------------------------------------------------------------
// What the server holds
// ---------------------------------------------------------------------------------------------

/**
 * Everything a request could have stored, counted through the API: each organization's data
 * sources and datasets, and the fixture dataset's ingestions and rows.
 */
const countsAt = async (url: string, fixture: Fixture) => {
  const total = async (path: string, key: string) => {
    const answer = await callAt(url, { method: "GET", path, key })
    return answer.json?.data?.pagination?.totalItems ?? answer.status
  }
  return Promise.all([
    total("/v2/data-sources?pageSize=1", "acme-admin"),
    total("/v2/datasets?pageSize=1", "acme-admin"),
    total("/v2/data-sources?pageSize=1", "globex-admin"),
    total("/v2/datasets?pageSize=1", "globex-admin"),
    total(`/v2/datasets/${fixture.datasetId}/ingestions?pageSize=1`, "acme-admin"),
    total(`/v2/datasets/${fixture.datasetId}/data?pageSize=1`, "acme-admin")
  ])
}

/** The v2 detail of an ingestion once it is terminal (or once it cannot be read). */
const finished = (datasetId: string, ingestionId: string) =>
  Effect.flatMap(ServerUrl, (url) =>
    Effect.promise(async () => {
      await settleAt(url, datasetId, ingestionId)
      return callAt(url, { method: "GET", path: `/v2/datasets/${datasetId}/ingestions/${ingestionId}`, key: "acme-admin" })
    }))

/** The id of an ingestion a 2xx answer accepted, v1 or v2. */
const acceptedIngestion = (answer: Answer): string | undefined => answer.json?.data?.ingestionId ?? answer.json?.ingestionId

// ---------------------------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------------------------

/**
 * Stand-ins for the fixture's data source and account ids in generated bodies, replaced by the
 * current fixture's when a body is sent (the fixture may be replaced between runs).
 */
const dataSourceSentinel = 4242424242
const accountSentinel = 4343434343

/** The payload values of a route, with the real parent ids (data source, account) half the time. */
const validPayloads = (route: Route): fc.Arbitrary<unknown> =>
  Option.match(route.payload, {
    onNone: () => fc.constant({}),
    onSome: (schema) =>
      fc.oneof(
        // The happy path of the route (a known time zone, an allowed sync interval, real ids):
        // random values of such fields are almost never accepted.
        { weight: 1, arbitrary: fc.constant(validBody[route.name]?.(sentinelFixture) ?? {}) },
        { weight: 2, arbitrary: fc.tuple(Arbitrary.make(schema), fc.boolean()).map(([value, real]) => {
        if (!real || typeof value !== "object" || value === null) return value
        const v = value as Record<string, unknown>
        return {
          ...v,
          ...("dataSourceId" in v ? { dataSourceId: dataSourceSentinel } : {}),
          ...("accountId" in v ? { accountId: accountSentinel } : {}),
          // Records of the fixture's shape, so that some ingestions store rows.
          ...("records" in v && Array.isArray(v.records) ? { records: v.records.map((_, i) => ({ id: i, name: `r${i}` })) } : {})
        }
      }) }
      )
  })

const datasetNumberSentinel = 918_273_645
const metricSentinel = "metric-sentinel"

const sentinelFixture: Fixture = {
  accountId: accountSentinel,
  dataSourceId: dataSourceSentinel,
  datasetId: "",
  datasetNumber: datasetNumberSentinel,
  ingestionId: "",
  metricId: metricSentinel,
  boardId: 1,
  integrationId: 1,
  connectionId: 1,
  spareAccountId: 0,
  userId: 0
}

const withFixtureIds = (body: string | Uint8Array | undefined, fixture: Fixture) =>
  typeof body === "string"
    ? body.replaceAll(String(dataSourceSentinel), String(fixture.dataSourceId)).replaceAll(String(accountSentinel), String(fixture.accountId))
      .replaceAll(String(datasetNumberSentinel), String(fixture.datasetNumber)).replaceAll(metricSentinel, fixture.metricId)
    : body

const paramsOf = (route: Route) => route.path.match(/:(\w+)/g)?.map((p) => p.slice(1)) ?? []

const requestsFor = (route: Route, fixture: Fixture) =>
  fc.record({
    values: fc.tuple(...paramsOf(route).map((param) => paramValue(paramKind(route.path, param)))),
    suffix: fc.oneof({ weight: 12, arbitrary: fc.constant("") }, { weight: 1, arbitrary: fc.constantFrom("/", "/extra", "//") }),
    query: queryFor(route),
    key: keys,
    headers: headersFor(fixture),
    body: route.method === "GET" ? fc.constant<Body>({ kind: "none", body: undefined }) : bodiesFor(route, validPayloads(route))
  })

/**
 * The hostile kinds every route gets at least once, before the random runs (at 16 runs a kind
 * of weight 1 in 25 is missed by half the routes): as the admin, to the fixture's path.
 */
const hostileExamples = (route: Route): ReadonlyArray<Request> => {
  const request = (body: Body, query = "", values = paramsOf(route).map(() => (v: string) => v)): Request => ({
    values,
    suffix: "",
    query,
    key: "acme-admin",
    headers: {},
    body
  })
  const junkIds = [(v: string) => `0${v}`, (v: string) => `%20${v}`, () => "9007199254740993"].map((junk) =>
    request({ kind: "none", body: undefined }, "", paramsOf(route).map(() => junk))
  )
  const queries = ["?%zz=%", `?sortBy=${"s".repeat(3000)}&page=-1`, "?__proto__=1&constructor=x"].map((query) =>
    request({ kind: "none", body: undefined }, query)
  )
  if (route.method === "GET") return [...queries, ...junkIds]
  const valid = stringify(validBody[route.name]?.(sentinelFixture) ?? {})
  const deepField = isIngest(route)
    ? `{"records":[{"id":1,"deep":${nested(3000)}}]}`
    : withMember(valid, `"deep":${nested(3000, "object")}`)
  const firstString = (by: string) => valid.includes(":\"") ? valid.replace(/:"[^"]*"/, `:${by}`) : withMember(valid, `"name":${by}`)
  return [
    { kind: "nested 3000 (whole body)", body: nested(3000) },
    { kind: "nested 3000 (in a field)", body: deepField },
    { kind: "multipart content type", body: valid, contentType: "multipart/form-data" },
    { kind: "form content type", body: "name=x&title=x", contentType: "application/x-www-form-urlencoded" },
    { kind: "100 KB string", body: firstString(JSON.stringify(hugeString)) },
    { kind: "NUL byte", body: firstString("\"a\\u0000b\"") },
    { kind: "__proto__ key", body: withMember(valid, "\"__proto__\":{\"polluted\":true}") },
    { kind: "constructor key", body: withMember(valid, "\"constructor\":{\"prototype\":{\"polluted\":true}}") },
    { kind: "number 1e400", body: withMember(valid, "\"n\":1e400") },
    { kind: "invalid UTF-8", body: withBadBytes(valid, Uint8Array.of(0xff, 0xfe)) },
    { kind: "empty", body: "" }
  ].map((body) => request(body)).concat(junkIds.map((r) => ({ ...r, body: { kind: "valid", body: valid } })))
}

type Request = typeof requestsFor extends (...args: any) => fc.Arbitrary<infer A> ? A : never

const checkRoute = (route: Route) =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    let fixture = yield* makeFixture("acme-admin", `Fuzz ${route.name}`)
    yield* Effect.promise(() => settleAt(url, fixture.datasetId, fixture.ingestionId))
    const statuses = new Map<number, number>()
    yield* Effect.promise(async () => {
      let counts = await countsAt(url, fixture)
      await fc.assert(
        fc.asyncProperty(requestsFor(route, fixture), async (request) => {
          const params = paramsOf(route)
          const path = fillPath(route.path, (param) => {
            const value = request.values[params.indexOf(param)]!
            return value(String(fixture[paramKind(route.path, param)]))
          }) + request.suffix + request.query
          const sent: Call = {
            method: route.method,
            path,
            key: request.key,
            body: withFixtureIds(request.body.body, fixture),
            contentType: request.body.contentType,
            headers: request.headers
          }
          const answer = await callAt(url, sent)
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
          const context = `${route.method} ${path.slice(0, 200)} key=${String(request.key).slice(0, 20)} body=${request.body.kind}: ${
            typeof request.body.body === "string" ? request.body.body.slice(0, 200) : ""
          }`
          expectWellFormed(answer, context)
          expect(Object.prototype, `${context}: Object.prototype polluted`).not.toHaveProperty("polluted")
          const succeeded = answer.status >= 200 && answer.status < 300
          if (succeeded) {
            expect(Schema.decodeUnknownEither(route.success)(answer.json)._tag, `${context}: ${answer.text.slice(0, 300)}`).toBe("Right")
            const ingestionId = acceptedIngestion(answer)
            if (ingestionId !== undefined) {
              const datasetId = path.split("/")[3]!
              await settleAt(url, datasetId, ingestionId)
            }
          }
          if (!route.mutates) return
          const after = await countsAt(url, fixture)
          if (!succeeded) expect(after, `${context}: a refused request (${answer.status}) stored something`).toEqual(counts)
          counts = after
          // A deleted or purged fixture leaves the rest of the runs nothing to refuse: a fresh one.
          if (succeeded && (route.method === "DELETE" || route.path.endsWith("/purge"))) {
            fixture = await Effect.runPromise(Effect.provideService(makeFixture("acme-admin", `Fuzz ${route.name}`), ServerUrl, url))
            await settleAt(url, fixture.datasetId, fixture.ingestionId)
            counts = await countsAt(url, fixture)
          }
        }),
        { numRuns, seed, endOnFailure: true, examples: hostileExamples(route).map((request) => [request]) }
      )
    })
    // Not vacuous: every route accepted some requests and refused others.
    const seen = JSON.stringify([...statuses])
    expect([...statuses.keys()].some((status) => status < 300), `no request was accepted: ${seen}`).toBe(true)
    expect([...statuses.keys()].some((status) => status >= 400), `no request was refused: ${seen}`).toBe(true)
  })

// ---------------------------------------------------------------------------------------------
// The decisions, route by route
// ---------------------------------------------------------------------------------------------

const withBody = routes.filter((route) => Option.isSome(route.payload))
/** The ingest routes (`POST .../datasets/{id}/data`), not `POST /v2/metrics/data`, whose body is a query. */
function isIngest(route: { readonly path: string }): boolean {
  return /\/datasets\/[^/]+\/data$/.test(route.path)
}
const ingestRoutes = withBody.filter((route) => isIngest(route))
const decodedBodies = withBody.filter((route) => !isIngest(route))

let invitations = 0

/** A body the route accepts for the fixture (its happy path), used as the base of each decision test. */
const validBody: Readonly<Record<string, (f: Fixture) => unknown>> = {
  "v1DataSources.createDataSource": () => ({ title: "Valid" }),
  "v1Datasets.createDataset": (f) => ({ title: "Valid", dataSourceId: f.dataSourceId }),
  "v1Datasets.ingest": () => ({ records: [{ id: 10, name: "ten" }] }),
  "v2DataSources.create": () => ({ name: "Valid" }),
  "v2DataSources.update": () => ({ name: "Valid" }),
  "v2DataSources.setTimezone": () => ({ timezone: "UTC" }),
  "v2DataSources.setPermissions": () => ({ accessLevel: "everyone" }),
  "v2DataSources.setSyncFrequency": () => ({ syncInterval: 60 }),
  "v2Datasets.create": (f) => ({ name: "Valid", dataSourceId: f.dataSourceId, schema: [{ id: "id", dataType: "number" }] }),
  "v2Datasets.update": () => ({ name: "Valid" }),
  "v2Datasets.duplicate": () => ({ name: "Valid" }),
  "v2Datasets.ingest": () => ({ records: [{ id: 10, name: "ten" }] }),
  "v2DatasetSettings.updateMetadata": () => ({ description: "Valid" }),
  "v2DatasetSettings.updateColumnMetadata": () => ({ columns: [{ id: "name", description: "Valid" }] }),
  "v2DatasetSettings.setTimezone": () => ({ timezone: "UTC" }),
  "v2DatasetSettings.setPermissions": () => ({ accessLevel: "everyone" }),
  "v2DatasetSettings.setVerification": () => ({ isVerified: true }),
  "v2DatasetSettings.setSyncFrequency": () => ({ syncInterval: 60 }),
  "v2DatasetModifications.set": () => ({ formulas: { double: "$id * 2" }, displayNames: { name: "Name" } }),
  "v2DatasetModifications.preview": () => ({ formulas: { double: "$id * 2" } }),
  "v2Metrics.create": (f) => ({
    name: "Valid",
    datasetId: f.datasetNumber,
    measure: { id: "id", displayName: "Id" },
    date: { id: "at", displayName: "At" }
  }),
  "v2Metrics.update": () => ({ name: "Valid" }),
  "v2Connections.update": () => ({ name: "Valid" }),
  "v2Connections.setPermissions": () => ({ accessLevel: "everyone", sharedWithAccounts: true }),
  "v2Metrics.setVerification": () => ({ isVerified: true }),
  "v2Metrics.values": () => ({ granularity: "daily" }),
  "v2Metrics.data": (f) => ({ metricId: f.metricId, dateRange: { from: "30daysAgo", to: "today", granularity: "daily" } }),
  "v2Metrics.dimensionValues": (f) => ({ metrics: [{ sourceId: f.dataSourceId, metricId: f.metricId, dimensionIds: ["name"] }] }),
  "v2Metrics.drilldown": (f) => ({ sourceId: f.dataSourceId, metricId: f.metricId, period: { startTimestamp: 0, endTimestamp: 2_000_000_000 } }),
  "v2Organization.update": () => ({ companyName: "Valid" }),
  "v2Accounts.create": () => ({ name: "Valid" }),
  "v2Accounts.update": () => ({ name: "Valid" }),
  // Emails are unique per organization: a fresh one for each case.
  "v2Users.create": () => ({ email: `valid-${++invitations}@acme.test`, role: "viewer" }),
  "v2Users.update": () => ({ name: "Valid" }),
  "v2Profile.update": () => ({ timezone: "UTC" })
}

/** A fresh fixture, the route's path to it, and a request helper that also checks nothing was stored when refused. */
const decisionCase = (route: Route) =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    const fixture = yield* makeFixture("acme-admin", `Decision ${route.name}`)
    yield* Effect.promise(() => settleAt(url, fixture.datasetId, fixture.ingestionId))
    const path = pathTo(route, fixture)
    // What the server holds after the last request: a refused one must not change it.
    let counts = yield* Effect.promise(() => countsAt(url, fixture))
    const send = (request: Omit<Call, "method" | "path"> & { readonly path?: string }) =>
      Effect.promise(async () => {
        const answer = await callAt(url, { method: route.method, path, key: "acme-admin", ...request })
        const context = `${route.method} ${request.path ?? path}`
        expectWellFormed(answer, context)
        const ingestionId = acceptedIngestion(answer)
        if (ingestionId !== undefined) await settleAt(url, fixture.datasetId, ingestionId)
        const after = await countsAt(url, fixture)
        if (answer.status >= 400) expect(after, `${context}: refused, yet stored`).toEqual(counts)
        counts = after
        return answer
      })
    return { fixture, path, send, valid: (validBody[route.name]?.(fixture) ?? {}) as Record<string, unknown> }
  })

const expectProblem = (answer: Answer, status: number, code: string, field?: string | null) => {
  const seen = `${answer.status} ${answer.text.slice(0, 300)}`
  expect(answer.status, seen).toBe(status)
  expect(firstProblem(answer).code, seen).toBe(code)
  if (field !== undefined) expect(firstProblem(answer).field, seen).toBe(field)
}

/** Sends `body` with an explicit content length, or chunked (a stream of 64 KB pieces). */
const sendSized = (url: string, path: string, bytes: Uint8Array, chunked: boolean) =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { "x-api-key": "acme-admin", "content-type": "application/json" },
    body: chunked
      ? new ReadableStream({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 65536) controller.enqueue(bytes.subarray(at, at + 65536))
          controller.close()
        }
      })
      : bytes,
    // undici needs it to send a stream as the body.
    duplex: "half",
    signal: AbortSignal.timeout(15_000)
  }).then(
    async (response) => {
      const text = await response.text()
      return { status: response.status, headers: response.headers, text, json: parseJson(text) } satisfies Answer
    },
    // A reset connection is an answer too: the wrong one.
    (error: unknown) => ({ status: -1, headers: new Headers(), text: `no answer: ${String(error)}`, json: undefined }) satisfies Answer
  )

/** The names the decisions forbid control characters in, by route: the field and a body carrying `value` in it. */
const nameFields: ReadonlyArray<readonly [string, string, (f: Fixture, value: string) => unknown]> = [
  ["v1DataSources.createDataSource", "title", (_, value) => ({ title: value })],
  ["v1Datasets.createDataset", "title", (f, value) => ({ title: value, dataSourceId: f.dataSourceId })],
  ["v2DataSources.create", "name", (_, value) => ({ name: value })],
  ["v2DataSources.update", "name", (_, value) => ({ name: value })],
  ["v2Datasets.create", "name", (f, value) => ({ name: value, dataSourceId: f.dataSourceId, schema: [{ id: "id", dataType: "number" }] })],
  ["v2Datasets.create", "schema[0].id", (f, value) => ({ name: "Columns", dataSourceId: f.dataSourceId, schema: [{ id: value, dataType: "number" }] })],
  ["v2Datasets.update", "name", (_, value) => ({ name: value })],
  ["v2Datasets.duplicate", "name", (_, value) => ({ name: value })]
]

const routeNamed = (name: string) => routes.find((route) => route.name === name)!

/** A long run of one character: an answer must not echo more than 100 of them. */
const longRun = (char: string, length: number) => char.repeat(length)
const echoes = (answer: Answer, char: string) => answer.text.includes(char.repeat(101))

layer(serverLayer(), { excludeTestServices: true })("the reference server under hostile input", (it) => {
  describe("random requests to every route: never 5xx, always the envelope, nothing stored when refused", () => {
    for (const route of routes) {
      it.effect(`${route.method} ${route.path}`, () => checkRoute(route), 30_000)
    }
  })

  describe(`JSON nested deeper than ${maxDepth} levels`, () => {
    for (const route of decodedBodies) {
      it.effect(`${route.method} ${route.path}: 400 nesting_too_deep (field null), at ${maxDepth + 1} and 3,000 levels; ${maxDepth} levels are decoded`, () =>
        Effect.gen(function*() {
          const { send } = yield* decisionCase(route)
          for (const depth of [maxDepth + 1, 3000]) {
            expectProblem(yield* send({ body: nested(depth) }), 400, "nesting_too_deep", null)
            expectProblem(yield* send({ body: `{"deep":${nested(depth - 1, "object")}}` }), 400, "nesting_too_deep", null)
          }
          // At the limit the body is read and decoded: whatever it answers, not the depth.
          const atLimit = yield* send({ body: nested(maxDepth) })
          expect(firstProblem(atLimit).code, atLimit.text.slice(0, 300)).not.toBe("nesting_too_deep")
        }))
    }

    for (const route of ingestRoutes) {
      it.effect(`${route.method} ${route.path}: a record nested 5,000 levels deep is rejected alone (nesting_too_deep); the other 99 are stored; the detail stays readable`, () =>
        Effect.gen(function*() {
          const { fixture, send } = yield* decisionCase(route)
          const good = Array.from({ length: MaxRecordsPerIngestion - 1 }, (_, i) => `{"id":${100 + i},"name":"r${i}"}`)
          const body = `{"records":[${good.slice(0, 50).join(",")},{"id":99999,"name":${nested(5000)}},${good.slice(50).join(",")}]}`
          const accepted = yield* send({ body })
          expect(accepted.status, accepted.text.slice(0, 300)).toBe(200)
          const ingestionId = acceptedIngestion(accepted)!
          const detail = yield* finished(fixture.datasetId, ingestionId)
          expectWellFormed(detail, "v2 ingestion detail")
          expect(detail.status, detail.text.slice(0, 300)).toBe(200)
          expect(detail.json.data.status).toBe("success")
          expect(detail.json.data.summary.ingestion).toMatchObject({ receivedRecordCount: 100, appendedRecordCount: 99, rejectedRecordCount: 1 })
          expect(detail.json.data.errors.map((e: any) => e.code)).toEqual(["nesting_too_deep"])
          const v1 = yield* call({ method: "GET", path: `/v1/datasets/${fixture.datasetId}/ingestions/${ingestionId}`, key: "acme-admin" })
          expectWellFormed(v1, "v1 ingestion detail")
          expect(v1.status).toBe(200)
          expect(v1.json.errors.map((e: any) => e.code)).toEqual(["nesting_too_deep"])
          const rows = yield* call({ method: "GET", path: `/v2/datasets/${fixture.datasetId}/data?pageSize=1`, key: "acme-admin" })
          // The fixture's two rows and the 99.
          expect(rows.json.data.pagination.totalItems).toBe(2 + 99)
        }))
    }
  })

  describe("content type: a non-empty body must be application/json", () => {
    for (const route of withBody) {
      it.effect(`${route.method} ${route.path}: 415 unsupported_media_type for form, text/plain and no content type; JSON with parameters in any case is taken`, () =>
        Effect.gen(function*() {
          const { send, valid } = yield* decisionCase(route)
          const text = JSON.stringify(valid)
          expectProblem(yield* send({ body: "title=x&name=x", contentType: "application/x-www-form-urlencoded" }), 415, "unsupported_media_type")
          expectProblem(yield* send({ body: text, contentType: "text/plain" }), 415, "unsupported_media_type")
          expectProblem(yield* send({ body: text, contentType: null }), 415, "unsupported_media_type")
          const taken = yield* send({ body: text, contentType: "Application/JSON; charset=UTF-8" })
          expect(taken.status, taken.text.slice(0, 300)).toBe(200)
        }))
    }
  })

  describe("invalid UTF-8 in a body", () => {
    for (const route of withBody) {
      it.effect(`${route.method} ${route.path}: 400 invalid_encoding, nothing stored (not U+FFFD)`, () =>
        Effect.gen(function*() {
          const { send, valid } = yield* decisionCase(route)
          const text = JSON.stringify(isIngest(route) ? { records: [{ id: 77, name: "x" }] } : valid)
          for (const bad of [Uint8Array.of(0xff, 0xfe), Uint8Array.of(0xc0, 0xaf), Uint8Array.of(0xed, 0xa0, 0x80)]) {
            expectProblem(yield* send({ body: withBadBytes(text, bad) }), 400, "invalid_encoding")
          }
        }))
    }
  })

  describe("integer ids in paths: canonical decimal only", () => {
    const integerRoutes = routes.filter((route) => /:(accountId|dataSourceId)\b/.test(route.path) || route.path.startsWith("/v2/data-sources/:id"))
    for (const route of integerRoutes) {
      it.effect(`${route.method} ${route.path}: 01, 0x.., ..e0, %20.., +.., ...0 are ${route.version === "v1" ? "400 invalid_input naming the path field" : "404 not_found"}; the resource is untouched`, () =>
        Effect.gen(function*() {
          const { fixture, send, valid } = yield* decisionCase(route)
          const param = route.path.match(/:(accountId|dataSourceId|id)\b/)![1]!
          const id = param === "accountId" ? fixture.accountId : fixture.dataSourceId
          for (const loose of [`0${id}`, `0x${id.toString(16)}`, `${id}e0`, `%20${id}`, `+${id}`, `${id}.0`, `${id}%20`]) {
            const path = route.path.replace(`:${param}`, loose).replace(/:(\w+)/g, (_, p: string) => String(fixture[paramKind(route.path, p)]))
            const answer = yield* send({ path, body: route.method === "GET" ? undefined : JSON.stringify(valid) })
            if (route.version === "v1") expectProblem(answer, 400, "invalid_input", param)
            else expectProblem(answer, 404, "not_found")
          }
          const still = yield* call({ method: "GET", path: `/v2/data-sources/${fixture.dataSourceId}`, key: "acme-admin" })
          expect(still.status).toBe(200)
        }))
    }
  })

  describe("control characters in names", () => {
    for (const [name, field, body] of nameFields) {
      const route = routeNamed(name)
      it.effect(`${route.method} ${route.path}: ${field} with NUL, a newline, ESC or DEL is 400 invalid_input on ${field}`, () =>
        Effect.gen(function*() {
          const { fixture, send } = yield* decisionCase(route)
          for (const control of ["\u0000", "\n", "\u001b", "\u007f"]) {
            expectProblem(yield* send({ body: JSON.stringify(body(fixture, `bad${control}name`)) }), 400, "invalid_input", field)
          }
        }))
    }
  })

  describe("errors echo at most 100 characters of any input", () => {
    const cases: ReadonlyArray<readonly [string, (f: Fixture) => { readonly body?: string; readonly path?: string }]> = [
      ["v1DataSources.createDataSource", () => ({ body: JSON.stringify({ title: "Zones", timezone: longRun("z", 1024 * 1024) }) })],
      ["v2DataSources.create", () => ({ body: JSON.stringify({ name: "Zones", timezone: longRun("z", 1024 * 1024) }) })],
      ["v2DataSources.setTimezone", () => ({ body: JSON.stringify({ timezone: longRun("z", 1024 * 1024) }) })],
      ["v2DatasetSettings.setTimezone", () => ({ body: JSON.stringify({ timezone: longRun("z", 1024 * 1024) }) })],
      ["v2Datasets.create", (f) => ({ body: JSON.stringify({ name: "Keys", dataSourceId: f.dataSourceId, schema: [{ id: "id", dataType: "number" }], primaryKey: [longRun("z", 100_000)] }) })],
      ["v2DataSources.setSyncFrequency", () => ({ body: `{"syncInterval":${longRun("9", 100_000)}}` })],
      ["v2DataSources.list", () => ({ path: `/v2/data-sources?sortBy=${longRun("z", 8000)}` })],
      ["v2Datasets.getData", (f) => ({ path: `/v2/datasets/${f.datasetId}/data?sortBy=${longRun("z", 8000)}` })],
      ["v1Datasets.listIngestions", (f) => ({ path: `/v1/datasets/${f.datasetId}/ingestions?page=${longRun("z", 8000)}` })]
    ]
    for (const [name, request] of cases) {
      const route = routeNamed(name)
      it.effect(`${route.method} ${route.path}: a huge value is refused without being echoed`, () =>
        Effect.gen(function*() {
          const { fixture, send } = yield* decisionCase(route)
          const answer = yield* send(request(fixture))
          expect(answer.status, answer.text.slice(0, 300)).toBe(400)
          expect(echoes(answer, "z") || echoes(answer, "9"), answer.text.slice(0, 600)).toBe(false)
        }))
    }
  })

  describe("a non-object record is rejected alone, in v1 as in v2", () => {
    for (const route of ingestRoutes) {
      it.effect(`${route.method} ${route.path}: [null, 1, "x", [], {ok}] -> accepted; 4 problems not_an_object, 1 row`, () =>
        Effect.gen(function*() {
          const { fixture, send } = yield* decisionCase(route)
          const accepted = yield* send({ body: "{\"records\":[null,1,\"x\",[],{\"id\":500,\"name\":\"ok\"}]}" })
          expect(accepted.status, accepted.text.slice(0, 300)).toBe(200)
          const detail = yield* finished(fixture.datasetId, acceptedIngestion(accepted)!)
          expect(detail.status).toBe(200)
          expect(detail.json.data.summary.ingestion).toMatchObject({ receivedRecordCount: 5, appendedRecordCount: 1, rejectedRecordCount: 4 })
          expect(detail.json.data.errors.map((e: any) => e.code)).toEqual(Array(4).fill("not_an_object"))
        }))
    }
  })

  describe("unknown sortBy", () => {
    for (const [name, path] of [
      ["v2DataSources.list", () => "/v2/data-sources?sortBy=nope"],
      ["v2Datasets.list", () => "/v2/datasets?sortBy=nope"],
      ["v2Datasets.getData", (f: Fixture) => `/v2/datasets/${f.datasetId}/data?sortBy=nope`]
    ] as const) {
      const route = routeNamed(name)
      it.effect(`${route.method} ${route.path}?sortBy=nope: 400 on sortBy`, () =>
        Effect.gen(function*() {
          const { fixture, send } = yield* decisionCase(route)
          expectProblem(yield* send({ path: path(fixture) }), 400, "invalid_input", "sortBy")
        }))
    }
  })

  it.effect("oversized headers: 431 with the envelope", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      // Over node's 16 KB header limit, on a connection of its own: node refuses headers before
      // any request exists, and a pooled connection's earlier history must not decide the answer.
      const answer = yield* Effect.promise(() => freshConnectionGet(`${url}/v2/auth/validate-key`, { "x-api-key": "acme-admin", "x-junk": "j".repeat(20_000) }))
      expect(answer.status, answer.text.slice(0, 300)).toBe(431)
      expectWellFormed(answer, "oversized header")
      expect(firstProblem(answer).code).toBe("headers_too_large")
    }))
})

/** A GET on a new connection (node:http, no agent); a reset is status -1. */
const freshConnectionGet = (url: string, headers: Record<string, string>) =>
  new Promise<Answer>((resolve) => {
    const request = httpRequest(url, { agent: false, headers }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () => {
        const answerHeaders = new Headers()
        for (const [name, value] of Object.entries(response.headers)) if (typeof value === "string") answerHeaders.set(name, value)
        resolve({ status: response.statusCode ?? -1, headers: answerHeaders, text, json: parseJson(text) })
      })
    })
    request.on("error", (error) => resolve({ status: -1, headers: new Headers(), text: `no answer: ${error.message}`, json: undefined }))
    request.end()
  })

/** A small limit, so that bodies over it stay cheap to send. */
const smallLimit = 64 * 1024

layer(serverLayer({ maxBodyBytes: smallLimit }), { excludeTestServices: true })("bodies over the size limit", (it) => {
  for (const name of ["v1DataSources.createDataSource", "v2Datasets.create", "v1Datasets.ingest", "v2Datasets.ingest"]) {
    const route = routeNamed(name)
    for (const chunked of [false, true]) {
      it.effect(`${route.method} ${route.path}, ${chunked ? "chunked" : "with Content-Length"}: 413 payload_too_large with the envelope, nothing stored`, () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const fixture = yield* makeFixture("acme-admin", "Limits")
          yield* Effect.promise(() => settleAt(url, fixture.datasetId, fixture.ingestionId))
          const before = yield* Effect.promise(() => countsAt(url, fixture))
          // A valid body, made long by one string: 4 x the limit.
          const body = isIngest(route)
            ? { records: [{ id: 1, name: "x".repeat(4 * smallLimit) }] }
            : { ...(validBody[name]!(fixture) as object), padding: "x".repeat(4 * smallLimit) }
          const answer = yield* Effect.promise(() => sendSized(url, pathTo(route, fixture), Buffer.from(JSON.stringify(body)), chunked))
          expectWellFormed(answer, `${route.method} ${route.path}`)
          expectProblem(answer, 413, "payload_too_large")
          expect(yield* Effect.promise(() => countsAt(url, fixture))).toEqual(before)
        }))
    }
  }
})
