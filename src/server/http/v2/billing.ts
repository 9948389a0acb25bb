/**
 * v2 billing handlers: the seed's plan and invoices.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { CurrentPrincipal } from "../../../api/security.js"
import { present } from "../wireErrors.js"
import { respondPage } from "../paging.js"
import { serve } from "../handler.js"
import { respond } from "../envelope.js"
import { billing, invoices } from "../../features/organization/organization.js"

/** @since 0.1.0 */
export const V2BillingLive = HttpApiBuilder.group(TributaryApi, "v2Billing", (handlers) =>
  handlers
    .handle("get", () =>
      serve(billing, (plan) =>
          respond("success", {
            data: { planName: plan.name, planStatus: plan.status, billingPeriod: plan.billingPeriod, billingEmail: plan.billingEmail }
          })
        ))
    .handle("invoices", ({ urlParams }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => respondPage(urlParams, (slice) => invoices(p, slice), (invoice) => invoice)),
        present
      )))
