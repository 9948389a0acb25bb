/**
 * Settings shared by data sources and datasets: permissions and sync frequency.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { Principal } from "../../api/security.js"
import { SyncIntervals } from "../../api/v2/common.js"
import { invalidInput } from "../request.js"
import { Store, type Permissions } from "../store/Store.js"

/**
 * Checks a permissions update: `accessList` only with `selectedUsers` (and required then),
 * naming users of the principal's organization.
 *
 * @since 0.1.0
 */
export const resolvePermissions = (
  principal: Principal,
  update: {
    readonly accessLevel: Permissions["accessLevel"]
    readonly accessList?: ReadonlyArray<{ readonly id: number }> | null | undefined
  }
) =>
  Effect.gen(function*() {
    if (update.accessLevel !== "selectedUsers") {
      if (update.accessList != null && update.accessList.length > 0) {
        return yield* invalidInput("accessList", "accessList is only allowed with accessLevel selectedUsers")
      }
      return { accessLevel: update.accessLevel, accessList: null } satisfies Permissions
    }
    if (update.accessList == null || update.accessList.length === 0) {
      return yield* invalidInput("accessList", "accessLevel selectedUsers needs a non-empty accessList")
    }
    const store = yield* Store
    const members = yield* store.users(principal.organizationId)
    const accessList: Array<{ id: number; name: string }> = []
    for (const [i, { id }] of update.accessList.entries()) {
      const member = members.find((u) => u.id === id)
      if (member === undefined) {
        return yield* invalidInput(`accessList[${i}].id`, `user ${id} is not a member of the organization`)
      }
      accessList.push({ id: member.id, name: member.name })
    }
    return { accessLevel: "selectedUsers", accessList } satisfies Permissions
  })

/**
 * 400 on `syncInterval` unless it is one of the accepted minutes.
 *
 * @since 0.1.0
 */
export const checkSyncInterval = (syncInterval: number) =>
  (SyncIntervals as ReadonlyArray<number>).includes(syncInterval)
    ? Effect.succeed(syncInterval)
    : invalidInput("syncInterval", `syncInterval must be one of ${SyncIntervals.join(", ")} (minutes)`)

const intervalLabel = (minutes: number) =>
  minutes < 60 ? `Every ${minutes} minute${minutes === 1 ? "" : "s"}` : minutes === 1440
  ? "Every day"
  : `Every ${minutes / 60} hour${minutes === 60 ? "" : "s"}`

/**
 * The sync frequency options, with the current one marked.
 *
 * @since 0.1.0
 */
export const syncFrequencyOptions = (current: number | null) =>
  SyncIntervals.map((syncInterval) => ({
    syncInterval,
    label: intervalLabel(syncInterval),
    isDefault: syncInterval === 1440,
    isSelected: syncInterval === (current ?? 1440),
    availability: "available"
  }))
