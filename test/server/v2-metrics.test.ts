/**
 * v2 metrics, boards and lineage through the typed client, on a real reference server (both
 * stores): define a metric on ingested rows and read it back.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import type { Seed } from "../../src/server/seed.js"
import { clientFor, pollUntil, rawRequest, serverLayer, testSeed } from "../support/server.js"

type Client = Effect.Effect.Success<ReturnType<typeof clientFor>>

/** The test seed, with a board of Acme whose blocks show metrics by name. */
const seed: Seed = {
  organizations: [
    {
      ...testSeed.organizations[0],
      boards: [
        {
          name: "Sales",
          tags: ["weekly"],
          blocks: [
            { name: "Revenue block", visualizationType: "line", metrics: [{ metric: "Revenue", dateRange: { from: "2026-01-01", to: "2026-01-31", granularity: "daily" } }] },
            { name: "Missing block", metrics: [{ metric: "No such metric" }] }
          ]
        },
        { name: "Empty", blocks: [] }
      ]
    },
    ...testSeed.organizations.slice(1)
  ] as Seed["organizations"]
}

/** The failure of `effect`, which must be the wire error `tag`; its first item's field. */
const failsWith = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>, tag: string) =>
  Effect.map(Effect.flip(effect), (error) => {
    expect(error._tag).toBe(tag)
    return ((error as unknown as { errors: ReadonlyArray<{ field: string | null }> }).errors[0]?.field) ?? null
  })

let sequence = 0
const unique = (prefix: string) => `${prefix} ${++sequence}`

/** Ingests in batches of 100 and waits for each to succeed. */
const ingestAll = (client: Client, id: number | string, records: ReadonlyArray<unknown>) =>
  Effect.forEach(
    Array.from({ length: Math.ceil(records.length / 100) }, (_, i) => records.slice(i * 100, i * 100 + 100)),
    (batch) =>
      Effect.flatMap(client.v2.v2Datasets.ingest({ path: { id }, payload: { records: batch }, headers: {} }), (accepted) =>
        pollUntil(
          client.v2.v2Datasets.getIngestion({ path: { id, ingestionId: accepted.data.ingestionId } }),
          (a) => a.data.status !== "queued" && a.data.status !== "processing"
        )),
    { discard: true }
  )

/** A data source (Europe/Ljubljana) with an Orders dataset: `day`, `amount`, `region`. */
const ordersDataset = (timezone = "Europe/Ljubljana") =>
  Effect.gen(function*() {
    const admin = yield* clientFor("acme-admin")
    const source = yield* admin.v2.v2DataSources.create({ payload: { name: unique("Shop"), timezone }, headers: {} })
    const dataset = yield* admin.v2.v2Datasets.create({
      payload: {
        name: unique("Orders"),
        dataSourceId: source.data.id,
        schema: [
          { id: "day", dataType: "datetime" },
          { id: "amount", dataType: "number" },
          { id: "region", dataType: "string" }
        ]
      },
      headers: {}
    })
    return { admin, sourceId: source.data.id, datasetId: dataset.data.id }
  })

const orders = [
  { day: "2026-01-05T10:00", amount: 10, region: "north" },
  { day: "2026-01-05T23:30", amount: 5, region: "south" },
  // 23:30 UTC on the 5th is already the 6th in Ljubljana.
  { day: "2026-01-05T23:30:00Z", amount: 7, region: "north" },
  { day: "2026-01-12", amount: 1, region: ["north", "east"] },
  { day: "2026-02-01T08:00", amount: null, region: null }
]

const revenue = (datasetId: number | string) => ({
  name: "Revenue",
  datasetId,
  measure: { id: "amount", displayName: "Amount" },
  date: { id: "day", displayName: "Day" },
  aggregationFunction: "sum" as const,
  dimensions: [{ id: "region", displayName: "Region" }]
})

const seconds = (iso: string) => Date.parse(iso) / 1000

