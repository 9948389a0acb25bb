import { describe, expect, it } from "vitest"
import { isTimezone, timezones } from "../src/server/core/timezones.js"

const january = new Date("2026-01-15T12:00:00Z")
const july = new Date("2026-07-15T12:00:00Z")

const offsetOf = (timezone: string, at: Date) => timezones(at).find((entry) => entry.timezone === timezone)?.offset

// Offset text back to minutes, to check the order.
const minutes = (offset: string) => {
  const match = /^UTC([+-])(\d{2}):(\d{2})$/.exec(offset)
  if (match === null) throw new Error(`bad offset ${offset}`)
  return (Number(match[2]) * 60 + Number(match[3])) * (match[1] === "-" ? -1 : 1)
}

describe("timezones", () => {
  it("gives offsets at the requested instant, daylight saving included", () => {
    expect(offsetOf("Europe/Ljubljana", january)).toBe("UTC+01:00")
    expect(offsetOf("Europe/Ljubljana", july)).toBe("UTC+02:00")
    expect(offsetOf("America/St_Johns", january)).toBe("UTC-03:30")
    expect(offsetOf("America/St_Johns", july)).toBe("UTC-02:30")
    expect(offsetOf("Asia/Kolkata", january)).toBe("UTC+05:30")
    expect(offsetOf("Asia/Kathmandu", january)).toBe("UTC+05:45")
    expect(offsetOf("UTC", july)).toBe("UTC+00:00")
  })

  it("lists every zone Intl knows, plus UTC and current names of renamed zones", () => {
    const names = new Set(timezones(january).map((entry) => entry.timezone))
    for (const zone of Intl.supportedValuesOf("timeZone")) expect(names).toContain(zone)
    for (const zone of ["UTC", "Asia/Kolkata", "Asia/Calcutta", "Europe/Kyiv", "America/Argentina/Buenos_Aires"]) {
      expect(names).toContain(zone)
    }
  })

  it("has no duplicates and formats every offset as UTC±HH:MM", () => {
    const list = timezones(july)
    expect(new Set(list.map((entry) => entry.timezone)).size).toBe(list.length)
    for (const { offset } of list) expect(offset).toMatch(/^UTC[+-]\d{2}:\d{2}$/)
  })

  it("sorts by offset, then by name", () => {
    const list = timezones(january)
    for (let i = 1; i < list.length; i++) {
      const previous = list[i - 1]!
      const current = list[i]!
      const order = minutes(previous.offset) - minutes(current.offset)
      expect(order < 0 || (order === 0 && previous.timezone < current.timezone)).toBe(true)
    }
    expect(minutes(list[0]!.offset)).toBeLessThanOrEqual(-11 * 60)
    expect(list.at(-1)?.offset).toBe("UTC+14:00")
  })

  it("drops the seconds of historical local mean time offsets", () => {
    const list = timezones(new Date("1880-01-01T00:00:00Z"))
    expect(list.find((entry) => entry.timezone === "America/St_Johns")?.offset).toBe("UTC-03:30")
    for (const { offset } of list) expect(offset).toMatch(/^UTC[+-]\d{2}:\d{2}$/)
  })

  it("defaults to now", () => {
    expect(timezones().length).toBe(timezones(january).length)
  })
})

describe("isTimezone", () => {
  it("accepts exactly the listed identifiers", () => {
    expect(isTimezone("Europe/Ljubljana")).toBe(true)
    expect(isTimezone("UTC")).toBe(true)
    expect(isTimezone("Asia/Kolkata")).toBe(true)
    expect(isTimezone("Mars/Olympus")).toBe(false)
    expect(isTimezone("europe/ljubljana")).toBe(false)
    expect(isTimezone("utc")).toBe(false)
    expect(isTimezone("")).toBe(false)
    for (const { timezone } of timezones(january)) expect(isTimezone(timezone)).toBe(true)
  })
})
