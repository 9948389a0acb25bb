/**
 * Dataset modifications: the pure core (formulas, filters, data type changes, display names,
 * order, visibility) that every reader of rows applies. No I/O here.
 *
 * @since 0.1.0
 */
export * from "../../core/definitions/modifications.js"
export * from "./formula.js"
export * from "./functions.js"
export * from "./modifications.js"
export * from "./rules.js"
export * from "./values.js"
