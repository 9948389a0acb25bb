import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientFor, pollUntil, rawRequest, serverLayer } from "../support/server.js"

/** The `_tag`, first `field` and message of a failed call. */
const failure = <A, E extends { readonly _tag: string }>(call: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(call), (error) => {
    const first = "errors" in error
      ? (error.errors as ReadonlyArray<{ readonly field: string | null; readonly message: string }>)[0]
      : undefined
    return { tag: error._tag, field: first?.field ?? null, message: first?.message ?? "" }
  })

interface Order {
  readonly id: number
  readonly day: string
  readonly amount: number | null
  readonly qty: number
  readonly region: string
}

/** Rows with a spread of values: amounts repeat (ties), some are missing. */
const orders = (count: number): ReadonlyArray<Order> =>
  Array.from({ length: count }, (_, i) => ({
    id: i,
    day: `2026-01-${String(1 + (i % 28)).padStart(2, "0")}`,
    amount: i % 9 === 4 ? null : ((i * 37) % 23) * 5,
    qty: 1 + (i % 4),
    region: ["EU", "US", "APAC"][i % 3]!
  }))

/** An Acme dataset (`id`, `day`, `amount`, `qty`, `region`) holding `rows`, made by the admin. */
const acmeDataset = (rows: ReadonlyArray<Order> = []) =>
  Effect.gen(function*() {
    const admin = yield* clientFor("acme-admin")
    const dataSource = yield* admin.v2.v2DataSources.create({ payload: { name: "Shop" }, headers: {} })
    const dataset = yield* admin.v2.v2Datasets.create({
      payload: {
        name: "Orders",
        dataSourceId: dataSource.data.id,
        schema: [
          { id: "id", dataType: "number" },
          { id: "day", dataType: "datetime" },
          { id: "amount", dataType: "number" },
          { id: "qty", dataType: "number" },
          { id: "region", dataType: "string" }
        ],
        primaryKey: ["id"]
      },
      headers: {}
    })
    const id = dataset.data.id
    // 100 records per ingestion at most.
    for (let from = 0; from < rows.length; from += 100) {
      const records = rows.slice(from, from + 100)
      const accepted = yield* admin.v2.v2Datasets.ingest({ path: { id }, payload: { records }, headers: {} })
      yield* pollUntil(
        admin.v2.v2Datasets.getIngestion({ path: { id, ingestionId: accepted.data.ingestionId } }),
        (i) => i.data.status === "success"
      )
    }
    return { admin, mods: admin.v2.v2DatasetModifications, id }
  })

/** Every row of `GET data`, page by page. */
const allRows = (
  client: Effect.Effect.Success<ReturnType<typeof clientFor>>,
  id: number,
  params: { readonly sortBy?: string; readonly sortOrder?: "asc" | "desc"; readonly pageSize: number }
) =>
  Effect.gen(function*() {
    const rows: Array<Record<string, unknown>> = []
    let total = -1
    for (let page = 0;; page++) {
      const answer = yield* client.v2.v2Datasets.getData({ path: { id }, urlParams: { ...params, page } })
      total = answer.data.pagination.totalItems
      rows.push(...answer.data.items)
      if (answer.data.items.length < params.pageSize) break
    }
    return { rows, total }
  })

const emptyMaps = { filters: {}, formulas: {}, displayNames: {}, dataTypes: {} }

