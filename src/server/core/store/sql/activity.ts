/**
 * The Postgres store's `ActivityStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { isoTimestamp } from "../../clock.js"
import type { ActivityStoreService } from "../ports/activity.js"
import type { SqlState } from "./state.js"
import { storeCall, toActivity } from "./records.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: SqlState): ActivityStoreService => {
  const { sql, json, pageOf, activityColumns } = state
  const port: ActivityStoreService = {
    recordActivity: (entry) =>
      storeCall(Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.asVoid(
          sql`INSERT INTO activity_log
            (organization_id, action, created_at, is_system, resource_type, resource_id, user_ref, details)
            VALUES (${entry.organizationId}, ${entry.action}, ${isoTimestamp(now)}, ${entry.isSystem}, ${entry.resourceType},
              ${entry.resourceId}, ${entry.user === null ? null : json(entry.user)}::jsonb,
              ${entry.details === null || entry.details === undefined ? null : json(entry.details)}::jsonb)`
        ))),
    activityLog: (query) => {
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
      return pageOf("activity_log", activityColumns, where, sql.literal("id DESC"), query, toActivity)
    }
  }
  return port
}
