/**
 * The store conformance suite: one set of behaviours, run against the memory store and the
 * Postgres store (a real database, a fresh schema per test).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, TestClock } from "effect"
import type { Row } from "../../src/records.js"
import { decideGroup } from "../../src/server/core/ingestion.js"
import {
  defaultPermissions,
  emptyMetadata,
  type ClaimedIngestion,
  type NewDataset,
  unverified,
  type Viewer
} from "../../src/server/core/store/Store.js"
import { allStores, type StoreService } from "../../src/server/core/store/Stores.js"
import { CatalogStore } from "../../src/server/core/store/ports/catalog.js"
import { IngestionStore } from "../../src/server/core/store/ports/ingestions.js"
import { allServerStores, type ServerStores } from "../../src/server/features/stores.js"
import { adminQuery, freshSchema, sqlStoreLayer, type StoreKind, storeLayer } from "../support/stores.js"

/** An organization with an admin, an editor and a viewer, and one data source by the editor. */
const world = Effect.gen(function*() {
  const store = yield* allStores
  const org = yield* store.ensureOrganization("Acme")
  const account = yield* store.ensureAccount(org.id, { name: "Acme", accountType: "organization" })
  const admin = yield* store.ensureUser(org.id, { name: "Ada", email: "ada@acme.test", role: "admin" })
  const editor = yield* store.ensureUser(org.id, { name: "Eve", email: "eve@acme.test", role: "editor" })
  const viewer = yield* store.ensureUser(org.id, { name: "Vic", email: "vic@acme.test", role: "viewer" })
  const as = (user: { id: number; role: Viewer["role"] }): Viewer => ({ userId: user.id, organizationId: org.id, role: user.role })
  const dataSource = yield* store.createDataSource({
    organizationId: org.id,
    accountId: account.id,
    name: "Shop",
    timezone: "UTC",
    key: "ingestion",
    createdBy: { id: editor.id, name: editor.name },
    syncInterval: null,
    permissions: defaultPermissions
  })
  return { store, org, account, admin: as(admin), editor: as(editor), viewer: as(viewer), dataSource }
})

const newDataset = (
  organizationId: number,
  dataSourceId: number,
  name: string,
  primaryKey: ReadonlyArray<string> = ["id"]
): NewDataset => ({
  organizationId,
  dataSourceId,
  name,
  primaryKey,
  schema: [],
  createdBy: { id: 1, name: "Ada" },
  timezone: "UTC",
  syncInterval: null,
  permissions: defaultPermissions,
  verification: unverified,
  metadata: emptyMetadata,
  columnMetadata: {}
})

/** One claim at a time, as the tests below take them. */
const claimOne = (store: StoreService, owner: string, leaseMillis: number) =>
  Effect.map(store.claimIngestions(owner, leaseMillis, 1), (claims) => Option.fromNullable(claims[0]))

/** Completes claims of one dataset with the server's own decisions, against the dataset as it is now; the ids ended. */
const complete = (store: StoreService, claims: ReadonlyArray<ClaimedIngestion>) =>
  Effect.flatMap(store.dataset(claims[0]!.ingestion.datasetId), (dataset) =>
    store.completeIngestions(decideGroup(Option.getOrThrow(dataset), claims)))

/** Completes one claim with the server's own decision; whether it ended. */
const completeOne = (store: StoreService, claim: ClaimedIngestion) =>
  Effect.map(complete(store, [claim]), (ids) => ids.length === 1)

/** Accepts `records`, claims the ingestion and completes it with the pipeline's decision. */
const ingestNow = (store: StoreService, datasetId: string, records: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const ingestion = yield* store.createIngestion({ datasetId, initiatedBy: { id: 1, name: "Ada" } }, records)
    const claim = Option.getOrThrow(yield* claimOne(store, "worker-a", 30_000))
    expect(claim.ingestion.id).toBe(ingestion.id)
    expect(yield* completeOne(store, claim)).toBe(true)
    return Option.getOrThrow(yield* store.ingestion(ingestion.id))
  })

const all = { offset: 0, limit: 1000 }

