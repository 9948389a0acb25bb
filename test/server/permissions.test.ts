/**
 * The permission matrix: every route of the contract (v1 and v2) against every kind of
 * caller, from one table. A cell makes its own resources through the API (a data source, a
 * dataset in it, an ingestion of it), sends the route one valid request as that caller and
 * checks the status; a list must show the resources the caller may see and hide the others;
 * a refused mutation must leave everything as it was.
 *
 * The rules the table spells out: no key or an unknown key is 401 everywhere; a viewer reads
 * and gets 403 on every mutation; editors and admins do everything to what they can see;
 * another organization's ids are 404 and its resources never appear in a list; a private
 * resource is 404 and unlisted for an editor or viewer who did not create it (v1 lists
 * included), while admins and its creator see it.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Seed } from "../../src/server/seed.js"
import {
  type Answer,
  call,
  expectWellFormed,
  type Fixture,
  makeFixture,
  pathTo,
  type Route,
  routes,
  settleAt
} from "../support/routes.js"
import { ServerUrl, serverLayer, testSeed } from "../support/server.js"

/** The test seed with a second Acme editor, who creates the private resources. */
const seed: Seed = {
  organizations: testSeed.organizations.map((organization) =>
    organization.name === "Acme"
      ? {
        ...organization,
        users: [...organization.users, { name: "Pat", email: "pat@acme.test", role: "editor", apiKeys: ["acme-editor-2"] }]
      }
      : organization
  ) as unknown as Seed["organizations"]
}

/** Who calls, and whose resources the call names. */
interface Principal {
  /** `undefined`: no `x-api-key` header. */
  readonly key: string | undefined
  /** The resources are made private by their creator (Pat, an Acme editor) before the call. */
  readonly private: boolean
}

const principals = {
  "no key": { key: undefined, private: false },
  "wrong key": { key: "not-a-key", private: false },
  viewer: { key: "acme-viewer", private: false },
  editor: { key: "acme-editor", private: false },
  admin: { key: "acme-admin", private: false },
  "other organization": { key: "globex-admin", private: false },
  "private, editor (not creator)": { key: "acme-editor", private: true },
  "private, viewer": { key: "acme-viewer", private: true },
  "private, admin": { key: "acme-admin", private: true },
  "private, creator": { key: "acme-editor-2", private: true }
} satisfies Record<string, Principal>

type Column = keyof typeof principals

/** A status, or 200 with the cell's resource in the list (`listed`) or not in it (`hidden`). */
type Expected = 200 | 401 | 403 | 404 | "listed" | "hidden"

type Expectations = { readonly [C in Column]: Expected }

const unauthenticated = { "no key": 401, "wrong key": 401 } as const

/** A single resource read. */
const read: Expectations = {
  ...unauthenticated,
  viewer: 200,
  editor: 200,
  admin: 200,
  "other organization": 404,
  "private, editor (not creator)": 404,
  "private, viewer": 404,
  "private, admin": 200,
  "private, creator": 200
}

/** A mutation of a resource (or in one: a dataset created in a data source). */
const write: Expectations = { ...read, viewer: 403 }

/** A list of the organization's resources. */
const list: Expectations = {
  ...unauthenticated,
  viewer: "listed",
  editor: "listed",
  admin: "listed",
  "other organization": "hidden",
  "private, editor (not creator)": "hidden",
  "private, viewer": "hidden",
  "private, admin": "listed",
  "private, creator": "listed"
}

/** A route that names no resource (key checks, time zones): any valid key may call it. */
const open: Expectations = {
  ...unauthenticated,
  viewer: 200,
  editor: 200,
  admin: 200,
  "other organization": 200,
  "private, editor (not creator)": 200,
  "private, viewer": 200,
  "private, admin": 200,
  "private, creator": 200
}

/** A data source created in the account the request names: accounts are never private. */
const createInAccount: Expectations = {
  ...unauthenticated,
  viewer: 403,
  editor: 200,
  admin: 200,
  "other organization": 404,
  "private, editor (not creator)": 200,
  "private, viewer": 403,
  "private, admin": 200,
  "private, creator": 200
}

