/**
 * A board's or the CLI's date range (`{from, to}` as `today`, `yesterday`, `30daysAgo` or a
 * `YYYY-MM-DD` day) as the period metric values take: whole local days of the data's zone,
 * both ends included, in Unix seconds. Pure: the caller gives the instant "today" is read at.
 *
 * @since 0.1.0
 */
import { Either } from "effect"
import { addDays, type LocalDate, localDateAt, startOfLocalDate } from "./zonedTime.js"

/**
 * A range's ends as written.
 *
 * @since 0.1.0
 * @category models
 */
export interface DateRange {
  readonly from: string
  readonly to: string
}

/**
 * Unix seconds, both ends included.
 *
 * @since 0.1.0
 * @category models
 */
export interface SecondsPeriod {
  readonly startTimestamp: number
  readonly endTimestamp: number
}

const relative = /^(\d{1,5})daysAgo$/
const day = /^(\d{4})-(\d{2})-(\d{2})$/

/** The local day an end names, or undefined. */
const dayOf = (text: string, today: LocalDate): LocalDate | undefined => {
  if (text === "today") return today
  if (text === "yesterday") return addDays(today, -1)
  const ago = relative.exec(text)
  if (ago !== null) return addDays(today, -Number(ago[1]))
  const m = day.exec(text)
  if (m === null) return undefined
  const date = { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]) }
  // 2026-02-30 is not a day: it would roll over to March.
  const check = addDays(date, 0)
  return check.year === date.year && check.month === date.month && check.day === date.day ? date : undefined
}

/**
 * The period a range names in `timeZone`, read at `nowMillis`; on the left, the field that
 * is wrong (`from` or `to`) and why.
 *
 * @since 0.1.0
 * @category utils
 */
export const periodOfDateRange = (
  range: DateRange,
  nowMillis: number,
  timeZone: string
): Either.Either<SecondsPeriod, { readonly field: "from" | "to"; readonly message: string }> => {
  const today = localDateAt(nowMillis, timeZone)
  const from = dayOf(range.from, today)
  if (from === undefined) return Either.left({ field: "from", message: unknownEnd(range.from) })
  const to = dayOf(range.to, today)
  if (to === undefined) return Either.left({ field: "to", message: unknownEnd(range.to) })
  const start = startOfLocalDate(from, timeZone)
  const end = startOfLocalDate(addDays(to, 1), timeZone) - 1000
  if (end < start) return Either.left({ field: "to", message: `${range.to} is before ${range.from}` })
  return Either.right({ startTimestamp: Math.floor(start / 1000), endTimestamp: Math.floor(end / 1000) })
}

const unknownEnd = (text: string) =>
  `${JSON.stringify(text.slice(0, 40))} is not a day: use today, yesterday, <n>daysAgo or YYYY-MM-DD`
