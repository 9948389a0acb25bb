/**
 * Instants and calendar days in a time zone, for metrics: a `datetime` cell without an
 * offset is a local time of the dataset's zone, a period is given in Unix seconds, and
 * daily/weekly/monthly buckets start at local midnight. Pure: no clock, no I/O.
 *
 * @since 0.1.0
 */

/**
 * A calendar day (month 1-12).
 *
 * @since 0.1.0
 * @category models
 */
export interface LocalDate {
  readonly year: number
  readonly month: number
  readonly day: number
}

const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterOf = (timeZone: string): Intl.DateTimeFormat => {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit"
    })
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/** The wall clock of `timeZone` at `millis`, as if it were UTC (milliseconds, whole seconds). */
const wallClockAt = (millis: number, timeZone: string): number => {
  const parts: Record<string, number> = {}
  for (const part of formatterOf(timeZone).formatToParts(new Date(millis))) {
    if (part.type !== "literal") parts[part.type] = Number(part.value)
  }
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!)
}

/**
 * The zone's offset from UTC at an instant, in minutes (east positive).
 *
 * @since 0.1.0
 * @category utils
 */
export const offsetMinutesAt = (millis: number, timeZone: string): number => {
  const whole = Math.floor(millis / 1000) * 1000
  return Math.round((wallClockAt(whole, timeZone) - whole) / 60_000)
}

/**
 * The instant a wall-clock time of the zone names (given as if it were UTC). A time skipped by
 * a forward DST jump resolves with the offset before the jump; a repeated one takes the first.
 *
 * @since 0.1.0
 * @category utils
 */
export const instantOfWallClock = (wallClock: number, timeZone: string): number => {
  const first = wallClock - offsetMinutesAt(wallClock, timeZone) * 60_000
  const second = wallClock - offsetMinutesAt(first, timeZone) * 60_000
  if (first === second) return first
  // Two candidates: keep the one whose wall clock is the one asked for, the earlier if both are.
  const candidates = [first, second].filter((m) => wallClockAt(m, timeZone) === wallClock - (wallClock % 1000))
  return candidates.length === 0 ? Math.max(first, second) : Math.min(...candidates)
}

const isoPattern =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|([+-])(\d{2})(?::?(\d{2}))?)?)?$/

/**
 * The instant of an ISO 8601 date or date-time cell: with an offset it is exact; without one
 * it is a wall-clock time (a bare date: midnight) of `timeZone`. Undefined for anything else.
 *
 * @since 0.1.0
 * @category utils
 */
export const instantOf = (value: string, timeZone: string): number | undefined => {
  const m = isoPattern.exec(value)
  if (m === null) return undefined
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000)
  const wallClock = Date.UTC(
    Number(m[1]),
    Number(m[2]) - 1,
    Number(m[3]),
    Number(m[4] ?? 0),
    Number(m[5] ?? 0),
    Number(m[6] ?? 0),
    fraction
  )
  if (Number.isNaN(wallClock)) return undefined
  if (m[8] === undefined) return instantOfWallClock(wallClock, timeZone)
  if (m[8] === "Z") return wallClock
  const sign = m[9] === "-" ? -1 : 1
  return wallClock - sign * (Number(m[10]) * 60 + Number(m[11] ?? 0)) * 60_000
}

/**
 * The calendar day of the zone at an instant.
 *
 * @since 0.1.0
 * @category utils
 */
export const localDateAt = (millis: number, timeZone: string): LocalDate => {
  const wall = new Date(wallClockAt(millis, timeZone))
  return { year: wall.getUTCFullYear(), month: wall.getUTCMonth() + 1, day: wall.getUTCDate() }
}

/**
 * The instant a local day of the zone starts.
 *
 * @since 0.1.0
 * @category utils
 */
export const startOfLocalDate = (date: LocalDate, timeZone: string): number =>
  instantOfWallClock(Date.UTC(date.year, date.month - 1, date.day), timeZone)

/**
 * `n` calendar days after (or before) a day.
 *
 * @since 0.1.0
 * @category utils
 */
export const addDays = (date: LocalDate, n: number): LocalDate => {
  const d = new Date(Date.UTC(date.year, date.month - 1, date.day + n))
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }
}

/**
 * @since 0.1.0
 * @category models
 */
export type Granularity = "daily" | "weekly" | "monthly"

/**
 * The first day of the bucket that holds `date`: the day itself, the Monday of its ISO week,
 * or the first of its month.
 *
 * @since 0.1.0
 * @category utils
 */
export const bucketStart = (date: LocalDate, granularity: Granularity): LocalDate => {
  switch (granularity) {
    case "daily":
      return date
    case "weekly": {
      const weekday = new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay()
      return addDays(date, -((weekday + 6) % 7))
    }
    case "monthly":
      return { year: date.year, month: date.month, day: 1 }
  }
}

/**
 * The first day of the next bucket after the one starting on `start`.
 *
 * @since 0.1.0
 * @category utils
 */
export const nextBucketStart = (start: LocalDate, granularity: Granularity): LocalDate => {
  switch (granularity) {
    case "daily":
      return addDays(start, 1)
    case "weekly":
      return addDays(start, 7)
    case "monthly":
      return start.month === 12 ? { year: start.year + 1, month: 1, day: 1 } : { year: start.year, month: start.month + 1, day: 1 }
  }
}

const pad = (n: number, width = 2) => String(Math.abs(n)).padStart(width, "0")

/**
 * `2026-01-05`.
 *
 * @since 0.1.0
 * @category utils
 */
export const formatLocalDate = (date: LocalDate): string => `${pad(date.year, 4)}-${pad(date.month)}-${pad(date.day)}`

/**
 * An instant as ISO 8601 with the zone's offset at that instant (`2026-01-05T00:00:00+01:00`),
 * whole seconds.
 *
 * @since 0.1.0
 * @category utils
 */
export const formatZoned = (millis: number, timeZone: string): string => {
  const offset = offsetMinutesAt(millis, timeZone)
  const wall = new Date(wallClockAt(millis, timeZone)).toISOString().slice(0, 19)
  return `${wall}${offset < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`
}
