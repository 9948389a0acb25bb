/**
 * `ingestWire` held to the contract (`src/api`).
 *
 * Each fast reader is compared with a reading through the contract's schemas:
 * - on answers the server could send: arbitrary values of the endpoints' success schemas (the
 *   whole envelope), encoded by those schemas and written as JSON, against
 *   `Schema.decodeUnknown` of the same success schema;
 * - on damaged answers (a field deleted or given a value of another type, the text cut short,
 *   arbitrary JSON or text), against the contract's schemas of the fields the reader reads
 *   (`.fields`, `.pick` of the contract's own schemas): a reader checks those fields, exactly
 *   as the contract says, and nothing else, so that it must answer `undefined` exactly when
 *   that decoding fails, and never throw.
 * Its paths are compared with the requests the client derived from the contract builds, and
 * the whole exchange is run against the reference server, v1 and v2.
 */
import { randomUUID } from "node:crypto"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import { describe, expect, it, layer } from "@effect/vitest"
import { Arbitrary, Duration, Effect, FastCheck as fc, Option, Schema } from "effect"
import { MaxRecordsPerIngestion, UuidAnyCase } from "../../src/api/common.js"
import { ErrorEnvelope, ErrorItem } from "../../src/api/errors.js"
import * as V1 from "../../src/api/v1.js"
import { MaxPageSize } from "../../src/api/v2/common.js"
import * as V2 from "../../src/api/v2/datasets.js"
import { DatasetIdPath } from "../../src/api/v2/common.js"
import { V2Api } from "../../src/api/v2/index.js"
import type { TributaryClient } from "../../src/client/index.js"
import {
  type Detail,
  excerpt,
  type IngestWire,
  ingestWire,
  type ListItem,
  type Problem,
  type Rejection,
  terminalStatuses
} from "../../src/pipeline/internal/ingestWire.js"
import { clientFor, serverLayer } from "../support/server.js"

// ---------------------------------------------------------------------------------------------
// the contract's endpoints and the schemas of what each reader reads
// ---------------------------------------------------------------------------------------------

type Endpoints<G> = HttpApiGroup.HttpApiGroup.Endpoints<G>
const endpointOf = <
  G extends { readonly endpoints: Readonly<Record<string, HttpApiEndpoint.HttpApiEndpoint.Any>> },
  const N extends HttpApiEndpoint.HttpApiEndpoint.Name<Endpoints<G>>
>(group: G, name: N) => group.endpoints[name] as HttpApiEndpoint.HttpApiEndpoint.WithName<Endpoints<G>, N>

const contract = {
  v1: {
    ingest: endpointOf(V1.V1Datasets, "ingest"),
    getIngestion: endpointOf(V1.V1Datasets, "getIngestion"),
    listIngestions: endpointOf(V1.V1Datasets, "listIngestions")
  },
  v2: {
    ingest: endpointOf(V2.V2Datasets, "ingest"),
    getIngestion: endpointOf(V2.V2Datasets, "getIngestion"),
    listIngestions: endpointOf(V2.V2Datasets, "listIngestions")
  }
}

const v2Counts = V2.IngestionDetail.fields.summary.members[0].fields.ingestion.members[0]

/** The fields each reader reads, with the contract's schemas of them. */
const read = {
  v1: {
    accepted: V1.IngestResponse.pick("ingestionId"),
    detail: Schema.Struct({
      status: V1.IngestionDetailResponse.fields.status,
      metrics: Schema.Struct({
        ingestionMetrics: V1.IngestionMetrics.pick("appendedRecordsCount", "overwrittenRecordsCount", "rejectedRecordsCount")
      }),
      errors: Schema.optional(Schema.Array(V1.IngestionProblem.pick("code", "field", "message")))
    }),
    list: Schema.Struct({ ingestions: Schema.Array(V1.IngestionListItem.pick("ingestionId", "status")) })
  },
  v2: {
    accepted: Schema.Struct({ data: V2.IngestAccepted.pick("ingestionId") }),
    detail: Schema.Struct({
      data: Schema.Struct({
        status: V2.IngestionDetail.fields.status,
        summary: Schema.NullOr(
          Schema.Struct({ ingestion: Schema.NullOr(v2Counts.pick("appendedRecordCount", "overwrittenRecordCount")) })
        ),
        errors: V2.IngestionDetail.fields.errors
      })
    }),
    list: Schema.Struct({ data: Schema.Struct({ items: Schema.Array(V2.IngestionListItem.pick("id", "status")) }) })
  },
  /** The envelope's first error (`type` is not read). */
  problem: Schema.Struct({ errors: Schema.Tuple([ErrorItem.pick("code", "field", "message")], Schema.Unknown) })
}

