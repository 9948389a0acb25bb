import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { allIngestions } from "../../src/client/index.js"
import { awaitIngestionV1, clientFor, pollUntil, rawRequest, serverLayer } from "../support/server.js"

type Client = Effect.Effect.Success<ReturnType<typeof clientFor>>

const unknownUuid = "00000000-0000-4000-8000-000000000000"

/** A raw JSON request with a key (and any other headers). */
const send = (key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  rawRequest(path, {
    method,
    headers: { "x-api-key": key, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
  })

/** The failure of `effect`, which must be the wire error `tag`; returns its first item. */
const failsWith = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>, tag: string) =>
  Effect.map(Effect.flip(effect), (error) => {
    expect(error._tag).toBe(tag)
    const envelope = error as unknown as { status: string; requestId: string; errors: ReadonlyArray<Record<string, unknown>> }
    expect(envelope.status).toBe("error")
    expect(envelope.requestId).not.toBe("")
    return envelope.errors[0]!
  })

let sequence = 0
const unique = (prefix: string) => `${prefix} ${++sequence}`

/** A data source of Acme. */
const newDataSource = (client: Client, name = unique("Shop")) =>
  Effect.map(client.v2.v2DataSources.create({ payload: { name, timezone: "Europe/Ljubljana" }, headers: {} }), (a) => a.data)

const schema = [
  { id: "id", dataType: "number" as const },
  { id: "name", dataType: "string" as const },
  { id: "at", dataType: "datetime" as const }
]

/** A data source and a dataset (`id` number key, `name` string, `at` datetime) of Acme. */
const newDataset = (client?: Client) =>
  Effect.gen(function*() {
    const admin = client ?? (yield* clientFor("acme-admin"))
    const dataSource = yield* newDataSource(admin)
    const dataset = yield* admin.v2.v2Datasets.create({
      payload: { name: unique("Orders"), dataSourceId: dataSource.id, schema, primaryKey: ["id"] },
      headers: {}
    })
    return { admin, dataSourceId: dataSource.id, datasetId: dataset.data.id, dataset: dataset.data }
  })

/** Waits until a v2 ingestion is terminal. */
const awaitIngestion = (client: Client, id: string | number, ingestionId: string) =>
  pollUntil(
    client.v2.v2Datasets.getIngestion({ path: { id, ingestionId } }),
    (answer) => answer.data.status !== "queued" && answer.data.status !== "processing"
  ).pipe(Effect.map((answer) => answer.data))

/** Ingests and waits for the outcome. */
const ingestAndWait = (client: Client, id: string | number, records: ReadonlyArray<unknown>) =>
  Effect.flatMap(
    client.v2.v2Datasets.ingest({ path: { id }, payload: { records }, headers: {} }),
    (accepted) => awaitIngestion(client, id, accepted.data.ingestionId)
  )

const rowsOf = (client: Client, id: string | number) =>
  Effect.map(client.v2.v2Datasets.getData({ path: { id }, urlParams: { sortBy: "id" } }), (a) => a.data.items)

const ingestionCount = (client: Client, id: string | number) =>
  Effect.map(client.v2.v2Datasets.listIngestions({ path: { id }, urlParams: {} }), (a) => a.data.pagination.totalItems)

layer(serverLayer(), { excludeTestServices: true })("v2 reference server through the typed client", (it) => {
  describe("data sources", () => {
    it.effect("create, get, list, update, time zone, sync frequency, permissions, delete", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const created = yield* admin.v2.v2DataSources.create({ payload: { name: "Webshop" }, headers: {} })
        expect(created.status).toBe("success")
        expect(created.requestId).toMatch(/^[0-9a-f-]{36}$/)
        const id = created.data.id
        expect(created.data).toMatchObject({
          name: "Webshop",
          timezone: "UTC",
          connectionId: null,
          managedBy: { name: "Ada" },
          syncInterval: null,
          statusInfo: { status: "active" }
        })
        expect(created.data.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)

        const got = yield* admin.v2.v2DataSources.get({ path: { id } })
        expect(got.data).toEqual(created.data)
        const listed = yield* admin.v2.v2DataSources.list({ urlParams: { search: "Webshop" } })
        expect(listed.data.items.map((d) => d.id)).toEqual([id])
        expect(listed.data.pagination).toEqual({ page: 0, pageSize: 25, totalItems: 1 })

        const renamed = yield* admin.v2.v2DataSources.update({ path: { id }, payload: { name: "Web shop" } })
        expect(renamed.data.name).toBe("Web shop")
        const zoned = yield* admin.v2.v2DataSources.setTimezone({ path: { id }, payload: { timezone: "Asia/Kolkata" } })
        expect(zoned.data.timezone).toBe("Asia/Kolkata")
        const synced = yield* admin.v2.v2DataSources.setSyncFrequency({ path: { id }, payload: { syncInterval: 60 } })
        expect(synced.data.syncInterval).toBe(60)
        const options = yield* admin.v2.v2DataSources.syncFrequencyOptions({ path: { id } })
        expect(options.data.items.find((o) => o.isSelected)?.syncInterval).toBe(60)

        const permissions = yield* admin.v2.v2DataSources.getPermissions({ path: { id } })
        expect(permissions.data.accessLevel).toBe("everyone")
        const opened = yield* admin.v2.v2DataSources.setPermissions({ path: { id }, payload: { accessLevel: "everyone" } })
        expect(opened.data.accessLevel).toBe("everyone")

        const deleted = yield* admin.v2.v2DataSources.delete({ path: { id } })
        expect(deleted.data.message).toContain(String(id))
        yield* failsWith(admin.v2.v2DataSources.get({ path: { id } }), "NotFound")
      }))

    it.effect("400 names the field: blank name, unknown time zone, sync interval 7", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const blank = yield* send("acme-admin", "POST", "/v2/data-sources", { name: "   " })
        expect(blank.status).toBe(400)
        expect(blank.body.errors[0]).toMatchObject({ code: "invalid_input", field: "name", type: "validation" })
        const missing = yield* send("acme-admin", "POST", "/v2/data-sources", {})
        expect(missing.status).toBe(400)
        expect(missing.body.errors[0]).toMatchObject({ code: "invalid_input", field: "name" })

        const zone = yield* failsWith(admin.v2.v2DataSources.create({ payload: { name: "x", timezone: "Mars/Olympus" }, headers: {} }), "BadRequest")
        expect(zone).toMatchObject({ code: "invalid_input", field: "timezone", type: "validation" })
        const { id } = yield* newDataSource(admin)
        const rezone = yield* failsWith(admin.v2.v2DataSources.setTimezone({ path: { id }, payload: { timezone: "Nowhere" } }), "BadRequest")
        expect(rezone).toMatchObject({ field: "timezone" })
        const interval = yield* failsWith(admin.v2.v2DataSources.setSyncFrequency({ path: { id }, payload: { syncInterval: 7 } }), "BadRequest")
        expect(interval).toMatchObject({ code: "invalid_input", field: "syncInterval" })
        const rename = yield* send("acme-admin", "PATCH", `/v2/data-sources/${id}`, { name: "" })
        expect(rename.status).toBe(400)
        expect(rename.body.errors[0]).toMatchObject({ field: "name" })
        // v2 answers 404 for an id that cannot name a data source, as for any unknown one.
        const badId = yield* send("acme-admin", "GET", "/v2/data-sources/abc")
        expect(badId.status).toBe(404)
        expect(badId.body.errors[0]).toMatchObject({ code: "not_found" })
      }))

    it.effect("404 for unknown ids and for another organization's data source", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const { id } = yield* newDataSource(admin)
        const globex = yield* clientFor("globex-admin")
        for (const [client, target] of [[admin, 999_999], [globex, id]] as const) {
          const sources = client.v2.v2DataSources
          const notFound = [
            sources.get({ path: { id: target } }),
            sources.update({ path: { id: target }, payload: { name: "x" } }),
            sources.delete({ path: { id: target } }),
            sources.purge({ path: { id: target }, headers: {} }),
            sources.setTimezone({ path: { id: target }, payload: { timezone: "UTC" } }),
            sources.getPermissions({ path: { id: target } }),
            sources.setPermissions({ path: { id: target }, payload: { accessLevel: "private" } }),
            sources.setSyncFrequency({ path: { id: target }, payload: { syncInterval: 60 } }),
            sources.syncFrequencyOptions({ path: { id: target } })
          ]
          for (const call of notFound) {
            const problem = yield* failsWith(call as Effect.Effect<unknown, { _tag: string }>, "NotFound")
            expect(problem).toMatchObject({ code: "not_found", type: "not_found" })
          }
        }
        const globexList = yield* globex.v2.v2DataSources.list({ urlParams: { pageSize: 100 } })
        expect(globexList.data.items.map((d) => d.id)).not.toContain(id)
        // Still there for Acme.
        yield* admin.v2.v2DataSources.get({ path: { id } })
      }))

    it.effect("a viewer may not create, change, delete or purge (403); x-account-id picks the account", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const viewer = yield* clientFor("acme-viewer")
        const { id } = yield* newDataSource(admin)
        const calls = [
          viewer.v2.v2DataSources.create({ payload: { name: "x" }, headers: {} }),
          viewer.v2.v2DataSources.update({ path: { id }, payload: { name: "x" } }),
          viewer.v2.v2DataSources.delete({ path: { id } }),
          viewer.v2.v2DataSources.purge({ path: { id }, headers: {} }),
          viewer.v2.v2DataSources.setTimezone({ path: { id }, payload: { timezone: "UTC" } })
        ]
        for (const call of calls) {
          const problem = yield* failsWith(call as Effect.Effect<unknown, { _tag: string }>, "Forbidden")
          expect(problem).toMatchObject({ code: "forbidden", type: "permission" })
        }
        // The viewer still reads it.
        expect((yield* viewer.v2.v2DataSources.get({ path: { id } })).data.id).toBe(id)

        const { accounts } = yield* admin.v1.v1Accounts.listAccounts()
        const clientCo = accounts.find((a) => a.accountType === "client")!
        const editor = yield* clientFor("acme-editor")
        const inClientCo = yield* editor.v2.v2DataSources.create({
          payload: { name: "Client data" },
          headers: { "x-account-id": clientCo.id }
        })
        // The detail does not carry its account (as on the service); the account's v1 list shows it.
        expect(inClientCo.data).not.toHaveProperty("accountId")
        const inAccount = yield* admin.v1.v1Accounts.listDataSources({ path: { accountId: clientCo.id } })
        expect(inAccount.dataSources.map((d) => d.id)).toContain(inClientCo.data.id)

        const globex = yield* clientFor("globex-admin")
        const globexAccount = (yield* globex.v1.v1Accounts.listAccounts()).accounts[0]!
        const foreign = yield* failsWith(
          editor.v2.v2DataSources.create({ payload: { name: "x" }, headers: { "x-account-id": globexAccount.id } }),
          "NotFound"
        )
        expect(foreign).toMatchObject({ code: "not_found" })
        const unknownAccount = yield* failsWith(
          editor.v2.v2DataSources.create({ payload: { name: "x" }, headers: { "x-account-id": 987_654 } }),
          "NotFound"
        )
        expect(unknownAccount).toMatchObject({ code: "not_found" })
      }))

    it.effect("purge empties every dataset of the data source and keeps them; delete cascades", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId } = yield* newDataset()
        const second = yield* admin.v2.v2Datasets.create({
          payload: { name: "Second", dataSourceId, schema: [{ id: "k", dataType: "string" }] },
          headers: {}
        })
        yield* ingestAndWait(admin, datasetId, [{ id: 1 }, { id: 2 }])
        yield* ingestAndWait(admin, second.data.id, [{ k: "a" }])
        const purged = yield* admin.v2.v2DataSources.purge({ path: { id: dataSourceId }, headers: {} })
        expect(purged.data.message).toContain("2 datasets")
        expect(yield* rowsOf(admin, datasetId)).toEqual([])
        expect((yield* admin.v2.v2Datasets.get({ path: { id: second.data.id } })).data.rowCount).toBe(0)
        expect((yield* admin.v2.v2Datasets.getSchema({ path: { id: datasetId } })).data.primaryKey).toEqual(["id"])

        yield* admin.v2.v2DataSources.delete({ path: { id: dataSourceId } })
        for (const id of [datasetId, second.data.id]) {
          yield* failsWith(admin.v2.v2Datasets.get({ path: { id } }), "NotFound")
          yield* failsWith(admin.v2.v2Datasets.getData({ path: { id }, urlParams: {} }), "NotFound")
          yield* failsWith(admin.v2.v2Datasets.listIngestions({ path: { id }, urlParams: {} }), "NotFound")
        }
        const listed = yield* admin.v2.v2Datasets.list({ urlParams: { dataSourceId, pageSize: 100 } })
        expect(listed.data.items).toEqual([])
      }))
  })

  describe("datasets", () => {
    it.effect("create, get, list, update, schema, data, ingest, ingestions, statistics", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId, dataset } = yield* newDataset()
        expect(dataset).toMatchObject({
          dataSourceId,
          timezone: "Europe/Ljubljana",
          ingestionSupported: true,
          columnCount: 3,
          rowCount: 0,
          ingestionInfo: null,
          managedBy: { name: "Ada" },
          verificationInfo: { isVerified: false }
        })
        expect((yield* admin.v2.v2Datasets.get({ path: { id: datasetId } })).data).toEqual(dataset)
        const listed = yield* admin.v2.v2Datasets.list({ urlParams: { dataSourceId } })
        expect(listed.data.items.map((d) => d.id)).toEqual([datasetId])
        const renamed = yield* admin.v2.v2Datasets.update({ path: { id: datasetId }, payload: { name: "Renamed" } })
        expect(renamed.data.name).toBe("Renamed")

        const columns = yield* admin.v2.v2Datasets.getSchema({ path: { id: datasetId } })
        expect(columns.data).toEqual({
          items: schema.map((c, order) => ({ ...c, displayName: c.id, order, visible: true })),
          primaryKey: ["id"]
        })

        const accepted = yield* admin.v2.v2Datasets.ingest({
          path: { id: datasetId },
          payload: { records: [{ id: 1, name: "a", at: "2026-11-22T10:00:00Z" }, { id: 2, name: ["x", "y"], at: null }] },
          headers: {}
        })
        expect(accepted.data.status).toBe("queued")
        expect(accepted.data.ingestionId).toMatch(/^[0-9a-f-]{36}$/)
        const done = yield* awaitIngestion(admin, datasetId, accepted.data.ingestionId)
        expect(done).toMatchObject({
          id: accepted.data.ingestionId,
          status: "success",
          initiatedBy: { name: "Ada" },
          summary: {
            ingestion: { receivedRecordCount: 2, appendedRecordCount: 2, overwrittenRecordCount: 0, rejectedRecordCount: 0 },
            dataset: { columnCount: 3, rowCount: 2 }
          },
          errors: null
        })
        expect(done.duration).toBeGreaterThanOrEqual(0)

        // Same key: overwritten.
        const again = yield* ingestAndWait(admin, datasetId, [{ id: 1, name: "b" }])
        expect(again.summary?.ingestion).toMatchObject({ overwrittenRecordCount: 1, appendedRecordCount: 0 })

        const data = yield* admin.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { sortBy: "id" } })
        expect(data.data.items).toEqual([{ id: 1, name: "b" }, { id: 2, name: ["x", "y"], at: null }])
        expect(data.data.pagination).toEqual({ page: 0, pageSize: 200, totalItems: 2 })
        expect(data.data.schema.map((c) => c.id)).toEqual(["id", "name", "at"])
        expect(data.data.lastUpdatedAt).not.toBeNull()
        const desc = yield* admin.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { sortBy: "id", sortOrder: "desc", pageSize: 1 } })
        expect(desc.data.items).toEqual([{ id: 2, name: ["x", "y"], at: null }])
        // A column the dataset does not have is refused, naming sortBy, not ignored.
        const unknownColumn = yield* Effect.flip(admin.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { sortBy: "nope" } }))
        expect(unknownColumn._tag).toBe("BadRequest")
        if (unknownColumn._tag === "BadRequest") expect(unknownColumn.errors[0]).toMatchObject({ field: "sortBy", code: "invalid_input" })

        const ingestions = yield* admin.v2.v2Datasets.listIngestions({ path: { id: datasetId }, urlParams: {} })
        expect(ingestions.data.items.map((i) => i.status)).toEqual(["success", "success"])
        expect(ingestions.data.items[1]!.id).toBe(accepted.data.ingestionId)
        const statistics = yield* admin.v2.v2Datasets.ingestionStatistics({ path: { id: datasetId } })
        expect(statistics.data.successRate).toBe(1)
        expect(statistics.data.lastSuccessfulIngestionAt).not.toBeNull()

        const detail = yield* admin.v2.v2Datasets.get({ path: { id: datasetId } })
        expect(detail.data).toMatchObject({ rowCount: 2, ingestionInfo: { status: "success" } })
        // The size counts each stored row once as JSON: the overwritten row's old version is gone.
        expect(detail.data.size).toBe(data.data.items.reduce((n, row) => n + Buffer.byteLength(JSON.stringify(row)), 0))

        yield* admin.v2.v2Datasets.delete({ path: { id: datasetId } })
        yield* failsWith(admin.v2.v2Datasets.get({ path: { id: datasetId } }), "NotFound")
        yield* failsWith(admin.v2.v2Datasets.getIngestion({ path: { id: datasetId, ingestionId: accepted.data.ingestionId } }), "NotFound")
      }))

    it.effect("400 names the field: blank name, duplicate column, unknown key column, no schema, records [] and 101", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId } = yield* newDataset()
        const create = (payload: unknown) => send("acme-admin", "POST", "/v2/datasets", payload)
        const cases: ReadonlyArray<[unknown, string]> = [
          [{ name: " ", dataSourceId, schema }, "name"],
          [{ dataSourceId, schema }, "name"],
          [{ name: "x", schema }, "dataSourceId"],
          [{ name: "x", dataSourceId }, "schema"],
          [{ name: "x", dataSourceId, schema: [] }, "schema"],
          [{ name: "x", dataSourceId, schema: [{ id: "a", dataType: "boolean" }] }, "schema[0].dataType"],
          [{ name: "x", dataSourceId, schema: [{ id: "a", dataType: "number" }, { id: "a", dataType: "string" }] }, "schema[1].id"],
          [{ name: "x", dataSourceId, schema, primaryKey: ["id", "nope"] }, "primaryKey[1]"]
        ]
        for (const [payload, field] of cases) {
          const answer = yield* create(payload)
          expect({ payload, status: answer.status }).toEqual({ payload, status: 400 })
          expect(answer.body).toMatchObject({ status: "error", errors: [{ code: "invalid_input", field, type: "validation" }] })
        }
        const typed = yield* failsWith(
          admin.v2.v2Datasets.create({
            payload: { name: "x", dataSourceId, schema, primaryKey: ["missing"] },
            headers: {}
          }),
          "BadRequest"
        )
        expect(typed).toMatchObject({ field: "primaryKey[0]" })

        const tooMany = Array.from({ length: 101 }, (_, id) => ({ id }))
        for (const records of [[], tooMany]) {
          const answer = yield* send("acme-admin", "POST", `/v2/datasets/${datasetId}/data`, { records })
          expect(answer.status).toBe(400)
          expect(answer.body.errors[0]).toMatchObject({ code: "invalid_input", field: "records", type: "validation" })
          // The typed client checks the same contract before sending.
          const local = yield* Effect.flip(admin.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: { records }, headers: {} }))
          expect(local._tag).toBe("ParseError")
        }
        const exactly100 = yield* send("acme-admin", "POST", `/v2/datasets/${datasetId}/data`, { records: tooMany.slice(1) })
        expect(exactly100.status).toBe(200)
        const accepted = exactly100.body.data.ingestionId as string
        const notArray = yield* send("acme-admin", "POST", `/v2/datasets/${datasetId}/data`, { records: { id: 1 } })
        expect(notArray.status).toBe(400)
        expect(notArray.body.errors[0]).toMatchObject({ field: "records" })
        const malformed = yield* send("acme-admin", "POST", `/v2/datasets/${datasetId}/data`, "{\"records\": [")
        expect(malformed.status).toBe(400)
        expect(malformed.body.errors[0]).toMatchObject({ code: "invalid_json" })
        expect(yield* ingestionCount(admin, datasetId)).toBe(1)
        expect((yield* awaitIngestion(admin, datasetId, accepted)).summary?.ingestion?.appendedRecordCount).toBe(100)

        const rename = yield* send("acme-admin", "PATCH", `/v2/datasets/${datasetId}`, { name: "" })
        expect(rename.status).toBe(400)
        expect(rename.body.errors[0]).toMatchObject({ field: "name" })
      }))

    // Known server bug: a key column listed twice is reported on the v1 field name
    // `primaryKeys` (src/server/core/catalog/datasets.ts createDataset); v2 calls it `primaryKey`.
    it.effect("a key column listed twice is 400 on primaryKey[1]", () =>
      Effect.gen(function*() {
        const { dataSourceId } = yield* newDataset()
        const answer = yield* send("acme-admin", "POST", "/v2/datasets", { name: "x", dataSourceId, schema, primaryKey: ["id", "id"] })
        expect(answer.status).toBe(400)
        expect(answer.body.errors[0]).toMatchObject({ code: "invalid_input", field: "primaryKey[1]" })
      }))

    it.effect("404 for unknown ids, non-UUID ids and another organization's dataset", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId } = yield* newDataset()
        const accepted = yield* admin.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: { records: [{ id: 1 }] }, headers: {} })
        const ingestionId = accepted.data.ingestionId
        const globex = yield* clientFor("globex-admin")
        for (const [client, id] of [[admin, unknownUuid], [globex, datasetId]] as const) {
          const sets = client.v2.v2Datasets
          const calls = [
            sets.get({ path: { id } }),
            sets.update({ path: { id }, payload: { name: "x" } }),
            sets.delete({ path: { id } }),
            sets.purge({ path: { id }, headers: {} }),
            sets.duplicate({ path: { id }, payload: {}, headers: {} }),
            sets.getSchema({ path: { id } }),
            sets.getData({ path: { id }, urlParams: {} }),
            sets.ingest({ path: { id }, payload: { records: [{ id: 1 }] }, headers: {} }),
            sets.listIngestions({ path: { id }, urlParams: {} }),
            sets.getIngestion({ path: { id, ingestionId } }),
            sets.ingestionStatistics({ path: { id } })
          ]
          for (const call of calls) {
            const problem = yield* failsWith(call as Effect.Effect<unknown, { _tag: string }>, "NotFound")
            expect(problem).toMatchObject({ code: "not_found", type: "not_found" })
          }
        }
        // An unknown ingestion of a known dataset.
        yield* failsWith(admin.v2.v2Datasets.getIngestion({ path: { id: datasetId, ingestionId: unknownUuid } }), "NotFound")
        // A dataset in another organization's data source cannot be created.
        const foreignSource = yield* failsWith(
          globex.v2.v2Datasets.create({ payload: { name: "x", dataSourceId, schema }, headers: {} }),
          "NotFound"
        )
        expect(foreignSource).toMatchObject({ code: "not_found" })
        // Globex lists none of Acme's datasets.
        const listed = yield* globex.v2.v2Datasets.list({ urlParams: { pageSize: 100 } })
        expect(listed.data.items.map((d) => d.id)).not.toContain(datasetId)

        // Ids that are no UUIDs cannot name a dataset: 404 as any other unknown dataset.
        for (const [method, path] of [
          ["GET", "/v2/datasets/not-a-uuid"],
          ["PATCH", "/v2/datasets/not-a-uuid"],
          ["DELETE", "/v2/datasets/not-a-uuid"],
          ["GET", "/v2/datasets/12345/data"],
          ["POST", "/v2/datasets/12345/data"]
        ] as const) {
          const answer = yield* send("acme-admin", method, path, method === "GET" || method === "DELETE" ? undefined : { name: "x", records: [{}] })
          expect({ method, path, status: answer.status }).toEqual({ method, path, status: 404 })
          expect(answer.body).toMatchObject({ status: "error", errors: [{ code: "not_found" }] })
        }
      }))

    it.effect("a viewer may read but not create, change, delete, purge, duplicate or ingest (403)", () =>
      Effect.gen(function*() {
        const { dataSourceId, datasetId } = yield* newDataset()
        const viewer = yield* clientFor("acme-viewer")
        const calls = [
          viewer.v2.v2Datasets.create({ payload: { name: "x", dataSourceId, schema }, headers: {} }),
          viewer.v2.v2Datasets.update({ path: { id: datasetId }, payload: { name: "x" } }),
          viewer.v2.v2Datasets.delete({ path: { id: datasetId } }),
          viewer.v2.v2Datasets.purge({ path: { id: datasetId }, headers: {} }),
          viewer.v2.v2Datasets.duplicate({ path: { id: datasetId }, payload: {}, headers: {} }),
          viewer.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: { records: [{ id: 1 }] }, headers: {} })
        ]
        for (const call of calls) {
          const problem = yield* failsWith(call as Effect.Effect<unknown, { _tag: string }>, "Forbidden")
          expect(problem).toMatchObject({ code: "forbidden", type: "permission" })
        }
        expect((yield* viewer.v2.v2Datasets.get({ path: { id: datasetId } })).data.id).toBe(datasetId)
        const admin = yield* clientFor("acme-admin")
        expect(yield* ingestionCount(admin, datasetId)).toBe(0)
        const editor = yield* clientFor("acme-editor")
        const accepted = yield* editor.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: { records: [{ id: 1 }] }, headers: {} })
        expect(accepted.data.status).toBe("queued")
      }))

    it.effect("per-record rejection: counts and errors with code, field, message and the record", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* newDataset()
        const records = [
          { id: 1, name: "good", at: "2026-11-22" },
          { id: 2, name: 12 },
          { name: "no key" },
          { id: 3, name: true },
          42,
          { id: 4, at: "yesterday" },
          { id: 5 }
        ]
        const done = yield* ingestAndWait(admin, datasetId, records)
        expect(done.status).toBe("success")
        expect(done.summary?.ingestion).toEqual({
          receivedRecordCount: 7,
          appendedRecordCount: 2,
          overwrittenRecordCount: 0,
          rejectedRecordCount: 5
        })
        expect(done.summary?.dataset).toMatchObject({ rowCount: 2 })
        const errors = done.errors ?? []
        expect(errors.map((e) => [e.code, e.field, e.record])).toEqual([
          ["invalid_type", "name", { id: 2, name: 12 }],
          ["missing_primary_key", "id", { name: "no key" }],
          ["unsupported_value", "name", { id: 3, name: true }],
          ["not_an_object", null, 42],
          ["invalid_datetime", "at", { id: 4, at: "yesterday" }]
        ])
        for (const e of errors) expect(e.message).toEqual(expect.any(String))
        expect((yield* rowsOf(admin, datasetId)).map((r) => r.id)).toEqual([1, 5])
      }))

    it.effect("duplicate copies schema, key and rows; purge keeps the dataset", () =>
      Effect.gen(function*() {
        const { admin, datasetId, dataset } = yield* newDataset()
        yield* ingestAndWait(admin, datasetId, [{ id: 1, name: "a" }, { id: 2, name: "b", at: "2026-01-02" }])
        const copy = yield* admin.v2.v2Datasets.duplicate({ path: { id: datasetId }, payload: {}, headers: {} })
        expect(copy.data.id).not.toBe(datasetId)
        expect(copy.data.name).toBe(`${dataset.name} (copy)`)
        expect(copy.data).toMatchObject({ dataSourceId: dataset.dataSourceId, rowCount: 2, columnCount: 3 })
        const named = yield* admin.v2.v2Datasets.duplicate({ path: { id: datasetId }, payload: { name: "Named copy" }, headers: {} })
        expect(named.data.name).toBe("Named copy")
        expect(yield* admin.v2.v2Datasets.getSchema({ path: { id: copy.data.id } })).toMatchObject({
          data: yield* Effect.map(admin.v2.v2Datasets.getSchema({ path: { id: datasetId } }), (s) => s.data)
        })
        expect(yield* rowsOf(admin, copy.data.id)).toEqual(yield* rowsOf(admin, datasetId))
        // The copy is independent: the key still upserts there, the original is untouched.
        yield* ingestAndWait(admin, copy.data.id, [{ id: 1, name: "changed" }])
        expect((yield* rowsOf(admin, datasetId))[0]).toEqual({ id: 1, name: "a" })
        expect((yield* rowsOf(admin, copy.data.id)).length).toBe(2)

        const purged = yield* admin.v2.v2Datasets.purge({ path: { id: datasetId }, headers: {} })
        expect(purged.data.message).toContain(datasetId)
        const after = yield* admin.v2.v2Datasets.get({ path: { id: datasetId } })
        expect(after.data).toMatchObject({ id: datasetId, rowCount: 0, columnCount: 3 })
        expect(yield* rowsOf(admin, datasetId)).toEqual([])
        expect((yield* rowsOf(admin, copy.data.id)).length).toBe(2)
        // Still accepts data after the purge.
        yield* ingestAndWait(admin, datasetId, [{ id: 9 }])
        expect(yield* rowsOf(admin, datasetId)).toEqual([{ id: 9 }])
      }))
  })

  describe("lists: pages, sorting and search", () => {
    it.effect("page edges: past the end, pageSize clamped to 100, page -1 and pageSize 0 are 400", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const tag = unique("edge").replace(" ", "-")
        yield* Effect.forEach([1, 2, 3], (n) => newDataSource(admin, `${tag} ${n}`))
        const past = yield* admin.v2.v2DataSources.list({ urlParams: { search: tag, page: 5, pageSize: 2 } })
        expect(past.data).toEqual({ items: [], pagination: { page: 5, pageSize: 2, totalItems: 3 } })
        const second = yield* admin.v2.v2DataSources.list({ urlParams: { search: tag, page: 1, pageSize: 2 } })
        expect(second.data.items).toHaveLength(1)
        const clamped = yield* admin.v2.v2DataSources.list({ urlParams: { pageSize: 500 } })
        expect(clamped.data.pagination.pageSize).toBe(100)
        const clampedSets = yield* admin.v2.v2Datasets.list({ urlParams: { pageSize: 500 } })
        expect(clampedSets.data.pagination.pageSize).toBe(100)
        const defaults = yield* admin.v2.v2Datasets.list({ urlParams: {} })
        expect(defaults.data.pagination).toMatchObject({ page: 0, pageSize: 25 })

        const { datasetId } = yield* newDataset(admin)
        for (const path of ["/v2/data-sources", "/v2/datasets", `/v2/datasets/${datasetId}/ingestions`, `/v2/datasets/${datasetId}/data`]) {
          for (const [query, field] of [["page=-1", "page"], ["pageSize=0", "pageSize"], ["page=1.5", "page"], ["pageSize=x", "pageSize"]] as const) {
            const answer = yield* send("acme-admin", "GET", `${path}?${query}`)
            expect({ path, query, status: answer.status }).toEqual({ path, query, status: 400 })
            expect(answer.body.errors[0]).toMatchObject({ code: "invalid_input", field })
          }
        }
        const ingestionsPast = yield* admin.v2.v2Datasets.listIngestions({ path: { id: datasetId }, urlParams: { page: 3 } })
        expect(ingestionsPast.data).toEqual({ items: [], pagination: { page: 3, pageSize: 25, totalItems: 0 } })
      }))

    it.effect("sorts by name ascending and descending; search is a case-insensitive substring", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const names = ["sortme banana", "SortMe apple", "sortme Cherry"]
        const sources = yield* Effect.forEach(names, (name) => newDataSource(admin, name))
        const asc = yield* admin.v2.v2DataSources.list({ urlParams: { search: "SORTME", sortBy: "name", sortOrder: "asc" } })
        expect(asc.data.items.map((d) => d.name)).toEqual(["SortMe apple", "sortme banana", "sortme Cherry"])
        const desc = yield* admin.v2.v2DataSources.list({ urlParams: { search: "sortme", sortBy: "name", sortOrder: "desc" } })
        expect(desc.data.items.map((d) => d.name)).toEqual(["sortme Cherry", "sortme banana", "SortMe apple"])
        const one = yield* admin.v2.v2DataSources.list({ urlParams: { search: "ANAN" } })
        expect(one.data.items.map((d) => d.name)).toEqual(["sortme banana"])

        const dataSourceId = sources[0]!.id
        yield* Effect.forEach(["Zeta", "alpha", "Mid"], (name) =>
          admin.v2.v2Datasets.create({ payload: { name, dataSourceId, schema }, headers: {} }))
        const sets = yield* admin.v2.v2Datasets.list({ urlParams: { dataSourceId, sortBy: "name" } })
        expect(sets.data.items.map((d) => d.name)).toEqual(["alpha", "Mid", "Zeta"])
        const setsDesc = yield* admin.v2.v2Datasets.list({ urlParams: { dataSourceId, sortBy: "name", sortOrder: "desc" } })
        expect(setsDesc.data.items.map((d) => d.name)).toEqual(["Zeta", "Mid", "alpha"])
        const found = yield* admin.v2.v2Datasets.list({ urlParams: { dataSourceId, search: "ET" } })
        expect(found.data.items.map((d) => d.name)).toEqual(["Zeta"])
      }))
  })

  describe("idempotency", () => {
    it.effect("a replay returns the same answer with idempotent-replayed: true and runs nothing", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* newDataset()
        const key = crypto.randomUUID()
        const body = { records: [{ id: 1, name: "once" }] }
        const first = yield* send("acme-admin", "POST", `/v2/datasets/${datasetId}/data`, body, { "idempotency-key": key })
        expect(first.status).toBe(200)
        expect(first.headers.get("idempotent-replayed")).toBeNull()
        const replay = yield* send("acme-admin", "POST", `/v2/datasets/${datasetId}/data`, body, { "idempotency-key": key })
        expect(replay.status).toBe(200)
        expect(replay.headers.get("idempotent-replayed")).toBe("true")
        expect(replay.body).toEqual(first.body)
        expect(replay.body.requestId).toBe(first.body.requestId)
        expect(replay.body.data.ingestionId).toBe(first.body.data.ingestionId)
        expect(yield* ingestionCount(admin, datasetId)).toBe(1)

        // Through the typed client with the same key: the same ingestion.
        const typed = yield* admin.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: body, headers: { "idempotency-key": key } })
        expect(typed.data.ingestionId).toBe(first.body.data.ingestionId)
        expect(yield* ingestionCount(admin, datasetId)).toBe(1)

        // The same key on another route is another operation.
        const { datasetId: otherDataset } = yield* newDataset(admin)
        const other = yield* send("acme-admin", "POST", `/v2/datasets/${otherDataset}/data`, body, { "idempotency-key": key })
        expect(other.status).toBe(200)
        expect(other.body.data.ingestionId).not.toBe(first.body.data.ingestionId)
      }))

    it.effect("the same key with a different body is 422 idempotency_key_reused and nothing runs", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* newDataset()
        const key = crypto.randomUUID()
        const path = `/v2/datasets/${datasetId}/data`
        yield* send("acme-admin", "POST", path, { records: [{ id: 1 }] }, { "idempotency-key": key })
        const reused = yield* send("acme-admin", "POST", path, { records: [{ id: 2 }] }, { "idempotency-key": key })
        expect(reused.status).toBe(422)
        expect(reused.body).toMatchObject({ status: "error", errors: [{ code: "idempotency_key_reused" }] })
        expect(reused.body.errors[0].message).toEqual(expect.any(String))
        expect(yield* ingestionCount(admin, datasetId)).toBe(1)
        const typed = yield* failsWith(
          admin.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: { records: [{ id: 3 }] }, headers: { "idempotency-key": key } }),
          "Unprocessable"
        )
        expect(typed).toMatchObject({ code: "idempotency_key_reused" })
        expect(yield* ingestionCount(admin, datasetId)).toBe(1)
        const [ingestion] = (yield* admin.v2.v2Datasets.listIngestions({ path: { id: datasetId }, urlParams: {} })).data.items
        yield* awaitIngestion(admin, datasetId, ingestion!.id)
        expect(yield* rowsOf(admin, datasetId)).toEqual([{ id: 1 }])
      }))

    it.effect("50 concurrent ingests with one key: one ingestion, the same ingestionId in all 50 answers", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* newDataset()
        const key = crypto.randomUUID()
        const body = { records: [{ id: 1, name: "concurrent" }] }
        const answers = yield* Effect.all(
          Array.from({ length: 50 }, () =>
            send("acme-admin", "POST", `/v2/datasets/${datasetId}/data`, body, { "idempotency-key": key })),
          { concurrency: "unbounded" }
        )
        expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200))
        const ids = new Set(answers.map((a) => a.body.data.ingestionId))
        expect(ids.size).toBe(1)
        expect(answers.filter((a) => a.headers.get("idempotent-replayed") === "true")).toHaveLength(49)
        const ingestions = yield* Stream.runCollect(allIngestions(admin, datasetId))
        expect(Chunk.toArray(ingestions).map((i) => i.id)).toEqual([...ids])

        // The typed client, 50 at once with one caller key.
        const typedKey = crypto.randomUUID()
        const typed = yield* Effect.all(
          Array.from({ length: 50 }, () =>
            admin.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: { records: [{ id: 2 }] }, headers: { "idempotency-key": typedKey } })),
          { concurrency: "unbounded" }
        )
        expect(new Set(typed.map((a) => a.data.ingestionId)).size).toBe(1)
        expect(yield* ingestionCount(admin, datasetId)).toBe(2)
      }))

    it.effect("creation, duplicate and purge replay too", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const sourceKey = crypto.randomUUID()
        const name = unique("Replayed source")
        const s1 = yield* send("acme-admin", "POST", "/v2/data-sources", { name }, { "idempotency-key": sourceKey })
        const s2 = yield* send("acme-admin", "POST", "/v2/data-sources", { name }, { "idempotency-key": sourceKey })
        expect(s2.headers.get("idempotent-replayed")).toBe("true")
        expect(s2.body.data.id).toBe(s1.body.data.id)
        expect((yield* admin.v2.v2DataSources.list({ urlParams: { search: name } })).data.pagination.totalItems).toBe(1)

        const dataSourceId = s1.body.data.id as number
        const setKey = crypto.randomUUID()
        const payload = { name: "Replayed set", dataSourceId, schema }
        const d1 = yield* admin.v2.v2Datasets.create({ payload, headers: { "idempotency-key": setKey } })
        const d2 = yield* admin.v2.v2Datasets.create({ payload, headers: { "idempotency-key": setKey } })
        expect(d2.data.id).toBe(d1.data.id)

        const dupKey = crypto.randomUUID()
        const c1 = yield* admin.v2.v2Datasets.duplicate({ path: { id: d1.data.id }, payload: {}, headers: { "idempotency-key": dupKey } })
        const c2 = yield* admin.v2.v2Datasets.duplicate({ path: { id: d1.data.id }, payload: {}, headers: { "idempotency-key": dupKey } })
        expect(c2.data.id).toBe(c1.data.id)
        expect((yield* admin.v2.v2Datasets.list({ urlParams: { dataSourceId } })).data.pagination.totalItems).toBe(2)

        yield* ingestAndWait(admin, d1.data.id, [{ id: 1 }])
        const purgeKey = crypto.randomUUID()
        const p1 = yield* send("acme-admin", "POST", `/v2/datasets/${d1.data.id}/purge`, undefined, { "idempotency-key": purgeKey })
        expect(p1.status).toBe(200)
        yield* ingestAndWait(admin, d1.data.id, [{ id: 2 }])
        const p2 = yield* send("acme-admin", "POST", `/v2/datasets/${d1.data.id}/purge`, undefined, { "idempotency-key": purgeKey })
        expect(p2.headers.get("idempotent-replayed")).toBe("true")
        expect(p2.body).toEqual(p1.body)
        // Replayed, not run again: the row written after the first purge is still there.
        expect(yield* rowsOf(admin, d1.data.id)).toEqual([{ id: 2 }])
      }))

    it.effect("a failed request is not stored: the same key runs again once the cause is gone", () =>
      Effect.gen(function*() {
        const { datasetId } = yield* newDataset()
        const key = crypto.randomUUID()
        const body = { records: [{ id: 1 }] }
        const forbidden = yield* send("acme-viewer", "POST", `/v2/datasets/${datasetId}/data`, body, { "idempotency-key": key })
        expect(forbidden.status).toBe(403)
        const again = yield* send("acme-viewer", "POST", `/v2/datasets/${datasetId}/data`, body, { "idempotency-key": key })
        expect(again.status).toBe(403)
        expect(again.headers.get("idempotent-replayed")).toBeNull()
      }))
  })

  describe("v1 and v2 share the data", () => {
    it.effect("a dataset made and filled through v1 reads through v2 (schema inferred from the data)", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const source = yield* admin.v1.v1DataSources.createDataSource({ payload: { title: "v1 shop", timezone: "UTC" } })
        const created = yield* admin.v1.v1Datasets.createDataset({
          payload: { title: "v1 orders", dataSourceId: source.id, primaryKeys: ["id"] }
        })
        const accepted = yield* admin.v1.v1Datasets.ingest({
          path: { datasetId: created.id },
          payload: { records: [{ id: 1, name: "a", at: "2026-11-22T10:00:00Z" }, { id: 2, name: "b", at: "2026-11-23" }] },
          headers: {}
        })
        const v1Done = yield* awaitIngestionV1(admin, created.id, accepted.ingestionId)
        expect(v1Done.status).toBe("success")

        const source2 = yield* admin.v2.v2DataSources.get({ path: { id: source.id } })
        expect(source2.data.name).toBe("v1 shop")
        const dataset = yield* admin.v2.v2Datasets.get({ path: { id: created.id } })
        expect(dataset.data).toMatchObject({ name: "v1 orders", dataSourceId: source.id, rowCount: 2, columnCount: 3 })
        const columns = yield* admin.v2.v2Datasets.getSchema({ path: { id: created.id } })
        expect(columns.data.primaryKey).toEqual(["id"])
        expect(columns.data.items.map((c) => [c.id, c.dataType])).toEqual([["id", "number"], ["name", "string"], ["at", "datetime"]])
        expect(yield* rowsOf(admin, created.id)).toEqual([
          { id: 1, name: "a", at: "2026-11-22T10:00:00Z" },
          { id: 2, name: "b", at: "2026-11-23" }
        ])
        const ingestions = yield* admin.v2.v2Datasets.listIngestions({ path: { id: created.id }, urlParams: {} })
        expect(ingestions.data.items.map((i) => [i.id, i.status])).toEqual([[accepted.ingestionId, "success"]])
        const detail = yield* admin.v2.v2Datasets.getIngestion({ path: { id: created.id, ingestionId: accepted.ingestionId } })
        expect(detail.data.summary?.ingestion).toMatchObject({ receivedRecordCount: 2, appendedRecordCount: 2 })
        // v2 lists it by its number; the number and the UUID name the same dataset.
        const listed = yield* admin.v2.v2Datasets.list({ urlParams: { dataSourceId: source.id } })
        expect(listed.data.items.map((d) => d.id)).toEqual([dataset.data.id])
        expect(dataset.data.uuid).toBe(created.id)
        expect((yield* admin.v2.v2Datasets.get({ path: { id: dataset.data.id } })).data).toEqual(dataset.data)

        // v2 ingestion into it is checked against the inferred schema.
        const typed = yield* ingestAndWait(admin, created.id, [{ id: 3, name: 5 }])
        expect(typed.errors?.map((e) => [e.code, e.field])).toEqual([["invalid_type", "name"]])
      }))

    it.effect("a dataset made through v2 is listed and filled through v1", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId, dataset } = yield* newDataset()
        // v1 names it by its UUID, which the v2 detail shows beside its number.
        const uuid = dataset.uuid
        const { datasets } = yield* admin.v1.v1DataSources.listDatasets({ path: { dataSourceId } })
        expect(datasets.map((d) => [d.id, d.title, d.primaryKeys])).toEqual([[uuid, dataset.name, ["id"]]])
        const accepted = yield* admin.v1.v1Datasets.ingest({ path: { datasetId: uuid }, payload: { records: [{ id: 1, name: "v1" }] }, headers: {} })
        yield* awaitIngestionV1(admin, uuid, accepted.ingestionId)
        expect(yield* rowsOf(admin, datasetId)).toEqual([{ id: 1, name: "v1" }])
        expect(yield* rowsOf(admin, uuid)).toEqual([{ id: 1, name: "v1" }])
        const { accounts } = yield* admin.v1.v1Accounts.listAccounts()
        const v1Sources = yield* admin.v1.v1Accounts.listDataSources({ path: { accountId: accounts[0]!.id } })
        expect(v1Sources.dataSources.map((d) => d.id)).toContain(dataSourceId)
      }))
  })
})
