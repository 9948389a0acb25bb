/**
 * The activity log's store port and its model: what the handlers report they changed
 * (`http/activity.ts` records it, `features/organization` reads it), kept by the store the
 * core's ports are kept by (`memory.ts`, `sql.ts` beside this). The core records nothing: the
 * one recording point is the HTTP layer, which may use features.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { StoreError } from "../../core/errors.js"
import type { Creator, Page, Slice } from "../../core/store/Store.js"

/**
 * One entry of the activity log: a mutation made through the API.
 *
 * @since 0.1.0
 * @category models
 */
export interface ActivityEntry {
  readonly id: number
  readonly organizationId: number
  readonly action: string
  readonly createdAt: string
  readonly isSystem: boolean
  readonly resourceType: string | null
  readonly resourceId: string | null
  readonly user: Creator | null
  readonly details: unknown
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ActivityQuery extends Slice {
  readonly organizationId: number
  readonly resourceType?: string | undefined
  readonly userId?: number | undefined
  /** Case-insensitive substring of the action, resource id or user name. */
  readonly search?: string | undefined
  /** Inclusive bounds on `createdAt` (API timestamps). */
  readonly from?: string | undefined
  readonly to?: string | undefined
}

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
