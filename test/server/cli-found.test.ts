/**
 * What the real service's official CLI found against `serve`, each on a server of its own
 * (both stores): boards after an organization rename, what the activity log calls a change,
 * and `POST /v2/metrics/data`.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientFor, pollUntil, rawRequest, serverLayer } from "../support/server.js"

const asAdmin = (init: { method?: string; body?: unknown } = {}): RequestInit => ({
  method: init.method ?? "GET",
  headers: { "x-api-key": "acme-admin", "content-type": "application/json" },
  ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
})

/** A data source (UTC) with an Orders dataset of three rows (today, yesterday, 40 days ago) and a Revenue metric on it. */
const shopWithRevenue = Effect.gen(function*() {
  const admin = yield* clientFor("acme-admin")
  const source = yield* admin.v2.v2DataSources.create({ payload: { name: "Shop", timezone: "UTC" }, headers: {} })
  const dataset = yield* admin.v2.v2Datasets.create({
    payload: {
      name: "Orders",
      dataSourceId: source.data.id,
      schema: [{ id: "day", dataType: "datetime" }, { id: "amount", dataType: "number" }, { id: "region", dataType: "string" }]
    },
    headers: {}
  })
  const dayAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10)
  const records = [
    { day: `${dayAgo(0)}T12:00:00Z`, amount: 1, region: "north" },
    { day: `${dayAgo(1)}T12:00:00Z`, amount: 2, region: "south" },
    { day: `${dayAgo(40)}T12:00:00Z`, amount: 100, region: "north" }
  ]
  const accepted = yield* admin.v2.v2Datasets.ingest({ path: { id: dataset.data.id }, payload: { records }, headers: {} })
  yield* pollUntil(
    admin.v2.v2Datasets.getIngestion({ path: { id: dataset.data.id, ingestionId: accepted.data.ingestionId } }),
    (a) => a.data.status === "success"
  )
  const metric = yield* admin.v2.v2Metrics.create({
    payload: {
      name: "Revenue",
      datasetId: dataset.data.id,
      measure: { id: "amount", displayName: "Amount" },
      date: { id: "day", displayName: "Day" },
      aggregationFunction: "sum",
      dimensions: [{ id: "region", displayName: "Region" }]
    },
    headers: {}
  })
  return { admin, dataset, dayAgo, metric, source }
})

