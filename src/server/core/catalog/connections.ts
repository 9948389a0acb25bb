/**
 * A connection as the catalog sees it: a data source may name one, which the key must see.
 * Making and changing connections is a feature (`features/connections.ts`).
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../../api/security.js"
import { NotFound } from "../errors.js"
import { canSee } from "../permissions.js"
import { type Connection } from "../store/Store.js"
import { ConnectionStore } from "../store/ports/connections.js"

/** A connection has no creator of its own: its manager stands for one. @since 0.1.0 @category utils */
export const asResource = (c: Connection) => ({ ...c, createdBy: c.managedBy ?? { id: -1 } })

/**
 * The connection `id` if the principal may see it; `NotFound` otherwise.
 *
 * @since 0.1.0
 * @category utils
 */
export const visibleConnection = (principal: Principal, id: number) =>
  Effect.flatMap(ConnectionStore, (store) => store.connection(id)).pipe(
    Effect.flatMap((connection) =>
      Option.isSome(connection) && canSee(principal, asResource(connection.value))
        ? Effect.succeed(connection.value)
        : Effect.fail(new NotFound({ resource: "Connection", id }))
    )
  )
