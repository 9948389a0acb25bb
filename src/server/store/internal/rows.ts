/**
 * How a batch of rows lands in a dataset: one core for every store.
 *
 * With a primary key, a row whose key is already stored (or came earlier in the same batch)
 * replaces it and counts as overwritten; without one, every row is appended. Sizes are the
 * rows' JSON bytes (counted by `rowJsonBytes` without building the text: stringifying every row
 * was 6% of an ingest request's CPU), so that the dataset's size follows its rows without
 * reading them again.
 *
 * @since 0.1.0
 */
import { primaryKeyOf, type Row, rowJsonBytes } from "../../../records.js"

/** @since 0.1.0 */
export interface RowWrite {
  /** The primary-key string; null for an appended row of a dataset without a primary key. */
  readonly key: string | null
  readonly row: Row
  readonly size: number
}

/** @since 0.1.0 */
export interface RowPlan {
  /** In arrival order of each key's first row; with a primary key, only the last row per key. */
  readonly writes: ReadonlyArray<RowWrite>
  readonly appended: number
  readonly overwritten: number
  /** Rows the dataset holds afterwards minus before. */
  readonly rowDelta: number
  readonly bytesDelta: number
}

/**
 * The primary-key strings of `rows` (empty without a primary key), for a store to look up
 * the sizes it holds before it plans.
 *
 * @since 0.1.0
 */
export const keysOf = (rows: ReadonlyArray<Row>, primaryKey: ReadonlyArray<string>): ReadonlyArray<string> =>
  primaryKey.length === 0 ? [] : rows.map((row) => primaryKeyOf(row, primaryKey))

/**
 * Plans the writes of `rows`. `storedSize` tells the size of the row stored under a key
 * (undefined when there is none).
 *
 * @since 0.1.0
 */
export const planRows = (
  rows: ReadonlyArray<Row>,
  primaryKey: ReadonlyArray<string>,
  storedSize: (key: string) => number | undefined
): RowPlan => {
  let appended = 0
  let overwritten = 0
  let bytesDelta = 0
  if (primaryKey.length === 0) {
    const writes = rows.map((row): RowWrite => {
      const size = rowJsonBytes(row)
      bytesDelta += size
      return { key: null, row, size }
    })
    return { writes, appended: rows.length, overwritten: 0, rowDelta: rows.length, bytesDelta }
  }
  // Each key's place in `writes`: a key keeps its first place, as a stored row keeps its place
  // when overwritten.
  const placeOf = new Map<string, number>()
  const writes: Array<RowWrite> = []
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    const key = primaryKeyOf(row, primaryKey)
    const size = rowJsonBytes(row)
    const place = placeOf.get(key)
    const previousSize = place !== undefined ? writes[place]!.size : storedSize(key)
    if (previousSize === undefined) {
      appended++
    } else {
      overwritten++
      bytesDelta -= previousSize
    }
    bytesDelta += size
    if (place === undefined) {
      placeOf.set(key, writes.length)
      writes.push({ key, row, size })
    } else {
      writes[place] = { key, row, size }
    }
  }
  return { writes, appended, overwritten, rowDelta: appended, bytesDelta }
}
