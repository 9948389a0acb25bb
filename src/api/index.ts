/**
 * The contract: every endpoint of v1 and v2 defined once. The reference server
 * implements it, the client is derived from it and the OpenAPI document is generated
 * from it.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
import { V1Api } from "./v1.js"
import { V2Api } from "./v2/index.js"

export * as Errors from "./errors.js"
export * from "./common.js"
export * from "./security.js"
export * as V1 from "./v1.js"
export * as V2 from "./v2/index.js"

/**
 * Both versions as the reference server serves them, side by side on one port.
 *
 * @since 0.1.0
 * @category api
 */
export class TributaryApi extends HttpApi.make("tributary")
  .addHttpApi(V1Api)
  .addHttpApi(V2Api)
  .annotate(OpenApi.Title, "Data Ingestion Service (tributary reference server)")
  .annotate(OpenApi.Version, "2.0.0")
  .annotate(
    OpenApi.Description,
    "v1 and v2 of the Data Ingestion Service API. Every answer carries requestId; every error uses the envelope { requestId, status: \"error\", errors: [{ code, message, field, type }] }."
  )
{}
