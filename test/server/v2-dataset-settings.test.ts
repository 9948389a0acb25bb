import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientFor, pollUntil, rawRequest, serverLayer } from "../support/server.js"

const unknownId = "00000000-0000-4000-8000-000000000000"

const patch = (key: string, body: unknown) => ({
  method: "PATCH",
  headers: { "x-api-key": key, "content-type": "application/json" },
  body: JSON.stringify(body)
})

/** An Acme data source with a dataset (`day` datetime, `amount` number, `region` string), made by the admin. */
const acmeDataset = Effect.gen(function*() {
  const admin = yield* clientFor("acme-admin")
  const dataSource = yield* admin.v2.v2DataSources.create({ payload: { name: "Shop" }, headers: {} })
  const dataset = yield* admin.v2.v2Datasets.create({
    payload: {
      name: "Orders",
      dataSourceId: dataSource.data.id,
      schema: [
        { id: "day", dataType: "datetime" },
        { id: "amount", dataType: "number" },
        { id: "region", dataType: "string" }
      ],
      primaryKey: ["day", "region"]
    },
    headers: {}
  })
  return { admin, settings: admin.v2.v2DatasetSettings, dataSource: dataSource.data, id: dataset.data.id }
})

/** The `_tag` and the first `field` of a failed call. */
const failure = <A, E extends { readonly _tag: string }>(call: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(call), (error) => ({
    tag: error._tag,
    field: "errors" in error ? (error.errors as ReadonlyArray<{ readonly field: string | null }>)[0]?.field ?? null : null
  }))

