/**
 * v2 user and profile handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { departments } from "../../features/organization/catalogues.js"
import { byId, change, changeOnce, serve, servePage } from "../handler.js"
import { respond } from "../envelope.js"
import { ownOrganization } from "../../core/catalog/organization.js"
import { deleteUser, getUser, inviteUser, listUsers, profile, updateProfile, updateUser } from "../../features/users.js"
import type { User } from "../../core/store/Store.js"

const listItem = (u: User) => ({ id: u.id, name: u.name, email: u.email, role: u.role })

const detail = (u: User) => ({
  ...listItem(u),
  timezone: u.timezone,
  createdAt: u.createdAt,
  // Not tracked: recording every request's time would be a write per request.
  lastSeenAt: null,
  isAdminApproved: true,
  isEmailVerified: u.isEmailVerified,
  metadata: u.metadata
})

const respondDetail = (u: User) => respond("success", { data: detail(u) })

/**
 * @since 0.1.0
 * @category layers
 */
export const V2UsersLive = HttpApiBuilder.group(TributaryApi, "v2Users", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      servePage(urlParams, (p, slice) => listUsers(p, urlParams, slice), listItem))
    .handle("create", ({ headers, payload }) =>
      changeOnce(
        { key: headers["idempotency-key"], body: payload },
        (p) => inviteUser(p, payload),
        byId("user"),
        (u) => respond("success", { data: listItem(u) })
      ))
    .handle("get", ({ path }) =>
      serve((p) => getUser(p, path.id), respondDetail))
    .handle("update", ({ path, payload }) =>
      change((p) => updateUser(p, path.id, payload), byId("user"), respondDetail))
    .handle("delete", ({ path }) =>
      change(
        (p) => deleteUser(p, path.id),
        byId("user"),
        (u) => respond("success", { data: { message: `User ${u.id} was deleted` } })
      )))

const profileView = (principal: { readonly organizationId: number }) => (u: User) =>
  Effect.map(ownOrganization(principal), (o) => ({
    id: u.id,
    name: u.name,
    email: u.email,
    role: u.role,
    timezone: u.timezone,
    createdAt: u.createdAt,
    isEmailVerified: u.isEmailVerified,
    metadata: u.metadata,
    organization: { id: o.id, name: o.name },
    // Users belong to the organization, not to one of its accounts.
    account: null
  }))

/**
 * @since 0.1.0
 * @category layers
 */
export const V2ProfileLive = HttpApiBuilder.group(TributaryApi, "v2Profile", (handlers) =>
  handlers
    .handle("get", () =>
      serve((p) => Effect.flatMap(profile(p), profileView(p)), (data) => respond("success", { data })))
    .handle("update", ({ payload }) =>
      change(
        (p) => Effect.flatMap(updateProfile(p, payload), profileView(p)),
        byId("user"),
        (data) => respond("success", { data })
      ))
    .handle("metadataOptions", () => respond("success", { data: { departments } })))