// ---------------------------------------------------------------------------------------------
// reference readings: the decoded values of the contract, as the module's models
// ---------------------------------------------------------------------------------------------

const v1Pending = V1.IngestionStatus.literals.filter((s) => s === "processing")
const v2Pending = V2.IngestionStatus.literals.filter((s) => s === "queued" || s === "processing")

const referenceAccepted = {
  v1: (answer: typeof read.v1.accepted.Type) => answer.ingestionId,
  v2: (answer: typeof read.v2.accepted.Type) => answer.data.ingestionId
}

const referenceDetail = {
  v1: (answer: typeof read.v1.detail.Type): Detail => {
    const errors = answer.errors ?? []
    if ((v1Pending as ReadonlyArray<string>).includes(answer.status)) return { _tag: "Pending" }
    if (answer.status === "error") return { _tag: "Failed", status: "error", message: errors[0]?.message ?? "error" }
    const counts = answer.metrics.ingestionMetrics
    const rejected = Math.min(Math.max(counts.rejectedRecordsCount, 0), MaxRecordsPerIngestion)
    return {
      _tag: "Succeeded",
      stored: counts.appendedRecordsCount + counts.overwrittenRecordsCount,
      counted: true,
      rejected: Array.from({ length: rejected }, (_, i): Rejection => ({
        code: errors[i]?.code ?? null,
        field: errors[i]?.field ?? null,
        message: errors[i]?.message ?? null,
        record: undefined
      }))
    }
  },
  v2: ({ data }: typeof read.v2.detail.Type): Detail => {
    const rejected = (data.errors ?? []).map((e): Rejection => ({ code: e.code, field: e.field, message: e.message, record: e.record }))
    if ((v2Pending as ReadonlyArray<string>).includes(data.status)) return { _tag: "Pending" }
    if (data.status !== "success") return { _tag: "Failed", status: data.status, message: rejected[0]?.message ?? data.status }
    const counts = data.summary?.ingestion ?? null
    return counts === null
      ? { _tag: "Succeeded", stored: 0, rejected, counted: false }
      : { _tag: "Succeeded", stored: counts.appendedRecordCount + counts.overwrittenRecordCount, rejected, counted: true }
  }
}

const referenceList = {
  v1: (answer: typeof read.v1.list.Type): ReadonlyArray<ListItem> =>
    answer.ingestions.map((i) => ({ id: i.ingestionId, status: i.status, terminal: !(v1Pending as ReadonlyArray<string>).includes(i.status), succeeded: i.status === "success" })),
  v2: (answer: typeof read.v2.list.Type): ReadonlyArray<ListItem> =>
    answer.data.items.map((i) => ({ id: i.id, status: i.status, terminal: !(v2Pending as ReadonlyArray<string>).includes(i.status), succeeded: i.status === "success" }))
}

const referenceProblem = (status: number, text: string, answer: typeof read.problem.Type | undefined): Problem => {
  if (answer === undefined) {
    return { code: `http_${status}`, field: null, message: text === "" ? `the service answered ${status}` : text.length > 200 ? `${text.slice(0, 200)}…` : text }
  }
  const [first] = answer.errors
  return { code: first.code ?? `http_${status}`, field: first.field, message: first.message }
}

/** The JSON of `text` decoded by `schema`, or undefined: the reference for damaged answers. */
const decodeText = <A, I>(schema: Schema.Schema<A, I>, text: string): A | undefined => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return undefined
  }
  return Option.getOrUndefined(Schema.decodeUnknownOption(schema)(json))
}

// ---------------------------------------------------------------------------------------------
// answers: valid ones from the success schemas, and damaged ones
// ---------------------------------------------------------------------------------------------

/** Whether `value` has no number JSON cannot write (the contract's `Schema.Number` admits them). */
const finite = (value: unknown): boolean =>
  typeof value === "number"
    ? Number.isFinite(value)
    : Array.isArray(value)
    ? value.every(finite)
    : typeof value === "object" && value !== null
    ? Object.values(value).every(finite)
    : true

/**
 * Values of `success` the server could send: those JSON can carry (a `Schema.Number` field such
 * as v1's `datasetSizeMB` may be `Infinity` or `NaN` on the Type side, which JSON writes `null`).
 */
const sendable = <A, I>(success: Schema.Schema<A, I>): fc.Arbitrary<A> =>
  Arbitrary.make(success).filter((value) => finite(Schema.encodeSync(success)(value)))

