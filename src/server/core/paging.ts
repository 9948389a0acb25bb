/**
 * Page numbers on the wire, slices in the store: what services make of a page request.
 *
 * @since 0.1.0
 */
import { DefaultPageSize, MaxPageSize } from "../../api/v2/common.js"
import type { Slice } from "./store/Store.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface PageRequest {
  readonly page?: number | undefined
  readonly pageSize?: number | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PageLimits {
  readonly defaultSize: number
  readonly max: number
  /** The number of the first page: 0 in v2, 1 in v1. */
  readonly first: number
}

/**
 * v2 lists: pages from 0, 25 items by default, at most 100.
 *
 * @since 0.1.0
 * @category defaults
 */
export const v2Lists: PageLimits = { defaultSize: DefaultPageSize, max: MaxPageSize, first: 0 }

/**
 * A page request as a store slice: `pageSize` clamped to the limit; a page past the end is
 * empty with the true total.
 *
 * @since 0.1.0
 * @category utils
 */
export const sliceOf = (request: PageRequest, limits: PageLimits = v2Lists) => {
  const page = request.page ?? limits.first
  const pageSize = Math.min(request.pageSize ?? limits.defaultSize, limits.max)
  const slice: Slice = { offset: Math.max(0, page - limits.first) * pageSize, limit: pageSize }
  return { page, pageSize, slice }
}

/**
 * A list request's sort as the stores take it: none unless a field was named, ascending unless
 * said otherwise.
 *
 * @since 0.2.0
 * @category utils
 */
export const sortOf = <F extends string>(request: { readonly sortBy?: F | undefined; readonly sortOrder?: "asc" | "desc" | undefined }) =>
  request.sortBy === undefined ? undefined : { by: request.sortBy, order: request.sortOrder ?? "asc" }

/**
 * A page of items held in memory (already searched and sorted), as v2 shows it.
 *
 * @since 0.1.0
 * @category utils
 */
export const pageOfItems = <A>(items: ReadonlyArray<A>, request: PageRequest) => {
  const { page, pageSize, slice } = sliceOf(request)
  return { items: items.slice(slice.offset, slice.offset + slice.limit), pagination: { page, pageSize, totalItems: items.length } }
}
