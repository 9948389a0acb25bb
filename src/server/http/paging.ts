/**
 * Pages as v2 answers show them (the slicing of page requests is `core/paging.ts`).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { type PageRequest, sliceOf } from "../core/paging.js"
import { respond } from "./envelope.js"
import type { Page, Slice } from "../core/store/Store.js"

/**
 * A store page with its page number, as v2 shows it.
 *
 * @since 0.1.0
 * @category utils
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
 * A v2 list answer: the page `fetch` finds for the request's slice, each item shown by `item`.
 *
 * @since 0.1.0
 * @category utils
 */
export const respondPage = <A, B, E, R>(
  request: PageRequest,
  fetch: (slice: Slice) => Effect.Effect<Page<A>, E, R>,
  item: (a: A) => B
) => {
  const { page, pageSize, slice } = sliceOf(request)
  return Effect.flatMap(fetch(slice), (found) => respond("success", { data: pageView(found, { page, pageSize }, item) }))
}