/** An answer the server could send: a value of `success`, encoded by it, as JSON text. */
const answerText = <A, I>(success: Schema.Schema<A, I>, value: A) =>
  Effect.map(Schema.encode(success)(value), (encoded) => JSON.stringify(encoded))

/** The success answer read through the endpoint's own success schema (the whole envelope). */
const decodeAnswer = <A, I>(success: Schema.Schema<A, I>, text: string) =>
  Schema.decodeUnknown(success)(JSON.parse(text))

type Path = ReadonlyArray<string | number>

const pathsOf = (value: unknown, at: Path = []): Array<Path> => {
  const paths: Array<Path> = [at]
  if (Array.isArray(value)) value.forEach((item, i) => paths.push(...pathsOf(item, [...at, i])))
  else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) paths.push(...pathsOf(item, [...at, key]))
  }
  return paths
}

/** Paths of the fields a reader reads: `*` stands for any array index. */
const matches = (path: Path, pattern: ReadonlyArray<string>) =>
  path.length === pattern.length && path.every((step, i) => pattern[i] === "*" ? typeof step === "number" : pattern[i] === step)

type Damage = { readonly _tag: "Delete" } | { readonly _tag: "Set"; readonly to: unknown }

/** `json` with the value at `path` deleted or replaced; undefined when the root is deleted. */
const damaged = (json: unknown, path: Path, damage: Damage): unknown => {
  if (path.length === 0) return damage._tag === "Delete" ? undefined : damage.to
  type Node = Record<string | number, unknown>
  const copy = structuredClone(json) as Node
  let parent = copy
  for (const step of path.slice(0, -1)) parent = parent[step] as Node
  const last = path[path.length - 1]!
  if (damage._tag === "Set") parent[last] = damage.to
  else if (Array.isArray(parent)) parent.splice(Number(last), 1)
  else delete parent[last]
  return copy
}

const allStatuses = [...new Set([...V1.IngestionStatus.literals, ...V2.IngestionStatus.literals])]

/** Values of other types than a field's (and some of the same type). */
const otherValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.constantFrom(1.5, -1, 2 ** 53, 1e300, 0),
  fc.string({ maxLength: 8 }),
  fc.constantFrom(...allStatuses),
  fc.constant([]),
  fc.constant({}),
  fc.jsonValue({ maxDepth: 2 })
)

const damage: fc.Arbitrary<Damage> = fc.oneof(
  fc.constant<Damage>({ _tag: "Delete" }),
  otherValue.map((to): Damage => ({ _tag: "Set", to }))
)

/**
 * Damaged answers: a valid answer of `success` with one value deleted or replaced, mostly in
 * the fields a reader reads (`patterns`), or its text cut short, or arbitrary JSON or text.
 */
const damagedAnswers = <A, I>(success: Schema.Schema<A, I>, patterns: ReadonlyArray<ReadonlyArray<string>>): fc.Arbitrary<string> => {
  const json = sendable(success).map((value) => Schema.encodeSync(success)(value))
  const edited = json.chain((value) => {
    const all = pathsOf(value)
    const reads = all.filter((path) => patterns.some((pattern) => matches(path, pattern)))
    const path = reads.length > 0
      ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...reads) }, { weight: 1, arbitrary: fc.constantFrom(...all) })
      : fc.constantFrom(...all)
    return fc.tuple(path, damage).map(([at, how]) => JSON.stringify(damaged(value, at, how)) ?? "")
  })
  const cut = json.chain((value) => {
    const text = JSON.stringify(value)
    return fc.nat({ max: text.length - 1 }).map((end) => text.slice(0, end))
  })
  return fc.oneof(
    { weight: 6, arbitrary: edited },
    { weight: 2, arbitrary: cut },
    { weight: 1, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: fc.string() }
  )
}

const wires = { v1: ingestWire("v1", randomUUID()), v2: ingestWire("v2", 1) }
const numRuns = 300

/** What a reader reads (the contract's schemas of those fields), what that means, and where it is. */
interface Reading<Read, I, Out> {
  readonly fields: Schema.Schema<Read, I>
  readonly reference: (value: Read) => Out
  /** The paths of the fields read (`*`: any index), where damage is mostly done. */
  readonly patterns: ReadonlyArray<ReadonlyArray<string>>
}

