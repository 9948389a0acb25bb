/**
 * v2 billing of the organization: its plan and invoices, from the server's seed.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Forbidden } from "../errors.js"
import { DataResponse, PageParams, PageResponse } from "./common.js"

/**
 * @since 0.1.0
 * @category models
 */
export const Billing = Schema.Struct({
  planName: Schema.String,
  planStatus: Schema.String,
  billingPeriod: Schema.NullOr(Schema.Literal("monthly", "quarterly", "yearly")),
  billingEmail: Schema.NullOr(Schema.String)
}).annotations({ identifier: "BillingResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const Invoice = Schema.Struct({
  invoiceId: Schema.NullOr(Schema.String),
  date: Schema.NullOr(Schema.String),
  /** USD. */
  amount: Schema.Number,
  status: Schema.String,
  receiptNumber: Schema.NullOr(Schema.String),
  downloadUrl: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Invoice" })

/**
 * @since 0.1.0
 * @category api
 */
export class V2Billing extends HttpApiGroup.make("v2Billing")
  .add(HttpApiEndpoint.get("get", "/v2/billing").addSuccess(DataResponse(Billing, "BillingDetailResponse")).addError(Forbidden))
  .add(
    HttpApiEndpoint.get("invoices", "/v2/billing/invoices")
      .setUrlParams(PageParams)
      .addSuccess(PageResponse(Invoice, "InvoicePage"))
      .addError(Forbidden)
  )
  .annotate(OpenApi.Title, "v2 billing")
{}