/** The organization's boards: listed for all of it, hidden from others. */
const boardList: Expectations = { ...list, "private, editor (not creator)": "listed", "private, viewer": "listed" }
const boardRead: Expectations = { ...read, "private, editor (not creator)": 200, "private, viewer": 200 }
const connectionWrite: Expectations = { ...boardRead, viewer: 403, "private, viewer": 403 }
/** Organization administration: each organization's admins, for their own organization. */
const adminOnly: Expectations = {
  ...unauthenticated,
  viewer: 403,
  editor: 403,
  admin: 200,
  "other organization": 200,
  "private, editor (not creator)": 403,
  "private, viewer": 403,
  "private, admin": 200,
  "private, creator": 403
}

/** An account or user of Acme: any Acme key reads it (accounts and users are never private). */
const member: Expectations = { ...open, "other organization": 404 }

/** A change of an Acme account or user: Acme's admins only. */
const memberAdmin: Expectations = { ...adminOnly, "other organization": 404 }

/** Where a list answer keeps its ids, and which of the cell's resources it should (not) hold. */
interface Listing {
  readonly ids: (json: any) => ReadonlyArray<unknown>
  readonly resource: keyof Fixture
}

interface Row {
  readonly expect: Expectations
  /** The request body (JSON), if the route takes one. */
  readonly body?: (fixture: CellFixture) => unknown
  readonly query?: (fixture: CellFixture) => string
  readonly headers?: (fixture: CellFixture) => Record<string, string>
  readonly listing?: Listing
}

interface CellFixture extends Fixture {
  /** Unique in the server: lists are searched for it. */
  readonly name: string
}

const v2Items = (json: any) => json.data.items.map((item: any) => item.id)
const searched = (f: CellFixture) => `?search=${encodeURIComponent(f.name)}&pageSize=100`