const readings = {
  v1: {
    accepted: { fields: read.v1.accepted, reference: referenceAccepted.v1, patterns: [["ingestionId"]] },
    detail: {
      fields: read.v1.detail,
      reference: referenceDetail.v1,
      patterns: [
        ["status"],
        ["metrics"],
        ["metrics", "ingestionMetrics"],
        ["metrics", "ingestionMetrics", "appendedRecordsCount"],
        ["metrics", "ingestionMetrics", "overwrittenRecordsCount"],
        ["metrics", "ingestionMetrics", "rejectedRecordsCount"],
        ["errors"],
        ["errors", "*"],
        ["errors", "*", "code"],
        ["errors", "*", "field"],
        ["errors", "*", "message"]
      ]
    },
    list: {
      fields: read.v1.list,
      reference: referenceList.v1,
      patterns: [["ingestions"], ["ingestions", "*"], ["ingestions", "*", "ingestionId"], ["ingestions", "*", "status"]]
    }
  },
  v2: {
    accepted: { fields: read.v2.accepted, reference: referenceAccepted.v2, patterns: [["data"], ["data", "ingestionId"]] },
    detail: {
      fields: read.v2.detail,
      reference: referenceDetail.v2,
      patterns: [
        ["data"],
        ["data", "status"],
        ["data", "summary"],
        ["data", "summary", "ingestion"],
        ["data", "summary", "ingestion", "appendedRecordCount"],
        ["data", "summary", "ingestion", "overwrittenRecordCount"],
        ["data", "errors"],
        ["data", "errors", "*"],
        ["data", "errors", "*", "code"],
        ["data", "errors", "*", "field"],
        ["data", "errors", "*", "message"],
        ["data", "errors", "*", "record"]
      ]
    },
    list: {
      fields: read.v2.list,
      reference: referenceList.v2,
      patterns: [["data"], ["data", "items"], ["data", "items", "*"], ["data", "items", "*", "id"], ["data", "items", "*", "status"]]
    }
  }
}

/**
 * The properties of one reader: on the endpoint's success answers it reads what
 * `Schema.decodeUnknown` of the success schema reads; on damaged answers, what the contract's
 * schemas of the fields it reads decode (undefined when they fail), without throwing.
 */
const properties = <Full extends Read, Read, I, Out>(
  name: string,
  success: Schema.Schema<Full, unknown>,
  reading: Reading<Read, I, Out>,
  fast: (text: string) => Out | undefined
) => {
  it.effect.prop(`${name}: arbitrary success answers, as the success schema decodes them`, [sendable(success)], ([value]) =>
    Effect.gen(function*() {
      const text = yield* answerText(success, value)
      const decoded = yield* decodeAnswer(success, text)
      const answer = fast(text)
      expect(answer).toBeDefined()
      expect(answer).toEqual(reading.reference(decoded))
    }), { fastCheck: { numRuns } })

  const seen = { wrongShape: 0, readable: 0 }
  it.prop(`${name}: damaged answers, undefined exactly when the fields read break the contract`, [damagedAnswers(success, reading.patterns)], ([text]) => {
    const decoded = decodeText(reading.fields, text)
    const answer = fast(text)
    if (answer === undefined) seen.wrongShape++
    else seen.readable++
    expect(answer).toEqual(decoded === undefined ? undefined : reading.reference(decoded))
  }, { fastCheck: { numRuns: 500 } })

  it(`${name}: the damaged answers held both kinds`, () => {
    expect(seen.wrongShape).toBeGreaterThan(50)
    expect(seen.readable).toBeGreaterThan(10)
  })
}

// ---------------------------------------------------------------------------------------------
// properties
// ---------------------------------------------------------------------------------------------

