/**
 * The memory store's `ActivityStore` port: the activity log of one memory store. One function
 * per method, each taking the log first; `make` assembles them. The log reads nothing of the
 * core's state but its way of counting ids.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { isoTimestamp } from "../../core/clock.js"
import { matchesSearch } from "../../core/store/order.js"
import { portOf } from "../../core/store/Stores.js"
import { type MemoryState, slice } from "../../core/store/memory/state.js"
import type { ActivityEntry, ActivityQuery, ActivityStoreService } from "./store.js"

/**
 * The log of one memory store, oldest first.
 *
 * @since 0.1.0
 * @category models
 */
export interface ActivityState {
  readonly entries: Array<ActivityEntry>
  readonly ids: () => number
}

/**
 * An empty log.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeState = (core: MemoryState): ActivityState => ({ entries: [], ids: core.counter() })

/**
 * @since 0.1.0
 * @category utils
 */
export const recordActivity = ({ entries, ids }: ActivityState, entry: Omit<ActivityEntry, "id" | "createdAt">) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    entries.push({ ...entry, id: ids(), createdAt: isoTimestamp(now) })
  })

/**
 * @since 0.1.0
 * @category utils
 */
export const activityLog = ({ entries }: ActivityState, query: ActivityQuery) =>
  Effect.sync(() => {
    const search = query.search
    const matching: Array<ActivityEntry> = []
    // Newest first: the log is kept in the order entries were made.
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i]!
      if (
        entry.organizationId === query.organizationId &&
        (query.resourceType === undefined || entry.resourceType === query.resourceType) &&
        (query.userId === undefined || entry.user?.id === query.userId) &&
        (query.from === undefined || entry.createdAt >= query.from) &&
        (query.to === undefined || entry.createdAt <= query.to) &&
        (search === undefined || [entry.action, entry.resourceId ?? "", entry.user?.name ?? ""].some((text) =>
          matchesSearch(text, search)
        ))
      ) matching.push(entry)
    }
    return slice(matching, query)
  })

/**
 * The port over a log of its own, beside the core's `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): ActivityStoreService =>
  portOf<ActivityState, ActivityStoreService>(makeState(state), { recordActivity, activityLog })
