/**
 * Property tests: random valid and invalid bodies, generated from the contract's own schemas
 * and from arbitrary JSON, POSTed raw to the reference server. Whatever the body, the server
 * answers JSON with a `requestId`, never 5xx; a 2xx answer decodes with the endpoint's
 * success schema and any other answer is the error envelope.
 */
import { expect, layer } from "@effect/vitest"
import { Arbitrary, Effect, FastCheck as fc, Schema } from "effect"
import { Errors, V1, V2 } from "../../src/api/index.js"
import { clientFor, ServerUrl, serverLayer } from "../support/server.js"

const numRuns = 100

interface Answer {
  readonly status: number
  readonly body: any
}

const post = async (url: string, key: string, body: string, headers: Record<string, string> = {}): Promise<Answer> => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", ...headers },
    body
  })
  const text = await response.text()
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new Error(`answer ${response.status} is not JSON: ${text.slice(0, 200)}`)
  }
  return { status: response.status, body: parsed }
}

/** The invariants every answer must hold; `success` decodes a 2xx body. */
const checkAnswer = (answer: Answer, success: Schema.Schema<any, any>, sent: string) => {
  const context = `${answer.status} ${JSON.stringify(answer.body).slice(0, 400)} for ${sent.slice(0, 200)}`
  expect(answer.status, context).toBeLessThan(500)
  expect(typeof answer.body, context).toBe("object")
  expect(answer.body, context).not.toBeNull()
  expect(typeof answer.body.requestId, context).toBe("string")
  expect(answer.body.requestId.length, context).toBeGreaterThan(0)
  if (answer.status >= 200 && answer.status < 300) {
    expect(() => Schema.decodeUnknownSync(success)(answer.body), context).not.toThrow()
    return
  }
  expect(answer.body.status, context).toBe("error")
  expect(Array.isArray(answer.body.errors), context).toBe(true)
  expect(answer.body.errors.length, context).toBeGreaterThan(0)
  for (const item of answer.body.errors) {
    expect(typeof item.message, context).toBe("string")
    expect(typeof item.type, context).toBe("string")
  }
  expect(() => Schema.decodeUnknownSync(Errors.ErrorEnvelope)(answer.body), context).not.toThrow()
}

/** Bodies: valid ones from the schema, arbitrary JSON, and text that may not be JSON at all. */
const bodies = <A>(valid: fc.Arbitrary<A>): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: valid.map((value) => JSON.stringify(value) ?? "null") },
    { weight: 2, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: fc.string() }
  )

/** Runs the property for one endpoint and checks every answer. */
const fuzz = (
  path: string,
  body: fc.Arbitrary<string>,
  success: Schema.Schema<any, any>,
  options: { readonly key?: fc.Arbitrary<string>; readonly idempotencyKey?: fc.Arbitrary<string | null> } = {}
) =>
  Effect.flatMap(ServerUrl, (url) =>
    Effect.promise(async () => {
      const statuses = new Map<number, number>()
      await fc.assert(
        fc.asyncProperty(
          body,
          options.key ?? fc.constant("acme-admin"),
          options.idempotencyKey ?? fc.constant(null),
          async (sent, key, idempotencyKey) => {
            const answer = await post(`${url}${path}`, key, sent, idempotencyKey === null ? {} : { "idempotency-key": idempotencyKey })
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
            checkAnswer(answer, success, sent)
          }
        ),
        { numRuns }
      )
      // Not vacuous: some bodies were accepted and some refused.
      const counts = [...statuses]
      expect(counts.some(([status]) => status < 300), JSON.stringify(counts)).toBe(true)
      expect(counts.some(([status]) => status >= 400), JSON.stringify(counts)).toBe(true)
    }))

const keys = fc.constantFrom("acme-admin", "acme-editor", "acme-viewer", "globex-admin", "nope")
/** A few keys reused often, so replays and 422s happen as well. */
const idempotencyKeys = fc.option(fc.constantFrom("k-1", "k-2", "k-3"), { nil: null })

/** Acme's data source and dataset (`id` number key) the bodies are sent to. */
const target = Effect.gen(function*() {
  const admin = yield* clientFor("acme-admin")
  const dataSource = yield* admin.v2.v2DataSources.create({ payload: { name: "Fuzzed" }, headers: {} })
  const dataset = yield* admin.v2.v2Datasets.create({
    payload: {
      name: "Fuzzed",
      dataSourceId: dataSource.data.id,
      schema: [{ id: "id", dataType: "number" }, { id: "name", dataType: "string" }, { id: "at", dataType: "datetime" }],
      primaryKey: ["id"]
    },
    headers: {}
  })
  return { dataSourceId: dataSource.data.id, datasetId: dataset.data.id, datasetUuid: dataset.data.uuid }
})