describe("ingestWire", () => {
  describe("statuses", () => {
    it("terminal statuses are the contract's IngestionStatus literals less the pending ones", () => {
      expect([...terminalStatuses.v1].sort()).toEqual(V1.IngestionStatus.literals.filter((s) => s !== "processing").sort())
      expect([...terminalStatuses.v2].sort()).toEqual(
        V2.IngestionStatus.literals.filter((s) => s !== "queued" && s !== "processing").sort()
      )
      // The written pending statuses, and the written "success", are the contract's.
      expect(v1Pending).toEqual(["processing"])
      expect(v2Pending).toEqual(["queued", "processing"])
      expect(V1.IngestionStatus.literals).toContain("success")
      expect(V2.IngestionStatus.literals).toContain("success")
      expect(wires.v1.terminal).toBe(terminalStatuses.v1)
      expect(wires.v2.terminal).toBe(terminalStatuses.v2)
    })
  })

  describe("v1 answers", () => {
    properties("acceptedId", contract.v1.ingest.successSchema, readings.v1.accepted, wires.v1.acceptedId)
    properties("readDetail", contract.v1.getIngestion.successSchema, readings.v1.detail, wires.v1.readDetail)
    properties("readList", contract.v1.listIngestions.successSchema, readings.v1.list, wires.v1.readList)
  })

  describe("v2 answers", () => {
    properties("acceptedId", contract.v2.ingest.successSchema, readings.v2.accepted, wires.v2.acceptedId)
    properties("readDetail", contract.v2.getIngestion.successSchema, readings.v2.detail, wires.v2.readDetail)
    properties("readList", contract.v2.listIngestions.successSchema, readings.v2.list, wires.v2.readList)
  })

  describe("readProblem", () => {
    const statuses = fc.constantFrom(400, 401, 403, 404, 408, 409, 413, 415, 422, 429, 431, 500, 502, 503)
    const problemFields = [["errors"], ["errors", "*"], ["errors", "*", "code"], ["errors", "*", "field"], ["errors", "*", "message"]]

    it.prop("the error envelope's first error, as the contract's ErrorItem reads it", [ErrorEnvelope, statuses], ([envelope, status]) => {
      const text = JSON.stringify(Schema.encodeSync(ErrorEnvelope)(envelope))
      const decoded = referenceProblem(status, text, decodeText(read.problem, text))
      const generated = referenceProblem(status, text, envelope.errors.length > 0 ? { errors: [envelope.errors[0]!] } : undefined)
      expect(decoded).toEqual(generated)
      expect(wires.v2.readProblem(status, text)).toEqual(decoded)
      expect(wires.v1.readProblem(status, text)).toEqual(decoded)
    }, { fastCheck: { numRuns } })

    it.prop("damaged or odd bodies: http_<status> and the body's start, never a throw", [damagedAnswers(ErrorEnvelope, problemFields), statuses], ([text, status]) => {
      expect(wires.v2.readProblem(status, text)).toEqual(referenceProblem(status, text, decodeText(read.problem, text)))
    }, { fastCheck: { numRuns: 500 } })

    it("examples", () => {
      expect(wires.v2.readProblem(502, "<html>Bad gateway</html>")).toEqual({ code: "http_502", field: null, message: "<html>Bad gateway</html>" })
      expect(wires.v2.readProblem(503, "")).toEqual({ code: "http_503", field: null, message: "the service answered 503" })
      expect(wires.v2.readProblem(500, "x".repeat(1000)).message).toBe(`${"x".repeat(200)}…`)
      expect(wires.v1.readProblem(404, JSON.stringify({ requestId: "r", status: "error", errors: [{ message: "gone" }] })))
        .toEqual({ code: "http_404", field: null, message: "gone" })
      expect(excerpt("abc")).toBe("abc")
    })
  })

  describe("examples and contract quirks", () => {
    it("v2: a success without counts is not counted; failed and purged carry their first error's message", () => {
      const answer = (data: object) => JSON.stringify({ requestId: "r", status: "success", data })
      const base = { id: "i", initiatedAt: null, initiatedBy: null, duration: null }
      expect(wires.v2.readDetail(answer({ ...base, status: "success", summary: null, errors: null })))
        .toEqual({ _tag: "Succeeded", stored: 0, rejected: [], counted: false })
      expect(wires.v2.readDetail(answer({ ...base, status: "success", summary: { ingestion: null, dataset: null }, errors: null })))
        .toEqual({ _tag: "Succeeded", stored: 0, rejected: [], counted: false })
      expect(wires.v2.readDetail(answer({
        ...base,
        status: "failed",
        summary: null,
        errors: [{ code: "ingestion_failed", field: null, message: null, record: null }]
      }))).toEqual({ _tag: "Failed", status: "failed", message: "failed" })
      expect(wires.v2.readDetail(answer({ ...base, status: "purged", summary: null, errors: [{ code: "purged", field: null, message: "gone", record: null }] })))
        .toEqual({ _tag: "Failed", status: "purged", message: "gone" })
      // The v1 shape is not a v2 detail, and the reverse.
      expect(wires.v2.readDetail(JSON.stringify({ status: "success", metrics: {} }))).toBeUndefined()
    })

    it("v1: metrics are required even while processing; rejections carry the count, not the records", () => {
      expect(wires.v1.readDetail(JSON.stringify({ requestId: "r", status: "processing", ingestionId: "i", timestamp: "t" }))).toBeUndefined()
      const metrics = {
        datasetMetrics: { columnsCount: 1, datasetSizeMB: 0, totalDatasetRecordsCount: 2 },
        ingestionMetrics: { receivedRecordsCount: 5, appendedRecordsCount: 2, overwrittenRecordsCount: 1, rejectedRecordsCount: 2 }
      }
      const body = { requestId: "r", status: "success", ingestionId: "i", timestamp: "t", metrics }
      expect(wires.v1.readDetail(JSON.stringify({ ...body, errors: [{ code: "x", field: "f", message: "m", type: "validation" }] }))).toEqual({
        _tag: "Succeeded",
        stored: 3,
        counted: true,
        rejected: [
          { code: "x", field: "f", message: "m", record: undefined },
          { code: null, field: null, message: null, record: undefined }
        ]
      })
      // errors is optional in v1, but not nullable.
      expect(wires.v1.readDetail(JSON.stringify({ ...body, errors: null }))).toBeUndefined()
      expect(wires.v1.readDetail(JSON.stringify({ ...body, status: "error", errors: [{ code: null, field: null, message: "why", type: "ingestion" }] })))
        .toEqual({ _tag: "Failed", status: "error", message: "why" })
      // No ingestion holds more than MaxRecordsPerIngestion records, whatever the count says.
      const huge = { ...metrics, ingestionMetrics: { ...metrics.ingestionMetrics, rejectedRecordsCount: 2 ** 31 } }
      const read = wires.v1.readDetail(JSON.stringify({ ...body, metrics: huge }))
      expect(read?._tag === "Succeeded" && read.rejected.length).toBe(MaxRecordsPerIngestion)
    })
  })

  describe("paths", () => {
    /** The path and query of the request the client derived from the contract makes for `call`. */
    const requestPath = <A, E>(call: (httpClient: HttpClient.HttpClient) => Effect.Effect<A, E>) => {
      let seen: string | undefined
      const httpClient = HttpClient.make((request, url) => {
        seen = `${url.pathname}${url.search}`
        return Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", description: "not sent" }))
      })
      Effect.runSync(Effect.exit(call(httpClient)))
      return seen
    }
    const baseUrl = "http://contract.test"
    // `Arbitrary.make(UuidId)` does not end (its pattern has the `i` flag): UUIDs from fast-check,
    // in either case, held to the contract by decoding them with its path schemas.
    const uuids = fc.tuple(fc.uuid(), fc.boolean()).map(([uuid, upper]) => upper ? uuid.toUpperCase() : uuid)
    const v2DatasetIds = fc.oneof(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }).map(String), uuids)
    const ingestionIds = uuids.map((uuid) => Schema.decodeUnknownSync(UuidAnyCase)(uuid))

    it.prop("v2: the ingest, getIngestion and listIngestions endpoints' paths, with the dataset and ingestion ids", [v2DatasetIds, ingestionIds], ([given, ingestionId]) => {
      // The ids as the contract decodes them from a path: what a caller holds.
      const { id } = Schema.decodeUnknownSync(DatasetIdPath)({ id: given })
      const wire = ingestWire("v2", id)
      const group = (httpClient: HttpClient.HttpClient) => HttpApiClient.group(V2Api, { group: "v2Datasets", httpClient, baseUrl })
      expect(wire.dataPath).toBe(requestPath((h) =>
        Effect.flatMap(group(h), (c) => c.ingest({ path: { id }, payload: { records: [{}] }, headers: {} }))
      ))
      expect(wire.detailPath(ingestionId)).toBe(requestPath((h) =>
        Effect.flatMap(group(h), (c) => c.getIngestion({ path: { id, ingestionId } }))
      ))
      expect(wire.listPath).toBe(requestPath((h) =>
        Effect.flatMap(group(h), (c) => c.listIngestions({ path: { id }, urlParams: { page: 0, pageSize: MaxPageSize } }))
      ))
    })

    it.prop("v1: the ingest, getIngestion and listIngestions endpoints' paths", [uuids, ingestionIds], ([given, ingestionId]) => {
      const { datasetId } = Schema.decodeUnknownSync(V1.DatasetPath)({ datasetId: given })
      const wire = ingestWire("v1", datasetId)
      const group = (httpClient: HttpClient.HttpClient) => HttpApiClient.group(V1.V1Api, { group: "v1Datasets", httpClient, baseUrl })
      expect(wire.dataPath).toBe(requestPath((h) =>
        Effect.flatMap(group(h), (c) => c.ingest({ path: { datasetId }, payload: { records: [{}] }, headers: {} }))
      ))
      expect(wire.detailPath(ingestionId)).toBe(requestPath((h) =>
        Effect.flatMap(group(h), (c) => c.getIngestion({ path: { datasetId, ingestionId } }))
      ))
      expect(wire.listPath).toBe(requestPath((h) => Effect.flatMap(group(h), (c) => c.listIngestions({ path: { datasetId }, urlParams: {} }))))
    })

    it.prop("any page of the list: the listIngestions endpoint's path for that page (v2 from 0 at the largest size, v1 from 1 at its default)", [uuids, fc.integer({ min: 0, max: 10_000 })], ([given, index]) => {
      const { id } = Schema.decodeUnknownSync(DatasetIdPath)({ id: given })
      const v2 = ingestWire("v2", id)
      const v2Group = (httpClient: HttpClient.HttpClient) => HttpApiClient.group(V2Api, { group: "v2Datasets", httpClient, baseUrl })
      expect(v2.listPage(index)).toBe(requestPath((h) =>
        Effect.flatMap(v2Group(h), (c) => c.listIngestions({ path: { id }, urlParams: { page: index, pageSize: MaxPageSize } }))
      ))
      const { datasetId } = Schema.decodeUnknownSync(V1.DatasetPath)({ datasetId: given })
      const v1 = ingestWire("v1", datasetId)
      const v1Group = (httpClient: HttpClient.HttpClient) => HttpApiClient.group(V1.V1Api, { group: "v1Datasets", httpClient, baseUrl })
      expect(v1.listPage(index)).toBe(requestPath((h) =>
        Effect.flatMap(v1Group(h), (c) => c.listIngestions({ path: { datasetId }, urlParams: index === 0 ? {} : { page: index + 1 } }))
      ))
      expect(v2.listPage(0)).toBe(v2.listPath)
      expect(v1.listPage(0)).toBe(v1.listPath)
      expect([v1.listPageSize, v2.listPageSize]).toEqual([100, MaxPageSize])
    })

    it("the list queries ask for the contract's first page, of the largest size v2 gives", () => {
      const query = (path: string) => Object.fromEntries(new URL(path, "http://contract.test").searchParams)
      const v2Params = Option.getOrThrow(contract.v2.listIngestions.urlParamsSchema)
      const v1Params = Option.getOrThrow(contract.v1.listIngestions.urlParamsSchema)
      const v2 = Schema.decodeUnknownSync(v2Params)(query(wires.v2.listPath))
      expect(v2).toEqual({ page: 0, pageSize: MaxPageSize })
      // Page 0 is the first: there is none before it.
      expect(Schema.decodeUnknownOption(v2Params)({ page: String(v2.page! - 1) })._tag).toBe("None")
      // v1 sends no query: its defaults (page 1, 100 a page) are the contract's documented ones.
      expect(query(wires.v1.listPath)).toEqual({})
      expect(Schema.decodeUnknownOption(v1Params)({ page: "0" })._tag).toBe("None")
      expect(Schema.decodeUnknownSync(v1Params)({ page: "1", pageSize: "100" })).toEqual({ page: 1, pageSize: 100 })
    })
  })
})