/** THE table: every route of the contract, by name, with what each caller gets. */
const table: Readonly<Record<string, Row>> = {
  "v1Auth.validateKey": { expect: open },
  "v1Accounts.listAccounts": {
    // Accounts are not private: Acme's callers all see Acme's account.
    expect: { ...list, "private, editor (not creator)": "listed", "private, viewer": "listed" },
    listing: { ids: (json) => json.accounts.map((a: any) => a.id), resource: "accountId" }
  },
  "v1Accounts.listTimezones": { expect: open },
  "v1Accounts.listDataSources": {
    expect: { ...list, "other organization": 404 },
    listing: { ids: (json) => json.dataSources.map((d: any) => d.id), resource: "dataSourceId" }
  },
  "v1Accounts.listDatasets": {
    // The list names its account: 404 for another organization's; private datasets only for who may see them.
    expect: { ...list, "other organization": 404 },
    listing: { ids: (json) => json.datasets.map((d: any) => d.id), resource: "datasetId" }
  },
  "v1DataSources.createDataSource": {
    expect: createInAccount,
    body: (f) => ({ title: `${f.name} v1`, accountId: f.accountId })
  },
  "v1DataSources.deleteDataSource": { expect: write },
  "v1DataSources.listDatasets": {
    // The list names its data source: 404 where the data source is not visible.
    expect: { ...list, "other organization": 404, "private, editor (not creator)": 404, "private, viewer": 404 },
    listing: { ids: (json) => json.datasets.map((d: any) => d.id), resource: "datasetId" }
  },
  "v1Datasets.createDataset": { expect: write, body: (f) => ({ title: `${f.name} v1`, dataSourceId: f.dataSourceId }) },
  "v1Datasets.getDataset": { expect: read },
  "v1Datasets.deleteDataset": { expect: write },
  "v1Datasets.purgeDataset": { expect: write },
  "v1Datasets.ingest": { expect: write, body: () => ({ records: [{ id: 3, name: "three" }] }) },
  "v1Datasets.listIngestions": { expect: read },
  "v1Datasets.getIngestion": { expect: read },
  "v2Auth.validateKey": { expect: open },
  "v2Organization.listTimezones": { expect: open },
  "v2DataSources.list": { expect: list, query: searched, listing: { ids: v2Items, resource: "dataSourceId" } },
  "v2DataSources.create": {
    expect: createInAccount,
    body: (f) => ({ name: `${f.name} v2` }),
    headers: (f) => ({ "x-account-id": String(f.accountId) })
  },
  "v2DataSources.get": { expect: read },
  "v2DataSources.update": { expect: write, body: (f) => ({ name: `${f.name} renamed` }) },
  "v2DataSources.delete": { expect: write },
  "v2DataSources.purge": { expect: write },
  "v2DataSources.setTimezone": { expect: write, body: () => ({ timezone: "Europe/Berlin" }) },
  "v2DataSources.getPermissions": { expect: read },
  "v2DataSources.setPermissions": { expect: write, body: () => ({ accessLevel: "everyone" }) },
  "v2DataSources.setSyncFrequency": { expect: write, body: () => ({ syncInterval: 60 }) },
  "v2DataSources.syncFrequencyOptions": { expect: read },
  "v2Datasets.list": { expect: list, query: searched, listing: { ids: v2Items, resource: "datasetNumber" } },
  "v2Datasets.create": {
    expect: write,
    body: (f) => ({ name: `${f.name} v2`, dataSourceId: f.dataSourceId, schema: [{ id: "id", dataType: "number" }] })
  },
  "v2Datasets.get": { expect: read },
  "v2Datasets.update": { expect: write, body: (f) => ({ name: `${f.name} renamed` }) },
  "v2Datasets.delete": { expect: write },
  "v2Datasets.purge": { expect: write },
  "v2Datasets.duplicate": { expect: write, body: () => ({}) },
  "v2Datasets.getSchema": { expect: read },
  "v2Datasets.getData": { expect: read },
  "v2Datasets.ingest": { expect: write, body: () => ({ records: [{ id: 3, name: "three" }] }) },
  "v2Datasets.listIngestions": { expect: read },
  "v2Datasets.getIngestion": { expect: read },
  "v2Datasets.ingestionStatistics": { expect: read },
  "v2DatasetSettings.getMetadata": { expect: read },
  "v2DatasetSettings.updateMetadata": { expect: write, body: () => ({ description: "changed" }) },
  "v2DatasetSettings.getColumnMetadata": { expect: read },
  "v2DatasetSettings.updateColumnMetadata": {
    expect: write,
    body: () => ({ columns: [{ id: "name", description: "changed" }] })
  },
  "v2DatasetSettings.setTimezone": { expect: write, body: () => ({ timezone: "Europe/Berlin" }) },
  "v2DatasetSettings.getPermissions": { expect: read },
  "v2DatasetSettings.setPermissions": { expect: write, body: () => ({ accessLevel: "everyone" }) },
  "v2DatasetSettings.getVerification": { expect: read },
  "v2DatasetSettings.setVerification": { expect: write, body: () => ({ isVerified: true }) },
  "v2DatasetSettings.setSyncFrequency": { expect: write, body: () => ({ syncInterval: 60 }) },
  "v2DatasetSettings.syncFrequencyOptions": { expect: read },
  "v2DatasetSettings.syncHistory": { expect: read },
  "v2DatasetSettings.syncStatistics": { expect: read },
  "v2DatasetSettings.getLineage": { expect: read },
  "v2DatasetModifications.functions": { expect: open },
  "v2DatasetModifications.rules": { expect: open },
  "v2DatasetModifications.get": { expect: read },
  "v2DatasetModifications.set": { expect: write, body: () => ({ formulas: { double: "$id * 2" } }) },
  "v2DatasetModifications.clear": { expect: write },
  // A preview saves nothing: whoever sees the dataset may run one.
  "v2DatasetModifications.preview": { expect: read, body: () => ({ formulas: { double: "$id * 2" } }) },
  // A metric is seen with its dataset; its values, dimension values and drilldown are reads.
  "v2Metrics.list": { expect: list, query: searched, listing: { ids: v2Items, resource: "metricId" } },
  "v2Metrics.create": {
    expect: write,
    body: (f) => ({ name: `${f.name} made`, datasetId: f.datasetNumber, measure: { id: "id", displayName: "Id" }, date: { id: "at", displayName: "At" } })
  },
  "v2Metrics.get": { expect: read },
  "v2Metrics.update": { expect: write, body: (f) => ({ name: `${f.name} renamed` }) },
  "v2Metrics.delete": { expect: write },
  "v2Metrics.values": { expect: read, body: () => ({ granularity: "daily" }) },
  "v2Metrics.dimensionValues": {
    expect: read,
    body: (f) => ({ metrics: [{ sourceId: f.dataSourceId, metricId: f.metricId, dimensionIds: ["name"] }] })
  },
  "v2Metrics.drilldown": {
    expect: read,
    body: (f) => ({ sourceId: f.dataSourceId, metricId: f.metricId, period: { startTimestamp: 0, endTimestamp: 2_000_000_000 } })
  },
  "v2Metrics.data": {
    expect: read,
    body: (f) => ({ metricId: f.metricId, dataSourceId: f.dataSourceId, dateRange: { from: "2000-01-01", to: "today", granularity: "monthly" } })
  },
  "v2Metrics.getLineage": { expect: read },
  "v2Metrics.usages": { expect: read },
  "v2Metrics.getVerification": { expect: read },
  "v2Metrics.setVerification": { expect: write, body: () => ({ isVerified: true }) },
  // Boards belong to the organization, not to a data source: never private.
  "v2Boards.list": { expect: boardList, listing: { ids: v2Items, resource: "boardId" } },
  "v2Boards.listDataboards": { expect: boardList, listing: { ids: v2Items, resource: "boardId" } },
  "v2Boards.metrics": { expect: boardRead },
  "v2Boards.databoardMetrics": { expect: boardRead },
  // Connections are shared or not on their own (the cell's private data source changes nothing);
  // deleting one takes its manager (Ada, an admin, for the seeded spares) or an admin.
  "v2Connections.list": { expect: boardList, listing: { ids: v2Items, resource: "connectionId" }, query: () => "?pageSize=100" },
  "v2Connections.get": { expect: boardRead },
  "v2Connections.getPermissions": { expect: boardRead },
  "v2Connections.update": { expect: connectionWrite, body: (f) => ({ name: `${f.name} connection` }) },
  "v2Connections.setPermissions": { expect: connectionWrite, body: () => ({ accessLevel: "everyone", sharedWithAccounts: true }) },
  "v2Connections.delete": {
    expect: { ...connectionWrite, editor: 403, "private, editor (not creator)": 403, "private, creator": 403 }
  },
  "v2Integrations.list": { expect: open },
  "v2Integrations.get": { expect: open },
  "v2Organization.get": { expect: adminOnly },
  "v2Organization.update": { expect: adminOnly, body: () => ({ companyName: "Changed" }) },
  "v2Organization.activityLog": { expect: adminOnly },
  "v2Organization.countries": { expect: open },
  "v2Organization.metadataOptions": { expect: open },
  "v2Organization.usage": { expect: open },
  "v2Accounts.list": { expect: open },
  "v2Accounts.create": { expect: adminOnly, body: (f) => ({ name: `${f.name} account` }) },
  "v2Accounts.get": { expect: member },
  "v2Accounts.update": { expect: memberAdmin, body: (f) => ({ name: `${f.name} renamed` }) },
  "v2Accounts.delete": { expect: memberAdmin },
  "v2Users.list": { expect: adminOnly },
  "v2Users.create": {
    // Editors may invite viewers (admins anyone); viewers may invite no one.
    expect: { ...open, viewer: 403, "private, viewer": 403 },
    body: (f) => ({ email: `${f.name.replace(/\W/g, "-")}-invited-${sequence}@acme.test`, role: "viewer" })
  },
  "v2Users.get": { expect: memberAdmin },
  "v2Users.update": { expect: memberAdmin, body: () => ({ name: "Renamed" }) },
  "v2Users.delete": { expect: memberAdmin },
  "v2Profile.get": { expect: open },
  "v2Profile.update": { expect: open, body: () => ({ timezone: "Europe/Berlin" }) },
  "v2Profile.metadataOptions": { expect: open },
  "v2Billing.get": { expect: adminOnly },
  "v2Billing.invoices": { expect: adminOnly }
}

