/**
 * Page numbers on the wire, slices in the store.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { DefaultPageSize, MaxPageSize } from "../../api/v2/common.js"
import { respond } from "./envelope.js"
import type { Page, Slice } from "../core/store/Store.js"

/** @since 0.1.0 */
export interface PageRequest {
  readonly page?: number | undefined
  readonly pageSize?: number | undefined
}

/** @since 0.1.0 */
export interface PageLimits {
  readonly defaultSize: number
  readonly max: number
  /** The number of the first page: 0 in v2, 1 in v1. */
  readonly first: number
}

/** v2 lists: pages from 0, 25 items by default, at most 100. @since 0.1.0 */
export const v2Lists: PageLimits = { defaultSize: DefaultPageSize, max: MaxPageSize, first: 0 }

/**
 * A page request as a store slice: `pageSize` clamped to the limit; a page past the end is
 * empty with the true total.
 *
 * @since 0.1.0
 */
export const sliceOf = (request: PageRequest, limits: PageLimits = v2Lists) => {
  const page = request.page ?? limits.first
  const pageSize = Math.min(request.pageSize ?? limits.defaultSize, limits.max)
  const slice: Slice = { offset: Math.max(0, page - limits.first) * pageSize, limit: pageSize }
  return { page, pageSize, slice }
}

/**
 * A store page with its page number, as v2 shows it.
 *
 * @since 0.1.0
 */
export const pageView = <A, B>(
  page: Page<A>,
  request: { readonly page: number; readonly pageSize: number },
  item: (a: A) => B
) => ({
  items: page.items.map(item),
  pagination: { page: request.page, pageSize: request.pageSize, totalItems: page.totalItems }
})

/**
 * A page of items held in memory (already searched and sorted), as v2 shows it.
 *
 * @since 0.1.0
 */
export const pageOfItems = <A>(items: ReadonlyArray<A>, request: PageRequest) => {
  const { page, pageSize, slice } = sliceOf(request)
  return { items: items.slice(slice.offset, slice.offset + slice.limit), pagination: { page, pageSize, totalItems: items.length } }
}

/**
 * A v2 list answer: the page `fetch` finds for the request's slice, each item shown by `item`.
 *
 * @since 0.1.0
 */
export const respondPage = <A, B, E, R>(
  request: PageRequest,
  fetch: (slice: Slice) => Effect.Effect<Page<A>, E, R>,
  item: (a: A) => B
) => {
  const { page, pageSize, slice } = sliceOf(request)
  return Effect.flatMap(fetch(slice), (found) => respond("success", { data: pageView(found, { page, pageSize }, item) }))
}
