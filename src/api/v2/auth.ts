/**
 * `GET /v2/auth/validate-key`: unchanged from v1, payload under `data`.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { DataResponse } from "./common.js"

/**
 * @since 0.1.0
 * @category models
 */
export const ValidateKeyResponse = DataResponse(
  Schema.Struct({ valid: Schema.Boolean, organizationId: Schema.Int, userId: Schema.Int }),
  "V2ValidateKeyResponse"
)

/**
 * @since 0.1.0
 * @category api
 */
export class V2Auth extends HttpApiGroup.make("v2Auth")
  .add(HttpApiEndpoint.get("validateKey", "/v2/auth/validate-key").addSuccess(ValidateKeyResponse))
  .annotate(OpenApi.Title, "v2 auth")
{}