// ---------------------------------------------------------------------------------------------
// end to end, against the reference server
// ---------------------------------------------------------------------------------------------

const ordersSchema = [
  { id: "id", dataType: "string" as const },
  { id: "amount", dataType: "number" as const }
]

/** Polls `wire.detailPath(id)` until its detail is not pending. */
const followed = (client: TributaryClient["Type"], wire: IngestWire, id: string): Effect.Effect<Detail> =>
  Effect.flatMap(Effect.orDie(client.exchanges({ method: "GET", path: wire.detailPath(id) })), (reply) => {
    expect(reply.status).toBe(200)
    const detail = wire.readDetail(reply.text)
    expect(detail, reply.text).toBeDefined()
    return detail!._tag === "Pending"
      ? Effect.zipRight(Effect.sleep(Duration.millis(10)), followed(client, wire, id))
      : Effect.succeed(detail!)
  })

const post = (client: TributaryClient["Type"], wire: IngestWire, records: ReadonlyArray<unknown>) =>
  Effect.orDie(client.exchanges({
    method: "POST",
    path: wire.dataPath,
    body: JSON.stringify({ records }),
    headers: { "idempotency-key": randomUUID() }
  }))

layer(serverLayer(), { excludeTestServices: true })("ingestWire against the reference server", (it) => {
  it.effect("v2: post, follow, list and read problems with the module alone", () =>
    Effect.gen(function*() {
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "wire" }, headers: {} })
      const dataset = yield* client.v2.v2Datasets.create({
        payload: { name: "orders", dataSourceId: dataSource.data.id, schema: ordersSchema, primaryKey: ["id"] },
        headers: {}
      })
      const wire = ingestWire("v2", dataset.data.id)
      const bad = { id: "b", amount: "two" }
      const accepted = yield* post(client, wire, [{ id: "a", amount: 1 }, bad, { id: "c", amount: 3 }])
      expect(accepted.status).toBe(200)
      const first = wire.acceptedId(accepted.text)
      expect(first).toBeTypeOf("string")

      const detail = yield* followed(client, wire, first!)
      expect(detail).toMatchObject({ _tag: "Succeeded", stored: 2, counted: true })
      expect(detail._tag === "Succeeded" && detail.rejected.map((r) => r.record)).toEqual([bad])
      // The same answer through the typed client and the contract's schema.
      const typed = yield* client.v2.v2Datasets.getIngestion({ path: { id: dataset.data.id, ingestionId: first! } })
      expect(detail).toEqual(referenceDetail.v2(typed))

      const second = wire.acceptedId((yield* post(client, wire, [{ id: "d", amount: 4 }])).text)
      yield* followed(client, wire, second!)
      const listed = yield* Effect.orDie(client.exchanges({ method: "GET", path: wire.listPath }))
      const list = wire.readList(listed.text)
      // Newest first.
      expect(list?.map((i) => i.id)).toEqual([second, first])
      expect(list?.every((i) => i.terminal && i.status === "success")).toBe(true)
      // The next page is a page of the list too: empty here.
      const older = yield* Effect.orDie(client.exchanges({ method: "GET", path: wire.listPage(1) }))
      expect([older.status, wire.readList(older.text)]).toEqual([200, []])

      const missing = yield* Effect.orDie(client.exchanges({ method: "GET", path: wire.detailPath(randomUUID()) }))
      expect(missing.status).toBe(404)
      expect(wire.readProblem(missing.status, missing.text)).toMatchObject({ code: "not_found" })
      const empty = yield* post(client, wire, [])
      expect(empty.status).toBe(400)
      const problem = wire.readProblem(empty.status, empty.text)
      expect(problem.code).not.toMatch(/^http_/)
      expect(problem.field).toContain("records")
      expect(problem.message.length).toBeGreaterThan(0)
    }))

  it.effect("v1: post, follow, list and read problems with the module alone", () =>
    Effect.gen(function*() {
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v1.v1DataSources.createDataSource({ payload: { title: "wire v1" } })
      const dataset = yield* client.v1.v1Datasets.createDataset({ payload: { dataSourceId: dataSource.id, primaryKeys: ["id"] } })
      const wire = ingestWire("v1", dataset.id)
      const accepted = yield* post(client, wire, [{ id: "a", n: 1 }, { n: 2 }, { id: "c", n: 3 }])
      expect(accepted.status).toBe(200)
      const first = wire.acceptedId(accepted.text)
      expect(first).toBeTypeOf("string")

      const detail = yield* followed(client, wire, first!)
      expect(detail).toMatchObject({ _tag: "Succeeded", stored: 2, counted: true })
      expect(detail._tag === "Succeeded" && detail.rejected.length).toBe(1)
      expect(detail._tag === "Succeeded" && detail.rejected[0]).toMatchObject({ record: undefined })
      expect(detail._tag === "Succeeded" && detail.rejected[0]!.code).toBeTypeOf("string")
      const typed = yield* client.v1.v1Datasets.getIngestion({ path: { datasetId: dataset.id, ingestionId: first! } })
      expect(detail).toEqual(referenceDetail.v1(typed))

      const second = wire.acceptedId((yield* post(client, wire, [{ id: "d", n: 4 }])).text)
      yield* followed(client, wire, second!)
      const listed = yield* Effect.orDie(client.exchanges({ method: "GET", path: wire.listPath }))
      const list = wire.readList(listed.text)
      expect(list?.map((i) => i.id)).toEqual([second, first])
      expect(list?.every((i) => i.terminal && i.status === "success")).toBe(true)
      // The next page is a page of the list too: empty here.
      const older = yield* Effect.orDie(client.exchanges({ method: "GET", path: wire.listPage(1) }))
      expect([older.status, wire.readList(older.text)]).toEqual([200, []])

      const missing = yield* Effect.orDie(client.exchanges({ method: "GET", path: wire.detailPath(randomUUID()) }))
      expect(missing.status).toBe(404)
      expect(wire.readProblem(missing.status, missing.text)).toMatchObject({ code: "not_found" })
    }))
})
