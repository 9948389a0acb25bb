/**
 * v2 billing handlers: the seed's plan and invoices.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import { serve, servePage } from "../handler.js"
import { respond } from "../envelope.js"
import { billing, invoices } from "../../features/organization/organization.js"

/**
 * @since 0.1.0
 * @category layers
 */
export const V2BillingLive = HttpApiBuilder.group(TributaryApi, "v2Billing", (handlers) =>
  handlers
    .handle("get", () =>
      serve(billing, (plan) =>
          respond("success", {
            data: { planName: plan.name, planStatus: plan.status, billingPeriod: plan.billingPeriod, billingEmail: plan.billingEmail }
          })
        ))
    .handle("invoices", ({ urlParams }) =>
      servePage(urlParams, (p, slice) => invoices(p, slice), (invoice) => invoice)))
