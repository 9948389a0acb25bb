/**
 * v2 dataset modification handlers: the definition of a dataset (read, replace, clear), its
 * preview on the stored rows, and the functions and rules a definition may use. Decode, call
 * one service, present.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { CurrentPrincipal } from "../../../api/security.js"
import { present } from "../wireErrors.js"
import { idempotent } from "../idempotency.js"
import { formulaFunctions } from "../../features/modifications/functions.js"
import type { Plan } from "../../features/modifications/modifications.js"
import { modificationRules } from "../../features/modifications/rules.js"
import { serve } from "../handler.js"
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

/** @since 0.1.0 */
export const V2DatasetModificationsLive = HttpApiBuilder.group(TributaryApi, "v2DatasetModifications", (handlers) =>
  handlers
    .handle("functions", () => respond("success", { data: { items: functionItems } }))
    .handle("rules", () => respond("success", { data: modificationRules }))
    .handle("get", ({ path }) =>
      serve((p) => getModifications(p, path.id), answer))
    .handle("set", ({ headers, path, payload }) =>
      Effect.flatMap(CurrentPrincipal, (principal) =>
        idempotent(
          headers["idempotency-key"],
          payload,
          setModifications(principal, path.id, payload).pipe(Effect.flatMap(answer))
        )).pipe(present))
    .handle("clear", ({ path }) =>
      serve((p) => clearModifications(p, path.id), answer))
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
