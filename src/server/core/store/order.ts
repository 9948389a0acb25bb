/**
 * The order of sorted lists, for stores that sort in memory. The Postgres store sorts the
 * same way in SQL: strings by an ICU collation (case-insensitive first), missing values last in
 * both directions, ties in storage order.
 *
 * @since 0.1.0
 */
import type { SortOrder } from "./Store.js"

const collator = new Intl.Collator(undefined, { sensitivity: "base" })

/**
 * Sorts by a value (strings case-insensitively, numbers by value, nulls last); stable.
 *
 * @since 0.1.0
 * @category utils
 */
export const sortedBy = <A>(
  items: ReadonlyArray<A>,
  value: (a: A) => string | number | null,
  order: SortOrder
): ReadonlyArray<A> => {
  const direction = order === "desc" ? -1 : 1
  return [...items].sort((a, b) => {
    const x = value(a)
    const y = value(b)
    if (x === y) return 0
    if (x === null) return 1
    if (y === null) return -1
    const compared = typeof x === "string" && typeof y === "string" ? collator.compare(x, y) : x < y ? -1 : 1
    return compared * direction
  })
}

/**
 * Case-insensitive substring match of `search` in the name (an absent search matches all).
 *
 * @since 0.1.0
 * @category utils
 */
export const matchesSearch = (name: string, search: string | undefined): boolean =>
  search === undefined || name.toLowerCase().includes(search.toLowerCase())
