/**
 * The authenticated organization: `GET /v2/organization/timezones`.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { TimezoneEntry } from "../common.js"
import { DataResponse } from "./common.js"

/** All time zones at once, no paging. @since 0.1.0 */
export const TimezonesResponse = DataResponse(
  Schema.Struct({ items: Schema.Array(TimezoneEntry) }),
  "V2TimezonesResponse"
)

/** @since 0.1.0 */
export class V2Organization extends HttpApiGroup.make("v2Organization")
  .add(HttpApiEndpoint.get("listTimezones", "/v2/organization/timezones").addSuccess(TimezonesResponse))
  .annotate(OpenApi.Title, "v2 organization")
{}
