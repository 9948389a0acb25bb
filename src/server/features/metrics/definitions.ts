/**
 * A metric's definition as it is stored: which column it measures and how, its own filters.
 * The metrics port's model holds these (`store.ts`); `features/analytics` computes metrics from
 * them, and neither the store nor this module imports the engine.
 *
 * @since 0.1.0
 */
import type { AggregationFunctions, FilterOperators } from "../../../api/v2/metrics.js"

/**
 * @since 0.1.0
 * @category models
 */
export type AggregationFunction = (typeof AggregationFunctions)[number]

/**
 * @since 0.1.0
 * @category models
 */
export type FilterOperator = (typeof FilterOperators)[number]

/**
 * @since 0.1.0
 * @category models
 */
export interface ColumnRef {
  readonly id: string
  readonly displayName: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface FilterCondition {
  readonly field: string
  readonly operator: FilterOperator
  readonly values: ReadonlyArray<string>
}

/**
 * @since 0.1.0
 * @category models
 */
export type LogicalOperator = "and" | "or"

/**
 * A metric's own filters: conditions joined by one logical operator.
 *
 * @since 0.1.0
 * @category models
 */
export interface FilterGroup {
  readonly logicalOperator: LogicalOperator
  readonly conditions: ReadonlyArray<FilterCondition>
}