let sequence = 0

/**
 * The cell's resources: Acme's admin makes them, or Pat makes them and then makes them
 * private. Named uniquely, so that the cell's lists can be searched for them alone.
 */
const fixtureFor = (principal: Principal) =>
  Effect.gen(function*() {
    const creator = principal.private ? "acme-editor-2" : "acme-admin"
    const name = `Cell ${++sequence}`
    const fixture = yield* makeFixture(creator, name)
    if (principal.private) yield* makePrivate(creator, fixture)
    yield* settled(fixture)
    return { ...fixture, name }
  })

/**
 * Reads and refused mutations change nothing (the latter is checked), so the cells of a row
 * share its two sets of resources (shared and private); a mutation that is allowed gets its own.
 */
const fixtures = new Map<string, CellFixture>()
const fixtureOf = (route: Route, principal: Principal, allowedWrite: boolean) =>
  Effect.suspend(() => {
    if (allowedWrite) return fixtureFor(principal)
    const id = `${route.name} ${principal.private}`
    const cached = fixtures.get(id)
    return cached !== undefined
      ? Effect.succeed(cached)
      : Effect.tap(fixtureFor(principal), (fixture) => Effect.sync(() => fixtures.set(id, fixture)))
  })

const expectOk = (answer: Effect.Effect<Answer, never, any>) =>
  Effect.tap(answer, (a) => expect(a.status, a.text.slice(0, 300)).toBe(200))