layer(serverLayer(), { excludeTestServices: true })("v2 dataset modifications through the typed client", (it) => {
  describe("functions and rules", () => {
    it.effect("list the functions formulas may call and the rules per column type", () =>
      Effect.gen(function*() {
        const viewer = yield* clientFor("acme-viewer")
        const functions = yield* viewer.v2.v2DatasetModifications.functions()
        const names = functions.data.items.map((f) => f.name)
        expect(names).toEqual(expect.arrayContaining(["CONCAT", "UPPER", "ROUND", "ABS", "IF", "COALESCE", "YEAR", "DATE_ADD"]))
        expect(functions.data.items.find((f) => f.name === "CONCAT")).toMatchObject({
          signature: "CONCAT(value, ...)",
          example: expect.stringContaining("CONCAT("),
          parameters: [{ name: "value", isOptional: false }]
        })
        const rules = yield* viewer.v2.v2DatasetModifications.rules()
        expect(Object.keys(rules.data.filterRules).sort()).toEqual(["datetime", "number", "string"])
        expect(rules.data.filterRules.number).toContain("greater_than")
        expect(rules.data.dataTypeRules.conversionsByPhysicalType.string!.map((c) => c.outputLogicalType)).toContain("datetime")
        expect(rules.data.dataTypeRules.outputFormats.scaleOptions.map((s) => s.id)).toContain("thousands")
      }))
  })

  describe("definition", () => {
    it.effect("starts empty with order and visibility covering every column", () =>
      Effect.gen(function*() {
        const { id, mods } = yield* acmeDataset()
        const answer = yield* mods.get({ path: { id } })
        expect(answer.data).toEqual({
          ...emptyMaps,
          order: ["id", "day", "amount", "qty", "region"],
          visibility: { id: true, day: true, amount: true, qty: true, region: true }
        })
      }))

    it.effect("PUT replaces the whole definition, GET returns it expanded, DELETE clears it", () =>
      Effect.gen(function*() {
        const { id, mods } = yield* acmeDataset()
        const put = yield* mods.set({
          path: { id },
          payload: {
            formulas: { revenue: "$amount * $qty" },
            displayNames: { revenue: "Revenue" },
            visibility: { qty: false },
            order: ["revenue"],
            filters: { amount: { logicalOperator: "AND", conditions: [{ type: "is_not_null" }] } },
            dataTypes: {
              revenue: { outputLogicalType: "currency", outputFormat: { type: "AUTO_DOLLAR", scale: "none" } }
            }
          },
          headers: {}
        })
        expect(put.data).toEqual({
          formulas: { revenue: "$amount * $qty" },
          displayNames: { revenue: "Revenue" },
          filters: { amount: { logicalOperator: "AND", conditions: [{ type: "is_not_null", value: null }] } },
          dataTypes: {
            revenue: { outputLogicalType: "currency", inputFormat: null, outputFormat: { type: "AUTO_DOLLAR", scale: "none" } }
          },
          order: ["revenue", "id", "day", "amount", "qty", "region"],
          visibility: { revenue: true, id: true, day: true, amount: true, qty: false, region: true }
        })
        expect((yield* mods.get({ path: { id } })).data).toEqual(put.data)

        // Full replacement: what the next PUT leaves out is cleared.
        const second = yield* mods.set({ path: { id }, payload: { displayNames: { amount: "Amount" } }, headers: {} })
        expect(second.data).toEqual({
          ...emptyMaps,
          displayNames: { amount: "Amount" },
          order: ["id", "day", "amount", "qty", "region"],
          visibility: { id: true, day: true, amount: true, qty: true, region: true }
        })

        const cleared = yield* mods.clear({ path: { id } })
        expect(cleared.data.displayNames).toEqual({})
        expect((yield* mods.get({ path: { id } })).data.displayNames).toEqual({})
      }))

    it.effect("an invalid formula is a 400 naming the column and the position; nothing is saved", () =>
      Effect.gen(function*() {
        const { id, mods } = yield* acmeDataset()
        yield* mods.set({ path: { id }, payload: { formulas: { kept: "$amount + 1" } }, headers: {} })
        const bad = yield* failure(mods.set({ path: { id }, payload: { formulas: { tax: "$amount * * 0.2" } }, headers: {} }))
        expect(bad).toMatchObject({ tag: "BadRequest", field: "formulas.tax", message: expect.stringContaining("position 11") })
        expect(yield* failure(mods.set({ path: { id }, payload: { formulas: { x: "$nope + 1" } }, headers: {} })))
          .toMatchObject({ tag: "BadRequest", field: "formulas.x", message: expect.stringContaining("unknown column") })
        expect(yield* failure(mods.set({ path: { id }, payload: { formulas: { a: "$b", b: "$a" } }, headers: {} })))
          .toMatchObject({ tag: "BadRequest", field: "formulas.a" })
        expect(
          yield* failure(mods.set({
            path: { id },
            payload: { filters: { region: { logicalOperator: "AND", conditions: [{ type: "greater_than", value: 1 }] } } },
            headers: {}
          }))
        ).toMatchObject({ tag: "BadRequest", field: "filters.region.conditions[0].type" })
        expect(yield* failure(mods.set({ path: { id }, payload: { visibility: { ghost: false } }, headers: {} })))
          .toMatchObject({ tag: "BadRequest", field: "visibility.ghost" })
        expect((yield* mods.get({ path: { id } })).data.formulas).toEqual({ kept: "$amount + 1" })
      }))

    it.effect("hostile formulas are refused without running anything", () =>
      Effect.gen(function*() {
        const { id, mods } = yield* acmeDataset()
        const hostile = [
          "constructor.constructor('return process')().exit(1)",
          "process.exit(1)",
          "$amount.constructor",
          "$constructor + 1",
          "(".repeat(10_000) + "1" + ")".repeat(10_000),
          "9".repeat(400),
          "1e999",
          `'${"x".repeat(5000)}'`,
          "1 + ".repeat(5000) + "1"
        ]
        for (const formula of hostile) {
          const refused = yield* failure(mods.set({ path: { id }, payload: { formulas: { evil: formula } }, headers: {} }))
          expect(refused, formula.slice(0, 40)).toMatchObject({ tag: "BadRequest", field: "formulas.evil" })
        }
        // The server is still there.
        expect((yield* mods.get({ path: { id } })).data.formulas).toEqual({})
      }))

    it.effect("roles and tenancy: a viewer reads but may not change; another organization gets 404", () =>
      Effect.gen(function*() {
        const { id } = yield* acmeDataset()
        const viewer = yield* clientFor("acme-viewer")
        expect((yield* viewer.v2.v2DatasetModifications.get({ path: { id } })).data.formulas).toEqual({})
        expect(
          yield* failure(viewer.v2.v2DatasetModifications.set({ path: { id }, payload: { formulas: { a: "1" } }, headers: {} }))
        ).toMatchObject({ tag: "Forbidden" })
        expect((yield* failure(viewer.v2.v2DatasetModifications.clear({ path: { id } }))).tag).toBe("Forbidden")
        // A preview saves nothing: a viewer may run one.
        const preview = yield* viewer.v2.v2DatasetModifications.preview({ path: { id }, payload: {}, urlParams: {} })
        expect(preview.data.items).toEqual([])
        const editor = yield* clientFor("acme-editor")
        expect((yield* editor.v2.v2DatasetModifications.set({ path: { id }, payload: {}, headers: {} })).data.formulas).toEqual({})
        const globex = yield* clientFor("globex-admin")
        expect((yield* failure(globex.v2.v2DatasetModifications.get({ path: { id } }))).tag).toBe("NotFound")
        expect((yield* failure(globex.v2.v2DatasetModifications.set({ path: { id }, payload: {}, headers: {} }))).tag).toBe(
          "NotFound"
        )
      }))

    it.effect("PUT with an Idempotency-Key replays its answer; another body with the key is a 422", () =>
      Effect.gen(function*() {
        const { id } = yield* acmeDataset()
        const put = (body: unknown) =>
          rawRequest(`/v2/datasets/${id}/modifications`, {
            method: "PUT",
            headers: { "x-api-key": "acme-admin", "content-type": "application/json", "idempotency-key": `mods-${id}` },
            body: JSON.stringify(body)
          })
        const first = yield* put({ formulas: { double: "$amount * 2" } })
        expect(first.status).toBe(200)
        const replay = yield* put({ formulas: { double: "$amount * 2" } })
        expect(replay.status).toBe(200)
        expect(replay.headers.get("idempotent-replayed")).toBe("true")
        expect(replay.body.data).toEqual(first.body.data)
        const other = yield* put({ formulas: { triple: "$amount * 3" } })
        expect(other.status).toBe(422)
      }))
  })

  describe("rows", () => {
    it.effect("GET data applies formulas, filters and visibility; paging and sorting stay exact", () =>
      Effect.gen(function*() {
        const source = orders(61)
        const { admin, id, mods } = yield* acmeDataset(source)
        yield* mods.set({
          path: { id },
          payload: {
            formulas: { revenue: "$amount * $qty", label: "CONCAT($region, '-', TEXT($id))" },
            filters: {
              revenue: { logicalOperator: "OR", conditions: [{ type: "greater_than", value: 100 }, { type: "is_null" }] },
              region: { logicalOperator: "AND", conditions: [{ type: "not_equals", value: "APAC" }] }
            },
            visibility: { qty: false, day: false }
          },
          headers: {}
        })
        // The same, computed here from what was ingested.
        const expected = source
          .map((o) => ({
            id: o.id,
            amount: o.amount,
            region: o.region,
            revenue: o.amount === null ? null : o.amount * o.qty,
            label: `${o.region}-${o.id}`
          }))
          .filter((r) => (r.revenue === null || r.revenue > 100) && r.region !== "APAC")
        expect(expected.length).toBeGreaterThan(10)

        const unsorted = yield* allRows(admin, id, { pageSize: 7 })
        expect(unsorted.total).toBe(expected.length)
        expect(unsorted.rows).toEqual(expected)

        // Sorted by a calculated column: numbers by value, missing last, ties in storage order.
        const byRevenue = (order: "asc" | "desc") =>
          [...expected].sort((a, b) => {
            if (a.revenue === b.revenue) return 0
            if (a.revenue === null) return 1
            if (b.revenue === null) return -1
            return (a.revenue - b.revenue) * (order === "asc" ? 1 : -1)
          })
        for (const sortOrder of ["asc", "desc"] as const) {
          const sorted = yield* allRows(admin, id, { pageSize: 5, sortBy: "revenue", sortOrder })
          expect(sorted.rows).toEqual(byRevenue(sortOrder))
        }

        // A hidden column may still be sorted by; it is not shown.
        const byQty = yield* allRows(admin, id, { pageSize: 50, sortBy: "qty" })
        expect(byQty.rows.map((r) => r.id)).toEqual(
          [...expected].sort((a, b) => source[a.id]!.qty - source[b.id]!.qty).map((r) => r.id)
        )
        const answer = yield* admin.v2.v2Datasets.getData({ path: { id }, urlParams: { pageSize: 1 } })
        expect(answer.data.schema.map((c) => c.id)).toEqual(["id", "amount", "region", "revenue", "label"])
        expect(
          yield* failure(admin.v2.v2Datasets.getData({ path: { id }, urlParams: { sortBy: "nope" } }))
        ).toMatchObject({ tag: "BadRequest", field: "sortBy" })
      }))

    it.effect("without filters the store pages; calculated columns are evaluated on the page", () =>
      Effect.gen(function*() {
        const source = orders(30)
        const { admin, id, mods } = yield* acmeDataset(source)
        yield* mods.set({ path: { id }, payload: { formulas: { double: "COALESCE($amount, 0) * 2" } }, headers: {} })
        const sorted = yield* allRows(admin, id, { pageSize: 4, sortBy: "amount", sortOrder: "desc" })
        expect(sorted.total).toBe(30)
        const amounts = sorted.rows.map((r) => r.amount as number | null)
        expect(amounts.filter((a) => a !== null)).toEqual(
          source.map((o) => o.amount).filter((a): a is number => a !== null).sort((a, b) => b - a)
        )
        expect(amounts.slice(-amounts.filter((a) => a === null).length)).toEqual(amounts.filter((a) => a === null))
        for (const row of sorted.rows) expect(row.double).toBe(((row.amount as number | null) ?? 0) * 2)
      }))

    it.effect("GET schema shows calculated and hidden columns with display names and order", () =>
      Effect.gen(function*() {
        const { admin, id, mods } = yield* acmeDataset()
        yield* mods.set({
          path: { id },
          payload: {
            formulas: { revenue: "$amount * $qty", month: "DATE_TRUNC($day, 'month')" },
            displayNames: { revenue: "Revenue", qty: "Quantity" },
            visibility: { qty: false },
            order: ["revenue", "month"],
            dataTypes: { id: { outputLogicalType: "string" } }
          },
          headers: {}
        })
        const schema = yield* admin.v2.v2Datasets.getSchema({ path: { id } })
        expect(schema.data.items).toEqual([
          { id: "revenue", displayName: "Revenue", dataType: "number", order: 0, visible: true },
          { id: "month", displayName: "month", dataType: "datetime", order: 1, visible: true },
          { id: "id", displayName: "id", dataType: "string", order: 2, visible: true },
          { id: "day", displayName: "day", dataType: "datetime", order: 3, visible: true },
          { id: "amount", displayName: "amount", dataType: "number", order: 4, visible: true },
          { id: "qty", displayName: "Quantity", dataType: "number", order: 5, visible: false },
          { id: "region", displayName: "region", dataType: "string", order: 6, visible: true }
        ])
        expect(schema.data.primaryKey).toEqual(["id"])
        // Column metadata shows the display names set here (it cannot set them itself).
        const columns = yield* admin.v2.v2DatasetSettings.getColumnMetadata({ path: { id } })
        expect(columns.data.items.map((c) => c.displayName)).toEqual(["id", "day", "amount", "Quantity", "region"])
      }))

    it.effect("preview shows at most 200 rows of an unsaved definition, sorted, with the kept count", () =>
      Effect.gen(function*() {
        const source = orders(260)
        const { admin, id, mods } = yield* acmeDataset(source)
        const definition = {
          formulas: { revenue: "$amount * $qty" },
          filters: { region: { logicalOperator: "OR" as const, conditions: [{ type: "in", value: ["EU", "US"] }] } }
        }
        const preview = yield* mods.preview({ path: { id }, payload: definition, urlParams: { sortBy: "id", sortOrder: "desc" } })
        const kept = source.filter((o) => o.region !== "APAC")
        expect(preview.data.pagination.totalItems).toBe(kept.length)
        expect(preview.data.items).toHaveLength(Math.min(200, kept.length))
        expect(preview.data.items[0]).toEqual({
          ...kept[kept.length - 1],
          revenue: kept[kept.length - 1]!.amount === null ? null : kept[kept.length - 1]!.amount! * kept[kept.length - 1]!.qty
        })
        expect(preview.data.schema.map((c) => c.id)).toContain("revenue")
        // Not saved.
        expect((yield* mods.get({ path: { id } })).data.formulas).toEqual({})
        expect((yield* admin.v2.v2Datasets.getData({ path: { id }, urlParams: { pageSize: 1 } })).data.pagination.totalItems)
          .toBe(260)
        expect(yield* failure(mods.preview({ path: { id }, payload: { formulas: { x: "$" } }, urlParams: {} })))
          .toMatchObject({ tag: "BadRequest", field: "formulas.x" })
        expect(yield* failure(mods.preview({ path: { id }, payload: {}, urlParams: { sortBy: "revenue" } })))
          .toMatchObject({ tag: "BadRequest", field: "sortBy" })
      }))

    it.effect("rows ingested after a PUT are read through the modifications", () =>
      Effect.gen(function*() {
        const { admin, id, mods } = yield* acmeDataset(orders(3))
        yield* mods.set({ path: { id }, payload: { formulas: { big: "IF($amount > 50, 'yes', 'no')" } }, headers: {} })
        const accepted = yield* admin.v2.v2Datasets.ingest({
          path: { id },
          payload: { records: [{ id: 100, day: "2026-02-01", amount: 99, qty: 1, region: "EU" }] },
          headers: {}
        })
        yield* pollUntil(
          admin.v2.v2Datasets.getIngestion({ path: { id, ingestionId: accepted.data.ingestionId } }),
          (i) => i.data.status === "success"
        )
        const rows = yield* admin.v2.v2Datasets.getData({ path: { id }, urlParams: { sortBy: "id", sortOrder: "desc", pageSize: 1 } })
        expect(rows.data.items).toEqual([{ id: 100, day: "2026-02-01", amount: 99, qty: 1, region: "EU", big: "yes" }])
      }))
  })
})
