/**
 * v2 auth handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { serve } from "../handler.js"
import { respond } from "../envelope.js"

/**
 * @since 0.1.0
 * @category layers
 */
export const V2AuthLive = HttpApiBuilder.group(TributaryApi, "v2Auth", (handlers) =>
  handlers.handle("validateKey", () =>
    serve(Effect.succeed, (principal) =>
      respond("success", {
        data: { valid: true, organizationId: principal.organizationId, userId: principal.userId }
      }))))