layer(serverLayer({ seed }), { excludeTestServices: true })("v2 metrics through the typed client", (it) => {
  describe("metrics", () => {
    it.effect("define a metric on ingested rows, read its values, dimension values and drilldown", () =>
      Effect.gen(function*() {
        const { admin, datasetId, sourceId } = yield* ordersDataset()
        const metrics = admin.v2.v2Metrics
        // Refused before the dataset received data, as the service does.
        expect(yield* failsWith(metrics.create({ payload: revenue(datasetId), headers: {} }), "BadRequest")).toBe("datasetId")
        yield* ingestAll(admin, datasetId, orders)

        const created = yield* metrics.create({ payload: revenue(datasetId), headers: {} })
        const id = created.data.id
        expect(id).toMatch(new RegExp(`^${sourceId}\\|custom_query_\\d+$`))
        expect(created.data).toMatchObject({
          name: "Revenue",
          sourceId,
          type: "event",
          measure: { id: "amount", displayName: "Amount" },
          date: { id: "day", displayName: "Day" },
          aggregationFunction: "sum",
          dimensions: [{ id: "region", displayName: "Region" }],
          filters: null,
          supportsDrilldown: true,
          availableGranularities: ["daily", "weekly", "monthly"],
          verificationInfo: { isVerified: false, verifiedAt: null, verifiedBy: null }
        })
        expect((yield* metrics.get({ path: { id } })).data).toEqual(created.data)
        const listed = yield* metrics.list({ urlParams: { sourceId } })
        expect(listed.data.items.map((m) => m.id)).toEqual([id])
        expect(listed.data.pagination).toEqual({ page: 0, pageSize: 25, totalItems: 1 })
        expect((yield* metrics.list({ urlParams: { search: id } })).data.items.map((m) => m.id)).toEqual([id])

        // Values: the whole history, per day (in the dataset's zone), per region.
        const total = yield* metrics.values({ path: { id }, payload: {} })
        expect(total.data).toMatchObject({ metricId: id, timezone: "Europe/Ljubljana", total: { value: 23, rowCount: 5 } })
        const daily = yield* metrics.values({
          path: { id },
          payload: { granularity: "daily", period: { startTimestamp: seconds("2026-01-01T00:00:00Z"), endTimestamp: seconds("2026-01-31T00:00:00Z") } }
        })
        expect(daily.data.items.map(({ date, rowCount, start, value }) => ({ date, start, value, rowCount }))).toEqual([
          { date: "2026-01-05", start: "2026-01-05T00:00:00+01:00", value: 15, rowCount: 2 },
          { date: "2026-01-06", start: "2026-01-06T00:00:00+01:00", value: 7, rowCount: 1 },
          { date: "2026-01-12", start: "2026-01-12T00:00:00+01:00", value: 1, rowCount: 1 }
        ])
        const weekly = yield* metrics.values({ path: { id }, payload: { granularity: "weekly", dimensionId: "region" } })
        expect(weekly.data.items.map(({ date, dimensionValue, value }) => [date, dimensionValue, value])).toEqual([
          ["2026-01-05", "north", 17],
          ["2026-01-05", "south", 5],
          ["2026-01-12", "east", 1],
          ["2026-01-12", "north", 1],
          ["2026-01-26", null, null]
        ])
        const filtered = yield* metrics.values({
          path: { id },
          payload: {
            filters: {
              logicalOperator: "AND",
              groups: [{ logicalOperator: "OR", conditions: [{ type: "dimension", field: "region", operator: "ANY_OF", values: ["south", "east"] }] }]
            }
          }
        })
        expect(filtered.data.total).toEqual({ value: 6, rowCount: 2 })
        expect(
          yield* failsWith(metrics.values({ path: { id }, payload: { dimensionId: "amount" } }), "BadRequest")
        ).toBe("dimensionId")

        const values = yield* metrics.dimensionValues({ payload: { metrics: [{ sourceId, metricId: id, dimensionIds: ["region"] }] } })
        expect(values.data.dimensionValues).toEqual(["east", "north", "south"])
        const byKey = yield* metrics.dimensionValues({
          payload: { metrics: [{ sourceId, metricId: id.split("|")[1]!, dimensionIds: ["region"] }] }
        })
        expect(byKey.data.dimensionValues).toEqual(["east", "north", "south"])
        expect(
          yield* failsWith(metrics.dimensionValues({ payload: { metrics: [{ sourceId, metricId: id, dimensionIds: ["nope"] }] } }), "BadRequest")
        ).toBe("metrics[0].dimensionIds[0]")

        // Drilldown: January's rows, sorted by amount, two per page.
        const period = { startTimestamp: seconds("2026-01-01T00:00:00Z"), endTimestamp: seconds("2026-01-31T23:59:59Z") }
        const page0 = yield* metrics.drilldown({
          urlParams: { sortBy: "amount", sortOrder: "desc", pageSize: 2 },
          payload: { sourceId, metricId: id, period }
        })
        expect(page0.data.pagination).toEqual({ page: 0, pageSize: 2, totalItems: 4 })
        expect(page0.data.items).toEqual([
          { day: "2026-01-05T10:00", amount: 10, region: "north" },
          { day: "2026-01-05T23:30:00Z", amount: 7, region: "north" }
        ])
        expect(page0.data.schema?.items).toEqual([
          { id: "day", displayName: "Day", dataType: "datetime" },
          { id: "amount", displayName: "Amount", dataType: "number" },
          { id: "region", displayName: "Region", dataType: "string" }
        ])
        const page1 = yield* metrics.drilldown({
          urlParams: { sortBy: "amount", sortOrder: "desc", pageSize: 2, page: 1 },
          payload: { sourceId, metricId: id, period }
        })
        expect(page1.data.items?.map((r) => r.amount)).toEqual([5, 1])
        const clamped = yield* metrics.drilldown({ urlParams: { pageSize: 5000 }, payload: { sourceId, metricId: id, period } })
        expect(clamped.data.pagination.pageSize).toBe(1000)
        expect(
          yield* failsWith(metrics.drilldown({ urlParams: { sortBy: "nope" }, payload: { sourceId, metricId: id, period } }), "BadRequest")
        ).toBe("sortBy")
        const bad = yield* rawRequest("/v2/metrics/drilldown", {
          method: "POST",
          headers: { "x-api-key": "acme-admin", "content-type": "application/json" },
          body: JSON.stringify({ sourceId, metricId: id, period: { startTimestamp: 10, endTimestamp: 5 } })
        })
        expect(bad.status).toBe(400)
        // A column given by its id alone: the message says an object is expected, not the schema's name.
        const bare = yield* rawRequest("/v2/metrics", {
          method: "POST",
          headers: { "x-api-key": "acme-admin", "content-type": "application/json" },
          body: JSON.stringify({ ...revenue(datasetId), measure: "amount" })
        })
        expect(bare.status).toBe(400)
        expect(bare.body.errors[0]).toMatchObject({ field: "measure", message: "measure: Expected an object, actual \"amount\"" })
      }))

    it.effect("a metric reads rows through the dataset's modifications: a calculated measure, a filter", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* ordersDataset()
        yield* ingestAll(admin, datasetId, orders)
        yield* admin.v2.v2DatasetModifications.set({
          path: { id: datasetId },
          payload: {
            formulas: { gross: "$amount * 2" },
            filters: { amount: { logicalOperator: "AND", conditions: [{ type: "greater_than", value: 4 }] } }
          },
          headers: {}
        })
        const created = yield* admin.v2.v2Metrics.create({
          payload: { ...revenue(datasetId), name: unique("Gross"), measure: { id: "gross", displayName: "Gross" } },
          headers: {}
        })
        // The filter keeps the rows whose amount is over 4; the measure is twice the amount.
        const kept = orders.filter((o) => (o.amount ?? 0) > 4)
        const total = yield* admin.v2.v2Metrics.values({ path: { id: created.data.id }, payload: {} })
        expect(total.data.total).toEqual({ value: kept.reduce((sum, o) => sum + 2 * (o.amount ?? 0), 0), rowCount: kept.length })
      }))

    it.effect("update, verification, lineage, usages, delete", () =>
      Effect.gen(function*() {
        const { admin, datasetId, sourceId } = yield* ordersDataset()
        yield* ingestAll(admin, datasetId, orders)
        const metrics = admin.v2.v2Metrics
        const id = (yield* metrics.create({
          payload: { ...revenue(datasetId), filters: { logicalOperator: "and", conditions: [{ field: "region", operator: "ANY_OF", values: ["north"] }] } },
          headers: {}
        })).data.id
        expect((yield* metrics.values({ path: { id }, payload: {} })).data.total).toEqual({ value: 18, rowCount: 3 })

        // Filters without conditions keep the stored ones; the aggregation changes.
        const avg = yield* metrics.update({ path: { id }, payload: { aggregationFunction: "avg", filters: { logicalOperator: "or" } } })
        expect(avg.data.filters).toEqual({ logicalOperator: "or", conditions: [{ field: "region", operator: "ANY_OF", values: ["north"] }] })
        expect((yield* metrics.values({ path: { id }, payload: {} })).data.total).toEqual({ value: 6, rowCount: 3 })
        const cleared = yield* metrics.update({ path: { id }, payload: { filters: { conditions: [] }, dimensions: [], name: "Avg" } })
        expect(cleared.data).toMatchObject({ name: "Avg", filters: null, dimensions: [] })
        expect(yield* failsWith(metrics.update({ path: { id }, payload: { measure: { id: "region", displayName: "r" } } }), "BadRequest"))
          .toBe("measure.id")
        const count = yield* metrics.update({ path: { id }, payload: { measure: { id: "region", displayName: "r" }, aggregationFunction: "count" } })
        expect(count.data.aggregationFunction).toBe("count")
        expect((yield* metrics.values({ path: { id }, payload: {} })).data.total).toEqual({ value: 4, rowCount: 5 })

        const verified = yield* metrics.setVerification({ path: { id }, payload: { isVerified: true } })
        expect(verified.data).toMatchObject({ isVerified: true, verifiedBy: { name: "Ada" } })
        expect((yield* metrics.getVerification({ path: { id } })).data).toEqual(verified.data)
        expect((yield* metrics.get({ path: { id } })).data.verificationInfo).toEqual(verified.data)

        const lineage = yield* metrics.getLineage({ path: { id } })
        expect(lineage.data.id).toBe(id)
        expect(lineage.data.parents.map((p) => [p.type, p.id])).toEqual([["dataset", String(datasetId)], ["dataSource", String(sourceId)]])
        const datasetLineage = yield* admin.v2.v2DatasetSettings.getLineage({ path: { id: datasetId } })
        expect(datasetLineage.data.children).toEqual([{ id, name: "Avg", type: "customMetric" }])
        expect((yield* metrics.usages({ path: { id } })).data.items).toEqual([])

        yield* metrics.delete({ path: { id } })
        yield* failsWith(metrics.get({ path: { id } }), "NotFound")
        expect((yield* admin.v2.v2DatasetSettings.getLineage({ path: { id: datasetId } })).data.children).toEqual([])
      }))

    it.effect("roles, tenancy, ids and idempotency", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* ordersDataset()
        yield* ingestAll(admin, datasetId, orders)
        const payload = { ...revenue(datasetId), name: unique("Keyed") }
        const first = yield* admin.v2.v2Metrics.create({ payload, headers: { "idempotency-key": `metric-${sequence}` } })
        const again = yield* admin.v2.v2Metrics.create({ payload, headers: { "idempotency-key": `metric-${sequence}` } })
        expect(again.data.id).toBe(first.data.id)
        yield* failsWith(
          admin.v2.v2Metrics.create({ payload: { ...payload, name: "Other" }, headers: { "idempotency-key": `metric-${sequence}` } }),
          "Unprocessable"
        )
        const id = first.data.id

        const viewer = yield* clientFor("acme-viewer")
        expect((yield* viewer.v2.v2Metrics.get({ path: { id } })).data.id).toBe(id)
        yield* failsWith(viewer.v2.v2Metrics.create({ payload: revenue(datasetId), headers: {} }), "Forbidden")
        yield* failsWith(viewer.v2.v2Metrics.update({ path: { id }, payload: { name: "x" } }), "Forbidden")
        yield* failsWith(viewer.v2.v2Metrics.setVerification({ path: { id }, payload: { isVerified: true } }), "Forbidden")
        yield* failsWith(viewer.v2.v2Metrics.delete({ path: { id } }), "Forbidden")

        const globex = yield* clientFor("globex-admin")
        yield* failsWith(globex.v2.v2Metrics.get({ path: { id } }), "NotFound")
        yield* failsWith(globex.v2.v2Metrics.values({ path: { id }, payload: {} }), "NotFound")
        yield* failsWith(globex.v2.v2Metrics.create({ payload: revenue(datasetId), headers: {} }), "NotFound")
        expect((yield* globex.v2.v2Metrics.list({ urlParams: {} })).data.items).toEqual([])

        // An id that cannot name a metric (no `|`) is unknown, as any malformed v2 id: 404.
        const noBar = yield* rawRequest("/v2/metrics/12345/verification", { headers: { "x-api-key": "acme-admin" } })
        expect(noBar.status).toBe(404)
        const encoded = yield* rawRequest(`/v2/metrics/${encodeURIComponent(id)}`, { headers: { "x-api-key": "acme-admin" } })
        expect(encoded.status).toBe(200)
        expect(encoded.body.data.id).toBe(id)
      }))
  })

  describe("boards", () => {
    it.effect("seeded boards show the metrics their blocks name, at /v2/boards and /v2/databoards", () =>
      Effect.gen(function*() {
        const { admin, datasetId, sourceId } = yield* ordersDataset()
        yield* ingestAll(admin, datasetId, orders)
        const boards = admin.v2.v2Boards
        const list = yield* boards.list({ urlParams: { sortBy: "name" } })
        expect(list.data.items.map((b) => b.name)).toEqual(["Empty", "Sales"])
        expect((yield* boards.listDataboards({ urlParams: { search: "sal" } })).data.items.map((b) => b.name)).toEqual(["Sales"])
        const sales = list.data.items.find((b) => b.name === "Sales")!

        // The block's metric is found by name once it exists (the first named so).
        const existing = (yield* admin.v2.v2Metrics.list({ urlParams: { search: "Revenue" } })).data.items.find((m) => m.name === "Revenue")
        const id = existing?.id ?? (yield* admin.v2.v2Metrics.create({ payload: revenue(datasetId), headers: {} })).data.id
        const shown = yield* boards.metrics({ path: { id: sales.id } })
        expect(shown.data.datablocks.map((b) => [b.name, b.metrics.map((m) => m.id)])).toEqual([["Revenue block", [id]], ["Missing block", []]])
        expect(shown.data.datablocks[0]).toMatchObject({ visualizationType: "line" })
        expect(shown.data.datablocks[0]!.metrics[0]).toMatchObject({
          name: "Revenue",
          dateRange: { from: "2026-01-01", to: "2026-01-31", granularity: "daily" },
          appliedFilters: null
        })
        expect((yield* boards.databoardMetrics({ path: { id: sales.id } })).data).toEqual(shown.data)
        expect((yield* admin.v2.v2Metrics.usages({ path: { id } })).data.items).toEqual([
          { referenceType: "board", referenceId: String(sales.id), referenceName: "Sales", datablockName: "Revenue block" }
        ])
        expect(sourceId).toBeGreaterThan(0)

        const globex = yield* clientFor("globex-admin")
        expect((yield* globex.v2.v2Boards.list({ urlParams: {} })).data.items).toEqual([])
        yield* failsWith(globex.v2.v2Boards.metrics({ path: { id: sales.id } }), "NotFound")
      }))
  })

  describe("connections", () => {
    it.effect("seeded connections: list, detail, rename, permissions, data sources through one, delete", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const connections = admin.v2.v2Connections
        const listed = yield* connections.list({ urlParams: { search: "analytics" } })
        expect(listed.data.items).toHaveLength(1)
        const analytics = listed.data.items[0]!
        expect(analytics).toMatchObject({
          name: "Analytics",
          integrationKey: "google_analytics4",
          managedBy: { name: "Ada" },
          sharedWithAccounts: true,
          statusInfo: { status: "active", reason: null }
        })
        const billing = (yield* connections.list({ urlParams: { search: "billing" } })).data.items[0]!
        expect(billing.statusInfo).toMatchObject({ status: "error", reason: "invalidCredentials" })

        // A data source that syncs through the connection: counted, and found by connectionId.
        const source = yield* admin.v2.v2DataSources.create({ payload: { name: unique("GA"), connectionId: analytics.id }, headers: {} })
        expect(source.data).toMatchObject({ connectionId: analytics.id, integrationKey: "google_analytics4" })
        const through = yield* admin.v2.v2DataSources.list({ urlParams: { connectionId: analytics.id, pageSize: 100 } })
        expect(through.data.items.map((d) => d.id)).toContain(source.data.id)
        expect(through.data.items.every((d) => d.connectionId === analytics.id)).toBe(true)
        const detail = yield* connections.get({ path: { id: analytics.id } })
        expect(detail.data).toMatchObject({ accessLevel: "everyone", accessList: null, dataSourcesCount: through.data.pagination.totalItems })
        expect(detail.data.createdAt).not.toBeNull()

        const renamed = yield* connections.update({ path: { id: analytics.id }, payload: { name: "Analytics" } })
        expect(renamed.data.name).toBe("Analytics")
        const shared = yield* connections.setPermissions({
          path: { id: analytics.id },
          payload: { accessLevel: "everyone", sharedWithAccounts: false }
        })
        expect(shared.data).toEqual({ accessLevel: "everyone", accessList: null, sharedWithAccounts: false })
        expect((yield* connections.getPermissions({ path: { id: analytics.id } })).data).toEqual(shared.data)
        yield* connections.setPermissions({ path: { id: analytics.id }, payload: { accessLevel: "everyone", sharedWithAccounts: true } })

        // The private one (Eve's) is hidden from the viewer; deleting takes the manager or an admin.
        const viewer = yield* clientFor("acme-viewer")
        yield* failsWith(viewer.v2.v2Connections.get({ path: { id: billing.id } }), "NotFound")
        expect((yield* viewer.v2.v2Connections.list({ urlParams: { search: "billing" } })).data.items).toEqual([])
        yield* failsWith(viewer.v2.v2Connections.update({ path: { id: analytics.id }, payload: { name: "x" } }), "Forbidden")
        const editor = yield* clientFor("acme-editor")
        const spare = (yield* connections.list({ urlParams: { search: "spare", pageSize: 100 } })).data.items[0]!
        yield* failsWith(editor.v2.v2Connections.delete({ path: { id: spare.id } }), "Forbidden")
        yield* editor.v2.v2Connections.get({ path: { id: billing.id } })
        const globex = yield* clientFor("globex-admin")
        yield* failsWith(globex.v2.v2Connections.get({ path: { id: analytics.id } }), "NotFound")
        expect((yield* globex.v2.v2Connections.list({ urlParams: {} })).data.items).toEqual([])
        yield* failsWith(globex.v2.v2DataSources.create({ payload: { name: "x", connectionId: analytics.id }, headers: {} }), "NotFound")

        yield* connections.delete({ path: { id: spare.id } })
        yield* failsWith(connections.get({ path: { id: spare.id } }), "NotFound")
      }))
  })

  describe("integrations", () => {
    it.effect("the shipped catalog: search, sort by name, paging, detail, 404", () =>
      Effect.gen(function*() {
        const integrations = (yield* clientFor("acme-viewer")).v2.v2Integrations
        const first = yield* integrations.list({ urlParams: { pageSize: 5 } })
        expect(first.data.items).toHaveLength(5)
        expect(first.data.pagination.page).toBe(0)
        const total = first.data.pagination.totalItems
        expect(total).toBeGreaterThan(5)
        const all = yield* integrations.list({ urlParams: { pageSize: 100, sortBy: "name", sortOrder: "desc" } })
        expect(all.data.items).toHaveLength(total)
        const names = all.data.items.map((i) => i.name)
        expect(names).toEqual([...names].sort((a, b) => b.localeCompare(a, undefined, { sensitivity: "base" })))
        const ingestion = yield* integrations.list({ urlParams: { search: "INGESTION" } })
        expect(ingestion.data.items.map((i) => i.key)).toEqual(["ingestion"])
        const detail = yield* integrations.get({ path: { id: ingestion.data.items[0]!.id } })
        expect(detail.data).toMatchObject({ key: "ingestion", supportsDatasets: true, supportsMetricBuilder: true })
        expect(detail.data.categories.length).toBeGreaterThan(0)
        yield* failsWith(integrations.get({ path: { id: 99_999 } }), "NotFound")
        const past = yield* integrations.list({ urlParams: { page: 50 } })
        expect(past.data).toEqual({ items: [], pagination: { page: 50, pageSize: 25, totalItems: total } })
      }))
  })

  describe("values are right", () => {
    it.effect("random rows: values, totals and drilldown counts match a reference computed here", () =>
      Effect.gen(function*() {
        const { admin, datasetId, sourceId } = yield* ordersDataset("Asia/Dubai")
        // UTC+04:00 all year: the reference reads local dates by adding four hours.
        const offset = 4 * 3600_000
        const base = Date.UTC(2026, 0, 1)
        const rows = fc.sample(
          fc.record({
            day: fc.integer({ min: 0, max: 60 * 86_400 }).map((s) => new Date(base + s * 1000).toISOString().slice(0, 19) + "Z"),
            amount: fc.option(fc.integer({ min: -500, max: 500 }), { nil: null }),
            region: fc.constantFrom("a", "b", "c")
          }),
          { numRuns: 250, seed: 1313 }
        )
        yield* ingestAll(admin, datasetId, rows)
        const localDay = (iso: string) => new Date(Date.parse(iso) + offset).toISOString().slice(0, 10)
        const reference = (values: ReadonlyArray<number | null>, aggregation: string) => {
          const present = values.filter((v): v is number => v !== null)
          if (aggregation === "count") return present.length
          if (present.length === 0) return null
          if (aggregation === "sum") return present.reduce((a, b) => a + b, 0)
          if (aggregation === "avg") return present.reduce((a, b) => a + b, 0) / present.length
          return aggregation === "min" ? Math.min(...present) : Math.max(...present)
        }
        const period = { startTimestamp: seconds("2026-01-10T00:00:00Z"), endTimestamp: seconds("2026-02-10T12:00:00Z") }
        const inPeriod = rows.filter((r) => seconds(r.day) >= period.startTimestamp && seconds(r.day) <= period.endTimestamp)
        for (const aggregationFunction of ["sum", "avg", "min", "max", "count"] as const) {
          const id = (yield* admin.v2.v2Metrics.create({ payload: { ...revenue(datasetId), name: unique(aggregationFunction), aggregationFunction }, headers: {} })).data.id
          const values = yield* admin.v2.v2Metrics.values({ path: { id }, payload: { period, granularity: "daily", dimensionId: "region" } })
          expect(values.data.total.rowCount).toBe(inPeriod.length)
          expect(values.data.total.value).toBeCloseTo(reference(inPeriod.map((r) => r.amount), aggregationFunction) ?? Number.NaN, 9)
          const expected = new Map<string, Array<number | null>>()
          for (const r of inPeriod) {
            const key = `${localDay(r.day)} ${r.region}`
            expected.set(key, [...(expected.get(key) ?? []), r.amount])
          }
          expect(values.data.items.length).toBe(expected.size)
          for (const item of values.data.items) {
            const group = expected.get(`${item.date} ${item.dimensionValue}`)!
            expect(item.rowCount).toBe(group.length)
            const want = reference(group, aggregationFunction)
            if (want === null) expect(item.value).toBeNull()
            else expect(item.value).toBeCloseTo(want, 9)
          }
          const drill = yield* admin.v2.v2Metrics.drilldown({ urlParams: { pageSize: 1 }, payload: { sourceId, metricId: id, period } })
          expect(drill.data.pagination.totalItems).toBe(inPeriod.length)
        }
      }), { timeout: 120_000 })
  })
})
