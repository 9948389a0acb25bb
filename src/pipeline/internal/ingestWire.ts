/**
 * The ingest exchange as the pipeline speaks it, v1 and v2: where a batch is posted, where its
 * ingestion is followed and a dataset's ingestions are listed, and readers of the answers.
 *
 * Why a module of its own: the pipeline's hot path reads answers per batch (the POST's, each
 * poll's) and does not decode them through `Schema` (measured on a v2 detail answer with two
 * rejections: a decode of the envelope took about three times its `JSON.parse`; these readers
 * add little to the parse), yet what it reads must be what the contract says. So this is the
 * one place that knows the ingest wire, and it knows it from `src/api`:
 *
 * - the paths are the contract's endpoint `path` templates (`ingest`, `getIngestion`,
 *   `listIngestions` of `V1Datasets` and `V2Datasets`), filled in at module load;
 * - the list's query is the `listIngestions` URL-parameter schema's own encoding of the page
 *   asked for (its names are type-checked against that schema);
 * - the terminal statuses are the `IngestionStatus` literals of each version less the pending
 *   ones; the pending ones are written here, typed as members of those literals;
 * - every field a reader touches is named through a type made from the contract's encoded
 *   schema, so a renamed field fails to compile.
 *
 * The readers are a `JSON.parse` and checks of the fields they read: exactly what the contract
 * says of those fields (a string, an integer, one of the literals, null where it may be null),
 * and nothing of the fields they do not read. An answer that fails a check reads as
 * `undefined` (an answer of the wrong shape); no reader throws. The property tests
 * (`test/pipeline/ingest-wire.test.ts`) hold them to the contract: for arbitrary answers made
 * from the contract's success schemas, and for damaged ones, each reader answers as a decoding
 * through the contract's schemas does.
 *
 * @since 0.2.0
 */
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Option, Schema } from "effect"
import { MaxRecordsPerIngestion } from "../../api/common.js"
import type { ErrorEnvelope, ErrorItem } from "../../api/errors.js"
import * as V1 from "../../api/v1.js"
import { type DataResponse, MaxPageSize, type PageResponse } from "../../api/v2/common.js"
import * as V2 from "../../api/v2/datasets.js"

// ---------------------------------------------------------------------------------------------
// models
// ---------------------------------------------------------------------------------------------

/**
 * A record the service rejected, as its ingestion's detail tells it. v2 echoes the record;
 * v1 does not (`record` is then `undefined`, and `code`, `field` and `message` are those of
 * the detail's error of the same index, or null when it has none).
 *
 * @since 0.2.0
 * @category models
 */
export interface Rejection {
  readonly code: string | null
  readonly field: string | null
  readonly message: string | null
  readonly record: unknown
}

/**
 * What a poll of an ingestion says.
 *
 * - `Pending`: not finished (v2 `queued` or `processing`, v1 `processing`).
 * - `Succeeded`: `stored` records were appended or overwritten; `rejected` lists the records
 *   the service refused. `counted` is false when the answer had no counts (v2's `summary` or
 *   `summary.ingestion` null): `stored` is then 0 and says nothing.
 * - `Failed`: the ingestion ended without storing anything (v2 `failed` or `purged`, v1
 *   `error`); `message` is its first error's, else the status.
 *
 * @since 0.2.0
 * @category models
 */
export type Detail =
  | { readonly _tag: "Pending" }
  | {
    readonly _tag: "Succeeded"
    readonly stored: number
    readonly rejected: ReadonlyArray<Rejection>
    readonly counted: boolean
  }
  | { readonly _tag: "Failed"; readonly status: string; readonly message: string }

/**
 * One ingestion of a list page.
 *
 * @since 0.2.0
 * @category models
 */
export interface ListItem {
  readonly id: string
  readonly status: string
  readonly terminal: boolean
  /**
   * Its status is `success`: it ended and stored what it did not reject. Terminal for good,
   * so later batches of its keys may go before its detail (its counts, its rejections) is read.
   */
  readonly succeeded: boolean
}

/**
 * The first problem of an error answer (the error envelope shared by v1 and v2).
 *
 * @since 0.2.0
 * @category models
 */
export interface Problem {
  /** The error's code; `http_<status>` when it has none or the body is not the envelope. */
  readonly code: string
  readonly field: string | null
  readonly message: string
}

/**
 * The ingest exchange of one dataset in one API version.
 *
 * @since 0.2.0
 * @category models
 */
