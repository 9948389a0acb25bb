/**
 * Accounts a key may act on.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../api/security.js"
import { NotFound } from "../errors.js"
import { Store } from "../store/Store.js"

/**
 * Every account of the principal's organization.
 *
 * @since 0.1.0
 */
export const listAccounts = (principal: Principal) => Effect.flatMap(Store, (store) => store.accounts(principal.organizationId))

/**
 * The account `accountId` (or the key's default account) if the principal's organization
 * holds it; `NotFound` otherwise, so other organizations' ids reveal nothing.
 *
 * @since 0.1.0
 */
export const visibleAccount = (principal: Principal, accountId: number = principal.defaultAccountId) =>
  Effect.flatMap(Store, (store) => store.account(accountId)).pipe(
    Effect.flatMap((account) =>
      Option.isSome(account) && account.value.organizationId === principal.organizationId
        ? Effect.succeed(account.value)
        : Effect.fail(new NotFound({ resource: "Account", id: accountId }))
    )
  )
