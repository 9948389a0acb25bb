/**
 * Dataset modifications: read, replace, clear and preview a dataset's definition. Reads need
 * the dataset to be visible (404); replacing and clearing need the editor role (403). A
 * definition is compiled against the dataset's schema before it is stored, so an invalid one
 * is a 400 naming its field (a formula error with its position) and nothing is saved.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../../api/security.js"
import { InvalidField, NotFound } from "../../core/errors.js"
import { compile } from "./modifications.js"
import type { Modifications } from "../../core/definitions/modifications.js"
import { type DatasetRef, type SortOrder } from "../../core/store/Store.js"
import { SourceStore } from "../../core/store/ports/sources.js"
import { editableDataset, visibleDataset } from "../../core/catalog/datasets.js"
import { modifiedRows, planOf, sortOf } from "./rows.js"

/**
 * A data type change as a request carries it: formats optional.
 *
 * @since 0.1.0
 * @category models
 */
export interface DataTypeInput {
  readonly outputLogicalType: string
  readonly inputFormat?: string | null | undefined
  readonly outputFormat?: { readonly type: string; readonly scale?: string | null | undefined } | null | undefined
}

/**
 * A definition as a request carries it: every key optional (left out: cleared).
 *
 * @since 0.1.0
 * @category models
 */
export interface ModificationsInput {
  readonly filters?: Modifications["filters"] | undefined
  readonly formulas?: Modifications["formulas"] | undefined
  readonly displayNames?: Modifications["displayNames"] | undefined
  readonly dataTypes?: Readonly<Record<string, DataTypeInput>> | undefined
  readonly order?: Modifications["order"] | undefined
  readonly visibility?: Modifications["visibility"] | undefined
}

/** Fills what a request left out with "none" (a condition's value, a format: null). */
const complete = (input: ModificationsInput): Modifications => ({
  filters: Object.fromEntries(
    Object.entries(input.filters ?? {}).map(([id, f]) => [id, {
      logicalOperator: f.logicalOperator,
      conditions: f.conditions.map((c) => ({ type: c.type, value: c.value ?? null }))
    }])
  ),
  formulas: input.formulas ?? {},
  displayNames: input.displayNames ?? {},
  dataTypes: Object.fromEntries(
    Object.entries(input.dataTypes ?? {}).map(([id, d]) => [id, {
      outputLogicalType: d.outputLogicalType,
      inputFormat: d.inputFormat ?? null,
      outputFormat: d.outputFormat === undefined || d.outputFormat === null
        ? null
        : { type: d.outputFormat.type, scale: d.outputFormat.scale ?? null }
    }])
  ),
  order: input.order ?? [],
  visibility: input.visibility ?? {}
})

/** The plan of a definition on the dataset's schema, or the first problem as a 400. */
const compiled = (schema: Parameters<typeof compile>[0], definition: Modifications) => {
  const result = compile(schema, definition)
  if (result._tag === "Plan") return Effect.succeed(result.plan)
  const [first] = result.errors
  const more = result.errors.length > 1 ? ` (and ${result.errors.length - 1} more problem${result.errors.length > 2 ? "s" : ""})` : ""
  return Effect.fail(new InvalidField({ field: first!.field, message: `${first!.message}${more}` }))
}

/**
 * The dataset's modifications, expanded (`order` and `visibility` cover every column).
 *
 * @since 0.1.0
 * @category utils
 */
export const getModifications = (principal: Principal, id: DatasetRef) =>
  Effect.map(visibleDataset(principal, id), (dataset) => planOf(dataset))

const store = (id: string, modifications: Modifications) =>
  Effect.flatMap(SourceStore, (s) => s.updateDataset(id, { modifications })).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new NotFound({ resource: "Dataset", id })),
      onSome: (dataset) => Effect.succeed(planOf(dataset))
    }))
  )

/**
 * Replaces the dataset's modifications with `input` (keys left out are cleared).
 *
 * @since 0.1.0
 * @category utils
 */
export const setModifications = (principal: Principal, id: DatasetRef, input: ModificationsInput) =>
  Effect.gen(function*() {
    const dataset = yield* editableDataset(principal, id, "change dataset modifications")
    const definition = complete(input)
    const plan = yield* compiled(dataset.schema, definition)
    // The order is stored in full: the default order of calculated columns follows the keys of
    // `formulas`, which a Postgres jsonb document does not keep in the order they were sent.
    return { dataset, plan: yield* store(dataset.id, { ...definition, order: plan.expanded.order }) }
  })

/**
 * Removes every modification of the dataset.
 *
 * @since 0.1.0
 * @category utils
 */
export const clearModifications = (principal: Principal, id: DatasetRef) =>
  Effect.flatMap(
    editableDataset(principal, id, "change dataset modifications"),
    (dataset) => Effect.map(store(dataset.id, complete({})), (plan) => ({ dataset, plan }))
  )

/**
 * Preview answers carry at most this many rows.
 *
 * @since 0.1.0
 * @category defaults
 */
export const PreviewRows = 200

/**
 * The first rows as `input` would show them, without saving it: any principal who sees the
 * dataset may preview.
 *
 * @since 0.1.0
 * @category utils
 */
export const previewModifications = (
  principal: Principal,
  id: DatasetRef,
  input: ModificationsInput,
  params: { readonly sortBy?: string | undefined; readonly sortOrder?: SortOrder | undefined }
) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, id)
    const plan = yield* compiled(dataset.schema, complete(input))
    const sort = yield* sortOf(plan, params.sortBy, params.sortOrder)
    const page = yield* modifiedRows(dataset, plan, { offset: 0, limit: PreviewRows, sort })
    return { plan, page }
  })