export interface IngestWire {
  readonly api: "v1" | "v2"
  /** Where a batch is POSTed. */
  readonly dataPath: string
  /** Where one ingestion is read. */
  readonly detailPath: (ingestionId: string) => string
  /**
   * The first page of the dataset's ingestions (newest first, as the service lists them): v2
   * page 0 of 100 (its largest page); v1 the bare route, whose defaults are page 1 of 100.
   */
  readonly listPath: string
  /** The list's page `index` (0: `listPath`), of the same size, older ingestions each page. */
  readonly listPage: (index: number) => string
  /** How many ingestions a full page of the list holds. */
  readonly listPageSize: number
  /** The statuses an ingestion does not leave. */
  readonly terminal: ReadonlySet<string>
  /** The ingestion id of a 200 answer to the POST; undefined for an answer of the wrong shape. */
  readonly acceptedId: (text: string) => string | undefined
  /** A 200 answer to a poll of `detailPath`; undefined for an answer of the wrong shape. */
  readonly readDetail: (text: string) => Detail | undefined
  /** A 200 answer of `listPath`; undefined for an answer of the wrong shape. */
  readonly readList: (text: string) => ReadonlyArray<ListItem> | undefined
  /** The first problem of an error answer; for a body that is not the envelope, its start. */
  readonly readProblem: (status: number, text: string) => Problem
}

// ---------------------------------------------------------------------------------------------
// statuses
// ---------------------------------------------------------------------------------------------

type V1Status = typeof V1.IngestionStatus.Type
type V2Status = typeof V2.IngestionStatus.Type

/** Written: the contract says which statuses exist, not which of them are still moving. */
const v1Pending: ReadonlyArray<V1Status> = ["processing"]
const v2Pending: ReadonlyArray<V2Status> = ["queued", "processing"]
const succeeded: V1Status & V2Status = "success"

const terminalOf = <S extends string>(literals: ReadonlyArray<S>, pending: ReadonlyArray<S>): ReadonlySet<S> =>
  new Set(literals.filter((status) => !pending.includes(status)))

/**
 * The terminal ingestion statuses of each version: the contract's `IngestionStatus` literals
 * less the pending ones (v1 `success`, `error`; v2 `success`, `failed`, `purged`).
 *
 * @since 0.2.0
 * @category utils
 */
export const terminalStatuses: { readonly v1: ReadonlySet<string>; readonly v2: ReadonlySet<string> } = {
  v1: terminalOf(V1.IngestionStatus.literals, v1Pending),
  v2: terminalOf(V2.IngestionStatus.literals, v2Pending)
}

const isMember = <S extends string>(literals: ReadonlyArray<S>) => {
  const all: ReadonlySet<unknown> = new Set(literals)
  return (u: unknown): u is S => all.has(u)
}
const isV1Status = isMember(V1.IngestionStatus.literals)
const isV2Status = isMember(V2.IngestionStatus.literals)
const v1PendingSet: ReadonlySet<string> = new Set(v1Pending)
const v2PendingSet: ReadonlySet<string> = new Set(v2Pending)

// ---------------------------------------------------------------------------------------------
// paths
// ---------------------------------------------------------------------------------------------

type Endpoints<G> = HttpApiGroup.HttpApiGroup.Endpoints<G>

/** The endpoint `name` of `group`, typed as that endpoint. */
const endpointOf = <
  G extends { readonly endpoints: Readonly<Record<string, HttpApiEndpoint.HttpApiEndpoint.Any>> },
  const N extends HttpApiEndpoint.HttpApiEndpoint.Name<Endpoints<G>>
>(group: G, name: N): HttpApiEndpoint.HttpApiEndpoint.WithName<Endpoints<G>, N> => {
  const endpoint = group.endpoints[name]
  if (endpoint === undefined) throw new Error(`the contract has no endpoint ${name}`)
  return endpoint as HttpApiEndpoint.HttpApiEndpoint.WithName<Endpoints<G>, N>
}

/** A path template's text around its parameters (HttpApi's `:name` syntax), in order. */
const pieces = (template: string, parameters: number): ReadonlyArray<string> => {
  const parts = template.split(/:\w+\??/)
  if (parts.length !== parameters + 1) {
    throw new Error(`the contract's path ${template} has ${parts.length - 1} parameters, not ${parameters}`)
  }
  return parts
}

/** A path parameter as it goes in a path: ids the contract accepts are left as they are. */
const segment = (value: string | number) => encodeURIComponent(String(value))

