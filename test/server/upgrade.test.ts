/**
 * Today's server started on a database made by the previous release: the schema and data
 * that the reference server of commit 3d83d12 made through its API (migrations 1 to 16, then
 * two organizations, a data source, a dataset of three rows, a metric, a profile change),
 * dumped into `fixtures/postgres-3d83d12.sql`. The migrations since carry it forward: the ids,
 * rows, metric, profile and activity log are there, the seed finds its organizations again
 * (and their boards), and the sequences go on from where they were.
 */
import { readFileSync } from "node:fs"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { Seed } from "../../src/server/seed.js"
import { clientFor, pollUntil, rawRequest, serverLayer } from "../support/server.js"
import { adminQuery, freshSchema, sqlStoreLayer } from "../support/stores.js"

/** The seed the old server ran with. */
const seed: Seed = {
  organizations: [
    {
      name: "Acme",
      accounts: [{ name: "Acme", accountType: "organization" }],
      users: [{ name: "Ada", email: "ada@acme.test", role: "admin", apiKeys: ["acme-admin"] }],
      boards: [{ name: "Overview", blocks: [{ name: "Revenue block", metrics: [{ metric: "Revenue" }] }] }]
    },
    {
      name: "Globex",
      accounts: [{ name: "Globex", accountType: "organization" }],
      users: [{ name: "Gus", email: "gus@globex.test", role: "admin", apiKeys: ["globex-admin"] }]
    }
  ]
}

const schema = freshSchema()
const oldDatabase = Layer.effectDiscard(
  adminQuery(readFileSync(new URL("fixtures/postgres-3d83d12.sql", import.meta.url), "utf8").replaceAll("__SCHEMA__", schema))
)

const asAdmin = { headers: { "x-api-key": "acme-admin" } }

describe("a database made by the previous release", () => {
  layer(
    serverLayer({ seed, store: Layer.provideMerge(sqlStoreLayer({ schema }), oldDatabase) }),
    { excludeTestServices: true, timeout: 60_000 }
  )((it) => {
    it.effect("keeps its data and ids under today's server, and goes on from them", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const key = yield* admin.v2.v2Auth.validateKey()
        expect(key.data).toMatchObject({ organizationId: 1, userId: 1 })
        const globex = yield* clientFor("globex-admin")
        expect((yield* globex.v2.v2Auth.validateKey()).data).toMatchObject({ organizationId: 2 })

        const organization = (yield* admin.v2.v2Organization.get()).data
        expect(organization).toMatchObject({ id: 1, name: "Acme", companyName: "Acme Ltd" })

        const dataset = (yield* admin.v2.v2Datasets.get({ path: { id: 2 } })).data
        expect(dataset).toMatchObject({ name: "Orders", dataSourceId: 1, rowCount: 3, uuid: "8c891c01-63f0-40bb-ac6a-cfa26d17f37c" })
        const rows = yield* rawRequest("/v2/datasets/2/data", asAdmin)
        expect(rows.body.data.items.map((r: { id: number }) => r.id)).toEqual([1, 2, 3])

        const metric = (yield* admin.v2.v2Metrics.get({ path: { id: "1|custom_query_1" } })).data
        expect(metric).toMatchObject({ name: "Revenue", sourceId: 1 })
        const values = yield* admin.v2.v2Metrics.values({ path: { id: metric.id }, payload: {} })
        expect(values.data.total).toEqual({ value: 22, rowCount: 3 })

        // The seed found its organizations by the names it gave them: their boards show.
        const boards = (yield* admin.v2.v2Boards.list({ urlParams: {} })).data.items
        expect(boards.map((b) => b.name)).toEqual(["Overview"])
        const shown = yield* admin.v2.v2Boards.metrics({ path: { id: boards[0]!.id } })
        expect(shown.data.datablocks[0]!.metrics.map((m) => m.id)).toEqual([metric.id])

        // The old entries are in the log; the old server logged the profile change.
        const log = (yield* admin.v2.v2Organization.activityLog({ urlParams: { pageSize: 100 } })).data.items
        expect(log.map((e) => e.action)).toContain("organization.updated")

        // And it goes on: an upsert by the old primary key, a new id past the old ones.
        const accepted = yield* admin.v2.v2Datasets.ingest({
          path: { id: 2 },
          payload: { records: [{ id: 3, day: "2026-01-07T10:00:00Z", amount: 8 }, { id: 4, day: "2026-01-08T10:00:00Z", amount: 1 }] },
          headers: {}
        })
        const done = yield* pollUntil(
          admin.v2.v2Datasets.getIngestion({ path: { id: 2, ingestionId: accepted.data.ingestionId } }),
          (a) => a.data.status !== "queued" && a.data.status !== "processing"
        )
        expect(done.data.status).toBe("success")
        expect((yield* admin.v2.v2Datasets.get({ path: { id: 2 } })).data.rowCount).toBe(4)
        const source = yield* admin.v2.v2DataSources.create({ payload: { name: "Second shop" }, headers: {} })
        expect(source.data.id).toBeGreaterThan(3)
      }))
  })
})
