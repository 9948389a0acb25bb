/**
 * v2 account handlers.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { CurrentPrincipal } from "../../../api/security.js"
import { present } from "../wireErrors.js"
import { idempotent } from "../idempotency.js"
import { respondPage } from "../paging.js"
import { serve } from "../handler.js"
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

/** @since 0.1.0 */
export const V2AccountsLive = HttpApiBuilder.group(TributaryApi, "v2Accounts", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => respondPage(urlParams, (slice) => listAccountPage(p, urlParams, slice), listItem)),
        present
      ))
    .handle("create", ({ headers, payload }) =>
      Effect.flatMap(CurrentPrincipal, (principal) =>
        idempotent(headers["idempotency-key"], payload, createAccount(principal, payload).pipe(Effect.flatMap(respondDetail))))
        .pipe(present))
    .handle("get", ({ path }) =>
      serve((p) => visibleAccount(p, path.id), respondDetail))
    .handle("update", ({ path, payload }) =>
      serve((p) => updateAccount(p, path.id, payload), respondDetail))
    .handle("delete", ({ path }) =>
      serve(
        (p) => deleteAccount(p, path.id),
        (a) => respond("success", { data: { message: `Account ${a.id} was deleted` } })
      )))
