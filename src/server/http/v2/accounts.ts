/**
 * v2 account handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import { byId, change, changeOnce, serve, servePage } from "../handler.js"
import { respond } from "../envelope.js"
import {
  createAccount,
  deleteAccount,
  listAccountPage,
  updateAccount,
  visibleAccount
} from "../../core/catalog/accounts.js"
import type { Account } from "../../core/store/Store.js"

const listItem = (a: Account) => ({ id: a.id, name: a.name, isSelfManaged: a.managedBy === null, managedBy: a.managedBy })

const detail = (a: Account) => ({ ...listItem(a), companyName: a.companyName, createdAt: a.createdAt, websiteUrl: a.websiteUrl })

const respondDetail = (a: Account) => respond("success", { data: detail(a) })

/**
 * @since 0.1.0
 * @category layers
 */
export const V2AccountsLive = HttpApiBuilder.group(TributaryApi, "v2Accounts", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      servePage(urlParams, (p, slice) => listAccountPage(p, urlParams, slice), listItem))
    .handle("create", ({ headers, payload }) =>
      changeOnce({ key: headers["idempotency-key"], body: payload }, (p) => createAccount(p, payload), byId("account"), respondDetail))
    .handle("get", ({ path }) =>
      serve((p) => visibleAccount(p, path.id), respondDetail))
    .handle("update", ({ path, payload }) =>
      change((p) => updateAccount(p, path.id, payload), byId("account"), respondDetail))
    .handle("delete", ({ path }) =>
      change(
        (p) => deleteAccount(p, path.id),
        byId("account"),
        (a) => respond("success", { data: { message: `Account ${a.id} was deleted` } })
      )))
