import { describe, expect, it, layer } from "@effect/vitest"
import { Chunk, Effect, Ref, Stream } from "effect"
import { allDatasets, allDataSources, allIngestions, allRows, hasNextPage, pages } from "../../src/client/index.js"
import { clientFor, pollUntil, serverLayer } from "../support/server.js"

/** A fake list of `total` numbers served `size` per page, counting the fetches. */
const fakeList = (total: number, size: number, claimedTotal = total) =>
  Effect.map(Ref.make<Array<number>>([]), (fetched) => ({
    fetched,
    fetchPage: (page: number) =>
      Effect.as(Ref.update(fetched, (pages) => [...pages, page]), {
        data: {
          items: Array.from({ length: total }, (_, i) => i).slice(page * size, (page + 1) * size),
          pagination: { page, pageSize: size, totalItems: claimedTotal }
        }
      })
  }))

describe("pages", () => {
  it.effect("walks every page in order and stops after the last", () =>
    Effect.gen(function*() {
      const list = yield* fakeList(7, 3)
      const items = yield* Stream.runCollect(pages(list.fetchPage))
      expect(Chunk.toArray(items)).toEqual([0, 1, 2, 3, 4, 5, 6])
      expect(yield* Ref.get(list.fetched)).toEqual([0, 1, 2])
    }))

  it.effect("an exact multiple of the page size needs no extra empty fetch", () =>
    Effect.gen(function*() {
      const list = yield* fakeList(6, 3)
      expect(Chunk.size(yield* Stream.runCollect(pages(list.fetchPage)))).toBe(6)
      expect(yield* Ref.get(list.fetched)).toEqual([0, 1])
    }))

  it.effect("an empty list is one fetch and no items", () =>
    Effect.gen(function*() {
      const list = yield* fakeList(0, 3)
      expect(Chunk.size(yield* Stream.runCollect(pages(list.fetchPage)))).toBe(0)
      expect(yield* Ref.get(list.fetched)).toEqual([0])
    }))

  it.effect("stops at an empty page even when totalItems claims more", () =>
    Effect.gen(function*() {
      const list = yield* fakeList(4, 2, 100)
      expect(Chunk.toArray(yield* Stream.runCollect(pages(list.fetchPage)))).toEqual([0, 1, 2, 3])
      expect(yield* Ref.get(list.fetched)).toEqual([0, 1, 2])
    }))

  it.effect("fetches lazily: taking 2 items fetches one page", () =>
    Effect.gen(function*() {
      const list = yield* fakeList(50, 10)
      expect(Chunk.toArray(yield* Stream.runCollect(Stream.take(pages(list.fetchPage), 2)))).toEqual([0, 1])
      expect(yield* Ref.get(list.fetched)).toEqual([0])
    }))

  it.effect("a failing page fails the stream", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Stream.runCollect(pages((page) => page === 0
          ? Effect.succeed({ data: { items: [1], pagination: { page, pageSize: 1, totalItems: 3 } } })
          : Effect.fail("boom" as const)))
      )
      expect(error).toBe("boom")
    }))

  it("hasNextPage", () => {
    expect(hasNextPage(0, 3, { pageSize: 3, totalItems: 7 })).toBe(true)
    expect(hasNextPage(2, 1, { pageSize: 3, totalItems: 7 })).toBe(false)
    expect(hasNextPage(0, 0, { pageSize: 3, totalItems: 7 })).toBe(false)
    expect(hasNextPage(0, 3, { pageSize: 0, totalItems: 7 })).toBe(false)
  })
})

layer(serverLayer(), { excludeTestServices: true })("list streams against the reference server", (it) => {
  it.effect("allDataSources walks 7 data sources 3 per page, in order", () =>
    Effect.gen(function*() {
      const admin = yield* clientFor("acme-admin")
      const names = ["g", "c", "a", "f", "e", "b", "d"].map((n) => `paged-${n}`)
      yield* Effect.forEach(names, (name) => admin.v2.v2DataSources.create({ payload: { name }, headers: {} }))
      const walked = yield* Stream.runCollect(
        allDataSources(admin, { search: "paged-", sortBy: "name", sortOrder: "asc", pageSize: 3 })
      )
      expect(Chunk.toArray(walked).map((d) => d.name)).toEqual([...names].sort())
      const descending = yield* Stream.runCollect(
        allDataSources(admin, { search: "paged-", sortBy: "name", sortOrder: "desc", pageSize: 2 })
      )
      expect(Chunk.toArray(descending).map((d) => d.name)).toEqual([...names].sort().reverse())
      // Default page size (100): one page holds them all.
      expect(Chunk.size(yield* Stream.runCollect(allDataSources(admin, { search: "paged-" })))).toBe(7)
      // Another organization sees none of them.
      const globex = yield* clientFor("globex-admin")
      expect(Chunk.size(yield* Stream.runCollect(allDataSources(globex, { search: "paged-" })))).toBe(0)
    }))

  it.effect("allDatasets of one data source, allIngestions and allRows of one dataset", () =>
    Effect.gen(function*() {
      const admin = yield* clientFor("acme-admin")
      const source = yield* admin.v2.v2DataSources.create({ payload: { name: "Walk" }, headers: {} })
      const created = yield* Effect.forEach([1, 2, 3, 4, 5], (n) =>
        admin.v2.v2Datasets.create({
          payload: {
            name: `set ${n}`,
            dataSourceId: source.data.id,
            schema: [{ id: "id", dataType: "number" }],
            primaryKey: ["id"]
          },
          headers: {}
        }))
      const datasets = yield* Stream.runCollect(
        allDatasets(admin, { dataSourceId: source.data.id, sortBy: "name", pageSize: 2 })
      )
      expect(Chunk.toArray(datasets).map((d) => d.id)).toEqual(created.map((c) => c.data.id))

      const datasetId = created[0]!.data.id
      const ingestionIds: Array<string> = []
      for (let batch = 0; batch < 5; batch++) {
        const records = Array.from({ length: 3 }, (_, i) => ({ id: batch * 3 + i }))
        const accepted = yield* admin.v2.v2Datasets.ingest({ path: { id: datasetId }, payload: { records }, headers: {} })
        ingestionIds.push(accepted.data.ingestionId)
      }
      const ingestions = yield* Stream.runCollect(allIngestions(admin, datasetId, { pageSize: 2 }))
      expect(new Set(Chunk.toArray(ingestions).map((i) => i.id))).toEqual(new Set(ingestionIds))
      expect(Chunk.size(ingestions)).toBe(5)

      yield* pollUntil(
        admin.v2.v2Datasets.get({ path: { id: datasetId } }),
        (d) => d.data.rowCount === 15 && d.data.ingestionInfo?.status === "success"
      )
      const rows = yield* Stream.runCollect(allRows(admin, datasetId, { pageSize: 4, sortBy: "id" }))
      expect(Chunk.toArray(rows).map((r) => r.id)).toEqual(Array.from({ length: 15 }, (_, i) => i))
    }))
})
