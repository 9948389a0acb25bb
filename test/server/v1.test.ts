import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { awaitIngestionV1, clientFor, rawRequest, serverLayer } from "../support/server.js"

const json = (key: string, body: unknown) => ({
  method: "POST",
  headers: { "x-api-key": key, "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

/** A data source and a dataset (primary key `id` unless told otherwise) owned by Acme. */
const acmeDataset = (primaryKeys: ReadonlyArray<string> = ["id"]) =>
  Effect.gen(function*() {
    const admin = yield* clientFor("acme-admin")
    const dataSource = yield* admin.v1.v1DataSources.createDataSource({ payload: { title: "Shop", timezone: "UTC" } })
    const dataset = yield* admin.v1.v1Datasets.createDataset({
      payload: { title: "Orders", dataSourceId: dataSource.id, primaryKeys }
    })
    return { admin, dataSourceId: dataSource.id, datasetId: dataset.id }
  })

layer(serverLayer(), { excludeTestServices: true })("v1 reference server through the typed client", (it) => {
  describe("auth", () => {
    it.effect("validate-key answers 200 with a requestId for a valid key", () =>
      Effect.gen(function*() {
        const client = yield* clientFor("acme-viewer")
        const answer = yield* client.v1.v1Auth.validateKey()
        expect(answer.status).toBe("success")
        expect(answer.requestId).toMatch(/^[0-9a-f-]{36}$/)
      }))

    it.effect("a missing or unknown key is 401 Unauthorized with the envelope", () =>
      Effect.gen(function*() {
        const unknown = yield* clientFor("nope")
        const error = yield* Effect.flip(unknown.v1.v1Auth.validateKey())
        expect(error._tag).toBe("Unauthorized")
        if (error._tag === "Unauthorized") {
          expect(error.errors[0]).toMatchObject({ code: "unauthorized", type: "authentication" })
          expect(error.requestId).not.toBe("")
        }
        const missing = yield* rawRequest("/v1/auth/validate-key")
        expect(missing.status).toBe(401)
        expect(missing.body).toMatchObject({ status: "error", errors: [{ code: "unauthorized" }] })
        expect(missing.body.requestId).toBe(missing.headers.get("x-request-id"))
      }))
  })

  describe("accounts and time zones", () => {
    it.effect("lists every account of the key's organization with its type", () =>
      Effect.gen(function*() {
        const acme = yield* clientFor("acme-viewer")
        const { accounts } = yield* acme.v1.v1Accounts.listAccounts()
        expect(accounts.map((a) => [a.name, a.accountType])).toEqual([["Acme", "organization"], ["Client Co", "client"]])
        const globex = yield* clientFor("globex-admin")
        const other = yield* globex.v1.v1Accounts.listAccounts()
        expect(other.accounts.map((a) => a.name)).toEqual(["Globex"])
      }))

    it.effect("lists all IANA time zones with offsets", () =>
      Effect.gen(function*() {
        const client = yield* clientFor("acme-viewer")
        const { timezones } = yield* client.v1.v1Accounts.listTimezones()
        expect(timezones.length).toBeGreaterThan(400)
        expect(timezones.find((t) => t.timezone === "Asia/Kolkata")?.offset).toBe("UTC+05:30")
        expect(timezones.find((t) => t.timezone === "UTC")?.offset).toBe("UTC+00:00")
      }))
  })

  describe("data sources", () => {
    it.effect("creates an ingestion data source in the key's account, answering processing", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const created = yield* admin.v1.v1DataSources.createDataSource({ payload: { title: "", timezone: "Europe/Ljubljana" } })
        expect(created).toMatchObject({ status: "processing", title: "", timezone: "Europe/Ljubljana", key: "ingestion" })
        expect(created.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
        const { accounts } = yield* admin.v1.v1Accounts.listAccounts()
        const listed = yield* admin.v1.v1Accounts.listDataSources({ path: { accountId: accounts[0]!.id } })
        expect(listed.dataSources.find((d) => d.id === created.id)).toMatchObject({ ingestionSupported: true, key: "ingestion" })
      }))

    it.effect("creates in another account of the organization when accountId is given", () =>
      Effect.gen(function*() {
        const editor = yield* clientFor("acme-editor")
        const { accounts } = yield* editor.v1.v1Accounts.listAccounts()
        const clientCo = accounts.find((a) => a.accountType === "client")!
        const created = yield* editor.v1.v1DataSources.createDataSource({
          payload: { accountId: clientCo.id, title: "Client data" }
        })
        expect(created.timezone).toBe("UTC")
        const listed = yield* editor.v1.v1Accounts.listDataSources({ path: { accountId: clientCo.id } })
        expect(listed.dataSources.map((d) => d.id)).toContain(created.id)
      }))

    it.effect("an unknown time zone is 400 on field timezone", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const error = yield* Effect.flip(admin.v1.v1DataSources.createDataSource({ payload: { title: "x", timezone: "Mars/Olympus" } }))
        expect(error._tag).toBe("BadRequest")
        if (error._tag === "BadRequest") expect(error.errors[0]).toMatchObject({ code: "invalid_input", field: "timezone" })
      }))

    it.effect("a viewer may not create or delete data sources (403)", () =>
      Effect.gen(function*() {
        const { dataSourceId } = yield* acmeDataset()
        const viewer = yield* clientFor("acme-viewer")
        const create = yield* Effect.flip(viewer.v1.v1DataSources.createDataSource({ payload: { title: "x" } }))
        expect(create._tag).toBe("Forbidden")
        const remove = yield* Effect.flip(viewer.v1.v1DataSources.deleteDataSource({ path: { dataSourceId } }))
        expect(remove._tag).toBe("Forbidden")
        if (remove._tag === "Forbidden") expect(remove.errors[0]).toMatchObject({ code: "forbidden", type: "permission" })
      }))

    it.effect("deleting a data source removes its datasets and their rows", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId } = yield* acmeDataset()
        const deleted = yield* admin.v1.v1DataSources.deleteDataSource({ path: { dataSourceId } })
        expect(deleted.message).toContain(String(dataSourceId))
        const datasets = yield* Effect.flip(admin.v1.v1DataSources.listDatasets({ path: { dataSourceId } }))
        expect(datasets._tag).toBe("NotFound")
        const ingest = yield* Effect.flip(
          admin.v1.v1Datasets.ingest({ path: { datasetId }, payload: { records: [{ id: 1 }] }, headers: {} })
        )
        expect(ingest._tag).toBe("NotFound")
      }))

    it.effect("non-integer ids are 400 naming the parameter", () =>
      Effect.gen(function*() {
        const answer = yield* rawRequest("/v1/data-sources/abc", { method: "DELETE", headers: { "x-api-key": "acme-admin" } })
        expect(answer.status).toBe(400)
        expect(answer.body.errors[0]).toMatchObject({ code: "invalid_input", field: "dataSourceId", type: "validation" })
        const decimal = yield* rawRequest("/v1/accounts/1.5/data-sources", { headers: { "x-api-key": "acme-admin" } })
        expect(decimal.status).toBe(400)
        expect(decimal.body.errors[0].field).toBe("accountId")
      }))
  })

  describe("datasets", () => {
    it.effect("creates a dataset in a data source and lists it", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId } = yield* acmeDataset(["id", "day"])
        const { datasets } = yield* admin.v1.v1DataSources.listDatasets({ path: { dataSourceId } })
        expect(datasets).toEqual([
          expect.objectContaining({ id: datasetId, title: "Orders", dataSourceId, primaryKeys: ["id", "day"] })
        ])
      }))

    it.effect("needs a data source that exists and is visible", () =>
      Effect.gen(function*() {
        const admin = yield* clientFor("acme-admin")
        const missing = yield* Effect.flip(admin.v1.v1Datasets.createDataset({ payload: { title: "x" } }))
        expect(missing._tag).toBe("BadRequest")
        if (missing._tag === "BadRequest") expect(missing.errors[0]!.field).toBe("dataSourceId")
        const unknown = yield* Effect.flip(admin.v1.v1Datasets.createDataset({ payload: { dataSourceId: 999999 } }))
        expect(unknown._tag).toBe("NotFound")
      }))

    it.effect("a viewer may not create, purge or delete datasets, nor ingest (403)", () =>
      Effect.gen(function*() {
        const { dataSourceId, datasetId } = yield* acmeDataset()
        const viewer = yield* clientFor("acme-viewer")
        const results = yield* Effect.all([
          Effect.flip(viewer.v1.v1Datasets.createDataset({ payload: { dataSourceId } })),
          Effect.flip(viewer.v1.v1Datasets.purgeDataset({ path: { datasetId } })),
          Effect.flip(viewer.v1.v1Datasets.deleteDataset({ path: { datasetId } })),
          Effect.flip(viewer.v1.v1Datasets.ingest({ path: { datasetId }, payload: { records: [{ id: 1 }] }, headers: {} }))
        ])
        expect(results.map((e) => e._tag)).toEqual(["Forbidden", "Forbidden", "Forbidden", "Forbidden"])
      }))

    it.effect("non-UUID dataset ids are 400 on datasetId", () =>
      Effect.gen(function*() {
        const answer = yield* rawRequest("/v1/datasets/not-a-uuid/ingestions", { headers: { "x-api-key": "acme-admin" } })
        expect(answer.status).toBe(400)
        expect(answer.body.errors[0]).toMatchObject({ code: "invalid_input", field: "datasetId" })
      }))
  })

  describe("a dataset, and an account's datasets (routes the official v1 client calls)", () => {
    it.effect("GET /v1/datasets/{datasetId} answers the dataset in v1's shape; it is the v2 dataset with its number", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId } = yield* acmeDataset(["id"])
        const viewer = yield* clientFor("acme-viewer")
        const answer = yield* viewer.v1.v1Datasets.getDataset({ path: { datasetId } })
        expect(answer).toMatchObject({ status: "success", id: datasetId, title: "Orders", dataSourceId, primaryKeys: ["id"] })
        expect(answer.created).toMatch(/Z$/)
        // The same dataset in v2: its UUID in the path, or its number.
        const v2 = yield* admin.v2.v2Datasets.get({ path: { id: datasetId } })
        expect(v2.data.uuid).toBe(datasetId)
        expect(typeof v2.data.id).toBe("number")
        expect((yield* admin.v2.v2Datasets.get({ path: { id: v2.data.id } })).data).toEqual(v2.data)
        // v1 paths take only the UUID: the number is 400 on datasetId.
        const byNumber = yield* rawRequest(`/v1/datasets/${v2.data.id}`, { headers: { "x-api-key": "acme-admin" } })
        expect(byNumber.status).toBe(400)
        expect(byNumber.body.errors[0]).toMatchObject({ code: "invalid_input", field: "datasetId" })
      }))

    it.effect("UUIDs in paths are read in any case: the dataset, its ingestion route and its ingestions", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* acmeDataset(["id"])
        const upper = datasetId.toUpperCase()
        expect((yield* admin.v1.v1Datasets.getDataset({ path: { datasetId: upper } })).id).toBe(datasetId)
        const accepted = yield* admin.v1.v1Datasets.ingest({ path: { datasetId: upper }, payload: { records: [{ id: 1 }] }, headers: {} })
        const detail = yield* awaitIngestionV1(admin, upper, accepted.ingestionId.toUpperCase())
        expect(detail).toMatchObject({ ingestionId: accepted.ingestionId, status: "success" })
        const { ingestions } = yield* admin.v1.v1Datasets.listIngestions({ path: { datasetId: upper }, urlParams: {} })
        expect(ingestions.map((i) => i.ingestionId)).toEqual([accepted.ingestionId])
      }))

    it.effect("GET /v1/datasets/{datasetId}: 404 for an unknown id, another organization's and a private one", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* acmeDataset()
        const unknown = yield* Effect.flip(admin.v1.v1Datasets.getDataset({ path: { datasetId: "00000000-0000-4000-8000-000000000000" } }))
        expect(unknown._tag).toBe("NotFound")
        const globex = yield* clientFor("globex-admin")
        expect((yield* Effect.flip(globex.v1.v1Datasets.getDataset({ path: { datasetId } })))._tag).toBe("NotFound")
        const setPrivate = yield* rawRequest(`/v2/datasets/${datasetId}/permissions`, {
          method: "PUT",
          headers: { "x-api-key": "acme-admin", "content-type": "application/json" },
          body: JSON.stringify({ accessLevel: "private" })
        })
        expect(setPrivate.status).toBe(200)
        const viewer = yield* clientFor("acme-viewer")
        expect((yield* Effect.flip(viewer.v1.v1Datasets.getDataset({ path: { datasetId } })))._tag).toBe("NotFound")
        expect((yield* admin.v1.v1Datasets.getDataset({ path: { datasetId } })).id).toBe(datasetId)
      }))

    it.effect("GET /v1/accounts/{accountId}/datasets lists the datasets of that account's data sources that the key may see", () =>
      Effect.gen(function*() {
        const editor = yield* clientFor("acme-editor")
        const { accounts } = yield* editor.v1.v1Accounts.listAccounts()
        const clientCo = accounts.find((a) => a.accountType === "client")!
        const acmeAccount = accounts.find((a) => a.accountType === "organization")!
        const source = yield* editor.v1.v1DataSources.createDataSource({ payload: { accountId: clientCo.id, title: "Client shop" } })
        const shared = yield* editor.v1.v1Datasets.createDataset({ payload: { title: "Shared", dataSourceId: source.id, primaryKeys: ["id"] } })
        const hidden = yield* editor.v1.v1Datasets.createDataset({ payload: { title: "Hidden", dataSourceId: source.id } })
        const setPrivate = yield* rawRequest(`/v2/datasets/${hidden.id}/permissions`, {
          method: "PUT",
          headers: { "x-api-key": "acme-editor", "content-type": "application/json" },
          body: JSON.stringify({ accessLevel: "private" })
        })
        expect(setPrivate.status).toBe(200)

        const mine = yield* editor.v1.v1Accounts.listDatasets({ path: { accountId: clientCo.id } })
        expect(mine.status).toBe("success")
        expect(mine.datasets.map((d) => d.id).sort()).toEqual([shared.id, hidden.id].sort())
        expect(mine.datasets.find((d) => d.id === shared.id)).toMatchObject({ title: "Shared", dataSourceId: source.id, primaryKeys: ["id"] })
        const viewer = yield* clientFor("acme-viewer")
        const seen = yield* viewer.v1.v1Accounts.listDatasets({ path: { accountId: clientCo.id } })
        expect(seen.datasets.map((d) => d.id)).toEqual([shared.id])
        // The organization's own account does not list the client account's datasets.
        const own = yield* editor.v1.v1Accounts.listDatasets({ path: { accountId: acmeAccount.id } })
        expect(own.datasets.map((d) => d.id)).not.toContain(shared.id)
      }))

    it.effect("GET /v1/accounts/{accountId}/datasets: 400 on a non-integer account id, 404 for an unknown or another organization's account", () =>
      Effect.gen(function*() {
        const bad = yield* rawRequest("/v1/accounts/abc/datasets", { headers: { "x-api-key": "acme-admin" } })
        expect(bad.status).toBe(400)
        expect(bad.body.errors[0]).toMatchObject({ code: "invalid_input", field: "accountId" })
        const acme = yield* clientFor("acme-admin")
        const { accounts } = yield* acme.v1.v1Accounts.listAccounts()
        const globex = yield* clientFor("globex-admin")
        expect((yield* Effect.flip(globex.v1.v1Accounts.listDatasets({ path: { accountId: accounts[0]!.id } })))._tag).toBe("NotFound")
        expect((yield* Effect.flip(acme.v1.v1Accounts.listDatasets({ path: { accountId: 999999 } })))._tag).toBe("NotFound")
      }))
  })

  describe("ingestion", () => {
    it.effect("is accepted at once, processed asynchronously, and reports metrics", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* acmeDataset()
        const accepted = yield* admin.v1.v1Datasets.ingest({
          path: { datasetId },
          payload: {
            records: [
              { id: 1, country: "SI", amount: 12.5, at: "2026-11-01T10:00:00Z", tags: ["a", "b"] },
              { id: 2, country: "DE", amount: 3, at: "2026-11-02", tags: [] }
            ]
          },
          headers: {}
        })
        expect(accepted.status).toBe("success")
        expect(accepted.ingestionId).toMatch(/^[0-9a-f-]{36}$/)
        const detail = yield* awaitIngestionV1(admin, datasetId, accepted.ingestionId)
        expect(detail.status).toBe("success")
        expect(detail.metrics.ingestionMetrics).toEqual({
          receivedRecordsCount: 2,
          appendedRecordsCount: 2,
          rejectedRecordsCount: 0,
          overwrittenRecordsCount: 0
        })
        expect(detail.metrics.datasetMetrics.columnsCount).toBe(5)
        expect(detail.metrics.datasetMetrics.totalDatasetRecordsCount).toBe(2)
        expect(detail.metrics.datasetMetrics.datasetSizeMB).toBeGreaterThan(0)
      }))

    it.effect("overwrites rows with the same primary key and counts them", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* acmeDataset()
        const send = (records: Array<Record<string, unknown>>) =>
          admin.v1.v1Datasets.ingest({ path: { datasetId }, payload: { records }, headers: {} }).pipe(
            Effect.flatMap((a) => awaitIngestionV1(admin, datasetId, a.ingestionId))
          )
        yield* send([{ id: 1, v: "a" }, { id: 2, v: "b" }])
        const second = yield* send([{ id: 2, v: "c" }, { id: 3, v: "d" }, { id: 3, v: "e" }])
        expect(second.metrics.ingestionMetrics).toEqual({
          receivedRecordsCount: 3,
          appendedRecordsCount: 1,
          rejectedRecordsCount: 0,
          overwrittenRecordsCount: 2
        })
        expect(second.metrics.datasetMetrics.totalDatasetRecordsCount).toBe(3)
      }))

    it.effect("without a primary key every record is appended", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* acmeDataset([])
        const send = (records: Array<Record<string, unknown>>) =>
          admin.v1.v1Datasets.ingest({ path: { datasetId }, payload: { records }, headers: {} }).pipe(
            Effect.flatMap((a) => awaitIngestionV1(admin, datasetId, a.ingestionId))
          )
        yield* send([{ id: 1 }])
        const again = yield* send([{ id: 1 }])
        expect(again.metrics.ingestionMetrics.appendedRecordsCount).toBe(1)
        expect(again.metrics.datasetMetrics.totalDatasetRecordsCount).toBe(2)
      }))

    it.effect("rejects bad records one by one and stores the rest", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* acmeDataset()
        const accepted = yield* admin.v1.v1Datasets.ingest({
          path: { datasetId },
          payload: {
            records: [
              { id: 1, amount: 1 },
              { id: 2, amount: "twelve" },
              { amount: 3 },
              { id: 4, amount: true },
              { id: 5, amount: 5 }
            ]
          },
          headers: {}
        })
        const detail = yield* awaitIngestionV1(admin, datasetId, accepted.ingestionId)
        expect(detail.status).toBe("success")
        expect(detail.metrics.ingestionMetrics).toMatchObject({ appendedRecordsCount: 2, rejectedRecordsCount: 3 })
        expect(detail.errors?.map((e) => [e.code, e.field])).toEqual([
          ["invalid_type", "amount"],
          ["missing_primary_key", "id"],
          ["unsupported_value", "amount"]
        ])
      }))

    it.effect("bad request bodies are 400 with the envelope and never 500", () =>
      Effect.gen(function*() {
        const { datasetId } = yield* acmeDataset()
        const path = `/v1/datasets/${datasetId}/data`
        const cases: Array<[unknown, string | null, string]> = [
          [{ records: Array.from({ length: 101 }, (_, id) => ({ id })) }, "records", "invalid_input"],
          [{ records: [] }, "records", "invalid_input"],
          [{ records: "all" }, "records", "invalid_input"],
          [{}, "records", "invalid_input"],
          ["", null, "invalid_input"],
          ["{\"records\": [", null, "invalid_json"]
        ]
        for (const [body, field, code] of cases) {
          const answer = yield* rawRequest(path, json("acme-admin", body))
          expect(answer.status, JSON.stringify(body)).toBe(400)
          expect(answer.body).toMatchObject({ status: "error", errors: [{ code, field, type: "validation" }] })
          expect(answer.body.requestId).toEqual(expect.any(String))
        }
        const over = yield* rawRequest(path, json("acme-admin", { records: Array.from({ length: 101 }, (_, id) => ({ id })) }))
        expect(over.body.errors[0].message).toContain("at most 100 records")
      }))

    it.effect("lists ingestions newest first, one page at a time", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* acmeDataset()
        const ids: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const a = yield* admin.v1.v1Datasets.ingest({ path: { datasetId }, payload: { records: [{ id: i }] }, headers: {} })
          ids.push(a.ingestionId)
        }
        const all = yield* admin.v1.v1Datasets.listIngestions({ path: { datasetId }, urlParams: {} })
        expect(all.ingestions.map((i) => i.ingestionId)).toEqual([...ids].reverse())
        expect(all.pagination).toEqual({ page: 1, pageSize: 100, totalItems: 3 })
        const second = yield* admin.v1.v1Datasets.listIngestions({ path: { datasetId }, urlParams: { page: 2, pageSize: 2 } })
        expect(second.ingestions.map((i) => i.ingestionId)).toEqual([ids[0]])
        const unknownIngestion = yield* Effect.flip(
          admin.v1.v1Datasets.getIngestion({ path: { datasetId, ingestionId: "00000000-0000-4000-8000-000000000000" } })
        )
        expect(unknownIngestion._tag).toBe("NotFound")
      }))
  })

  describe("purge and delete", () => {
    it.effect("purge removes the rows, keeps the dataset, and new ingestions start from zero", () =>
      Effect.gen(function*() {
        const { admin, datasetId } = yield* acmeDataset()
        const send = (records: Array<Record<string, unknown>>) =>
          admin.v1.v1Datasets.ingest({ path: { datasetId }, payload: { records }, headers: {} }).pipe(
            Effect.flatMap((a) => awaitIngestionV1(admin, datasetId, a.ingestionId))
          )
        yield* send([{ id: 1 }, { id: 2 }])
        const purged = yield* admin.v1.v1Datasets.purgeDataset({ path: { datasetId } })
        expect(purged.status).toBe("success")
        const after = yield* send([{ id: 2 }])
        expect(after.metrics.ingestionMetrics).toMatchObject({ appendedRecordsCount: 1, overwrittenRecordsCount: 0 })
        expect(after.metrics.datasetMetrics.totalDatasetRecordsCount).toBe(1)
      }))

    it.effect("delete removes the dataset and everything in it", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId } = yield* acmeDataset()
        const a = yield* admin.v1.v1Datasets.ingest({ path: { datasetId }, payload: { records: [{ id: 1 }] }, headers: {} })
        yield* admin.v1.v1Datasets.deleteDataset({ path: { datasetId } })
        const { datasets } = yield* admin.v1.v1DataSources.listDatasets({ path: { dataSourceId } })
        expect(datasets).toEqual([])
        const detail = yield* Effect.flip(admin.v1.v1Datasets.getIngestion({ path: { datasetId, ingestionId: a.ingestionId } }))
        expect(detail._tag).toBe("NotFound")
      }))
  })

  describe("visibility", () => {
    it.effect("v1 lists hold only what the key may see: private datasets and data sources are left out", () =>
      Effect.gen(function*() {
        const { admin, dataSourceId, datasetId } = yield* acmeDataset()
        const viewer = yield* clientFor("acme-viewer")
        const publicOne = yield* admin.v1.v1Datasets.createDataset({ payload: { title: "Public", dataSourceId } })
        const setPrivate = (path: string) =>
          rawRequest(path, { method: "PUT", headers: { "x-api-key": "acme-admin", "content-type": "application/json" }, body: JSON.stringify({ accessLevel: "private" }) })
        expect((yield* setPrivate(`/v2/datasets/${datasetId}/permissions`)).status).toBe(200)
        const seen = yield* viewer.v1.v1DataSources.listDatasets({ path: { dataSourceId } })
        expect(seen.datasets.map((d) => d.id)).toEqual([publicOne.id])
        const all = yield* admin.v1.v1DataSources.listDatasets({ path: { dataSourceId } })
        expect(all.datasets.map((d) => d.id).sort()).toEqual([datasetId, publicOne.id].sort())
        const { accounts } = yield* admin.v1.v1Accounts.listAccounts()
        expect((yield* setPrivate(`/v2/data-sources/${dataSourceId}/permissions`)).status).toBe(200)
        const sources = yield* viewer.v1.v1Accounts.listDataSources({ path: { accountId: accounts[0]!.id } })
        expect(sources.dataSources.map((d) => d.id)).not.toContain(dataSourceId)
      }))
  })

  describe("tenancy", () => {
    it.effect("a key of one organization never sees or touches another's resources", () =>
      Effect.gen(function*() {
        const { dataSourceId, datasetId } = yield* acmeDataset()
        const acme = yield* clientFor("acme-admin")
        const { accounts } = yield* acme.v1.v1Accounts.listAccounts()
        const globex = yield* clientFor("globex-admin")
        const attempts = yield* Effect.all([
          Effect.flip(globex.v1.v1Accounts.listDataSources({ path: { accountId: accounts[0]!.id } })),
          Effect.flip(globex.v1.v1DataSources.createDataSource({ payload: { accountId: accounts[0]!.id, title: "x" } })),
          Effect.flip(globex.v1.v1DataSources.listDatasets({ path: { dataSourceId } })),
          Effect.flip(globex.v1.v1DataSources.deleteDataSource({ path: { dataSourceId } })),
          Effect.flip(globex.v1.v1Datasets.createDataset({ payload: { dataSourceId } })),
          Effect.flip(globex.v1.v1Datasets.ingest({ path: { datasetId }, payload: { records: [{ id: 1 }] }, headers: {} })),
          Effect.flip(globex.v1.v1Datasets.purgeDataset({ path: { datasetId } })),
          Effect.flip(globex.v1.v1Datasets.deleteDataset({ path: { datasetId } })),
          Effect.flip(globex.v1.v1Datasets.listIngestions({ path: { datasetId }, urlParams: {} }))
        ])
        expect(attempts.map((e) => e._tag)).toEqual(Array(9).fill("NotFound"))
        const stillThere = yield* acme.v1.v1DataSources.listDatasets({ path: { dataSourceId } })
        expect(stillThere.datasets.map((d) => d.id)).toEqual([datasetId])
      }))
  })
})
