/**
 * v2 integration handlers: the catalog.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import { serve } from "../handler.js"
import { respond } from "../envelope.js"
import { getIntegration, listIntegrations } from "../../features/integrations.js"

/**
 * @since 0.1.0
 * @category layers
 */
export const V2IntegrationsLive = HttpApiBuilder.group(TributaryApi, "v2Integrations", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      serve(() => listIntegrations(urlParams), (data) => respond("success", { data })))
    .handle("get", ({ path }) =>
      serve(() => getIntegration(path.id), (data) => respond("success", { data }))))
