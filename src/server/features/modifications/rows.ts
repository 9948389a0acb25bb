/**
 * Reading a dataset's rows through its modifications: the one place where a reader (`GET data`,
 * the modification preview, metrics) gets rows, so that all of them see the same calculated
 * columns, filters and hidden columns.
 *
 * Paging and sorting stay exact: when the plan drops no rows and the sort column is stored
 * unchanged, the store sorts and pages as before and only the page is evaluated. Otherwise
 * every row is read from the store in storage order ({@link scanChunk} at a time), evaluated and
 * filtered here, the kept rows sorted here with the stores' order, and the page cut from them:
 * the cost of such a page is a read of the whole dataset (and memory for the kept rows).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { Principal } from "../../../api/security.js"
import { visibleDataset } from "../../core/catalog/datasets.js"
import { type PageRequest, sliceOf } from "../../core/paging.js"
import { InvalidField } from "../../core/errors.js"
import type { Row } from "../../../records.js"
import { applyModifications, compile, type Plan, sortKey, type ViewColumn } from "./modifications.js"
import { noModifications } from "../../core/definitions/modifications.js"
import { type Dataset, type DatasetRef, type Page, type SortOrder } from "../../core/store/Store.js"
import { IngestionStore } from "../../core/store/ports/ingestions.js"
import { sortedBy } from "../../core/store/order.js"

/**
 * Rows read per store call when every row must be evaluated.
 *
 * @since 0.1.0
 * @category defaults
 */
export const scanChunk = 5000

/**
 * The plan of a dataset's stored modifications. A stored definition was valid when it was
 * saved; should the schema have changed under it beyond what `applyModifications` repairs,
 * the rows are shown unmodified rather than not at all.
 *
 * @since 0.1.0
 * @category utils
 */
export const planOf = (dataset: Pick<Dataset, "schema" | "modifications">): Plan => {
  const applied = applyModifications(dataset.schema, dataset.modifications)
  if (applied._tag === "Plan") return applied.plan
  const plain = compile(dataset.schema, noModifications)
  if (plain._tag === "Plan") return plain.plan
  throw new Error("a schema without modifications always compiles")
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ModifiedRowQuery {
  readonly offset: number
  readonly limit: number
  readonly sort?: { readonly column: ViewColumn; readonly order: SortOrder } | undefined
}

/**
 * A page of a dataset's rows as `plan` shows them (visible columns only), and how many rows it
 * keeps in all.
 *
 * @since 0.1.0
 * @category utils
 */
export const modifiedRows = (dataset: Dataset, plan: Plan, query: ModifiedRowQuery) =>
  Effect.gen(function*() {
    const store = yield* IngestionStore
    const sort = query.sort
    const stored = sort === undefined ? undefined : dataset.schema.find((c) => c.id === sort.column.id)
    const storeSorts = sort === undefined || (stored !== undefined && stored.dataType === sort.column.dataType)
    if (!plan.filters && storeSorts) {
      const page = yield* store.rows(dataset.id, {
        offset: query.offset,
        limit: query.limit,
        sort: sort === undefined || stored === undefined ? undefined : { column: stored, order: sort.order }
      })
      return { items: page.items.map((row) => plan.visible(plan.evaluate(row))), totalItems: page.totalItems } satisfies Page<Row>
    }
    const kept = yield* evaluatedRows(dataset, plan)
    const ordered = sort === undefined
      ? kept
      : sortedBy(kept, (row) => sortKey(row[sort.column.id], sort.column.dataType), sort.order)
    return {
      items: ordered.slice(query.offset, query.offset + query.limit).map(plan.visible),
      totalItems: kept.length
    } satisfies Page<Row>
  })

/**
 * Every row the plan keeps, evaluated (hidden and calculated columns included), in storage
 * order. Reads the whole dataset: for readers that aggregate (metrics) or sort computed values.
 *
 * @since 0.1.0
 * @category utils
 */
export const evaluatedRows = (dataset: Dataset, plan: Plan) =>
  Effect.gen(function*() {
    const store = yield* IngestionStore
    const kept: Array<Row> = []
    for (let offset = 0;; offset += scanChunk) {
      const page = yield* store.rows(dataset.id, { offset, limit: scanChunk })
      for (const row of page.items) {
        const evaluated = plan.evaluate(row)
        if (plan.keep(evaluated)) kept.push(evaluated)
      }
      if (page.items.length < scanChunk) break
    }
    return kept
  })

/**
 * The sort column of a rows request: a column of the view (stored or calculated), else a 400.
 *
 * @since 0.1.0
 * @category utils
 */
export const sortOf = (plan: Plan, sortBy: string | undefined, sortOrder: SortOrder | undefined) => {
  if (sortBy === undefined) return Effect.succeed(undefined)
  const column = plan.column(sortBy)
  return column === undefined
    ? Effect.fail(new InvalidField({ field: "sortBy", message: `column "${sortBy.slice(0, 100)}" is not in the dataset schema` }))
    : Effect.succeed({ column, order: sortOrder ?? "asc" })
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RowParams extends PageRequest {
  readonly sortBy?: string | undefined
  readonly sortOrder?: SortOrder | undefined
}

/** Rows pages: from 0, 200 rows by default, at most 1000, as on the service's row endpoints. */
const rowPages = { defaultSize: 200, max: 1000, first: 0 }

/**
 * A page of a visible dataset's rows as its modifications show them (calculated columns,
 * filters, hidden columns left out), sorted by a column of the view if asked.
 *
 * @since 0.1.0
 * @category utils
 */
export const datasetRows = (principal: Principal, id: DatasetRef, params: RowParams) =>
  Effect.gen(function*() {
    const dataset = yield* visibleDataset(principal, id)
    const plan = planOf(dataset)
    const sort = yield* sortOf(plan, params.sortBy, params.sortOrder)
    const { page, pageSize, slice } = sliceOf(params, rowPages)
    const found = yield* modifiedRows(dataset, plan, { ...slice, sort })
    return { dataset, plan, page, pageSize, found }
  })
