/**
 * Schema contracts: what a run does with a record that does not fit the dataset's schema, in
 * the manner of dlt's contracts, per what they apply to.
 *
 * - New columns (keys the dataset has no column for): `evolve` (the default, as the service
 *   itself does: sent as they are, the dataset gains the column within its 100-column limit),
 *   `freeze` (the record is a dead letter) or `discard_value` (the key is dropped, the rest sent).
 * - Values whose type does not fit their column: `freeze` (the default: a dead letter) or
 *   `discard_value` (the value is dropped, the rest sent when it is valid).
 *
 * A record that is not an object, or whose primary key is missing or would be dropped, is
 * always a dead letter; so is a column past the service's limit (it would refuse it).
 * `discard_row` (dlt's fourth mode) is not offered: a row taken out of a run is what a dead
 * letter is, and a dead letter can be replayed.
 *
 * The decision is a pure function of a record, the columns known so far and the contract
 * (`decide`); `validate` and `run` keep the columns known so far as a run goes on.
 *
 * @since 0.3.0
 */
import { Either } from "effect"
import { checkRecord, type CheckRecordOptions, type Column, defaultMaxColumns, type RecordProblem, RecordProblemCode, type Row } from "../records.js"
import { readContract } from "./internal/contractText.js"

/**
 * What a contract does with new columns.
 *
 * @since 0.3.0
 * @category models
 */
export type ColumnsMode = "evolve" | "freeze" | "discard_value"

/**
 * What a contract does with values whose type does not fit their column.
 *
 * @since 0.3.0
 * @category models
 */
export type DataTypeMode = "freeze" | "discard_value"

/**
 * A schema contract: one mode for new columns, one for type mismatches.
 *
 * @since 0.3.0
 * @category models
 */
export interface SchemaContract {
  readonly columns: ColumnsMode
  readonly dataType: DataTypeMode
}

/**
 * New columns evolve the dataset (as the service does with unknown keys); a value of the
 * wrong type makes a dead letter.
 *
 * @since 0.3.0
 * @category defaults
 */
export const defaultContract: SchemaContract = { columns: "evolve", dataType: "freeze" }

/**
 * Nothing changes the dataset and nothing is dropped: every misfit is a dead letter (what
 * typed jobs hold to: their output schema is their contract).
 *
 * @since 0.3.0
 * @category defaults
 */
export const frozenContract: SchemaContract = { columns: "freeze", dataType: "freeze" }

/**
 * Reads a contract from its text: one mode for both (`freeze`, `discard_value`; `evolve`
 * evolves columns and freezes types, which cannot evolve), or a comma list of
 * `columns=MODE` and `data_type=MODE` (a part left out keeps the default).
 *
 * @since 0.3.0
 * @category utils
 */
export const parse = (text: string): Either.Either<SchemaContract, string> => {
  const read = readContract(text)
  return "problem" in read ? Either.left(read.problem) : Either.right(read)
}

/**
 * A contract as its text (what `parse` reads back): `columns=evolve,data_type=freeze`.
 *
 * @since 0.3.0
 * @category utils
 */
export const format = (contract: SchemaContract): string => `columns=${contract.columns},data_type=${contract.dataType}`

/**
 * A value a contract dropped from a record: its key and why (`unknown_column`, or the type
 * problem: `invalid_type`, `invalid_datetime`, `unsupported_value`, `nesting_too_deep`).
 *
 * @since 0.3.0
 * @category models
 */
export interface Discarded {
  readonly field: string
  readonly code: string
}

/**
 * What a contract decides for one record: send it (perhaps with values dropped: a copy, the
 * input is never changed; perhaps adding columns, in key order), or make it a dead letter.
 *
 * @since 0.3.0
 * @category models
 */
export type Decision =
  | {
    readonly _tag: "Send"
    readonly row: Row
    /** Columns the record adds to the dataset (`evolve`), with the type its value implies. */
    readonly added: ReadonlyArray<Column>
    readonly discarded: ReadonlyArray<Discarded>
  }
  | { readonly _tag: "Dead"; readonly problem: RecordProblem }

/**
 * The dataset as a contract sees it: its columns so far, its primary key and its limit.
 *
 * @since 0.3.0
 * @category models
 */
export interface KnownSchema {
  readonly columns: ReadonlyArray<Column>
  readonly primaryKey: ReadonlyArray<string>
  /** The most columns the dataset may have (the service's limit, 100). */
  readonly maxColumns?: number | undefined
}

const typeProblems: ReadonlySet<string> = new Set([
  RecordProblemCode.InvalidType,
  RecordProblemCode.InvalidDatetime,
  RecordProblemCode.UnsupportedValue,
  RecordProblemCode.NestingTooDeep
])

const noDiscards: ReadonlyArray<Discarded> = []

// The check's options per schema object: made once, not for every record (a run checks
// millions against one schema, which changes only when a column is added).
const optionsCache = new WeakMap<KnownSchema, { readonly contract: SchemaContract; readonly options: CheckRecordOptions }>()

const optionsFor = (schema: KnownSchema, contract: SchemaContract): CheckRecordOptions => {
  const cached = optionsCache.get(schema)
  if (cached !== undefined && cached.contract === contract) return cached.options
  const options: CheckRecordOptions = {
    schema: schema.columns,
    primaryKey: schema.primaryKey,
    maxColumns: schema.maxColumns ?? defaultMaxColumns,
    addUnknownColumns: contract.columns === "evolve"
  }
  optionsCache.set(schema, { contract, options })
  return options
}

/**
 * Decides what happens to `record` under `contract`. A record that fits is sent as it is (the
 * same object), so the common case costs one check. A misfit the contract may drop is dropped
 * from a copy, and the copy checked again, until it fits or something cannot be dropped.
 *
 * @since 0.3.0
 * @category utils
 */
export const decide = (record: unknown, schema: KnownSchema, contract: SchemaContract): Decision => {
  const options = optionsFor(schema, contract)
  let current = record
  let discarded = noDiscards
  for (;;) {
    const check = checkRecord(current, options)
    if (check._tag === "Valid") return { _tag: "Send", row: check.row, added: check.newColumns, discarded }
    const { problem } = check
    const field = problem.field
    // Whole-record problems, and a key that is missing (or would be, once dropped), are never dropped.
    if (field === null || schema.primaryKey.includes(field)) return { _tag: "Dead", problem }
    const known = schema.columns.some((column) => column.id === field)
    const droppable = problem.code === RecordProblemCode.UnknownColumn
      ? contract.columns === "discard_value"
      : typeProblems.has(problem.code)
      // A new column's value that no column type takes: the columns' mode says what happens
      // to keys the dataset does not know, the types' mode to values of known columns.
      ? (known ? contract.dataType : contract.columns === "evolve" ? contract.dataType : contract.columns) === "discard_value"
      : false
    if (!droppable) return { _tag: "Dead", problem }
    const copy: Record<string, unknown> = { ...(current as Record<string, unknown>) }
    delete copy[field]
    current = copy
    discarded = [...discarded, { field, code: problem.code }]
  }
}

/**
 * The columns known after `added` (none: the same array, so checks keep their cached lookup).
 *
 * @since 0.3.0
 * @category utils
 */
export const evolve = (columns: ReadonlyArray<Column>, added: ReadonlyArray<Column>): ReadonlyArray<Column> =>
  added.length === 0 ? columns : [...columns, ...added]