describe("found by the official CLI", () => {
  // Renamed before anything read a board: the boards were bound to the organization by name.
  layer(serverLayer(), { excludeTestServices: true })((it) => {
    it.effect("boards stay with their organization after it is renamed", () =>
      Effect.gen(function*() {
        const renamed = yield* rawRequest("/v2/organization", asAdmin({ method: "PATCH", body: { name: "Acme Renamed" } }))
        expect(renamed.status).toBe(200)
        const boards = yield* rawRequest("/v2/databoards", asAdmin())
        expect(boards.status).toBe(200)
        expect(boards.body.data.items.map((b: { name: string }) => b.name)).toEqual(["Overview"])
        const id = boards.body.data.items[0].id
        const metrics = yield* rawRequest(`/v2/databoards/${id}/metrics`, asAdmin())
        expect(metrics.status).toBe(200)
        expect(metrics.body.data.datablocks.map((b: { name: string }) => b.name)).toEqual(["Fixtures"])
        // The organization keeps its new name; no second one took the old.
        const admin = yield* clientFor("acme-admin")
        expect((yield* admin.v2.v2Organization.get()).data.name).toBe("Acme Renamed")
      }))
  })

  layer(serverLayer(), { excludeTestServices: true })((it) => {
    it.effect("POST /v2/metrics/data answers a metric's values over a range of days", () =>
      Effect.gen(function*() {
        const { dataset, dayAgo, metric, source } = yield* shopWithRevenue
        const body = {
          metricId: metric.data.id,
          dataSourceId: source.data.id,
          dateRange: { from: "30daysAgo", to: "today", granularity: "daily" }
        }
        const answer = yield* rawRequest("/v2/metrics/data", asAdmin({ method: "POST", body }))
        expect(answer.status).toBe(200)
        expect(answer.body.data).toMatchObject({ metricId: metric.data.id, granularity: "daily", total: { value: 3, rowCount: 2 } })
        expect(answer.body.data.items.map((i: { date: string; value: number }) => [i.date, i.value])).toEqual([[dayAgo(1), 2], [dayAgo(0), 1]])

        const byRegion = yield* rawRequest("/v2/metrics/data", asAdmin({
          method: "POST",
          body: { ...body, datasetId: dataset.data.id, dateRange: { from: dayAgo(45), to: "yesterday", granularity: "monthly" }, dimensions: ["region"] }
        }))
        expect(byRegion.status).toBe(200)
        expect(byRegion.body.data.total).toEqual({ value: 102, rowCount: 2 })
        expect(byRegion.body.data.dimensionId).toBe("region")

        const wrong = yield* rawRequest("/v2/metrics/data", asAdmin({ method: "POST", body: { ...body, dateRange: { ...body.dateRange, from: "last week" } } }))
        expect(wrong.status).toBe(400)
        expect(JSON.stringify(wrong.body)).toContain("dateRange.from")
        const otherSource = yield* rawRequest("/v2/metrics/data", asAdmin({ method: "POST", body: { ...body, dataSourceId: source.data.id + 1000 } }))
        expect(otherSource.status).toBe(400)
        // The error envelope at every other door: an unknown metric, a body without its metric, no key.
        const unknown = yield* rawRequest("/v2/metrics/data", asAdmin({ method: "POST", body: { ...body, metricId: `${source.data.id}|no_such_metric` } }))
        expect(unknown.status).toBe(404)
        const { metricId: _, ...withoutMetric } = body
        const missing = yield* rawRequest("/v2/metrics/data", asAdmin({ method: "POST", body: withoutMetric }))
        expect(missing.status).toBe(400)
        expect(JSON.stringify(missing.body)).toContain("metricId")
        const anonymous = yield* rawRequest("/v2/metrics/data", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        expect(anonymous.status).toBe(401)
      }))
  })

  layer(serverLayer(), { excludeTestServices: true })((it) => {
    it.effect("the activity log records changes only, and names a metric by its id whichever way the URL wrote it", () =>
      Effect.gen(function*() {
        const { admin, dataset, metric, source } = yield* shopWithRevenue
        const log = Effect.map(
          admin.v2.v2Organization.activityLog({ urlParams: { pageSize: 100 } }),
          (answer) => answer.data.items.map((e) => [e.action, e.resourceType, e.resourceId])
        )
        const before = yield* log
        const id = metric.data.id
        const period = { startTimestamp: 0, endTimestamp: 2_000_000_000 }
        // Reads, though they are POSTs.
        const reads = [
          ["/v2/metrics/drilldown", { sourceId: source.data.id, metricId: id, period }],
          ["/v2/metrics/dimensions/values", { metrics: [{ sourceId: source.data.id, metricId: id, dimensionIds: ["region"] }] }],
          [`/v2/metrics/${encodeURIComponent(id)}/values`, { period }],
          ["/v2/metrics/data", { metricId: id, dateRange: { from: "30daysAgo", to: "today", granularity: "daily" } }],
          [`/v2/datasets/${dataset.data.id}/modifications/preview`, { formulas: { double: "$amount * 2" } }]
        ] as const
        for (const [path, body] of reads) {
          const answer = yield* rawRequest(path, asAdmin({ method: "POST", body }))
          expect(answer.status, `${path}: ${answer.text.slice(0, 200)}`).toBe(200)
        }
        expect(yield* log).toEqual(before)

        // Changes: the metric by its id as stored, whether the URL encoded the `|` or not.
        const renamed = yield* rawRequest(`/v2/metrics/${encodeURIComponent(id)}`, asAdmin({ method: "PATCH", body: { name: "Revenue 2" } }))
        expect(renamed.status).toBe(200)
        yield* admin.v2.v2Metrics.setVerification({ path: { id }, payload: { isVerified: true } })
        const after = (yield* log).slice(0, 2)
        expect(after).toEqual([
          ["metric.verification.updated", "metric", id],
          ["metric.updated", "metric", id]
        ])
      }))
  })
})
