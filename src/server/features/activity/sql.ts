/**
 * The Postgres store's `ActivityStore` port, over the core's store state
 * (`core/store/sql/state.ts`: the client and its shared fragments). One function per method,
 * each taking the state first; `make` assembles them.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { isoTimestamp } from "../../core/clock.js"
import { portOf } from "../../core/store/Stores.js"
import type { SqlState } from "../../core/store/sql/state.js"
import { storeCall } from "../../core/store/sql/records.js"
import type { ActivityEntry, ActivityQuery, ActivityStoreService } from "./store.js"

/**
 * An entry of the log as the database holds it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ActivityRecord {
  readonly id: number
  readonly organization_id: number
  readonly action: string
  readonly created_at: string
  readonly is_system: boolean
  readonly resource_type: string | null
  readonly resource_id: string | null
  readonly user_ref: ActivityEntry["user"]
  readonly details: unknown
}

/**
 * @since 0.1.0
 * @category utils
 */
export const toActivity = (r: ActivityRecord): ActivityEntry => ({
  id: r.id,
  organizationId: r.organization_id,
  action: r.action,
  createdAt: r.created_at,
  isSystem: r.is_system,
  resourceType: r.resource_type,
  resourceId: r.resource_id,
  user: r.user_ref,
  details: r.details
})

const activityColumns = "id::float8 AS id, organization_id, action, created_at, is_system, resource_type, resource_id, " +
  "user_ref, details"

/**
 * @since 0.1.0
 * @category utils
 */
export const recordActivity = ({ json, sql }: SqlState, entry: Omit<ActivityEntry, "id" | "createdAt">) =>
  storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.asVoid(
      sql`INSERT INTO activity_log
        (organization_id, action, created_at, is_system, resource_type, resource_id, user_ref, details)
        VALUES (${entry.organizationId}, ${entry.action}, ${isoTimestamp(now)}, ${entry.isSystem}, ${entry.resourceType},
          ${entry.resourceId}, ${entry.user === null ? null : json(entry.user)}::jsonb,
          ${entry.details === null || entry.details === undefined ? null : json(entry.details)}::jsonb)`
    )))

/**
 * @since 0.1.0
 * @category utils
 */
export const activityLog = ({ pageOf, sql }: SqlState, query: ActivityQuery) => {
  const where = sql`organization_id = ${query.organizationId}
    AND ${query.resourceType === undefined ? sql`true` : sql`resource_type = ${query.resourceType}`}
    AND ${query.userId === undefined ? sql`true` : sql`(user_ref->>'id')::int = ${query.userId}`}
    AND ${query.from === undefined ? sql`true` : sql`created_at >= ${query.from}`}
    AND ${query.to === undefined ? sql`true` : sql`created_at <= ${query.to}`}
    AND ${
    query.search === undefined ? sql`true` : sql`(strpos(lower(action), lower(${query.search})) > 0
      OR strpos(lower(coalesce(resource_id, '')), lower(${query.search})) > 0
      OR strpos(lower(coalesce(user_ref->>'name', '')), lower(${query.search})) > 0)`
  }`
  return pageOf("activity_log", sql.literal(activityColumns), where, sql.literal("id DESC"), query, toActivity)
}

/**
 * The port over the core's `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): ActivityStoreService =>
  portOf<SqlState, ActivityStoreService>(state, { recordActivity, activityLog })
