/**
 * Authentication: every route takes the `x-api-key` header.
 *
 * @since 0.1.0
 */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import { Context, Schema } from "effect"
import { Unauthorized } from "./errors.js"

/**
 * What a user may do: `admin` everything, `editor` data sources, datasets and ingestion,
 * `viewer` read only.
 *
 * @since 0.1.0
 * @category models
 */
export const Role = Schema.Literal("admin", "editor", "viewer")

/**
 * @since 0.1.0
 * @category models
 */
export type Role = typeof Role.Type

/**
 * The user behind the request's API key, as the server resolved it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Principal {
  readonly userId: number
  readonly userName: string
  readonly organizationId: number
  readonly role: Role
  /** The account a request acts on when it names none. */
  readonly defaultAccountId: number
}

/**
 * The authenticated principal of the current request (provided by {@link ApiKeyAuth}).
 *
 * @since 0.1.0
 * @category services
 */
export class CurrentPrincipal extends Context.Tag("tributary/CurrentPrincipal")<CurrentPrincipal, Principal>() {}

/**
 * The `x-api-key` header scheme, shared by v1 and v2.
 *
 * @since 0.1.0
 * @category models
 */
export class ApiKeyAuth extends HttpApiMiddleware.Tag<ApiKeyAuth>()("ApiKeyAuth", {
  failure: Unauthorized,
  provides: CurrentPrincipal,
  security: { apiKey: HttpApiSecurity.apiKey({ key: "x-api-key", in: "header" }) }
}) {}