/** `value` encoded by an endpoint's URL-parameter schema, as a query string (`?a=1&b=2`). */
const queryOf = <A>(schema: Option.Option<Schema.Schema<A, unknown>>, value: A): string => {
  const encoded: unknown = Option.match(schema, {
    onNone: () => undefined,
    onSome: (urlParams) => Schema.encodeSync(urlParams)(value)
  })
  if (typeof encoded !== "object" || encoded === null) throw new Error("the contract's list route has no URL parameters")
  const search = new URLSearchParams()
  for (const [name, text] of Object.entries(encoded)) {
    if (typeof text === "string") search.append(name, text)
  }
  const query = search.toString()
  return query === "" ? "" : `?${query}`
}

const routes = (ingest: string, getIngestion: string, listIngestions: string, listQuery: (index: number) => string) => ({
  data: pieces(ingest, 1),
  detail: pieces(getIngestion, 2),
  list: pieces(listIngestions, 1),
  listQuery
})

/** The first page of a v2 list (`PageParams`: pages from 0). */
const v2FirstPage = 0
const v2List = endpointOf(V2.V2Datasets, "listIngestions")
const v2ListParams: HttpApiEndpoint.HttpApiEndpoint.UrlParams<typeof v2List> = { page: v2FirstPage, pageSize: MaxPageSize }

const v1List = endpointOf(V1.V1Datasets, "listIngestions")

const paths = {
  v1: routes(
    endpointOf(V1.V1Datasets, "ingest").path,
    endpointOf(V1.V1Datasets, "getIngestion").path,
    v1List.path,
    // The first page: its defaults (page 1 of 100) are what is wanted; v1 clients send none.
    // Later ones by number (from 1), of the default size.
    (index) => (index === 0 ? "" : queryOf(v1List.urlParamsSchema, { page: index + 1 }))
  ),
  v2: routes(
    endpointOf(V2.V2Datasets, "ingest").path,
    endpointOf(V2.V2Datasets, "getIngestion").path,
    v2List.path,
    (index) => queryOf(v2List.urlParamsSchema, { ...v2ListParams, page: v2FirstPage + index })
  )
}

const [schemaHead = "", schemaTail = ""] = pieces(endpointOf(V2.V2Datasets, "getSchema").path, 1)

/**
 * Where a dataset's schema is read (the contract's v2 `getSchema`), read once at a run's start.
 *
 * @since 0.3.0
 * @category utils
 */
export const schemaPath = (datasetId: string | number): string => `${schemaHead}${segment(datasetId)}${schemaTail}`

/**
 * A 200 answer of `schemaPath`, decoded with the contract's `DatasetSchemaResponse` (once a
 * run, so through `Schema`, not a hand-made reader).
 *
 * @since 0.3.0
 * @category utils
 */
export const readSchemaAnswer = Schema.decodeUnknownEither(Schema.parseJson(V2.DatasetSchemaResponse))

// ---------------------------------------------------------------------------------------------
// readers
// ---------------------------------------------------------------------------------------------

/**
 * An object of the wire whose fields are not checked yet: the contract's encoded type `E`
 * with every field `unknown`. Reading a field the contract does not have fails to compile.
 */
type Unchecked<E> = { readonly [K in keyof E]?: unknown }

const isObject = <E>(u: unknown): u is Unchecked<E> => typeof u === "object" && u !== null

const isInt = (u: unknown): u is number => Number.isSafeInteger(u)
const isStringOrNull = (u: unknown): u is string | null => u === null || typeof u === "string"

/** The JSON value of `text`, or undefined when it is not JSON (JSON has no undefined). */
const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * The start of an answer's text (200 characters), for messages about answers that are not
 * what was expected.
 *
 * @since 0.2.0
 * @category utils
 */
