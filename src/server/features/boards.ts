/**
 * Boards: seeded per organization, read-only. A block's metrics name metrics of the
 * organization (by name or id) and are found when the board is read: a block shows the
 * metrics that exist and that the reader may see, and a metric's usages are the blocks that
 * show it.
 *
 * Every process started with the same seed numbers the boards and blocks the same way (in
 * seed order), so several processes sharing a store agree on the ids.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Principal } from "../../api/security.js"
import { NotFound } from "../core/errors.js"
import { pageOfItems, type PageRequest } from "../core/paging.js"
import type { Seed, SeedBoard } from "../seed.js"
import { matchesSearch, sortedBy } from "../core/store/order.js"
import { type SortOrder } from "../core/store/Store.js"
import { CatalogStore } from "../core/store/ports/catalog.js"
import { type Metric, MetricStore } from "./metrics/store.js"
import { SourceStore } from "../core/store/ports/sources.js"
import type { StoreError } from "../core/errors.js"
import { canSee } from "../core/permissions.js"
import { visibleMetric } from "./metrics.js"

type SeedBlockMetric = SeedBoard["blocks"][number]["metrics"][number]

/**
 * @since 0.1.0
 * @category models
 */
export interface Board {
  readonly id: number
  readonly name: string
  readonly tags: ReadonlyArray<string>
  readonly blocks: ReadonlyArray<{
    readonly id: number
    readonly name: string
    readonly visualizationType: string | null
    readonly metrics: ReadonlyArray<SeedBlockMetric>
  }>
}

/**
 * The seeded boards, by organization id.
 *
 * @since 0.1.0
 * @category services
 */
export class Boards extends Context.Tag("tributary/server/Boards")<Boards, {
  readonly ofOrganization: (organizationId: number) => Effect.Effect<ReadonlyArray<Board>, StoreError>
}>() {}

/**
 * The boards of a seed. Organization ids are looked up once, at the first read (the seed is
 * in the store by then).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (seed: Seed): Layer.Layer<Boards, never, CatalogStore> =>
  Layer.effect(
    Boards,
    Effect.gen(function*() {
      const store = yield* CatalogStore
      let boardIds = 0
      let blockIds = 0
      const boards = seed.organizations.map((org) => ({
        name: org.name,
        boards: (org.boards ?? []).map((board): Board => ({
          id: ++boardIds,
          name: board.name,
          tags: board.tags ?? [],
          blocks: board.blocks.map((block) => ({
            id: ++blockIds,
            name: block.name,
            visualizationType: block.visualizationType ?? null,
            metrics: block.metrics
          }))
        }))
      }))
      const byOrganization = yield* Effect.cached(
        Effect.map(
          Effect.forEach(boards, (org) => Effect.map(store.ensureOrganization(org.name), (o) => [o.id, org.boards] as const)),
          (entries) => new Map(entries)
        )
      )
      return {
        ofOrganization: (organizationId: number) => Effect.map(byOrganization, (map) => map.get(organizationId) ?? [])
      }
    })
  )

/** A block's metric as the reader may see it: by id, or the first by exact name. */
const resolve = (principal: Principal, ref: SeedBlockMetric) =>
  Effect.gen(function*() {
    if (ref.metric.includes("|")) {
      return yield* visibleMetric(principal, ref.metric).pipe(
        Effect.map(({ metric }) => Option.some(metric)),
        Effect.catchTag("NotFound", () => Effect.succeed(Option.none<Metric>()))
      )
    }
    const store = yield* MetricStore
    const page = yield* store.listMetrics({ viewer: principal, search: ref.metric, offset: 0, limit: Number.MAX_SAFE_INTEGER })
    return Option.fromNullable(page.items.find((m) => m.name === ref.metric))
  })

const defaultDateRange = { from: "30daysAgo", to: "today", granularity: "daily" as const }

