/**
 * v2 list mechanics: search, sort and pages.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { DefaultPageSize, MaxPageSize } from "../api/v2/common.js"

/**
 * One page of `items`: `page` from 0 (default 0), `pageSize` default 25 and clamped to
 * `max`; a page past the end is empty with the true `totalItems`.
 *
 * @since 0.1.0
 */
export const pageOf = <A>(
  items: ReadonlyArray<A>,
  params: { readonly page?: number | undefined; readonly pageSize?: number | undefined },
  limits: { readonly defaultSize: number; readonly max: number } = { defaultSize: DefaultPageSize, max: MaxPageSize }
) => {
  const page = params.page ?? 0
  const pageSize = Math.min(params.pageSize ?? limits.defaultSize, limits.max)
  return {
    items: items.slice(page * pageSize, (page + 1) * pageSize),
    pagination: { page, pageSize, totalItems: items.length }
  }
}

/**
 * Sorts by a field (strings compare case-insensitively, nulls last), ascending unless told.
 *
 * @since 0.1.0
 */
export const sortedBy = <A>(
  items: ReadonlyArray<A>,
  value: ((a: A) => string | number | null) | undefined,
  order: "asc" | "desc" | undefined
): ReadonlyArray<A> => {
  if (value === undefined) return items
  const direction = order === "desc" ? -1 : 1
  return [...items].sort((a, b) => {
    const x = value(a)
    const y = value(b)
    if (x === y) return 0
    if (x === null) return 1
    if (y === null) return -1
    const compared = typeof x === "string" && typeof y === "string"
      ? x.localeCompare(y, undefined, { sensitivity: "base" })
      : x < y ? -1 : 1
    return compared * direction
  })
}

/**
 * Case-insensitive substring match of `search` in the name (an absent search matches all).
 *
 * @since 0.1.0
 */
export const matchesSearch = (name: string, search: string | undefined): boolean =>
  search === undefined || name.toLowerCase().includes(search.toLowerCase())

/**
 * A v2 list: the entities whose name matches `search`, shown as items, sorted by an item
 * field, one page of them.
 *
 * @since 0.1.0
 */
export const listPage = <A extends { readonly name: string }, K extends string, I extends Record<K, string | number | null>, E, R>(
  entities: ReadonlyArray<A>,
  params: {
    readonly search?: string | undefined
    readonly sortBy?: K | undefined
    readonly sortOrder?: "asc" | "desc" | undefined
    readonly page?: number | undefined
    readonly pageSize?: number | undefined
  },
  toItem: (entity: A) => Effect.Effect<I, E, R>
) =>
  Effect.map(
    Effect.forEach(entities.filter((entity) => matchesSearch(entity.name, params.search)), toItem),
    (items) => {
      const sortBy = params.sortBy
      return pageOf(sortedBy(items, sortBy === undefined ? undefined : (item) => item[sortBy], params.sortOrder), params)
    }
  )
