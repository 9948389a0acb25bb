/**
 * The organization, its activity log, usage and limits, accounts, users, profile and billing,
 * through the typed client against a reference server (on the memory or Postgres store).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Effect, Option, Stream } from "effect"
import { allAccounts, allActivity, allInvoices, allUsers } from "../../src/client/index.js"
import { applySeed, type Seed } from "../../src/server/seed.js"
import { CatalogStore } from "../../src/server/core/store/ports/catalog.js"
import { clientFor, rawRequest, serverLayer } from "../support/server.js"
import { storeLayer, testStoreKind } from "../support/stores.js"

/** The `_tag`, first `code`, `field` and `message` of a failed call. */
const failure = <A, E extends { readonly _tag: string }>(call: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(call), (error) => {
    const first = "errors" in error
      ? (error.errors as ReadonlyArray<{ readonly code: string | null; readonly field: string | null; readonly message: string }>)[0]
      : undefined
    return { tag: error._tag, code: first?.code ?? null, field: first?.field ?? null, message: first?.message ?? null }
  })

/** A raw request (for bodies the typed client refuses to send): status and first field. */
const raw = (method: string, path: string, key: string, body: unknown) =>
  Effect.map(
    rawRequest(path, { method, headers: { "x-api-key": key, "content-type": "application/json" }, body: JSON.stringify(body) }),
    (answer) => ({ status: answer.status, field: answer.body?.errors?.[0]?.field ?? null })
  )

