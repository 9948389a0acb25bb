/**
 * The depth scan that runs on every request body before it is parsed (pure, no I/O).
 */
import { describe, expect, it } from "vitest"
import { MaxJsonDepth } from "../../src/records.js"
import { scanDepth } from "../../src/server/http/jsonDepth.js"

const scan = (text: string, records = false) => scanDepth(Buffer.from(text), { records })
const nested = (levels: number, inner = "") => "[".repeat(levels) + inner + "]".repeat(levels)

describe("scanDepth", () => {
  it("allows MaxJsonDepth levels and refuses one more, at the byte where it opened", () => {
    expect(scan(nested(MaxJsonDepth))).toEqual({ _tag: "Within", deepRecords: [] })
    expect(scan(nested(MaxJsonDepth + 1))).toEqual({ _tag: "TooDeep", offset: MaxJsonDepth })
    expect(scan(`{"a":${nested(MaxJsonDepth)}}`)).toEqual({ _tag: "TooDeep", offset: 5 + MaxJsonDepth - 1 })
  })

  it("does not count brackets inside strings, escaped quotes included", () => {
    const inString = JSON.stringify({ a: "[".repeat(1000) + "\\\"" + "{".repeat(1000) })
    expect(scan(inString)).toEqual({ _tag: "Within", deepRecords: [] })
  })

  it("judges each record of an ingest body from itself, and reports the deep ones by index and byte span", () => {
    const deep = `{"v":${nested(MaxJsonDepth)}}`
    const body = `{"records":[{"id":1},${deep},7,null,${nested(MaxJsonDepth + 1)},${nested(MaxJsonDepth)},{"ok":${nested(MaxJsonDepth - 1)}}]}`
    const result = scan(body, true)
    expect(result._tag).toBe("Within")
    const spans = result._tag === "Within" ? result.deepRecords : []
    expect(spans.map((s) => s.index)).toEqual([1, 4])
    expect(spans.map((s) => body.slice(s.start, s.end))).toEqual([deep, nested(MaxJsonDepth + 1)])
    // Without the per-record rule the same body is too deep.
    expect(scan(body, false)._tag).toBe("TooDeep")
  })

  it("applies the body rule outside the records array, and refuses a deep record that never closes", () => {
    expect(scan(`{"records":[],"other":${nested(MaxJsonDepth)}}`, true)._tag).toBe("TooDeep")
    expect(scan(`{"records":[${"[".repeat(10_000)}`, true)).toEqual({ _tag: "TooDeep", offset: 12 })
  })

  it("passes malformed text through (the parser names what is wrong) and scans a million levels in one pass", () => {
    expect(scan("{\"records\": [")).toEqual({ _tag: "Within", deepRecords: [] })
    expect(scan(nested(1_000_000))._tag).toBe("TooDeep")
  })
})
