/**
 * How a batch of rows lands in a dataset: one core for every store.
 *
 * With a primary key, a row whose key is already stored (or came earlier in the same batch)
 * replaces it and counts as overwritten; without one, every row is appended. Sizes are the
 * rows' JSON bytes (counted by `rowJsonBytes` without building the text: stringifying every row
 * was 6% of an ingest request's CPU), so that the dataset's size follows its rows without
 * reading them again.
 *
 * The rows go straight into a {@link RowLedger}, which answers for what is stored and takes
 * each write at once, so a row written earlier in the batch is seen like a stored one. The
 * memory store's ledger is its own maps; the Postgres store's is the batch's writes over the
 * sizes it read. An earlier version planned the writes first (a map of each key's place and a
 * write object per row, then copied into the store): 26 µs per 100-row ingestion, against 12
 * µs written straight through (docs/decisions.md, "Reference server cost per ingest request").
 *
 * @since 0.1.0
 */
import { primaryKeyOf, type Row, rowJsonBytes } from "../../../records.js"

/**
 * Where rows are written, and what it already holds. Rows are held under a key of the ledger's
 * choosing, one per primary-key value: the Postgres store's is the JSON text it stores
 * (`primaryKeyOf`), the memory store's a one-column key's value itself where that cannot be
 * mistaken for another.
 *
 * @since 0.1.0
 * @category models
 */
export interface RowLedger<K = string> {
  /** The key of a row's primary-key value (`primaryKey` is not empty). */
  readonly keyOf: (row: Row, primaryKey: ReadonlyArray<string>) => K
  /** The size of the row held under a key (written earlier in this batch included). */
  readonly sizeOf: (key: K) => number | undefined
  /** Writes (or overwrites) the row of a key; an overwritten row keeps its place. */
  readonly put: (key: K, row: Row, size: number) => void
  /** Appends a row of a dataset without a primary key. */
  readonly append: (row: Row, size: number) => void
}

/**
 * What writing a batch changed.
 *
 * @since 0.1.0
 * @category models
 */
export interface RowCounts {
  readonly appended: number
  readonly overwritten: number
  /** Rows the dataset holds afterwards minus before. */
  readonly rowDelta: number
  readonly bytesDelta: number
}

/**
 * The primary-key strings of `rows` (empty without a primary key), for a store to look up
 * the sizes it holds before it writes.
 *
 * @since 0.1.0
 * @category utils
 */
export const keysOf = (rows: ReadonlyArray<Row>, primaryKey: ReadonlyArray<string>): ReadonlyArray<string> =>
  primaryKey.length === 0 ? [] : rows.map((row) => primaryKeyOf(row, primaryKey))

/**
 * Writes `rows` into `ledger` in order and counts what changed.
 *
 * @since 0.1.0
 * @category utils
 */
export const writeRows = <K>(rows: ReadonlyArray<Row>, primaryKey: ReadonlyArray<string>, ledger: RowLedger<K>): RowCounts => {
  let bytesDelta = 0
  if (primaryKey.length === 0) {
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!
      const size = rowJsonBytes(row)
      bytesDelta += size
      ledger.append(row, size)
    }
    return { appended: rows.length, overwritten: 0, rowDelta: rows.length, bytesDelta }
  }
  let appended = 0
  let overwritten = 0
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    const key = ledger.keyOf(row, primaryKey)
    const size = rowJsonBytes(row)
    const previous = ledger.sizeOf(key)
    if (previous === undefined) {
      appended++
    } else {
      overwritten++
      bytesDelta -= previous
    }
    bytesDelta += size
    ledger.put(key, row, size)
  }
  return { appended, overwritten, rowDelta: appended, bytesDelta }
}
