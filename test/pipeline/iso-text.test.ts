/**
 * The typed fast path writes dates as `toISOString` does (pure, no I/O).
 */
import { describe, expect, it } from "vitest"
import { dateOfText, isoText } from "../../src/pipeline/internal/fieldByField.js"
import { seededTimes } from "../support/times.js"

describe("isoText", () => {
  it("writes what toISOString writes, across days, years, leap days and before 1970", () => {
    const times = [
      0, -1, 1, 86_399_999, 86_400_000, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2026, 10, 1, 10, 0, 0, 7),
      Date.UTC(1969, 11, 31, 23, 59, 59, 999), Date.UTC(1, 0, 1), Date.UTC(999, 5, 15, 12, 30, 45, 50),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999), -62_167_219_200_000
    ]
    // And a seeded walk of random times, in and out of order (the day's text is kept between calls).
    times.push(...seededTimes(42, 2_000))
    for (const time of times) {
      const date = new Date(time)
      expect(isoText(date)).toBe(Number.isNaN(date.getTime()) ? String(date) : date.toISOString())
    }
  })

  it("writes years outside 0-9999 and invalid dates as toISOString and String do", () => {
    expect(isoText(new Date(Date.UTC(10000, 0, 1)))).toBe("+010000-01-01T00:00:00.000Z")
    expect(isoText(new Date(-62_167_219_200_001))).toBe("-000001-12-31T23:59:59.999Z")
    expect(isoText(new Date(Number.NaN))).toBe("Invalid Date")
  })
})

describe("dateOfText", () => {
  const same = (text: string) => {
    const expected = new Date(text).getTime()
    const actual = dateOfText(text).getTime()
    expect(Number.isNaN(actual) ? "invalid" : actual, text).toBe(Number.isNaN(expected) ? "invalid" : expected)
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
    for (const day of ["01", "28", "29", "30", "31", "00", "32"]) {
      for (const month of ["01", "02", "04", "12", "00", "13"]) {
        same(`2024-${month}-${day}T12:00:00Z`)
        same(`2023-${month}-${day}T12:00:00.123Z`)
      }
    }
  })

  it("leaves every other form to new Date: offsets, local times, dates, years before 100, bad digits", () => {
    for (
      const text of [
        "2026-11-01T10:00:00+02:00", "2026-11-01T10:00:00", "2026-11-01", "0099-05-01T00:00:00Z", "0000-01-01T00:00:00Z",
        "2026-11-01T24:00:00Z", "2026-11-01T23:60:00Z", "2026-11-01T23:59:60Z", "2026-1a-01T00:00:00Z", "2026-11-01T10:00:00.5Z",
        "2026-11-01T10:00:00.1234Z", "2026-11-01 10:00:00Z", "2026-11-01T10:00:00.12aZ", "not a date", "", "+002026-11-01T00:00:00Z"
      ]
    ) same(text)
  })
})
