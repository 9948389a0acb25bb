/**
 * Timestamps in the API's text form.
 *
 * @since 0.1.0
 */

/**
 * ISO 8601 UTC with six fractional digits and a trailing `Z`
 * (`2026-11-22T10:00:00.123000Z`); JavaScript clocks give milliseconds, so the last
 * three digits are zero.
 *
 * @since 0.1.0
 */
export const isoTimestamp = (date: Date = new Date()): string => `${date.toISOString().slice(0, 23)}000Z`