const makePrivate = (key: string, fixture: Fixture, what: "both" | "dataset" = "both") =>
  Effect.gen(function*() {
    const body = JSON.stringify({ accessLevel: "private" })
    if (what === "both") {
      yield* expectOk(call({ method: "PUT", path: `/v2/data-sources/${fixture.dataSourceId}/permissions`, key, body }))
    }
    yield* expectOk(call({ method: "PUT", path: `/v2/datasets/${fixture.datasetId}/permissions`, key, body }))
  })

const total = (path: string, key: string) =>
  Effect.map(call({ method: "GET", path, key }), (a) => a.json?.data?.pagination?.totalItems)

/** What an admin sees of the cell's resources: their settings, permissions, rows and ingestions. */
const snapshot = (fixture: Fixture) =>
  Effect.gen(function*() {
    const get = (path: string) =>
      Effect.map(call({ method: "GET", path, key: "acme-admin" }), (a) => ({ status: a.status, body: a.json?.data ?? a.json?.errors }))
    const ds = `/v2/data-sources/${fixture.dataSourceId}`
    const set = `/v2/datasets/${fixture.datasetId}`
    return yield* Effect.all({
      dataSource: get(ds),
      dataSourcePermissions: get(`${ds}/permissions`),
      dataset: get(set),
      datasetPermissions: get(`${set}/permissions`),
      metadata: get(`${set}/metadata`),
      columns: get(`${set}/column-metadata`),
      verification: get(`${set}/verification`),
      rows: get(`${set}/data`),
      ingestions: total(`${set}/ingestions`, "acme-admin")
    }, { concurrency: "unbounded" })
  })

/** How many data sources and datasets each organization has (a refused create adds none). */
const totals = Effect.all([
  total("/v2/data-sources", "acme-admin"),
  total("/v2/datasets", "acme-admin"),
  total("/v2/data-sources", "globex-admin"),
  total("/v2/datasets", "globex-admin")
], { concurrency: "unbounded" })

/**
 * The snapshot of a shared fixture, taken once: refused mutations must leave it as it was
 * made, so every one of them is compared with the same first snapshot.
 */
const snapshots = new Map<string, Effect.Effect.Success<ReturnType<typeof snapshot>>>()
const snapshotOnce = (fixture: CellFixture) =>
  Effect.suspend(() => {
    const taken = snapshots.get(fixture.name)
    return taken !== undefined
      ? Effect.succeed(taken)
      : Effect.tap(snapshot(fixture), (first) => Effect.sync(() => snapshots.set(fixture.name, first)))
  })

/** The fixture's ingestion must be over before a snapshot (rows and counts settle). */
const settled = (fixture: Fixture) =>
  Effect.flatMap(ServerUrl, (url) => Effect.promise(() => settleAt(url, fixture.datasetId, fixture.ingestionId)))

const runCell = (route: Route, row: Row, column: Column) =>
  Effect.gen(function*() {
    const principal: Principal = principals[column]
    const expected = row.expect[column]
    const refusedWrite = route.mutates && typeof expected === "number" && expected !== 200
    const fixture = yield* fixtureOf(route, principal, route.mutates && !refusedWrite)
    const path = `${pathTo(route, fixture)}${row.query?.(fixture) ?? ""}`
    // A refused change of a resource must leave it as it was; a refused create must add nothing.
    const creates = !route.path.includes(":")
    const state = creates ? totals : snapshot(fixture)
    const before = refusedWrite ? yield* (creates ? totals : snapshotOnce(fixture)) : undefined
    const body = row.body?.(fixture)
    const answer = yield* call({
      method: route.method,
      path,
      key: principal.key,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: row.headers?.(fixture)
    })
    const context = `${route.method} ${path} as ${column}`
    expectWellFormed(answer, context)
    const seen = `${context}: ${answer.text.slice(0, 300)}`
    expect(answer.status, seen).toBe(typeof expected === "number" ? expected : 200)
    if (typeof expected !== "number") {
      const listing = row.listing!
      const ids = listing.ids(answer.json)
      if (expected === "listed") expect(ids, seen).toContain(fixture[listing.resource])
      else expect(ids, seen).not.toContain(fixture[listing.resource])
    }
    if (before !== undefined) expect(yield* state, `${context} changed something`).toEqual(before)
  })

