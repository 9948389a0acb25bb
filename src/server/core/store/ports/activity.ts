/**
 * The store's port for the organization's activity log (what the handlers report they changed).
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { StoreError } from "../../errors.js"
import type {
  ActivityEntry,
  ActivityQuery,
  Page
} from "../Store.js"

/**
 * Every method is atomic; who may do what is the services' concern.
 *
 * @since 0.1.0
 * @category models
 */
export interface ActivityStoreService {
  readonly recordActivity: (entry: Omit<ActivityEntry, "id" | "createdAt">) => Effect.Effect<void, StoreError>

  /** Newest first. */
  readonly activityLog: (query: ActivityQuery) => Effect.Effect<Page<ActivityEntry>, StoreError>
}

/**
 * @since 0.1.0
 * @category services
 */
export class ActivityStore extends Context.Tag("tributary/server/ActivityStore")<ActivityStore, ActivityStoreService>() {}
