/**
 * v2 integration handlers: the catalog.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { present } from "../wireErrors.js"
import { respond } from "../envelope.js"
import { getIntegration, listIntegrations } from "../../features/integrations.js"

/** @since 0.1.0 */
export const V2IntegrationsLive = HttpApiBuilder.group(TributaryApi, "v2Integrations", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      listIntegrations(urlParams).pipe(Effect.flatMap((data) => respond("success", { data })), present))
    .handle("get", ({ path }) =>
      getIntegration(path.id).pipe(Effect.flatMap((data) => respond("success", { data })), present)))