const conformance = (kind: StoreKind) =>
  describe(`store conformance: ${kind}`, () => {
    const run = <A, E>(body: Effect.Effect<A, E, ServerStores>) => Effect.provide(body, storeLayer(kind))

    it.effect("seeding is idempotent: the same ids, and keys resolve to principals with their default account", () =>
      run(Effect.gen(function*() {
        const store = yield* CatalogStore
        const first = yield* store.ensureOrganization("Acme")
        const again = yield* store.ensureOrganization("Acme")
        expect(again.id).toBe(first.id)
        const account = yield* store.ensureAccount(first.id, { name: "Acme", accountType: "organization" })
        yield* store.ensureAccount(first.id, { name: "Client", accountType: "client" })
        expect((yield* store.ensureAccount(first.id, { name: "Acme", accountType: "organization" })).id).toBe(account.id)
        const user = yield* store.ensureUser(first.id, { name: "Ada", email: "ada@acme.test", role: "admin" })
        expect((yield* store.ensureUser(first.id, { name: "Ada", email: "ada@acme.test", role: "admin" })).id).toBe(user.id)
        yield* store.ensureApiKey("key-1", user.id)
        yield* store.ensureApiKey("key-1", user.id)
        const principal = Option.getOrThrow(yield* store.principalByKey("key-1"))
        expect(principal).toEqual({
          userId: user.id,
          userName: "Ada",
          organizationId: first.id,
          role: "admin",
          defaultAccountId: account.id
        })
        expect(Option.isNone(yield* store.principalByKey("nope"))).toBe(true)
        expect((yield* store.accounts(first.id)).map((a) => a.name)).toEqual(["Acme", "Client"])
        expect((yield* store.users(first.id)).length).toBe(1)
      })))

    it.effect("the seed finds its organization by the name it gave it, after a user renamed it", () =>
      run(Effect.gen(function*() {
        const store = yield* allStores
        const first = yield* store.ensureOrganization("Acme")
        yield* store.updateOrganization(first.id, { name: "Acme Renamed" })
        // A restart seeds again: the same organization, its new name kept.
        const again = yield* store.ensureOrganization("Acme")
        expect(again).toMatchObject({ id: first.id, name: "Acme Renamed" })
        // Another organization may take the old name; the seed's stays apart from it.
        yield* store.updateOrganization((yield* store.ensureOrganization("Globex")).id, { name: "Acme" })
        expect((yield* store.ensureOrganization("Acme")).id).toBe(first.id)
      })))

    it.effect("lists filter by visibility and search before they sort and page, and count what matches", () =>
      run(Effect.gen(function*() {
        const { account, admin, dataSource, editor, org, store, viewer } = yield* world
        const make = (name: string, accessLevel: "everyone" | "private" | "selectedUsers") =>
          store.createDataSource({
            organizationId: org.id,
            accountId: account.id,
            name,
            timezone: "UTC",
            key: "ingestion",
            createdBy: { id: editor.userId, name: "Eve" },
            syncInterval: null,
            permissions: {
              accessLevel,
              accessList: accessLevel === "selectedUsers" ? [{ id: viewer.userId, name: "Vic" }] : null
            }
          })
        yield* make("alpha", "everyone")
        yield* make("Beta", "private")
        yield* make("gamma", "selectedUsers")
        yield* make("Älpha two", "everyone")
        const names = (viewerOf: Viewer, extra: object = {}) =>
          Effect.map(
            store.listDataSources({ viewer: viewerOf, ...all, sort: { by: "name", order: "asc" }, ...extra }),
            (page) => ({ names: page.items.map((d) => d.name), total: page.totalItems })
          )
        expect(yield* names(viewer)).toEqual({ names: ["alpha", "Älpha two", "gamma", "Shop"], total: 4 })
        expect(yield* names(admin)).toEqual({ names: ["alpha", "Älpha two", "Beta", "gamma", "Shop"], total: 5 })
        // The creator sees their private data source.
        expect((yield* names(editor)).total).toBe(5)
        expect(yield* names(viewer, { search: "ALP" })).toEqual({ names: ["alpha"], total: 1 })
        expect(yield* names(admin, { offset: 2, limit: 2 })).toEqual({ names: ["Beta", "gamma"], total: 5 })
        expect(yield* names(admin, { offset: 10, limit: 2 })).toEqual({ names: [], total: 5 })
        const desc = yield* store.listDataSources({ viewer: admin, ...all, sort: { by: "name", order: "desc" } })
        expect(desc.items.map((d) => d.name)).toEqual(["Shop", "gamma", "Beta", "Älpha two", "alpha"])
        // Another organization sees none of them.
        const other = yield* store.ensureOrganization("Globex")
        expect((yield* store.listDataSources({ viewer: { userId: 99, organizationId: other.id, role: "admin" }, ...all })).totalItems)
          .toBe(0)
        expect(Option.isSome(yield* store.dataSource(dataSource.id))).toBe(true)
      })))

    it.effect("datasets sort by their last activity (never-ingested ones last) and carry their latest ingestion", () =>
      run(Effect.gen(function*() {
        const { admin, dataSource, org, store } = yield* world
        const a = yield* store.createDataset(newDataset(org.id, dataSource.id, "a"))
        const b = yield* store.createDataset(newDataset(org.id, dataSource.id, "b"))
        const c = yield* store.createDataset(newDataset(org.id, dataSource.id, "c"))
        yield* ingestNow(store, b.id, [{ id: 1 }])
        yield* TestClock.adjust("1 second")
        yield* ingestNow(store, a.id, [{ id: 1 }])
        const byActivity = yield* store.listDatasets({ viewer: admin, ...all, sort: { by: "lastActivityAt", order: "desc" } })
        expect(byActivity.items.map((d) => d.name)).toEqual(["a", "b", "c"])
        const ascending = yield* store.listDatasets({ viewer: admin, ...all, sort: { by: "lastActivityAt", order: "asc" } })
        expect(ascending.items.map((d) => d.name)).toEqual(["b", "a", "c"])
        const inOrder = yield* store.listDatasets({ viewer: admin, dataSourceId: dataSource.id, ...all })
        expect(inOrder.items.map((d) => d.name)).toEqual(["a", "b", "c"])
        const detail = Option.getOrThrow(yield* store.dataset(a.id))
        expect(detail.activity).toMatchObject({ lastStatus: "success", lastSuccessAt: detail.activity!.lastIngestionAt })
        expect(Option.getOrThrow(yield* store.dataset(c.id)).activity).toBeNull()
        const source = Option.getOrThrow(yield* store.dataSource(dataSource.id))
        expect(source.lastActivityAt).toBe(detail.activity!.lastIngestionAt)
      })))

    it.effect("a dataset's activity: the latest ingestion's status, and its newest success", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const dataset = yield* store.createDataset(newDataset(org.id, dataSource.id, "orders"))
        const accept = (id: number) => store.createIngestion({ datasetId: dataset.id, initiatedBy: { id: 1, name: "Ada" } }, [{ id }])
        const older = yield* accept(1)
        yield* TestClock.adjust("1 second")
        const newer = yield* accept(2)
        const [first, second] = yield* store.claimIngestions("a", 30_000, 2)
        expect([first!.ingestion.id, second!.ingestion.id]).toEqual([older.id, newer.id])
        yield* completeOne(store, first!)
        expect(Option.getOrThrow(yield* store.dataset(dataset.id)).activity).toEqual({
          lastIngestionId: newer.id,
          lastIngestionAt: newer.initiatedAt,
          lastStatus: "processing",
          lastSuccessAt: older.initiatedAt
        })
        yield* completeOne(store, second!)
        expect(Option.getOrThrow(yield* store.dataset(dataset.id)).activity).toMatchObject({
          lastStatus: "success",
          lastSuccessAt: newer.initiatedAt
        })
      })))

    it.effect("rows: primary-key upserts count appended and overwritten (repeats within a batch too) and keep the size", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const dataset = yield* store.createDataset(newDataset(org.id, dataSource.id, "orders"))
        const first = yield* ingestNow(store, dataset.id, [{ id: "a", n: 1 }, { id: "b", n: 2 }, { id: "a", n: 3 }, { n: 4, zz: 1, a: 2 }])
        expect(first.status).toBe("success")
        expect(first.counts).toEqual({ received: 4, appended: 2, overwritten: 1, rejected: 1 })
        expect(first.problems.map((p) => p.code)).toEqual(["missing_primary_key"])
        // Echoed as sent, key order included: clients match it back to their own records by its text.
        expect(JSON.stringify(first.problems[0]!.record)).toBe("{\"n\":4,\"zz\":1,\"a\":2}")
        const second = yield* ingestNow(store, dataset.id, [{ id: "b", n: 20 }, { id: "c", n: 30 }])
        expect(second.counts).toEqual({ received: 2, appended: 1, overwritten: 1, rejected: 0 })
        const rows = yield* store.rows(dataset.id, all)
        expect(rows.items).toEqual([{ id: "a", n: 3 }, { id: "b", n: 20 }, { id: "c", n: 30 }])
        expect(rows.totalItems).toBe(3)
        const stored = Option.getOrThrow(yield* store.dataset(dataset.id))
        const bytes = rows.items.reduce((sum, row) => sum + Buffer.byteLength(JSON.stringify(row)), 0)
        expect({ rowCount: stored.rowCount, size: stored.size }).toEqual({ rowCount: 3, size: bytes })
        expect(second.datasetStats).toEqual({ columnCount: 2, rowCount: 3, size: bytes })
        expect(stored.schema).toEqual([{ id: "id", dataType: "string" }, { id: "n", dataType: "number" }])
      })))

    it.effect("rows page and sort by a column: numbers by value, text case-insensitively, missing values last", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const dataset = yield* store.createDataset(newDataset(org.id, dataSource.id, "events", []))
        const records: Array<Row> = [
          { name: "b", n: 10 },
          { name: "A", n: 2 },
          { name: null, n: null },
          { name: "c", n: -1 },
          { name: "a", n: 2.5 }
        ]
        yield* ingestNow(store, dataset.id, records)
        const schema = Option.getOrThrow(yield* store.dataset(dataset.id)).schema
        const column = (id: string) => schema.find((c) => c.id === id)!
        const sorted = (id: string, order: "asc" | "desc", slice = all) =>
          Effect.map(store.rows(dataset.id, { ...slice, sort: { column: column(id), order } }), (page) => page.items.map((r) => r[id]))
        expect(yield* sorted("n", "asc")).toEqual([-1, 2, 2.5, 10, null])
        expect(yield* sorted("n", "desc")).toEqual([10, 2.5, 2, -1, null])
        expect(yield* sorted("name", "asc")).toEqual(["A", "a", "b", "c", null])
        expect(yield* sorted("name", "desc")).toEqual(["c", "b", "A", "a", null])
        expect(yield* sorted("n", "asc", { offset: 1, limit: 2 })).toEqual([2, 2.5])
        // Storage order: as appended.
        expect((yield* store.rows(dataset.id, { offset: 3, limit: 10 })).items).toEqual(records.slice(3))
      })))

    it.effect("a claim is exclusive until its lease runs out; a lost lease completes nothing", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const dataset = yield* store.createDataset(newDataset(org.id, dataSource.id, "orders"))
        const accepted = yield* store.createIngestion({ datasetId: dataset.id, initiatedBy: { id: 1, name: "Ada" } }, [{ id: 1 }])
        expect(accepted.status).toBe("queued")
        const first = Option.getOrThrow(yield* claimOne(store, "a", 1_000))
        expect(first.records).toEqual([{ id: 1 }])
        expect(Option.getOrThrow(yield* store.ingestion(accepted.id)).status).toBe("processing")
        expect(Option.isNone(yield* claimOne(store, "b", 1_000))).toBe(true)
        yield* TestClock.adjust("2 seconds")
        const second = Option.getOrThrow(yield* claimOne(store, "b", 1_000))
        expect(second.ingestion.id).toBe(accepted.id)
        // "a" lost its lease: its completion writes nothing.
        expect(yield* completeOne(store, first)).toBe(false)
        expect(yield* store.failIngestion(first, "late")).toBe(false)
        expect(Option.getOrThrow(yield* store.dataset(dataset.id)).rowCount).toBe(0)
        expect(yield* completeOne(store, second)).toBe(true)
        const done = Option.getOrThrow(yield* store.ingestion(accepted.id))
        expect(done.status).toBe("success")
        expect(done.duration).toBe(2_000)
        // Completed once: no second completion, nothing left to claim.
        expect(yield* completeOne(store, second)).toBe(false)
        expect(Option.isNone(yield* claimOne(store, "c", 1_000))).toBe(true)
        expect(Option.getOrThrow(yield* store.dataset(dataset.id)).rowCount).toBe(1)
      })))

    it.effect("a batch: claims take the oldest ingestion's dataset only, and complete in order with their own counts", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const a = yield* store.createDataset(newDataset(org.id, dataSource.id, "a"))
        const b = yield* store.createDataset(newDataset(org.id, dataSource.id, "b"))
        const accept = (datasetId: string, records: ReadonlyArray<unknown>) =>
          store.createIngestion({ datasetId, initiatedBy: { id: 1, name: "Ada" } }, records)
        const a1 = yield* accept(a.id, [{ id: "x", n: 1 }, { id: "y", n: 2 }])
        const b1 = yield* accept(b.id, [{ id: "x", n: 1 }])
        const a2 = yield* accept(a.id, [{ id: "y", n: 20 }, { id: "z", n: 3, extra: "new column" }, { n: 4 }])
        const claims = yield* store.claimIngestions("w", 30_000, 10)
        expect(claims.map((c) => c.ingestion.id)).toEqual([a1.id, a2.id])
        const group = decideGroup(a, claims)
        // The second decision saw the columns the first one added.
        expect(group.decided.map(({ decision }) => decision.newColumns.map((c) => c.id))).toEqual([["id", "n"], ["extra"]])
        expect(yield* store.completeIngestions(group)).toEqual([a1.id, a2.id])
        const first = Option.getOrThrow(yield* store.ingestion(a1.id))
        const second = Option.getOrThrow(yield* store.ingestion(a2.id))
        expect(first.counts).toEqual({ received: 2, appended: 2, overwritten: 0, rejected: 0 })
        expect(second.counts).toEqual({ received: 3, appended: 1, overwritten: 1, rejected: 1 })
        expect(first.datasetStats?.rowCount).toBe(2)
        expect(second.datasetStats).toMatchObject({ rowCount: 3, columnCount: 3 })
        expect((yield* store.rows(a.id, all)).items).toEqual([{ id: "x", n: 1 }, { id: "y", n: 20 }, { id: "z", n: 3, extra: "new column" }])
        const stored = Option.getOrThrow(yield* store.dataset(a.id))
        expect({ rowCount: stored.rowCount, size: stored.size }).toEqual({ rowCount: 3, size: second.datasetStats!.size })
        expect(Option.getOrThrow(yield* store.ingestion(b1.id)).status).toBe("queued")
        expect((yield* store.claimIngestions("w", 30_000, 10)).map((c) => c.ingestion.id)).toEqual([b1.id])
      })))

    it.effect("decisions made against a schema the dataset no longer has are not written: the claims go back to the queue", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const dataset = yield* store.createDataset(newDataset(org.id, dataSource.id, "orders"))
        const accept = (n: number) => store.createIngestion({ datasetId: dataset.id, initiatedBy: { id: 1, name: "Ada" } }, [{ id: "k", n }])
        const first = yield* accept(1)
        const second = yield* accept(2)
        const claims = yield* store.claimIngestions("a", 30_000, 10)
        expect(claims.map((c) => c.ingestion.id)).toEqual([first.id, second.id])
        const stale = { ...decideGroup(dataset, claims), schema: [{ id: "gone", dataType: "string" as const }] }
        expect(yield* store.completeIngestions(stale)).toEqual([])
        expect((yield* store.rows(dataset.id, all)).items).toEqual([])
        expect(Option.getOrThrow(yield* store.dataset(dataset.id)).schema).toEqual([])
        for (const id of [first.id, second.id]) expect(Option.getOrThrow(yield* store.ingestion(id)).status).toBe("queued")
        // Taken again and decided against the schema as it is, they are written.
        const again = yield* store.claimIngestions("b", 30_000, 10)
        expect(again.map((c) => c.ingestion.id)).toEqual([first.id, second.id])
        expect(yield* complete(store, again)).toEqual([first.id, second.id])
        expect((yield* store.rows(dataset.id, all)).items).toEqual([{ id: "k", n: 2 }])
      })))

    it.effect("a dataset's ingestions are taken in acceptance order: a later one waits while an earlier one is held", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const x = yield* store.createDataset(newDataset(org.id, dataSource.id, "x"))
        const y = yield* store.createDataset(newDataset(org.id, dataSource.id, "y"))
        const accept = (datasetId: string, records: ReadonlyArray<unknown>) =>
          store.createIngestion({ datasetId, initiatedBy: { id: 1, name: "Ada" } }, records)
        const x1 = yield* accept(x.id, [{ id: "k", n: 1 }])
        const x2 = yield* accept(x.id, [{ id: "k", n: 2 }])
        const y1 = yield* accept(y.id, [{ id: "k", n: 1 }])
        expect(Option.getOrThrow(yield* claimOne(store, "a", 30_000)).ingestion.id).toBe(x1.id)
        // x2 waits for x1 (held by "a"), whoever asks; another dataset goes on.
        expect(Option.getOrThrow(yield* claimOne(store, "b", 30_000)).ingestion.id).toBe(y1.id)
        expect(Option.isNone(yield* claimOne(store, "c", 30_000))).toBe(true)
        expect(Option.getOrThrow(yield* store.ingestion(x2.id)).status).toBe("queued")
      })))

    it.effect("a completion never applies an ingestion while one accepted before it is pending, and requeues it", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const dataset = yield* store.createDataset(newDataset(org.id, dataSource.id, "orders"))
        const accept = (n: number) => store.createIngestion({ datasetId: dataset.id, initiatedBy: { id: 1, name: "Ada" } }, [{ id: "k", n }])
        const first = yield* accept(1)
        const second = yield* accept(2)
        const [a1, a2] = yield* store.claimIngestions("a", 1_000, 2)
        // "a" is slow: its lease runs out, "b" takes the first one again (and only it).
        yield* TestClock.adjust("2 seconds")
        const [b1, more] = yield* store.claimIngestions("b", 30_000, 1)
        expect([b1?.ingestion.id, more]).toEqual([first.id, undefined])
        // "a" still holds the second, but the first is pending: nothing of it is written.
        expect(yield* completeOne(store, a2!)).toBe(false)
        expect(Option.getOrThrow(yield* store.ingestion(second.id)).status).toBe("queued")
        // Nor the whole batch: its first claim is lost, so the rest waits too.
        expect(yield* complete(store, [a1!, a2!])).toEqual([])
        expect((yield* store.rows(dataset.id, all)).items).toEqual([])
        expect(yield* completeOne(store, b1!)).toBe(true)
        const [b2] = yield* store.claimIngestions("b", 30_000, 10)
        expect(b2?.ingestion.id).toBe(second.id)
        expect(yield* completeOne(store, b2!)).toBe(true)
        expect((yield* store.rows(dataset.id, all)).items).toEqual([{ id: "k", n: 2 }])
      })))

    it.effect("a processing delay: not taken before it is due; later ones of its dataset wait for it, others do not", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const x = yield* store.createDataset(newDataset(org.id, dataSource.id, "x"))
        const y = yield* store.createDataset(newDataset(org.id, dataSource.id, "y"))
        const accept = (datasetId: string, n: number, processingDelayMillis?: number) =>
          store.createIngestion({ datasetId, initiatedBy: { id: 1, name: "Ada" }, processingDelayMillis }, [{ id: "k", n }])
        const slow = yield* accept(x.id, 1, 300)
        const quick = yield* accept(x.id, 2, 0)
        yield* TestClock.adjust("100 millis")
        const other = yield* accept(y.id, 1, 50)
        expect(Option.isNone(yield* claimOne(store, "a", 30_000))).toBe(true)
        yield* TestClock.adjust("50 millis")
        expect((yield* store.claimIngestions("a", 30_000, 10)).map((c) => c.ingestion.id)).toEqual([other.id])
        yield* TestClock.adjust("149 millis")
        expect(Option.isNone(yield* claimOne(store, "b", 30_000))).toBe(true)
        expect(Option.getOrThrow(yield* store.ingestion(quick.id)).status).toBe("queued")
        yield* TestClock.adjust("1 millis")
        const claims = yield* store.claimIngestions("b", 30_000, 10)
        expect(claims.map((c) => c.ingestion.id)).toEqual([slow.id, quick.id])
        expect(yield* complete(store, claims)).toEqual([slow.id, quick.id])
        expect((yield* store.rows(x.id, all)).items).toEqual([{ id: "k", n: 2 }])
        expect(Option.getOrThrow(yield* store.ingestion(slow.id)).duration).toBe(300)
      })))

    it.effect("claims go oldest first; a failed ingestion keeps its reason; purge ends queued ones as purged", () =>
      run(Effect.gen(function*() {
        const { admin, dataSource, org, store } = yield* world
        const dataset = yield* store.createDataset(newDataset(org.id, dataSource.id, "orders"))
        const ids: Array<string> = []
        for (let i = 0; i < 3; i++) {
          ids.push((yield* store.createIngestion({ datasetId: dataset.id, initiatedBy: { id: 1, name: "Ada" } }, [{ id: i }])).id)
        }
        const claim = Option.getOrThrow(yield* claimOne(store, "a", 30_000))
        expect(claim.ingestion.id).toBe(ids[0])
        expect(yield* store.failIngestion(claim, "boom")).toBe(true)
        expect(Option.getOrThrow(yield* store.ingestion(ids[0]!))).toMatchObject({ status: "failed", failure: "boom" })
        yield* store.purgeDataset(dataset.id)
        expect(Option.getOrThrow(yield* store.ingestion(ids[1]!)).status).toBe("purged")
        expect(Option.isNone(yield* claimOne(store, "a", 30_000))).toBe(true)
        const listed = yield* store.listIngestions(dataset.id, { offset: 0, limit: 2 })
        expect(listed.items.map((i) => i.id)).toEqual([ids[2], ids[1]])
        expect(listed.totalItems).toBe(3)
        expect((yield* store.finishedIngestions(dataset.id)).map((i) => i.status)).toEqual(["failed"])
        // Deleting the data source takes its datasets, rows and ingestions with it.
        yield* store.deleteDataSource(dataSource.id)
        expect(Option.isNone(yield* store.dataset(dataset.id))).toBe(true)
        expect(Option.isNone(yield* store.ingestion(ids[0]!))).toBe(true)
        expect((yield* store.listDatasets({ viewer: admin, ...all })).totalItems).toBe(0)
      })))

    it.effect("a dataset's ingestions are listed newest first, page by page, apart from another's made in between", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const a = yield* store.createDataset(newDataset(org.id, dataSource.id, "a"))
        const b = yield* store.createDataset(newDataset(org.id, dataSource.id, "b"))
        const made: Record<string, Array<string>> = { [a.id]: [], [b.id]: [] }
        for (let i = 0; i < 7; i++) {
          for (const dataset of i % 3 === 0 ? [a, b] : [a]) {
            made[dataset.id]!.push((yield* store.createIngestion({ datasetId: dataset.id, initiatedBy: { id: 1, name: "Ada" } }, [{ id: i }])).id)
          }
        }
        const newestFirst = [...made[a.id]!].reverse()
        const pages = []
        for (let offset = 0; offset < 9; offset += 3) pages.push(yield* store.listIngestions(a.id, { offset, limit: 3 }))
        expect(pages.map((page) => page.items.map((i) => i.id))).toEqual([newestFirst.slice(0, 3), newestFirst.slice(3, 6), newestFirst.slice(6)])
        expect(pages.map((page) => page.totalItems)).toEqual([7, 7, 7])
        expect((yield* store.listIngestions(b.id, { offset: 0, limit: 10 })).items.map((i) => i.id)).toEqual([...made[b.id]!].reverse())
        expect((yield* store.listIngestions(a.id, { offset: 20, limit: 3 })).items).toEqual([])
        // A dataset removed takes its ingestions out of the lists; the other's stay.
        yield* store.deleteDataset(b.id)
        expect(yield* store.listIngestions(b.id, { offset: 0, limit: 10 })).toEqual({ items: [], totalItems: 0 })
        expect((yield* store.listIngestions(a.id, { offset: 0, limit: 10 })).totalItems).toBe(7)
      })))

    it.effect("duplicate copies schema, settings and rows; updates change only what they name", () =>
      run(Effect.gen(function*() {
        const { dataSource, org, store } = yield* world
        const dataset = yield* store.createDataset(newDataset(org.id, dataSource.id, "orders"))
        yield* ingestNow(store, dataset.id, [{ id: "a", n: 1 }, { id: "b", n: 2 }])
        const changed = Option.getOrThrow(yield* store.updateDataset(dataset.id, { name: "Orders", syncInterval: 60 }))
        expect(changed).toMatchObject({ name: "Orders", syncInterval: 60, timezone: "UTC", primaryKey: ["id"] })
        yield* store.updateDatasetsOfDataSource(dataSource.id, { timezone: "Europe/Ljubljana" })
        const copy = Option.getOrThrow(yield* store.duplicateDataset(dataset.id, "Copy", { id: 2, name: "Eve" }))
        expect(copy).toMatchObject({ name: "Copy", timezone: "Europe/Ljubljana", rowCount: 2, syncInterval: 60, activity: null })
        expect((yield* store.rows(copy.id, all)).items).toEqual([{ id: "a", n: 1 }, { id: "b", n: 2 }])
        yield* ingestNow(store, copy.id, [{ id: "a", n: 10 }, { id: "c", n: 3 }])
        expect((yield* store.rows(dataset.id, all)).items).toEqual([{ id: "a", n: 1 }, { id: "b", n: 2 }])
        expect(Option.getOrThrow(yield* store.dataset(copy.id)).rowCount).toBe(3)
        expect(Option.isNone(yield* store.updateDataset("00000000-0000-4000-8000-000000000000", { name: "x" }))).toBe(true)
        const source = Option.getOrThrow(yield* store.updateDataSource(dataSource.id, { syncInterval: 1440 }))
        expect(source).toMatchObject({ name: "Shop", syncInterval: 1440, timezone: "UTC" })
      })))

    it.effect("what a feature keeps goes with the core's: a dataset's metrics with it or its data source; a connection's data sources stay without it", () =>
      run(Effect.gen(function*() {
        const { dataSource, editor, org, store } = yield* world
        const features = yield* allServerStores
        const kept = yield* store.createDataset(newDataset(org.id, dataSource.id, "kept"))
        const dropped = yield* store.createDataset(newDataset(org.id, dataSource.id, "dropped"))
        const metricOf = (datasetId: string, dataSourceId: number) =>
          features.createMetric({
            organizationId: org.id,
            dataSourceId,
            datasetId,
            name: `sum of ${datasetId}`,
            measure: { id: "n", displayName: "n" },
            date: { id: "at", displayName: "at" },
            aggregationFunction: "sum",
            dimensions: [],
            filters: null,
            verification: unverified,
            createdBy: { id: 1, name: "Ada" }
          })
        const keptMetric = yield* metricOf(kept.id, dataSource.id)
        const droppedMetric = yield* metricOf(dropped.id, dataSource.id)
        yield* store.deleteDataset(dropped.id)
        expect(Option.isNone(yield* features.metric(droppedMetric.id))).toBe(true)
        expect(Option.isSome(yield* features.metric(keptMetric.id))).toBe(true)
        expect((yield* features.listMetrics({ viewer: editor, ...all })).items.map((m) => m.id)).toEqual([keptMetric.id])

        const connection = yield* features.ensureConnection({
          organizationId: org.id,
          name: "Analytics",
          integrationKey: "google_analytics4",
          managedBy: null,
          sharedWithAccounts: false,
          permissions: defaultPermissions,
          status: "active"
        })
        const synced = yield* store.createDataSource({
          organizationId: org.id,
          accountId: dataSource.accountId,
          name: "GA",
          timezone: "UTC",
          key: "google_analytics4",
          createdBy: { id: editor.userId, name: "Eve" },
          syncInterval: null,
          permissions: defaultPermissions,
          connectionId: connection.id
        })
        expect(Option.getOrThrow(yield* features.connection(connection.id)).dataSourcesCount).toBe(1)
        const syncedMetric = yield* metricOf((yield* store.createDataset(newDataset(org.id, synced.id, "visits"))).id, synced.id)
        yield* features.deleteConnection(connection.id)
        expect(Option.getOrThrow(yield* store.dataSource(synced.id)).connectionId).toBeNull()

        yield* store.deleteDataSource(synced.id)
        expect(Option.isNone(yield* features.metric(syncedMetric.id))).toBe(true)
        yield* store.deleteDataSource(dataSource.id)
        expect(Option.isNone(yield* features.metric(keptMetric.id))).toBe(true)
        expect((yield* features.listMetrics({ viewer: editor, ...all })).totalItems).toBe(0)
      })))

    it.effect("once: runs once, replays the answer, refuses another body, forgets a failure, and makes a concurrent twin wait", () =>
      run(Effect.gen(function*() {
        const store = yield* IngestionStore
        let runs = 0
        const request = (fingerprint: string) => ({ key: "k", scope: "1 POST /x k", fingerprint, windowMillis: 60_000 })
        const execute = Effect.sync(() => ({ run: ++runs }))
        expect(yield* store.once(request("f"), execute)).toEqual({ answer: { run: 1 }, replayed: false })
        expect(yield* store.once(request("f"), execute)).toEqual({ answer: { run: 1 }, replayed: true })
        const reused = yield* Effect.exit(store.once(request("g"), execute))
        expect(Exit.isFailure(reused) && JSON.stringify(reused.cause)).toContain("IdempotencyKeyReused")
        // After the window, the key is new again.
        yield* TestClock.adjust("61 seconds")
        expect(yield* store.once(request("g"), execute)).toEqual({ answer: { run: 2 }, replayed: false })
        // A failure keeps nothing.
        const other = { key: "f", scope: "1 POST /x f", fingerprint: "f", windowMillis: 60_000 }
        expect(Exit.isFailure(yield* Effect.exit(store.once(other, Effect.fail("nope"))))).toBe(true)
        expect((yield* store.once(other, execute)).replayed).toBe(false)
        // A twin arriving while the first runs waits for its answer.
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const twin = { key: "t", scope: "1 POST /x t", fingerprint: "t", windowMillis: 60_000 }
        const slow = Effect.zipRight(Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate)), execute)
        const firstFiber = yield* Effect.fork(store.once(twin, slow))
        yield* Deferred.await(started)
        const secondFiber = yield* Effect.fork(store.once(twin, execute))
        // Real time for the twin to reach its wait (the test clock does not move by itself).
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
        yield* Deferred.succeed(gate, undefined)
        const [first, second] = [yield* Fiber.join(firstFiber), yield* Fiber.join(secondFiber)]
        expect(first.replayed).toBe(false)
        expect(second).toEqual({ answer: first.answer, replayed: true })
        expect(runs).toBe(4)
      })))
  })

