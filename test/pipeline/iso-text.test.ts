/**
 * The typed fast path reads and writes dates as the service's `datetime` takes them (pure, no
 * I/O): ISO text written as `toISOString` does within the years it writes with four digits,
 * text read as `new Date` reads it where `isIsoDateTime` takes it, and nothing else.
 */
import { describe, expect, it } from "vitest"
import { dateOfText, isoText } from "../../src/pipeline/internal/fieldByField.js"
import { isIsoDateTime } from "../../src/records.js"
import { seededTimes } from "../support/times.js"

describe("isoText", () => {
  it("writes what toISOString writes, across days, years, leap days and before 1970; nothing outside the years 0-9999", () => {
    const times = [
      0, -1, 1, 86_399_999, 86_400_000, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2026, 10, 1, 10, 0, 0, 7),
      Date.UTC(1969, 11, 31, 23, 59, 59, 999), Date.UTC(1, 0, 1), Date.UTC(999, 5, 15, 12, 30, 45, 50),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999), -62_167_219_200_000
    ]
    // And a seeded walk of random times, in and out of order (the day's text is kept between calls).
    times.push(...seededTimes(42, 2_000))
    let written = 0
    for (const time of times) {
      const date = new Date(time)
      const iso = date.toISOString()
      // Outside 0-9999, toISOString writes `+010000-...` or `-000001-...`, which the service refuses.
      expect(isoText(date), iso).toBe(isIsoDateTime(iso) ? iso : undefined)
      if (isIsoDateTime(iso)) written++
    }
    expect(written).toBeGreaterThan(500)
    expect(written).toBeLessThan(times.length - 500)
  })

  it("writes nothing for years outside 0-9999 and invalid dates", () => {
    expect(isoText(new Date(Date.UTC(10000, 0, 1)))).toBeUndefined()
    expect(isoText(new Date(-62_167_219_200_001))).toBeUndefined()
    expect(isoText(new Date(Number.NaN))).toBeUndefined()
  })
})