/** The metrics a block shows, with their data source. */
const blockMetrics = (principal: Principal, block: Board["blocks"][number]) =>
  Effect.gen(function*() {
    const store = yield* SourceStore
    const shown = []
    for (const ref of block.metrics) {
      const metric = yield* resolve(principal, ref)
      if (Option.isNone(metric)) continue
      const m = metric.value
      const source = yield* store.dataSource(m.dataSourceId)
      const visibleSource = Option.filter(source, (s) => canSee(principal, s))
      shown.push({
        id: m.id,
        name: m.name,
        sourceId: m.dataSourceId,
        sourceName: Option.match(visibleSource, { onNone: () => null, onSome: (s) => s.name }),
        integrationKey: Option.match(visibleSource, { onNone: () => null, onSome: (s) => s.key }),
        dimensions: ref.dimensions === undefined ? m.dimensions : m.dimensions.filter((d) => ref.dimensions!.includes(d.id)),
        dateRange: ref.dateRange ?? defaultDateRange,
        appliedFilters: ref.appliedFilters ?? null
      })
    }
    return shown
  })

/**
 * @since 0.1.0
 * @category models
 */
export interface BoardListParams extends PageRequest {
  readonly search?: string | undefined
  readonly sortBy?: "name" | undefined
  readonly sortOrder?: SortOrder | undefined
}

/**
 * A page of the organization's boards, with the integrations their metrics come from.
 *
 * @since 0.1.0
 * @category utils
 */
export const listBoards = (principal: Principal, params: BoardListParams) =>
  Effect.gen(function*() {
    const all = yield* Effect.flatMap(Boards, (b) => b.ofOrganization(principal.organizationId))
    const matching = all.filter((b) => matchesSearch(b.name, params.search))
    const sorted = params.sortBy === undefined ? matching : sortedBy(matching, (b) => b.name, params.sortOrder ?? "asc")
    const page = pageOfItems(sorted, params)
    const items = yield* Effect.forEach(page.items, (board) =>
      Effect.map(Effect.forEach(board.blocks, (block) => blockMetrics(principal, block)), (blocks) => ({
        id: board.id,
        name: board.name,
        tags: board.tags,
        integrationKeys: [...new Set(blocks.flat().flatMap((m) => m.integrationKey === null ? [] : [m.integrationKey]))]
      })))
    return { ...page, items }
  })

/**
 * The blocks of a board of the principal's organization and the metrics they show.
 *
 * @since 0.1.0
 * @category utils
 */
export const boardMetrics = (principal: Principal, id: number) =>
  Effect.gen(function*() {
    const all = yield* Effect.flatMap(Boards, (b) => b.ofOrganization(principal.organizationId))
    const board = all.find((b) => b.id === id)
    if (board === undefined) return yield* new NotFound({ resource: "Board", id })
    const datablocks = yield* Effect.forEach(board.blocks, (block) =>
      Effect.map(blockMetrics(principal, block), (metrics) => ({
        id: block.id,
        name: block.name,
        visualizationType: block.visualizationType,
        metrics: metrics.map(({ integrationKey: _, ...m }) => m)
      })))
    return { datablocks }
  })

/**
 * Where a metric is shown: the board blocks of its organization that show it.
 *
 * @since 0.1.0
 * @category utils
 */
export const metricUsages = (principal: Principal, id: string) =>
  Effect.gen(function*() {
    const { metric } = yield* visibleMetric(principal, id)
    const all = yield* Effect.flatMap(Boards, (b) => b.ofOrganization(principal.organizationId))
    const usages = []
    for (const board of all) {
      for (const block of board.blocks) {
        for (const ref of block.metrics) {
          const found = yield* resolve(principal, ref)
          if (Option.isSome(found) && found.value.id === metric.id) {
            usages.push({ referenceType: "board" as const, referenceId: String(board.id), referenceName: board.name, datablockName: block.name })
            break
          }
        }
      }
    }
    return usages
  })