conformance("memory")
conformance("postgres")

describe("Postgres store: idempotency keys past their window", () => {
  it.effect("are swept at most once a minute, whatever their scope, and the keys in their window stay", () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      const rows = Effect.map(
        adminQuery(`SELECT scope FROM ${schema}.idempotency_keys ORDER BY scope`),
        (result) => result.rows.map((row: { scope: string }) => row.scope)
      )
      yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* IngestionStore
          const once = (key: string) =>
            store.once({ key, scope: `1 POST /x ${key}`, fingerprint: "f", windowMillis: 60_000 }, Effect.succeed({ key }))
          for (const key of ["a", "b", "c"]) yield* once(key)
          yield* TestClock.adjust("30 seconds")
          yield* once("d")
          yield* TestClock.adjust("31 seconds")
          // 61 s: a, b and c are past their window, d is not; the sweep is due (the last was at 0).
          yield* once("e")
          expect(yield* rows).toEqual(["1 POST /x d", "1 POST /x e"])
          yield* TestClock.adjust("40 seconds")
          // 101 s: d is past its window, but the last sweep was 40 s ago: it stays until the next.
          yield* once("f")
          expect(yield* rows).toEqual(["1 POST /x d", "1 POST /x e", "1 POST /x f"])
          yield* TestClock.adjust("20 seconds")
          // 121 s: the next sweep takes d; e was stored 60 s ago, still in its window.
          yield* once("g")
          expect(yield* rows).toEqual(["1 POST /x e", "1 POST /x f", "1 POST /x g"])
        }),
        sqlStoreLayer({ schema })
      )
    }))
})