describe("dateOfText", () => {
  /** What the service's rule says of `text`, and for text it takes, what `new Date` reads (`+02` as `+02:00`). */
  const expected = (text: string) => {
    if (!isIsoDateTime(text)) return "invalid"
    const time = new Date(/[+-]\d{2}$/.test(text) && text.length > 10 ? `${text}:00` : text).getTime()
    return Number.isNaN(time) ? "unread" : time
  }
  const same = (text: string) => {
    const actual = dateOfText(text).getTime()
    expect(Number.isNaN(actual) ? "invalid" : actual, text).toBe(expected(text))
  }

  it("reads what new Date reads, for UTC timestamps of every part's range and a seeded walk of times", () => {
    let seed = 7
    for (let i = 0; i < 2_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      const iso = new Date(Math.floor((seed / 2 ** 31) * 253_402_300_800_000)).toISOString()
      same(iso)
      same(iso.slice(0, 19) + "Z")
    }
    // A few days in turn, each with many times (the day's start is kept between texts).
    const two = (n: number) => String(n).padStart(2, "0")
    for (let i = 0; i < 600; i++) {
      same(`2026-${two(1 + (i % 12))}-0${1 + (i % 3)}T${two(i % 24)}:${two((i * 7) % 60)}:${two((i * 13) % 60)}Z`)
      same(`2026-11-0${1 + (i % 2)}T${two(i % 24)}:${two((i * 7) % 60)}:${two((i * 13) % 60)}.${String(i).padStart(3, "0")}Z`)
    }
  })

  it("reads dates alone and times at an offset as new Date does, across the day's edges and every offset's range", () => {
    const two = (n: number) => String(n).padStart(2, "0")
    let seed = 11
    for (let i = 0; i < 2_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      const iso = new Date(Math.floor((seed / 2 ** 31) * 253_402_300_800_000)).toISOString()
      const offset = `${i % 2 === 0 ? "+" : "-"}${two(i % 26)}:${two((i * 7) % 62)}`
      same(iso.slice(0, 10))
      same(iso.slice(0, 19) + offset)
      same(iso.slice(0, 23) + offset)
    }
    // Offsets that carry a time into the day before or after, and their bounds.
    for (const time of ["00:00:00", "00:30:00.000", "23:59:59", "23:59:59.999", "12:00:00"]) {
      for (const offset of ["+00:00", "-00:00", "+23:59", "-23:59", "+24:00", "-12:60", "+14:00", "+05:30", "+0530", "+05", "+5:30", "*05:30"]) {
        same(`2024-02-29T${time}${offset}`)
        same(`2026-12-31T${time}${offset}`)
        same(`2026-02-29T${time}${offset}`)
      }
    }
    // Texts of the lengths read from digits, with a character out of place.
    for (
      const text of [
        "2026-11-01", "2026-11-1", "2026/11/01", "2026-11-01x", "20261101", "0050-11-01", "2026-11-01T", "2026-02-30",
        "2026-11-01T10:00:00,123Z", "2026-11-01T10:00:00+123Z", "2026-11-01T10:00:00,123+02:00", "2026-11-01T10:00:00+05530",
        "2026-11-01T10:00:00.123-08x00", "2026-11-01T10:00:00-08:00Z", "2026-11-01T10:00:00.12Z+00", "2026-11-01 10:00:00+02:00"
      ]
    ) same(text)
  })

  it("reads no day the calendar lacks: the 29th to 31st by month and leap year, month 0 or 13, day 0 or 32", () => {
    const two = (n: number) => String(n).padStart(2, "0")
    const days = ["00", "01", "28", "29", "30", "31", "32"]
    for (const year of ["2024", "2023", "2000", "1900", "2100", "0400", "0000"]) {
      for (let month = 0; month <= 13; month++) {
        for (const day of days) {
          // In turn with a day that exists, so the kept day's start changes between them.
          same(`${year}-${two(month)}-${day}T12:00:00Z`)
          same(`2026-11-01T12:00:00Z`)
          same(`${year}-${two(month)}-${day}T12:00:00.123Z`)
          same(`${year}-${two(month)}-${day}`)
          same(`${year}-${two(month)}-${day}T23:59+01:00`)
        }
      }
    }
    expect(dateOfText("2026-02-30").getTime()).toBeNaN()
    expect(dateOfText("2026-02-29T10:00:00Z").getTime()).toBeNaN()
    expect(dateOfText("2024-02-29T10:00:00Z").toISOString()).toBe("2024-02-29T10:00:00.000Z")
    expect(dateOfText("2026-04-31T10:00:00.000Z").getTime()).toBeNaN()
  })

  it("reads every other form the service takes, and none it does not: offsets, local times, dates, years before 100, bad digits", () => {
    for (
      const text of [
        "2026-11-01T10:00:00+02:00", "2026-11-01T10:00:00", "2026-11-01", "0099-05-01T00:00:00Z", "0000-01-01T00:00:00Z",
        "2026-11-01T24:00:00Z", "2026-11-01T23:60:00Z", "2026-11-01T23:59:60Z", "2026-1a-01T00:00:00Z", "2026-11-01T10:00:00.5Z",
        "2026-11-01T10:00:00.1234Z", "2026-11-01 10:00:00Z", "2026-11-01T10:00:00.12aZ", "not a date", "", "+002026-11-01T00:00:00Z",
        "2026-11-01T10:00:00+02", "2026-11-01T10:00-05", "2026-11-01T10:00:00.5+0530", "2026-11-01T10:00:00z", "2026-11-01T10",
        "March 1, 2026", "2026-11-01T10:00:00+24:00", "2026-11-01T10:00:00.Z", "2026-11-01T10:00:00.123456789Z"
      ]
    ) same(text)
    // `new Date` refuses an offset of hours alone; the service takes it, and so does the reader.
    expect(dateOfText("2026-11-01T10:00:00+02").toISOString()).toBe("2026-11-01T08:00:00.000Z")
  })
})
