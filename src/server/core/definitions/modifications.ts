/**
 * A dataset's modifications as they are stored: the definitions (filters, formulas, display
 * names, data type changes, order, visibility), not their engine. The model and the stores
 * hold these; `features/modifications` checks and applies them.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 @category models */
export interface FilterCondition {
  readonly type: string
  readonly value?: unknown
}

/** @since 0.1.0 @category models */
export interface ColumnFilter {
  readonly logicalOperator: "AND" | "OR"
  readonly conditions: ReadonlyArray<FilterCondition>
}

/** @since 0.1.0 @category models */
export interface DataTypeChange {
  readonly outputLogicalType: string
  readonly inputFormat: string | null
  readonly outputFormat: { readonly type: string; readonly scale: string | null } | null
}

/**
 * A modification definition as stored: every map present (empty when unset); `order` may list
 * only some columns and `visibility` only the hidden or shown ones — the rest take their
 * defaults when the definition is applied, so columns added by later ingestions fit in.
 *
 * @since 0.1.0
 * @category models
 */
export interface Modifications {
  readonly filters: Readonly<Record<string, ColumnFilter>>
  readonly formulas: Readonly<Record<string, string>>
  readonly displayNames: Readonly<Record<string, string>>
  readonly dataTypes: Readonly<Record<string, DataTypeChange>>
  readonly order: ReadonlyArray<string>
  readonly visibility: Readonly<Record<string, boolean>>
}

/** @since 0.1.0 @category models */
export const noModifications: Modifications = {
  filters: {},
  formulas: {},
  displayNames: {},
  dataTypes: {},
  order: [],
  visibility: {}
}