layer(serverLayer({ seed }), { excludeTestServices: true })("permission matrix: every route x every caller", (it) => {
  it("the table has one row per route of the contract", () => {
    expect(Object.keys(table).sort()).toEqual(routes.map((route) => route.name).sort())
  })

  for (const route of routes) {
    const row = table[route.name]
    if (row === undefined) continue
    describe(`${route.method} ${route.path}`, () => {
      for (const column of Object.keys(principals) as Array<Column>) {
        const expected = row.expect[column]
        it.effect(`${column}: ${expected}`, () => runCell(route, row, column))
      }
    })
  }

  describe("a private dataset in a data source the editor sees", () => {
    /** Pat's data source, shared with everyone, holding Pat's private dataset. */
    const privateInside = Effect.gen(function*() {
      const fixture = yield* makeFixture("acme-editor-2")
      yield* makePrivate("acme-editor-2", fixture, "dataset")
      yield* settled(fixture)
      return fixture
    })

    it.effect("is absent from the v1 and v2 dataset lists of an editor and a viewer, present for admins and its creator", () =>
      Effect.gen(function*() {
        const fixture = yield* privateInside
        for (const [key, visible] of [["acme-editor", false], ["acme-viewer", false], ["acme-admin", true], ["acme-editor-2", true]] as const) {
          const v1 = yield* call({ method: "GET", path: `/v1/data-sources/${fixture.dataSourceId}/datasets`, key })
          expectWellFormed(v1, `v1 list as ${key}`)
          expect(v1.status).toBe(200)
          const v1Ids = v1.json.datasets.map((d: any) => d.id)
          const v2 = yield* call({ method: "GET", path: `/v2/datasets?dataSourceId=${fixture.dataSourceId}&pageSize=100`, key })
          expectWellFormed(v2, `v2 list as ${key}`)
          expect(v2.status).toBe(200)
          const v2Ids = v2Items(v2.json)
          if (visible) {
            expect(v1Ids, `v1 as ${key}`).toContain(fixture.datasetId)
            expect(v2Ids, `v2 as ${key}`).toContain(fixture.datasetNumber)
          } else {
            expect(v1Ids, `v1 as ${key}`).not.toContain(fixture.datasetId)
            expect(v2Ids, `v2 as ${key}`).not.toContain(fixture.datasetNumber)
          }
        }
      }))

    // Decided: an editor may not remove what it cannot see, so deleting or purging the data
    // source around such a dataset is 403 (not a silent removal of the hidden dataset).
    for (const [method, path] of [
      ["DELETE", (id: number) => `/v1/data-sources/${id}`],
      ["DELETE", (id: number) => `/v2/data-sources/${id}`],
      ["POST", (id: number) => `/v2/data-sources/${id}/purge`]
    ] as const) {
      it.effect(`${method} ${path(0).replace("/0", "/{id}")}: 403 for the editor, nothing removed; 200 for an admin`, () =>
        Effect.gen(function*() {
          const fixture = yield* privateInside
          const before = [yield* snapshot(fixture), yield* totals]
          const refused = yield* call({ method, path: path(fixture.dataSourceId), key: "acme-editor" })
          expectWellFormed(refused, `${method} as editor`)
          expect(refused.status, refused.text).toBe(403)
          expect(refused.json.errors[0].code).toBe("forbidden")
          expect([yield* snapshot(fixture), yield* totals]).toEqual(before)
          const allowed = yield* call({ method, path: path(fixture.dataSourceId), key: "acme-admin" })
          expectWellFormed(allowed, `${method} as admin`)
          expect(allowed.status, allowed.text).toBe(200)
        }))
    }
  })
})