layer(serverLayer(), { excludeTestServices: true })("v2 and v1 answer every body with JSON and the envelope", (it) => {
  it.effect("POST /v2/data-sources", () =>
    fuzz(
      "/v2/data-sources",
      bodies(Arbitrary.make(V2.DataSources.CreateDataSourceRequest)),
      V2.DataResponse(V2.DataSources.DataSourceDetail, "Created"),
      { key: keys, idempotencyKey: idempotencyKeys }
    ))

  it.effect("POST /v2/datasets (into a real data source half the time)", () =>
    Effect.gen(function*() {
      const { dataSourceId } = yield* target
      // Into the real data source, a generated primary key is one of the generated columns, so
      // that enough requests succeed for the check below not to be left to chance (a random key
      // is almost never in a random schema: 1 run in 20 had no success at all).
      const valid = fc.tuple(Arbitrary.make(V2.Datasets.CreateDatasetRequest), fc.boolean()).map(([request, real]) =>
        real
          ? { ...request, dataSourceId, ...(request.primaryKey === undefined ? {} : { primaryKey: [request.schema[0]!.id] }) }
          : request
      )
      yield* fuzz("/v2/datasets", bodies(valid), V2.DataResponse(V2.Datasets.DatasetDetail, "Created"), {
        key: keys,
        idempotencyKey: idempotencyKeys
      })
    }))

  it.effect("POST /v2/datasets/{id}/data", () =>
    Effect.gen(function*() {
      const { datasetId } = yield* target
      // Records shaped like the dataset's rows, and anything at all.
      const row = fc.record(
        { id: fc.oneof(fc.integer(), fc.string(), fc.constant(null)), name: fc.oneof(fc.string(), fc.array(fc.string()), fc.boolean()), at: fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fc.string()) },
        { requiredKeys: [] }
      )
      const records = fc.oneof(
        Arbitrary.make(V2.Datasets.IngestRequest),
        fc.record({ records: fc.array(fc.oneof(row, fc.jsonValue()), { minLength: 1, maxLength: 100 }) })
      )
      yield* fuzz(`/v2/datasets/${datasetId}/data`, bodies(records), V2.DataResponse(V2.Datasets.IngestAccepted, "Accepted"), {
        key: keys,
        idempotencyKey: idempotencyKeys
      })
    }))

  it.effect("POST /v2/datasets/{id}/duplicate and /purge, /v2/data-sources/{id}/purge", () =>
    Effect.gen(function*() {
      const { dataSourceId, datasetId } = yield* target
      const message = V2.DataResponse(Schema.Struct({ message: Schema.String }), "Message")
      yield* fuzz(`/v2/datasets/${datasetId}/duplicate`, bodies(Arbitrary.make(V2.Datasets.DuplicateDatasetRequest)), V2.DataResponse(V2.Datasets.DatasetDetail, "Copy"), {
        key: keys,
        idempotencyKey: idempotencyKeys
      })
      yield* fuzz(`/v2/datasets/${datasetId}/purge`, bodies(fc.constant({})), message, { key: keys, idempotencyKey: idempotencyKeys })
      yield* fuzz(`/v2/data-sources/${dataSourceId}/purge`, bodies(fc.constant({})), message, { key: keys, idempotencyKey: idempotencyKeys })
    }))

  it.effect("POST /v1/data-sources", () =>
    fuzz("/v1/data-sources", bodies(Arbitrary.make(V1.CreateDataSourceRequest)), V1.CreateDataSourceResponse, { key: keys }))

  it.effect("POST /v1/datasets", () =>
    Effect.gen(function*() {
      const { dataSourceId } = yield* target
      const valid = fc.tuple(Arbitrary.make(V1.CreateDatasetRequest), fc.boolean()).map(([request, real]) =>
        real ? { ...request, dataSourceId } : request
      )
      yield* fuzz("/v1/datasets", bodies(valid), V1.CreateDatasetResponse, { key: keys })
    }))

  it.effect("POST /v1/datasets/{id}/data", () =>
    Effect.gen(function*() {
      const { datasetUuid } = yield* target
      yield* fuzz(`/v1/datasets/${datasetUuid}/data`, bodies(Arbitrary.make(V1.IngestRequest)), V1.IngestResponse, {
        key: keys,
        idempotencyKey: idempotencyKeys
      })
    }))
})
