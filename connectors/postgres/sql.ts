/**
 * The SQL a backfill runs, built as text: the relation read (a table or a query), the keyset
 * condition of a partition, and the partition bounds. Pure: tested without a database.
 *
 * @since 0.1.0
 */

/**
 * A key as the source reads it: the text form of each key column.
 *
 * @since 0.1.0
 * @category models
 */
export type Key = ReadonlyArray<string>

/**
 * A partition of a generation: the rows whose key is above `lower` (none: from the first)
 * and at most `upper` (none: to the last).
 *
 * @since 0.1.0
 * @category models
 */
export interface PartitionRange {
  readonly index: number
  readonly lower: Key | null
  readonly upper: Key | null
}

/**
 * A quoted identifier.
 *
 * @since 0.1.0
 * @category utils
 */
export const quoteIdent = (name: string) => `"${name.replaceAll("\"", "\"\"")}"`

/**
 * A quoted, possibly schema-qualified, name (`schema.table`: each part quoted as it is).
 *
 * @since 0.1.0
 * @category utils
 */
export const quoteQualified = (name: string) => name.split(".").map(quoteIdent).join(".")

/**
 * What a backfill reads: a table (`schema.table` or `table`) or a query.
 *
 * @since 0.1.0
 * @category models
 */
export type Relation = { readonly _tag: "Table"; readonly name: string } | { readonly _tag: "Query"; readonly sql: string }

/** The alias the relation is read under. */
const alias = "tributary_rows"

/**
 * The relation as a `FROM` item.
 *
 * @since 0.1.0
 * @category utils
 */
export const fromItem = (relation: Relation) =>
  relation._tag === "Table"
    ? `${quoteQualified(relation.name)} AS ${alias}`
    : `(${relation.sql.trim().replace(/;\s*$/, "")}) AS ${alias}`

/**
 * A key or since column with its SQL type (to cast the text values compared with it).
 *
 * @since 0.1.0
 * @category models
 */
export interface TypedColumn {
  readonly name: string
  readonly sqlType: string
}

const column = (c: TypedColumn) => `${alias}.${quoteIdent(c.name)}`

/**
 * A `WHERE` clause and its parameters, built up condition by condition.
 */
class Conditions {
  readonly parts: Array<string> = []
  readonly values: Array<string | null> = []
  param(value: string | null, sqlType: string) {
    this.values.push(value)
    return `$${this.values.length}::${sqlType}`
  }
  /** `(k1, k2) op ($1, $2)`. */
  compare(key: ReadonlyArray<TypedColumn>, op: ">" | "<=", values: Key) {
    const left = key.map(column).join(", ")
    const right = key.map((k, i) => this.param(values[i]!, k.sqlType)).join(", ")
    this.parts.push(key.length === 1 ? `${left} ${op} ${right}` : `(${left}) ${op} (${right})`)
  }
  since(since: SinceWindow | undefined) {
    if (since === undefined) return
    if (since.after !== null) this.parts.push(`${column(since.column)} > ${this.param(since.after, since.column.sqlType)}`)
    // No high-water mark: the relation had no value in the column when planned, so nothing is read.
    this.parts.push(
      since.through === null ? "false" : `${column(since.column)} <= ${this.param(since.through, since.column.sqlType)}`
    )
  }
  get where() {
    return this.parts.length === 0 ? "" : ` WHERE ${this.parts.join(" AND ")}`
  }
}

/**
 * The since column and a generation's window over it.
 *
 * @since 0.1.0
 * @category models
 */
export interface SinceWindow {
  readonly column: TypedColumn
  readonly after: string | null
  readonly through: string | null
}

/**
 * The rows of a partition after `after` (its committed key; none: from its start), in key
 * order: keyset pagination read by one cursor.
 *
 * @since 0.1.0
 * @category utils
 */
export const partitionQuery = (
  relation: Relation,
  key: ReadonlyArray<TypedColumn>,
  range: PartitionRange,
  after: Key | undefined,
  since: SinceWindow | undefined
) => {
  const conditions = new Conditions()
  const lower = after ?? range.lower
  if (lower !== null) conditions.compare(key, ">", lower)
  if (range.upper !== null) conditions.compare(key, "<=", range.upper)
  conditions.since(since)
  return {
    text: `SELECT * FROM ${fromItem(relation)}${conditions.where} ORDER BY ${key.map(column).join(", ")}`,
    values: conditions.values
  }
}

/**
 * A query over the relation within the since window: `select` is the select list.
 *
 * @since 0.1.0
 * @category utils
 */
export const windowQuery = (relation: Relation, select: string, since: SinceWindow | undefined, extra?: string) => {
  const conditions = new Conditions()
  conditions.since(since)
  if (extra !== undefined) conditions.parts.push(extra)
  return { text: `SELECT ${select} FROM ${fromItem(relation)}${conditions.where}`, values: conditions.values }
}

/**
 * A key column's reference in a select list or condition.
 *
 * @since 0.1.0
 * @category utils
 */
export const keyColumn = column

/**
 * Integer key bounds that split `min..max` into `n` ranges of nearly equal width: the upper
 * bound of each range but the last (whose upper end is open, as is the first's lower end).
 *
 * @since 0.1.0
 * @category utils
 */
export const integerSplits = (min: bigint, max: bigint, n: number): Array<bigint> => {
  const width = max - min + 1n
  const splits: Array<bigint> = []
  for (let i = 1; i < n; i++) {
    const upper = min + (width * BigInt(i)) / BigInt(n) - 1n
    if (upper >= min && (splits.length === 0 || upper > splits[splits.length - 1]!)) splits.push(upper)
  }
  return splits
}

/**
 * Bounds taken from a sorted sample of keys: the keys at the quantiles `1/n .. (n-1)/n`,
 * repeated keys dropped (a small sample may give fewer ranges).
 *
 * @since 0.1.0
 * @category utils
 */
export const quantileSplits = (sortedSample: ReadonlyArray<Key>, n: number): Array<Key> => {
  const splits: Array<Key> = []
  for (let i = 1; i < n; i++) {
    const at = Math.floor((sortedSample.length * i) / n) - 1
    if (at < 0) continue
    const key = sortedSample[at]!
    if (splits.length > 0 && JSON.stringify(splits[splits.length - 1]) === JSON.stringify(key)) continue
    splits.push(key)
  }
  return splits
}

/**
 * Ranges between consecutive splits: `(none, s1], (s1, s2], …, (sN, none)`.
 *
 * @since 0.1.0
 * @category utils
 */
export const rangesOf = (splits: ReadonlyArray<Key>): Array<PartitionRange> =>
  Array.from({ length: splits.length + 1 }, (_, index) => ({
    index,
    lower: index === 0 ? null : splits[index - 1]!,
    upper: index === splits.length ? null : splits[index]!
  }))
