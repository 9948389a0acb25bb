/**
 * The memory store's `ActivityStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { isoTimestamp } from "../../clock.js"
import { matchesSearch } from "../order.js"
import { type ActivityEntry } from "../Store.js"
import type { ActivityStoreService } from "../ports/activity.js"
import { type MemoryState, slice } from "./state.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): ActivityStoreService => {
  const { activity, activityIds } = state
  const port: ActivityStoreService = {
    recordActivity: (entry) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        activity.push({ ...entry, id: activityIds(), createdAt: isoTimestamp(now) })
      }),
    activityLog: (query) =>
      Effect.sync(() => {
        const search = query.search
        const matching: Array<ActivityEntry> = []
        // Newest first: the log is kept in the order entries were made.
        for (let i = activity.length - 1; i >= 0; i--) {
          const entry = activity[i]!
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
  }
  return port
}