export const excerpt = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}…` : text)

const pending: Detail = { _tag: "Pending" }
const noRejections: ReadonlyArray<Rejection> = []

// The encoded shapes of the answers, from the contract.
type V2Accepted = Schema.Schema.Encoded<ReturnType<typeof DataResponse<typeof V2.IngestAccepted>>>
type V2Detail = Schema.Schema.Encoded<ReturnType<typeof DataResponse<typeof V2.IngestionDetail>>>
type V2Page = Schema.Schema.Encoded<ReturnType<typeof PageResponse<typeof V2.IngestionListItem>>>
type V2Summary = NonNullable<typeof V2.IngestionDetail.Encoded["summary"]>
type V2Counts = NonNullable<V2Summary["ingestion"]>

// v2 ------------------------------------------------------------------------------------------

const acceptedIdV2 = (text: string): string | undefined => {
  const body = parse(text)
  if (!isObject<V2Accepted>(body)) return undefined
  const data = body.data
  if (!isObject<typeof V2.IngestAccepted.Encoded>(data)) return undefined
  const id = data.ingestionId
  return typeof id === "string" ? id : undefined
}

/** v2 `errors`: null, or every item an `IngestionError`. */
const rejectionsV2 = (errors: unknown): ReadonlyArray<Rejection> | undefined => {
  if (errors === null) return noRejections
  if (!Array.isArray(errors)) return undefined
  const rejections: Array<Rejection> = []
  for (const error of errors) {
    if (!isObject<typeof V2.IngestionError.Encoded>(error)) return undefined
    const { code, field, message } = error
    if (!isStringOrNull(code) || !isStringOrNull(field) || !isStringOrNull(message)) return undefined
    rejections.push({ code, field, message, record: error.record })
  }
  return rejections
}

/** v2 `summary`: the stored count, null without counts, undefined when of the wrong shape. */
const storedV2 = (summary: unknown): number | null | undefined => {
  if (summary === null) return null
  if (!isObject<V2Summary>(summary)) return undefined
  const counts = summary.ingestion
  if (counts === null) return null
  if (!isObject<V2Counts>(counts)) return undefined
  const { appendedRecordCount, overwrittenRecordCount } = counts
  return isInt(appendedRecordCount) && isInt(overwrittenRecordCount) ? appendedRecordCount + overwrittenRecordCount : undefined
}

const readDetailV2 = (text: string): Detail | undefined => {
  const body = parse(text)
  if (!isObject<V2Detail>(body)) return undefined
  const data = body.data
  if (!isObject<typeof V2.IngestionDetail.Encoded>(data)) return undefined
  const status = data.status
  if (!isV2Status(status)) return undefined
  const rejected = rejectionsV2(data.errors)
  if (rejected === undefined) return undefined
  const stored = storedV2(data.summary)
  if (stored === undefined) return undefined
  if (v2PendingSet.has(status)) return pending
  if (status === succeeded) {
    return { _tag: "Succeeded", stored: stored ?? 0, rejected, counted: stored !== null }
  }
  return { _tag: "Failed", status, message: rejected[0]?.message ?? status }
}

const readListV2 = (text: string): ReadonlyArray<ListItem> | undefined => {
  const body = parse(text)
  if (!isObject<V2Page>(body)) return undefined
  const data = body.data
  if (!isObject<V2Page["data"]>(data)) return undefined
  const items = data.items
  if (!Array.isArray(items)) return undefined
  const list: Array<ListItem> = []
  for (const item of items) {
    if (!isObject<typeof V2.IngestionListItem.Encoded>(item)) return undefined
    const { id, status } = item
    if (typeof id !== "string" || !isV2Status(status)) return undefined
    list.push({ id, status, terminal: terminalStatuses.v2.has(status), succeeded: status === succeeded })
  }
  return list
}

// v1 ------------------------------------------------------------------------------------------

type V1Problem = typeof V1.IngestionProblem.Encoded

const acceptedIdV1 = (text: string): string | undefined => {
  const body = parse(text)
  if (!isObject<typeof V1.IngestResponse.Encoded>(body)) return undefined
  const id = body.ingestionId
  return typeof id === "string" ? id : undefined
}

/** v1 `errors`: absent, or every item an `IngestionProblem` (its `type` is not read). */
const problemsV1 = (errors: unknown): ReadonlyArray<{ code: string | null; field: string | null; message: string }> | undefined => {
  if (errors === undefined) return []
  if (!Array.isArray(errors)) return undefined
  const problems: Array<{ code: string | null; field: string | null; message: string }> = []
  for (const error of errors) {
    if (!isObject<V1Problem>(error)) return undefined
    const { code, field, message } = error
    if (!isStringOrNull(code) || !isStringOrNull(field) || typeof message !== "string") return undefined
    problems.push({ code, field, message })
  }
  return problems
}

const readDetailV1 = (text: string): Detail | undefined => {
  const body = parse(text)
  if (!isObject<typeof V1.IngestionDetailResponse.Encoded>(body)) return undefined
  const status = body.status
  if (!isV1Status(status)) return undefined
  const metrics = body.metrics
  if (!isObject<typeof V1.IngestionDetailResponse.Encoded["metrics"]>(metrics)) return undefined
  const counts = metrics.ingestionMetrics
  if (!isObject<typeof V1.IngestionMetrics.Encoded>(counts)) return undefined
  const { appendedRecordsCount, overwrittenRecordsCount, rejectedRecordsCount } = counts
  if (!isInt(appendedRecordsCount) || !isInt(overwrittenRecordsCount) || !isInt(rejectedRecordsCount)) return undefined
  const problems = problemsV1(body.errors)
  if (problems === undefined) return undefined
  if (v1PendingSet.has(status)) return pending
  if (status === succeeded) {
    // v1 does not echo records: one rejection per rejected record, with the error of its index.
    // No ingestion holds more than MaxRecordsPerIngestion records, whatever the count says.
    const count = Math.min(Math.max(rejectedRecordsCount, 0), MaxRecordsPerIngestion)
    const rejected: Array<Rejection> = []
    for (let i = 0; i < count; i++) {
      const problem = problems[i]
      rejected.push({ code: problem?.code ?? null, field: problem?.field ?? null, message: problem?.message ?? null, record: undefined })
    }
    return { _tag: "Succeeded", stored: appendedRecordsCount + overwrittenRecordsCount, rejected, counted: true }
  }
  return { _tag: "Failed", status, message: problems[0]?.message ?? status }
}

const readListV1 = (text: string): ReadonlyArray<ListItem> | undefined => {
  const body = parse(text)
  if (!isObject<typeof V1.IngestionsResponse.Encoded>(body)) return undefined
  const items = body.ingestions
  if (!Array.isArray(items)) return undefined
  const list: Array<ListItem> = []
  for (const item of items) {
    if (!isObject<typeof V1.IngestionListItem.Encoded>(item)) return undefined
    const { ingestionId, status } = item
    if (typeof ingestionId !== "string" || !isV1Status(status)) return undefined
    list.push({ id: ingestionId, status, terminal: terminalStatuses.v1.has(status), succeeded: status === succeeded })
  }
  return list
}

// both ----------------------------------------------------------------------------------------

/**
 * What an answer that is not a success says: the envelope's first error, or an excerpt of
 * the body (a proxy's page).
 *
 * @since 0.3.0
 * @category utils
 */
export const readProblem = (status: number, text: string): Problem => {
  const body = parse(text)
  if (isObject<ErrorEnvelope>(body) && Array.isArray(body.errors) && body.errors.length > 0) {
    const first: unknown = body.errors[0]
    // `code` and `field` may be absent (the contract reads null), `type` is not read.
    if (isObject<typeof ErrorItem.Encoded>(first)) {
      const { code, field, message } = first
      if (
        typeof message === "string" && (code === undefined || isStringOrNull(code)) &&
        (field === undefined || isStringOrNull(field))
      ) {
        return { code: code ?? `http_${status}`, field: field ?? null, message }
      }
    }
  }
  return { code: `http_${status}`, field: null, message: excerpt(text) || `the service answered ${status}` }
}

const readers = {
  v1: { acceptedId: acceptedIdV1, readDetail: readDetailV1, readList: readListV1 },
  v2: { acceptedId: acceptedIdV2, readDetail: readDetailV2, readList: readListV2 }
}

// ---------------------------------------------------------------------------------------------
// constructors
// ---------------------------------------------------------------------------------------------

/**
 * The ingest exchange of dataset `datasetId` in `api`: its paths, filled in once, and the
 * readers of that version's answers.
 *
 * `datasetId` goes in the paths as given: v2 takes the dataset's number or its UUID, v1 only
 * the UUID.
 *
 * @since 0.2.0
 * @category constructors
 */
export const ingestWire = (api: "v1" | "v2", datasetId: string | number): IngestWire => {
  const route = paths[api]
  const dataset = segment(datasetId)
  const [dataHead = "", dataTail = ""] = route.data
  const [detailHead = "", detailMiddle = "", detailTail = ""] = route.detail
  const [listHead = "", listTail = ""] = route.list
  const detailPrefix = `${detailHead}${dataset}${detailMiddle}`
  return {
    api,
    dataPath: `${dataHead}${dataset}${dataTail}`,
    detailPath: (ingestionId) => `${detailPrefix}${segment(ingestionId)}${detailTail}`,
    listPath: `${listHead}${dataset}${listTail}${route.listQuery(0)}`,
    listPage: (index) => `${listHead}${dataset}${listTail}${route.listQuery(index)}`,
    listPageSize: MaxPageSize,
    terminal: terminalStatuses[api],
    ...readers[api],
    readProblem
  }
}
