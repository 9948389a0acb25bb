/**
 * v2 dataset modification handlers: the definition of a dataset (read, replace, clear), its
 * preview on the stored rows, and the functions and rules a definition may use. Decode, call
 * one service, present.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import { formulaFunctions } from "../../features/modifications/functions.js"
import type { Plan } from "../../features/modifications/modifications.js"
import { modificationRules } from "../../features/modifications/rules.js"
import { change, changeOnce, datasetByNumber, serve } from "../handler.js"
import { respond } from "../envelope.js"
import {
  clearModifications,
  getModifications,
  previewModifications,
  setModifications
} from "../../features/modifications/service.js"
import { schemaColumns } from "./datasets.js"

const functionItems = formulaFunctions.map(({ description, example, name, parameters, signature }) => ({
  name,
  signature,
  description,
  example,
  parameters
}))

/** The expanded definition; a condition without a value shows `value: null`. */
const answer = (plan: Plan) =>
  respond("success", {
    data: {
      ...plan.expanded,
      filters: Object.fromEntries(
        Object.entries(plan.expanded.filters).map(([id, filter]) => [id, {
          logicalOperator: filter.logicalOperator,
          conditions: filter.conditions.map((c) => ({ type: c.type, value: c.value ?? null }))
        }])
      )
    }
  })

/**
 * @since 0.1.0
 * @category layers
 */
export const V2DatasetModificationsLive = HttpApiBuilder.group(TributaryApi, "v2DatasetModifications", (handlers) =>
  handlers
    .handle("functions", () => respond("success", { data: { items: functionItems } }))
    .handle("rules", () => respond("success", { data: modificationRules }))
    .handle("get", ({ path }) =>
      serve((p) => getModifications(p, path.id), answer))
    .handle("set", ({ headers, path, payload }) =>
      changeOnce(
        { key: headers["idempotency-key"], body: payload },
        (p) => setModifications(p, path.id, payload),
        ({ dataset }) => datasetByNumber(dataset),
        ({ plan }) => answer(plan)
      ))
    .handle("clear", ({ path }) =>
      change((p) => clearModifications(p, path.id), ({ dataset }) => datasetByNumber(dataset), ({ plan }) => answer(plan)))
    .handle("preview", ({ path, payload, urlParams }) =>
      serve((p) => previewModifications(p, path.id, payload, urlParams), ({ page, plan }) =>
          respond("success", {
            data: {
              items: page.items,
              pagination: { totalItems: page.totalItems },
              schema: schemaColumns(plan.columns)
            }
          })
        )))
