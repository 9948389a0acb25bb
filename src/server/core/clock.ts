/**
 * Timestamps in the API's text form, from Effect's `Clock` (so tests can move time).
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"

/**
 * ISO 8601 UTC with six fractional digits and a trailing `Z`
 * (`2026-11-22T10:00:00.123000Z`); JavaScript clocks give milliseconds, so the last
 * three digits are zero.
 *
 * @since 0.1.0
 * @category utils
 */
export const isoTimestamp = (millis: number): string => `${new Date(millis).toISOString().slice(0, 23)}000Z`

/**
 * The current time as an API timestamp.
 *
 * @since 0.1.0
 * @category utils
 */
export const now: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, isoTimestamp)

/**
 * Milliseconds since an API timestamp.
 *
 * @since 0.1.0
 * @category utils
 */
export const millisSince = (timestamp: string): Effect.Effect<number> =>
  Effect.map(Clock.currentTimeMillis, (millis) => Math.max(0, millis - Date.parse(timestamp)))