layer(serverLayer(), { excludeTestServices: true })("v2 dataset settings through the typed client", (it) => {
  describe("metadata", () => {
    it.effect("starts empty, takes any subset, clears with null and round-trips", () =>
      Effect.gen(function*() {
        const { id, settings } = yield* acmeDataset
        const initial = yield* settings.getMetadata({ path: { id } })
        expect(initial.status).toBe("success")
        expect(initial.data).toEqual({ description: null, synonyms: null, defaultTimeDimension: null })

        const first = yield* settings.updateMetadata({
          path: { id },
          payload: { description: "Orders per day", synonyms: ["sales", "purchases"] }
        })
        expect(first.data).toEqual({ description: "Orders per day", synonyms: ["sales", "purchases"], defaultTimeDimension: null })

        const second = yield* settings.updateMetadata({ path: { id }, payload: { defaultTimeDimension: "day" } })
        expect(second.data).toEqual({ description: "Orders per day", synonyms: ["sales", "purchases"], defaultTimeDimension: "day" })

        const cleared = yield* settings.updateMetadata({ path: { id }, payload: { description: null } })
        expect(cleared.data.description).toBeNull()
        expect((yield* settings.getMetadata({ path: { id } })).data).toEqual({
          description: null,
          synonyms: ["sales", "purchases"],
          defaultTimeDimension: "day"
        })
      }))

    it.effect("the default time dimension must be a datetime column of the schema (400)", () =>
      Effect.gen(function*() {
        const { id, settings } = yield* acmeDataset
        expect(yield* failure(settings.updateMetadata({ path: { id }, payload: { defaultTimeDimension: "amount" } })))
          .toEqual({ tag: "BadRequest", field: "defaultTimeDimension" })
        expect(yield* failure(settings.updateMetadata({ path: { id }, payload: { defaultTimeDimension: "nope" } })))
          .toEqual({ tag: "BadRequest", field: "defaultTimeDimension" })
        expect((yield* settings.getMetadata({ path: { id } })).data.defaultTimeDimension).toBeNull()
      }))
  })

  describe("column metadata", () => {
    it.effect("lists one entry per schema column and round-trips changes", () =>
      Effect.gen(function*() {
        const { id, settings } = yield* acmeDataset
        const initial = yield* settings.getColumnMetadata({ path: { id } })
        expect(initial.data.items).toEqual([
          { id: "day", displayName: "day", description: null, conceptType: null, synonyms: null },
          { id: "amount", displayName: "amount", description: null, conceptType: null, synonyms: null },
          { id: "region", displayName: "region", description: null, conceptType: null, synonyms: null }
        ])

        const updated = yield* settings.updateColumnMetadata({
          path: { id },
          payload: {
            columns: [
              { id: "amount", conceptType: "measure", synonyms: ["revenue"] },
              { id: "region", description: "Sales region", conceptType: "dimension" }
            ]
          }
        })
        expect(updated.data.items).toHaveLength(3)
        expect(updated.data.items[1]).toEqual({
          id: "amount",
          displayName: "amount",
          description: null,
          conceptType: "measure",
          synonyms: ["revenue"]
        })
        expect(updated.data.items[2]).toMatchObject({ description: "Sales region", conceptType: "dimension" })
        expect((yield* settings.getColumnMetadata({ path: { id } })).data).toEqual(updated.data)

        // Fields left out keep their value; null clears.
        const cleared = yield* settings.updateColumnMetadata({
          path: { id },
          payload: { columns: [{ id: "amount", synonyms: null }, { id: "day", conceptType: "timeDimension" }] }
        })
        expect(cleared.data.items[1]).toMatchObject({ conceptType: "measure", synonyms: null })
        expect(cleared.data.items[0]).toMatchObject({ conceptType: "timeDimension" })
      }))

    it.effect("rejects unknown columns and bad values (400 on the field); a rejected update changes nothing", () =>
      Effect.gen(function*() {
        const { id, settings } = yield* acmeDataset
        expect(
          yield* failure(settings.updateColumnMetadata({
            path: { id },
            payload: { columns: [{ id: "amount", description: "x" }, { id: "nope", description: "y" }] }
          }))
        ).toEqual({ tag: "BadRequest", field: "columns[1].id" })
        // Bodies the typed client refuses to send, sent raw.
        const empty = yield* rawRequest(`/v2/datasets/${id}/column-metadata`, patch("acme-admin", { columns: [] }))
        expect(empty.status).toBe(400)
        expect(empty.body.errors[0]).toMatchObject({ code: "invalid_input", field: "columns" })
        const badConcept = yield* rawRequest(
          `/v2/datasets/${id}/column-metadata`,
          patch("acme-admin", { columns: [{ id: "amount", conceptType: "money" }] })
        )
        expect(badConcept.status).toBe(400)
        expect(badConcept.body.errors[0]).toMatchObject({ code: "invalid_input", field: "columns[0].conceptType" })
        const items = (yield* settings.getColumnMetadata({ path: { id } })).data.items
        expect(items.every((c) => c.conceptType === null && c.description === null)).toBe(true)
      }))
  })

  describe("time zone", () => {
    it.effect("sets the time zone and answers the dataset detail", () =>
      Effect.gen(function*() {
        const { id, settings } = yield* acmeDataset
        const answer = yield* settings.setTimezone({ path: { id }, payload: { timezone: "Europe/Ljubljana" } })
        expect(answer.status).toBe("success")
        expect(answer.data).toMatchObject({ id, timezone: "Europe/Ljubljana", name: "Orders" })
        expect(yield* failure(settings.setTimezone({ path: { id }, payload: { timezone: "Mars/Olympus_Mons" } })))
          .toEqual({ tag: "BadRequest", field: "timezone" })
      }))

    it.effect("purgeData removes the stored rows; without it they stay", () =>
      Effect.gen(function*() {
        const { admin, id, settings } = yield* acmeDataset
        const accepted = yield* admin.v2.v2Datasets.ingest({
          path: { id },
          payload: {
            records: [
              { day: "2026-01-05", amount: 10, region: "EU" },
              { day: "2026-01-05", amount: 20, region: "US" }
            ]
          },
          headers: {}
        })
        yield* pollUntil(
          admin.v2.v2Datasets.getIngestion({ path: { id, ingestionId: accepted.data.ingestionId } }),
          (i) => i.data.status !== "queued" && i.data.status !== "processing"
        )
        const kept = yield* settings.setTimezone({ path: { id }, payload: { timezone: "UTC", purgeData: false } })
        expect(kept.data.rowCount).toBe(2)
        const purged = yield* settings.setTimezone({ path: { id }, payload: { timezone: "Asia/Tokyo", purgeData: true } })
        expect(purged.data).toMatchObject({ timezone: "Asia/Tokyo", rowCount: 0 })
        expect((yield* admin.v2.v2Datasets.getData({ path: { id }, urlParams: {} })).data.items).toEqual([])
      }))
  })

  describe("permissions", () => {
    it.effect("private hides the dataset from an editor who did not make it; admins still see it", () =>
      Effect.gen(function*() {
        const { id, settings } = yield* acmeDataset
        const editor = yield* clientFor("acme-editor")
        expect((yield* settings.getPermissions({ path: { id } })).data).toEqual({ accessLevel: "everyone", accessList: null })
        expect((yield* editor.v2.v2DatasetSettings.getPermissions({ path: { id } })).data.accessLevel).toBe("everyone")

        const set = yield* settings.setPermissions({ path: { id }, payload: { accessLevel: "private" } })
        expect(set.data).toEqual({ accessLevel: "private", accessList: null })
        expect((yield* settings.getPermissions({ path: { id } })).data.accessLevel).toBe("private")
        expect((yield* failure(editor.v2.v2DatasetSettings.getPermissions({ path: { id } }))).tag).toBe("NotFound")
        expect((yield* failure(editor.v2.v2Datasets.get({ path: { id } }))).tag).toBe("NotFound")
        expect((yield* failure(editor.v2.v2DatasetSettings.getMetadata({ path: { id } }))).tag).toBe("NotFound")
        expect((yield* failure(editor.v2.v2DatasetSettings.setVerification({ path: { id }, payload: { isVerified: true } }))).tag)
          .toBe("NotFound")

        yield* settings.setPermissions({ path: { id }, payload: { accessLevel: "everyone" } })
        expect((yield* editor.v2.v2DatasetSettings.getMetadata({ path: { id } })).status).toBe("success")
      }))

    it.effect("rejects a bad access list (400 on the field)", () =>
      Effect.gen(function*() {
        const { id, settings } = yield* acmeDataset
        expect(yield* failure(settings.setPermissions({ path: { id }, payload: { accessLevel: "selectedUsers" } })))
          .toEqual({ tag: "BadRequest", field: "accessList" })
        expect(
          yield* failure(settings.setPermissions({ path: { id }, payload: { accessLevel: "selectedUsers", accessList: [{ id: 999999 }] } }))
        ).toEqual({ tag: "BadRequest", field: "accessList[0].id" })
        expect(
          yield* failure(settings.setPermissions({ path: { id }, payload: { accessLevel: "private", accessList: [{ id: 1 }] } }))
        ).toEqual({ tag: "BadRequest", field: "accessList" })
        expect((yield* settings.getPermissions({ path: { id } })).data.accessLevel).toBe("everyone")
      }))
  })

  describe("verification", () => {
    it.effect("verifying records when and by whom; unverifying clears both", () =>
      Effect.gen(function*() {
        const { admin, id, settings } = yield* acmeDataset
        expect((yield* settings.getVerification({ path: { id } })).data).toEqual({
          isVerified: false,
          verifiedAt: null,
          verifiedBy: null
        })
        const editor = yield* clientFor("acme-editor")
        const verified = yield* editor.v2.v2DatasetSettings.setVerification({ path: { id }, payload: { isVerified: true } })
        expect(verified.data.isVerified).toBe(true)
        expect(verified.data.verifiedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
        expect(verified.data.verifiedBy).toMatchObject({ name: "Eve" })
        expect((yield* settings.getVerification({ path: { id } })).data).toEqual(verified.data)
        expect((yield* admin.v2.v2Datasets.get({ path: { id } })).data.verificationInfo).toEqual(verified.data)

        const unverified = yield* settings.setVerification({ path: { id }, payload: { isVerified: false } })
        expect(unverified.data).toEqual({ isVerified: false, verifiedAt: null, verifiedBy: null })
        expect((yield* settings.getVerification({ path: { id } })).data).toEqual(unverified.data)
      }))
  })

  describe("sync frequency", () => {
    it.effect("sets an accepted interval, answers the detail and marks it among the options", () =>
      Effect.gen(function*() {
        const { id, settings } = yield* acmeDataset
        const before = yield* settings.syncFrequencyOptions({ path: { id } })
        expect(before.data.items.map((o) => o.syncInterval)).toEqual([1, 15, 60, 240, 360, 480, 1440])
        expect(before.data.items.find((o) => o.isSelected)?.syncInterval).toBe(1440)

        const set = yield* settings.setSyncFrequency({ path: { id }, payload: { syncInterval: 60 } })
        expect(set.data).toMatchObject({ id, syncInterval: 60 })
        const after = yield* settings.syncFrequencyOptions({ path: { id } })
        expect(after.data.items.filter((o) => o.isSelected).map((o) => o.syncInterval)).toEqual([60])

        expect(yield* failure(settings.setSyncFrequency({ path: { id }, payload: { syncInterval: 7 } })))
          .toEqual({ tag: "BadRequest", field: "syncInterval" })
      }))
  })

  describe("sync history and lineage", () => {
    it.effect("API datasets have an empty sync history and empty statistics", () =>
      Effect.gen(function*() {
        const { id, settings } = yield* acmeDataset
        const history = yield* settings.syncHistory({ path: { id }, urlParams: {} })
        expect(history.data).toEqual({ items: [], pagination: { page: 0, pageSize: 25, totalItems: 0 } })
        const paged = yield* settings.syncHistory({ path: { id }, urlParams: { page: 2, pageSize: 500 } })
        expect(paged.data.pagination).toEqual({ page: 2, pageSize: 100, totalItems: 0 })
        const statistics = yield* settings.syncStatistics({ path: { id } })
        expect(statistics.data).toEqual({
          avgSuccessDuration: null,
          dailyStatistics: [],
          lastSuccessfulUpdateAt: null,
          successRate: null
        })
      }))

    it.effect("lineage lists the data source as the parent", () =>
      Effect.gen(function*() {
        const { dataSource, id, settings } = yield* acmeDataset
        const lineage = yield* settings.getLineage({ path: { id } })
        expect(lineage.data).toEqual({
          id,
          parents: [{ id: String(dataSource.id), name: "Shop", type: "dataSource" }],
          children: []
        })
      }))
  })

  describe("visibility and roles", () => {
    type Client = Effect.Effect.Success<ReturnType<typeof clientFor>>
    type Call = Effect.Effect<unknown, { readonly _tag: string }>

    const reads = (client: Client, id: string | number): ReadonlyArray<Call> => {
      const s = client.v2.v2DatasetSettings
      return [
        s.getMetadata({ path: { id } }),
        s.getColumnMetadata({ path: { id } }),
        s.getPermissions({ path: { id } }),
        s.getVerification({ path: { id } }),
        s.syncFrequencyOptions({ path: { id } }),
        s.syncHistory({ path: { id }, urlParams: {} }),
        s.syncStatistics({ path: { id } }),
        s.getLineage({ path: { id } })
      ]
    }

    const writes = (client: Client, id: string | number): ReadonlyArray<Call> => {
      const s = client.v2.v2DatasetSettings
      return [
        s.updateMetadata({ path: { id }, payload: { description: "x" } }),
        s.updateColumnMetadata({ path: { id }, payload: { columns: [{ id: "amount", description: "x" }] } }),
        s.setTimezone({ path: { id }, payload: { timezone: "UTC" } }),
        s.setPermissions({ path: { id }, payload: { accessLevel: "everyone" } }),
        s.setVerification({ path: { id }, payload: { isVerified: true } }),
        s.setSyncFrequency({ path: { id }, payload: { syncInterval: 60 } })
      ]
    }

    it.effect("every endpoint answers 404 for an unknown id and for another organization's dataset", () =>
      Effect.gen(function*() {
        const { admin, id } = yield* acmeDataset
        const globex = yield* clientFor("globex-admin")
        for (const call of [...reads(admin, unknownId), ...writes(admin, unknownId)]) {
          expect((yield* failure(call)).tag).toBe("NotFound")
        }
        for (const call of [...reads(globex, id), ...writes(globex, id)]) {
          expect((yield* failure(call)).tag).toBe("NotFound")
        }
        // A path id that is not a UUID names no dataset either.
        const notUuid = yield* rawRequest("/v2/datasets/42/metadata", { headers: { "x-api-key": "acme-admin" } })
        expect(notUuid.status).toBe(404)
      }))

    it.effect("a viewer reads every setting but each write is 403, before the body is checked", () =>
      Effect.gen(function*() {
        const { id } = yield* acmeDataset
        const viewer = yield* clientFor("acme-viewer")
        const s = viewer.v2.v2DatasetSettings
        for (const read of reads(viewer, id)) {
          expect((yield* Effect.either(read))._tag).toBe("Right")
        }
        for (const write of writes(viewer, id)) {
          expect((yield* failure(write)).tag).toBe("Forbidden")
        }
        expect((yield* failure(s.setTimezone({ path: { id }, payload: { timezone: "Nowhere/Else" } }))).tag).toBe("Forbidden")
        expect((yield* failure(s.updateMetadata({ path: { id }, payload: { defaultTimeDimension: "amount" } }))).tag)
          .toBe("Forbidden")
        expect((yield* failure(s.updateColumnMetadata({ path: { id }, payload: { columns: [{ id: "nope" }] } }))).tag)
          .toBe("Forbidden")
        expect((yield* failure(s.setSyncFrequency({ path: { id }, payload: { syncInterval: 7 } }))).tag).toBe("Forbidden")
        // Nothing changed.
        const admin = yield* clientFor("acme-admin")
        expect((yield* admin.v2.v2DatasetSettings.getMetadata({ path: { id } })).data.description).toBeNull()
        expect((yield* admin.v2.v2DatasetSettings.getVerification({ path: { id } })).data.isVerified).toBe(false)
      }))
  })
})
