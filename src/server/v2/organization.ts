/**
 * v2 organization handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../api/index.js"
import { timezones } from "../../timezones.js"
import { respond } from "../request.js"

/** @since 0.1.0 */
export const V2OrganizationLive = HttpApiBuilder.group(TributaryApi, "v2Organization", (handlers) =>
  handlers.handle("listTimezones", () => respond("success", { data: { items: timezones() } })))