let serial = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${++serial}`

const clients = Effect.all({
  admin: clientFor("acme-admin"),
  editor: clientFor("acme-editor"),
  viewer: clientFor("acme-viewer"),
  globex: clientFor("globex-admin")
})

/** Acme's user with this email. */
const userByEmail = (email: string) =>
  Effect.gen(function*() {
    const { admin } = yield* clients
    const page = yield* admin.v2.v2Users.list({ urlParams: { search: email } })
    return page.data.items.find((u) => u.email === email)!
  })

layer(serverLayer(), { excludeTestServices: true })("v2 organization, accounts, users, profile, billing", (it) => {
  describe("organization", () => {
    it.effect("admins read and change it: text, address, settings and metadata by the research's rules", () =>
      Effect.gen(function*() {
        const { admin } = yield* clients
        const org = admin.v2.v2Organization
        const initial = yield* org.get()
        expect(initial.data).toMatchObject({ name: "Acme", managedBy: null })

        const updated = yield* org.update({
          payload: {
            companyName: "Acme Ltd",
            taxNumber: "DE123",
            address: { city: "Berlin", country: "de" },
            settings: { calendar: "customFiscal", fiscalYearStart: { month: 4, day: 1 }, numberFormat: "groupingDotDecimalComma" },
            metadata: { industry: ["saas", "saas"], companySize: "11-50" }
          }
        })
        expect(updated.data).toMatchObject({
          companyName: "Acme Ltd",
          taxNumber: "DE123",
          address: { street: null, zip: null, city: "Berlin", state: null, country: "DE" },
          settings: { calendar: "customFiscal", fiscalYearStart: { month: 4, day: 1 }, numberFormat: "groupingDotDecimalComma" },
          metadata: { industry: ["saas"], businessType: null, companySize: "11-50", annualRevenue: null }
        })

        // Omitted address fields keep their value, "" clears; gregorian drops the fiscal start.
        const again = yield* org.update({
          payload: { taxNumber: "", address: { street: "Main 1", city: "" }, settings: { calendar: "gregorian" } }
        })
        expect(again.data.taxNumber).toBeNull()
        expect(again.data.address).toEqual({ street: "Main 1", zip: null, city: null, state: null, country: "DE" })
        expect(again.data.settings).toMatchObject({ calendar: "gregorian", fiscalYearStart: null, numberFormat: "groupingDotDecimalComma" })
        expect((yield* org.get()).data).toEqual(again.data)
      }))

    it.effect("bad values are 400 naming the field, and change nothing", () =>
      Effect.gen(function*() {
        const { admin } = yield* clients
        const org = admin.v2.v2Organization
        const before = (yield* org.get()).data
        expect(yield* failure(org.update({ payload: { address: { country: "XX" } } })))
          .toMatchObject({ tag: "BadRequest", code: "invalid_input", field: "address.country" })
        expect(yield* failure(org.update({ payload: { metadata: { industry: ["spaceships"] } } })))
          .toMatchObject({ tag: "BadRequest", field: "metadata.industry" })
        expect(yield* failure(org.update({ payload: { settings: { calendar: "gregorian", fiscalYearStart: { month: 1, day: 1 } } } })))
          .toMatchObject({ tag: "BadRequest", field: "settings.fiscalYearStart" })
        expect(yield* failure(org.update({ payload: { settings: { calendar: "customFiscal", fiscalYearStart: { month: 2, day: 30 } } } })))
          .toMatchObject({ tag: "BadRequest", field: "settings.fiscalYearStart" })
        const raw = yield* rawRequest("/v2/organization", {
          method: "PATCH",
          headers: { "x-api-key": "acme-admin", "content-type": "application/json" },
          body: JSON.stringify({ settings: { numberFormat: "roman" } })
        })
        expect(raw.status).toBe(400)
        expect(raw.body.errors[0].field).toBe("settings.numberFormat")
        expect((yield* org.get()).data).toEqual(before)
      }))

    it.effect("editors and viewers get 403; each organization sees only itself", () =>
      Effect.gen(function*() {
        const { editor, globex, viewer } = yield* clients
        expect((yield* failure(viewer.v2.v2Organization.get())).tag).toBe("Forbidden")
        expect((yield* failure(editor.v2.v2Organization.update({ payload: { companyName: "x" } }))).tag).toBe("Forbidden")
        expect((yield* globex.v2.v2Organization.get()).data.name).toBe("Globex")
      }))

    it.effect("countries (ISO 3166-1) and metadata options", () =>
      Effect.gen(function*() {
        const { viewer } = yield* clients
        const countries = (yield* viewer.v2.v2Organization.countries()).data.items
        expect(countries).toHaveLength(249)
        expect(countries).toContainEqual({ code: "DE", name: "Germany" })
        const options = (yield* viewer.v2.v2Organization.metadataOptions()).data
        expect(options.industries.map((o) => o.value)).toContain("saas")
        expect(options.companySizes.length).toBeGreaterThan(0)
      }))
  })

  describe("activity log", () => {
    it.effect("has an entry for each successful mutation, newest first, and none for failed ones or replays", () =>
      Effect.gen(function*() {
        const { admin, editor } = yield* clients
        const name = unique("Logged")
        const created = yield* admin.v2.v2DataSources.create({ payload: { name }, headers: { "idempotency-key": name } })
        const replay = yield* admin.v2.v2DataSources.create({ payload: { name }, headers: { "idempotency-key": name } })
        expect(replay.data.id).toBe(created.data.id)
        yield* admin.v2.v2DataSources.update({ path: { id: created.data.id }, payload: { name: `${name} 2` } })
        // Refused (blank name, viewer-free but invalid) and failed mutations leave no entry.
        yield* Effect.flip(admin.v2.v2DataSources.update({ path: { id: created.data.id }, payload: { name: " " } }))
        yield* Effect.flip(admin.v2.v2DataSources.get({ path: { id: 999999 } }))
        yield* editor.v2.v2DataSources.purge({ path: { id: created.data.id }, headers: {} })

        const id = String(created.data.id)
        const entries = (yield* admin.v2.v2Organization.activityLog({ urlParams: { search: id, resourceType: "dataSource" } }))
          .data.items.filter((e) => e.resourceId === id)
        expect(entries.map((e) => [e.action, e.user?.name])).toEqual([
          ["dataSource.purge", "Eve"],
          ["dataSource.updated", "Ada"],
          ["dataSource.created", "Ada"]
        ])
        expect(entries[2]).toMatchObject({ isSystem: false, resourceType: "dataSource", details: { method: "POST", path: "/v2/data-sources" } })
        expect(entries[0]!.createdAt >= entries[2]!.createdAt).toBe(true)

        const eve = yield* userByEmail("eve@acme.test")
        const byEve = yield* Stream.runCollect(allActivity(admin, { userId: eve.id }))
        expect(Chunk.toArray(byEve).every((e) => e.user?.id === eve.id)).toBe(true)
        expect(Chunk.toArray(byEve).some((e) => e.resourceId === id)).toBe(true)
      }))

    it.effect("covers every route: accounts, users, organization, profile, v1", () =>
      Effect.gen(function*() {
        const { admin } = yield* clients
        const account = yield* admin.v2.v2Accounts.create({ payload: { name: unique("Logged account") }, headers: {} })
        yield* admin.v2.v2Organization.update({ payload: { billingName: "Acme Billing" } })
        yield* admin.v2.v2Profile.update({ payload: { timezone: "Europe/Berlin" } })
        const v1 = yield* admin.v1.v1DataSources.createDataSource({ payload: { title: unique("v1 logged") } })
        const actions = (yield* admin.v2.v2Organization.activityLog({ urlParams: { pageSize: 10 } })).data.items
          .map((e) => [e.action, e.resourceType, e.resourceId])
        expect(actions.slice(0, 4)).toEqual([
          ["dataSource.created", "dataSource", String(v1.id)],
          ["profile.updated", "user", expect.any(String)],
          ["organization.updated", "administration", null],
          ["account.created", "account", String(account.data.id)]
        ])
      }))

    it.effect("names a dataset by its v2 number whichever path changed it (v1 UUID, v2 UUID, v2 number)", () =>
      Effect.gen(function*() {
        const { admin } = yield* clients
        const source = yield* admin.v1.v1DataSources.createDataSource({ payload: { title: unique("v1 source") } })
        const created = yield* admin.v1.v1Datasets.createDataset({ payload: { title: "Orders", dataSourceId: source.id, primaryKeys: ["id"] } })
        const uuid = created.id
        const number = String((yield* admin.v2.v2Datasets.get({ path: { id: uuid } })).data.id)
        yield* admin.v2.v2Datasets.update({ path: { id: uuid.toUpperCase() }, payload: { name: "Orders 2" } })
        yield* admin.v2.v2Datasets.update({ path: { id: Number(number) }, payload: { name: "Orders 3" } })
        yield* admin.v1.v1Datasets.purgeDataset({ path: { datasetId: uuid } })
        yield* admin.v1.v1Datasets.deleteDataset({ path: { datasetId: uuid } })
        const entries = (yield* admin.v2.v2Organization.activityLog({ urlParams: { pageSize: 5, resourceType: "dataset" } })).data.items
        expect(entries.map((e) => [e.action, e.resourceId])).toEqual([
          ["dataset.deleted", number],
          ["dataset.purge", number],
          ["dataset.updated", number],
          ["dataset.updated", number],
          ["dataset.created", number]
        ])
      }))

    it.effect("filters by date; a bad date is 400; admins only; organizations apart", () =>
      Effect.gen(function*() {
        const { admin, globex, viewer } = yield* clients
        yield* admin.v2.v2DataSources.create({ payload: { name: unique("Dated") }, headers: {} })
        const all = (yield* admin.v2.v2Organization.activityLog({ urlParams: {} })).data.pagination.totalItems
        expect(all).toBeGreaterThan(0)
        const today = new Date().toISOString().slice(0, 10)
        expect((yield* admin.v2.v2Organization.activityLog({ urlParams: { dateFrom: today, dateTo: today } })).data.pagination.totalItems)
          .toBe(all)
        expect((yield* admin.v2.v2Organization.activityLog({ urlParams: { dateFrom: "2999-01-01" } })).data.items).toEqual([])
        expect((yield* admin.v2.v2Organization.activityLog({ urlParams: { dateTo: "2000-01-01T00:00:00Z" } })).data.items).toEqual([])
        expect(yield* failure(admin.v2.v2Organization.activityLog({ urlParams: { dateFrom: "yesterday" } })))
          .toMatchObject({ tag: "BadRequest", field: "dateFrom" })
        expect((yield* failure(viewer.v2.v2Organization.activityLog({ urlParams: {} }))).tag).toBe("Forbidden")
        const globexLog = (yield* globex.v2.v2Organization.activityLog({ urlParams: {} })).data.items
        expect(globexLog.every((e) => e.user?.name !== "Ada")).toBe(true)
      }))
  })

  describe("accounts", () => {
    it.effect("created (idempotently), listed, read, changed and deleted by admins", () =>
      Effect.gen(function*() {
        const { admin, viewer } = yield* clients
        const name = unique("Client")
        const key = { "idempotency-key": name }
        const eve = yield* userByEmail("eve@acme.test")
        const created = yield* admin.v2.v2Accounts.create({ payload: { name, websiteUrl: "https://client.test" }, headers: key })
        expect(created.data).toMatchObject({ name, isSelfManaged: true, managedBy: null, websiteUrl: "https://client.test", companyName: null })
        expect(created.data.createdAt).toMatch(/Z$/)
        expect((yield* admin.v2.v2Accounts.create({ payload: { name, websiteUrl: "https://client.test" }, headers: key })).data.id)
          .toBe(created.data.id)
        expect(yield* failure(admin.v2.v2Accounts.create({ payload: { name: "other" }, headers: key })))
          .toMatchObject({ tag: "Unprocessable", code: "idempotency_key_reused" })

        const id = created.data.id
        const listed = Chunk.toArray(yield* Stream.runCollect(allAccounts(viewer, { search: name })))
        expect(listed).toEqual([{ id, name, isSelfManaged: true, managedBy: null }])
        expect((yield* viewer.v2.v2Accounts.get({ path: { id } })).data.name).toBe(name)

        const changed = yield* admin.v2.v2Accounts.update({ path: { id }, payload: { managedById: eve.id, websiteUrl: "" } })
        expect(changed.data).toMatchObject({ isSelfManaged: false, managedBy: { id: eve.id, name: "Eve" }, websiteUrl: null })
        expect(yield* failure(admin.v2.v2Accounts.update({ path: { id }, payload: { managedById: 999999 } })))
          .toMatchObject({ tag: "BadRequest", field: "managedById" })
        expect((yield* failure(viewer.v2.v2Accounts.update({ path: { id }, payload: { name: "x" } }))).tag).toBe("Forbidden")
        expect((yield* failure(viewer.v2.v2Accounts.create({ payload: { name: "x" }, headers: {} }))).tag).toBe("Forbidden")

        // x-account-id names the new account; an account holding data sources is not deleted.
        const dataSource = yield* admin.v2.v2DataSources.create({ payload: { name: unique("In client") }, headers: { "x-account-id": id } })
        const ofAccount = yield* admin.v1.v1Accounts.listDataSources({ path: { accountId: id } })
        expect(ofAccount.dataSources.map((d) => d.id)).toContain(dataSource.data.id)
        // One spelling per id, as in paths: anything else is 400 naming the header.
        for (const spelling of [`${id}.0`, `${id}e0`, `0${id}`, "-1", "0", "0x1"]) {
          const answer = yield* rawRequest("/v2/data-sources", {
            method: "POST",
            headers: { "x-api-key": "acme-admin", "content-type": "application/json", "x-account-id": spelling },
            body: JSON.stringify({ name: unique("Spelled") })
          })
          expect([spelling, answer.status, answer.body.errors[0].field]).toEqual([spelling, 400, "x-account-id"])
        }
        expect(yield* failure(admin.v2.v2Accounts.delete({ path: { id } })))
          .toMatchObject({ tag: "Conflict", code: "account_not_empty" })
        yield* admin.v2.v2DataSources.delete({ path: { id: dataSource.data.id } })
        yield* admin.v2.v2Accounts.delete({ path: { id } })
        expect((yield* failure(admin.v2.v2Accounts.get({ path: { id } }))).tag).toBe("NotFound")
      }))

    it.effect("another organization's accounts are 404; blank names 400; the last account stays", () =>
      Effect.gen(function*() {
        const { admin, globex } = yield* clients
        const acme = (yield* admin.v2.v2Accounts.list({ urlParams: {} })).data.items[0]!
        expect((yield* failure(globex.v2.v2Accounts.get({ path: { id: acme.id } }))).tag).toBe("NotFound")
        expect((yield* failure(globex.v2.v2Accounts.delete({ path: { id: acme.id } }))).tag).toBe("NotFound")
        expect(yield* raw("POST", "/v2/accounts", "acme-admin", { name: "  " })).toEqual({ status: 400, field: "name" })
        const sorted = yield* rawRequest("/v2/accounts?sortBy=bogus", { headers: { "x-api-key": "acme-admin" } })
        expect([sorted.status, sorted.body.errors[0].field, sorted.body.errors[0].message])
          .toEqual([400, "sortBy", "sortBy: Expected \"name\" | \"website\" | \"managedBy\", actual \"bogus\""])
        const globexAccounts = (yield* globex.v2.v2Accounts.list({ urlParams: {} })).data.items
        expect(globexAccounts).toHaveLength(1)
        expect(yield* failure(globex.v2.v2Accounts.delete({ path: { id: globexAccounts[0]!.id } })))
          .toMatchObject({ tag: "Conflict", code: "last_account" })
      }))
  })

  describe("users", () => {
    it.effect("invited (idempotently) with a role; a taken email is 409 duplicate_record", () =>
      Effect.gen(function*() {
        const { admin } = yield* clients
        const email = `${unique("new")}@acme.test`
        const headers = { "idempotency-key": email }
        const invited = yield* admin.v2.v2Users.create({ payload: { email, role: "editor", name: "Nia" }, headers })
        expect(invited.data).toEqual({ id: expect.any(Number), name: "Nia", email, role: "editor" })
        expect((yield* admin.v2.v2Users.create({ payload: { email, role: "editor", name: "Nia" }, headers })).data.id).toBe(invited.data.id)
        expect(yield* failure(admin.v2.v2Users.create({ payload: { email: email.toUpperCase(), role: "viewer" }, headers: {} })))
          .toMatchObject({ tag: "Conflict", code: "duplicate_record", field: "email" })
        expect(yield* raw("POST", "/v2/users", "acme-admin", { email: "not-an-email", role: "viewer" }))
          .toEqual({ status: 400, field: "email" })
        expect(yield* raw("POST", "/v2/users", "acme-admin", { email: "x@acme.test", role: "owner" }))
          .toEqual({ status: 400, field: "role" })
        const detail = yield* admin.v2.v2Users.get({ path: { id: invited.data.id } })
        expect(detail.data).toMatchObject({ email, role: "editor", isEmailVerified: false, isAdminApproved: true, timezone: null, metadata: null })
        const users = Chunk.toArray(yield* Stream.runCollect(allUsers(admin, { role: "editor" })))
        expect(users.map((u) => u.email)).toEqual(expect.arrayContaining(["eve@acme.test", email]))
        expect(users.every((u) => u.role === "editor")).toBe(true)
      }))

    it.effect("editors invite viewers only (403 access_denied); viewers invite no one; admins list", () =>
      Effect.gen(function*() {
        const { editor, viewer } = yield* clients
        expect(yield* failure(editor.v2.v2Users.create({ payload: { email: `${unique("a")}@acme.test`, role: "admin" }, headers: {} })))
          .toMatchObject({ tag: "Forbidden", code: "access_denied", field: "role", message: "an editor may invite viewers only, not an admin" })
        const invited = yield* editor.v2.v2Users.create({ payload: { email: `${unique("v")}@acme.test`, role: "viewer" }, headers: {} })
        expect(invited.data.role).toBe("viewer")
        expect((yield* failure(viewer.v2.v2Users.create({ payload: { email: `${unique("w")}@acme.test`, role: "viewer" }, headers: {} }))).tag)
          .toBe("Forbidden")
        expect((yield* failure(editor.v2.v2Users.list({ urlParams: {} }))).tag).toBe("Forbidden")
      }))

    it.effect("anyone renames themselves; other users and roles need an admin; another organization's users are 404", () =>
      Effect.gen(function*() {
        const { admin, globex, viewer } = yield* clients
        const vic = yield* userByEmail("vic@acme.test")
        const eve = yield* userByEmail("eve@acme.test")
        expect((yield* viewer.v2.v2Users.update({ path: { id: vic.id }, payload: { name: "Victor" } })).data.name).toBe("Victor")
        yield* viewer.v2.v2Users.update({ path: { id: vic.id }, payload: { name: "Vic" } })
        expect((yield* failure(viewer.v2.v2Users.update({ path: { id: vic.id }, payload: { role: "admin" } }))).tag).toBe("Forbidden")
        expect((yield* failure(viewer.v2.v2Users.update({ path: { id: eve.id }, payload: { name: "x" } }))).tag).toBe("Forbidden")
        expect((yield* failure(viewer.v2.v2Users.get({ path: { id: eve.id } }))).tag).toBe("Forbidden")
        expect((yield* viewer.v2.v2Users.get({ path: { id: vic.id } })).data.email).toBe("vic@acme.test")
        expect((yield* failure(globex.v2.v2Users.get({ path: { id: vic.id } }))).tag).toBe("NotFound")
        expect((yield* failure(globex.v2.v2Users.delete({ path: { id: vic.id } }))).tag).toBe("NotFound")
        expect((yield* failure(admin.v2.v2Users.get({ path: { id: 999999 } }))).tag).toBe("NotFound")
        expect(yield* raw("PATCH", `/v2/users/${vic.id}`, "acme-admin", { name: "" })).toEqual({ status: 400, field: "name" })
      }))

    it.effect("a role change applies to the user's keys at once", () =>
      Effect.gen(function*() {
        const { admin, viewer } = yield* clients
        const vic = yield* userByEmail("vic@acme.test")
        expect((yield* failure(viewer.v2.v2DataSources.create({ payload: { name: unique("Vic's") }, headers: {} }))).tag).toBe("Forbidden")
        yield* admin.v2.v2Users.update({ path: { id: vic.id }, payload: { role: "editor" } })
        const made = yield* viewer.v2.v2DataSources.create({ payload: { name: unique("Vic's") }, headers: {} })
        expect(made.data.managedBy?.name).toBe("Vic")
        yield* admin.v2.v2Users.update({ path: { id: vic.id }, payload: { role: "viewer" } })
        expect((yield* failure(viewer.v2.v2DataSources.create({ payload: { name: unique("Vic's") }, headers: {} }))).tag).toBe("Forbidden")
      }))

    it.effect("the last admin can be neither demoted nor deleted (409 last_admin)", () =>
      Effect.gen(function*() {
        const { admin, globex } = yield* clients
        const ada = yield* userByEmail("ada@acme.test")
        expect(yield* failure(admin.v2.v2Users.update({ path: { id: ada.id }, payload: { role: "editor" } })))
          .toMatchObject({ tag: "Conflict", code: "last_admin" })
        expect(yield* failure(admin.v2.v2Users.delete({ path: { id: ada.id } })))
          .toMatchObject({ tag: "Conflict", code: "last_admin" })
        const gus = (yield* globex.v2.v2Users.list({ urlParams: {} })).data.items[0]!
        expect((yield* failure(globex.v2.v2Users.delete({ path: { id: gus.id } }))).code).toBe("last_admin")

        // With a second admin, one of them may go.
        const other = yield* admin.v2.v2Users.create({ payload: { email: `${unique("admin")}@acme.test`, role: "admin" }, headers: {} })
        yield* admin.v2.v2Users.update({ path: { id: other.data.id }, payload: { role: "viewer" } })
        yield* admin.v2.v2Users.delete({ path: { id: other.data.id } })
        expect((yield* failure(admin.v2.v2Users.get({ path: { id: other.data.id } }))).tag).toBe("NotFound")
      }))
  })

  describe("profile", () => {
    it.effect("is the caller's own user, with their organization", () =>
      Effect.gen(function*() {
        const { viewer } = yield* clients
        const profile = (yield* viewer.v2.v2Profile.get()).data
        expect(profile).toMatchObject({ name: "Vic", email: "vic@acme.test", role: "viewer", isEmailVerified: true, account: null })
        expect(profile.organization.name).toBe("Acme")
      }))

    it.effect("metadata comes from the options; the role belongs to the department; \"\" clears; bad values 400", () =>
      Effect.gen(function*() {
        const { editor } = yield* clients
        const profile = editor.v2.v2Profile
        const options = (yield* profile.metadataOptions()).data.departments
        const engineering = options.find((d) => d.value === "engineering")!
        const set = yield* profile.update({
          payload: { timezone: "Europe/Paris", metadata: { department: "engineering", role: engineering.roles[0]!.value, title: "Lead" } }
        })
        expect(set.data).toMatchObject({ timezone: "Europe/Paris", metadata: { department: "engineering", role: "cto", title: "Lead" } })
        expect(yield* failure(profile.update({ payload: { metadata: { role: "cfo" } } })))
          .toMatchObject({ tag: "BadRequest", field: "metadata.role" })
        expect(yield* failure(profile.update({ payload: { metadata: { department: "" } } })))
          .toMatchObject({ tag: "BadRequest", field: "metadata.role" })
        expect(yield* failure(profile.update({ payload: { metadata: { department: "astrology" } } })))
          .toMatchObject({ tag: "BadRequest", field: "metadata.department" })
        expect(yield* failure(profile.update({ payload: { timezone: "Mars/Olympus" } })))
          .toMatchObject({ tag: "BadRequest", field: "timezone" })
        expect(yield* raw("PATCH", "/v2/profile", "acme-editor", { name: "   " })).toEqual({ status: 400, field: "name" })
        const cleared = yield* profile.update({ payload: { timezone: null, metadata: { department: "", role: "", title: "" } } })
        expect(cleared.data).toMatchObject({ timezone: null, metadata: null })
      }))
  })

  describe("usage and billing", () => {
    it.effect("usage counts real users, data sources and accounts", () =>
      Effect.gen(function*() {
        const { admin, viewer } = yield* clients
        const before = (yield* viewer.v2.v2Organization.usage()).data
        yield* admin.v2.v2DataSources.create({ payload: { name: unique("Counted") }, headers: {} })
        yield* admin.v2.v2Accounts.create({ payload: { name: unique("Counted") }, headers: {} })
        yield* admin.v2.v2Users.create({ payload: { email: `${unique("counted")}@acme.test`, role: "viewer" }, headers: {} })
        const after = (yield* viewer.v2.v2Organization.usage()).data
        expect(after.dataSources.count).toBe(before.dataSources.count + 1)
        expect(after.accounts.count).toBe(before.accounts.count + 1)
        expect(after.users.count).toBe(before.users.count + 1)
        expect(after.users.limit).toBe(1000)
        expect(after.aiCredits).toBeNull()
      }))

    it.effect("billing is the default plan without a seeded one; admins only", () =>
      Effect.gen(function*() {
        const { admin, viewer } = yield* clients
        expect((yield* admin.v2.v2Billing.get()).data).toEqual({
          planName: "Development",
          planStatus: "active",
          billingPeriod: null,
          billingEmail: null
        })
        expect((yield* admin.v2.v2Billing.invoices({ urlParams: {} })).data).toEqual({
          items: [],
          pagination: { page: 0, pageSize: 25, totalItems: 0 }
        })
        expect((yield* failure(viewer.v2.v2Billing.get())).tag).toBe("Forbidden")
      }))
  })
})

/** One small organization with a plan, invoices and tight limits. */
const limitedSeed: Seed = {
  organizations: [
    {
      name: "Tiny",
      accounts: [{ name: "Tiny", accountType: "organization" }],
      users: [
        { name: "Tia", email: "tia@tiny.test", role: "admin", apiKeys: ["tiny-admin"], timezone: "Europe/Vienna" },
        { name: "Ted", email: "ted@tiny.test", role: "editor", apiKeys: ["tiny-editor"] }
      ],
      plan: { name: "Starter", status: "active", billingPeriod: "monthly", billingEmail: "billing@tiny.test" },
      limits: { users: 3, dataSources: 1, accounts: 1 },
      invoices: [
        { invoiceId: "in_2", date: "2026-10-01", amount: 49, status: "paid", receiptNumber: null, downloadUrl: null },
        { invoiceId: "in_1", date: "2026-09-01", amount: 49.5, status: "paid", receiptNumber: "R-1", downloadUrl: null }
      ]
    }
  ]
}

layer(serverLayer({ seed: limitedSeed }), { excludeTestServices: true })("v2 limits and billing from the seed", (it) => {
  it.effect("a creation past a limit is refused (403 limit_reached naming it), usage shows the limits; deleting a user ends their keys", () =>
    Effect.gen(function*() {
      const admin = yield* clientFor("tiny-admin")
      const editor = yield* clientFor("tiny-editor")
      yield* editor.v2.v2DataSources.create({ payload: { name: "Only" }, headers: {} })
      const refused = yield* Effect.flip(editor.v2.v2DataSources.create({ payload: { name: "One more" }, headers: {} }))
      expect(refused._tag).toBe("Forbidden")
      expect("errors" in refused && refused.errors[0]?.code).toBe("limit_reached")
      expect("errors" in refused && refused.errors[0]?.message).toContain("limits.dataSources")
      expect((yield* failure(admin.v1.v1DataSources.createDataSource({ payload: { title: "v1 too" } }))).code).toBe("limit_reached")
      expect((yield* failure(admin.v2.v2Accounts.create({ payload: { name: "Second" }, headers: {} }))).code).toBe("limit_reached")
      yield* admin.v2.v2Users.create({ payload: { email: "tom@tiny.test", role: "viewer" }, headers: {} })
      expect(yield* failure(admin.v2.v2Users.create({ payload: { email: "tam@tiny.test", role: "viewer" }, headers: {} })))
        .toMatchObject({ tag: "Forbidden", code: "limit_reached" })
      expect((yield* admin.v2.v2Organization.usage()).data).toEqual({
        users: { count: 3, limit: 3 },
        dataSources: { count: 1, limit: 1 },
        accounts: { count: 1, limit: 1 },
        aiCredits: null
      })
      expect((yield* admin.v2.v2Profile.get()).data.timezone).toBe("Europe/Vienna")

      // A deleted user's keys stop working at once, and the room is free again.
      const ted = (yield* admin.v2.v2Users.list({ urlParams: { search: "ted@" } })).data.items[0]!
      yield* admin.v2.v2Users.delete({ path: { id: ted.id } })
      expect((yield* failure(editor.v2.v2Auth.validateKey())).tag).toBe("Unauthorized")
      yield* admin.v2.v2Users.create({ payload: { email: "tam@tiny.test", role: "viewer" }, headers: {} })
    }))

  it.effect("billing and invoices (paged) come from the seed's plan", () =>
    Effect.gen(function*() {
      const admin = yield* clientFor("tiny-admin")
      expect((yield* admin.v2.v2Billing.get()).data).toEqual({
        planName: "Starter",
        planStatus: "active",
        billingPeriod: "monthly",
        billingEmail: "billing@tiny.test"
      })
      const second = yield* admin.v2.v2Billing.invoices({ urlParams: { page: 1, pageSize: 1 } })
      expect(second.data).toEqual({
        items: [{ invoiceId: "in_1", date: "2026-09-01", amount: 49.5, status: "paid", receiptNumber: "R-1", downloadUrl: null }],
        pagination: { page: 1, pageSize: 1, totalItems: 2 }
      })
      expect(Chunk.size(yield* Stream.runCollect(allInvoices(admin)))).toBe(2)
    }))
})

layer(storeLayer(testStoreKind()), { excludeTestServices: true })("seeding the organization's data", (it) => {
  it.effect("is idempotent: the same ids, plan and limits; API changes to profiles survive a new start", () =>
    Effect.gen(function*() {
      const store = yield* CatalogStore
      yield* applySeed(limitedSeed)
      // Ensuring an existing organization returns it as it is.
      const first = yield* store.ensureOrganization("Tiny")
      const users = yield* store.users(first.id)
      yield* store.updateOrganization(first.id, { profile: { ...first.profile, companyName: "Tiny GmbH" } })
      yield* applySeed(limitedSeed)
      const again = Option.getOrThrow(yield* store.organization(first.id))
      expect(again.plan).toEqual(first.plan)
      expect(again.limits).toEqual({ users: 3, dataSources: 1, accounts: 1 })
      expect(again.profile.companyName).toBe("Tiny GmbH")
      expect((yield* store.users(first.id)).map((u) => [u.id, u.email, u.timezone])).toEqual(users.map((u) => [u.id, u.email, u.timezone]))
      expect((yield* store.invoices(first.id, { offset: 0, limit: 10 })).totalItems).toBe(2)
    }))
})
