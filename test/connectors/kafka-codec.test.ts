/**
 * The pure parts of the Kafka source: messages as elements, cut metadata. No broker here.
 */
import { describe, expect, it } from "vitest"
import * as Kafka from "../../connectors/kafka/index.js"
import { logLine } from "../../connectors/kafka/kafkajs.js"

const message = (value: string | null, extra: Partial<Kafka.KafkaMessage> = {}): Kafka.KafkaMessage => ({
  topic: "orders",
  partition: 3,
  offset: 17,
  key: Buffer.from("k1"),
  value: value === null ? null : Buffer.from(value),
  headers: { source: "shop" },
  timestamp: Date.UTC(2026, 10, 1),
  ...extra
})

describe("Kafka messages as source elements", () => {
  it("a JSON object is a record at TOPIC:N and its offset, keeping its text", () => {
    expect(Kafka.messageElement(message('{"id":"a"}'), { maxValueBytes: 100 })).toEqual({
      _tag: "Record",
      position: { partition: "orders:3", offset: 17, resume: { topic: "orders", partition: 3 } },
      value: { id: "a" },
      json: '{"id":"a"}'
    })
  })

  it("anything else is a dead letter naming topic, partition and offset", () => {
    const problem = (value: string | null, maxValueBytes = 100) => {
      const element = Kafka.messageElement(message(value), { maxValueBytes })
      return element._tag === "Malformed" ? [element.problem.code, element.problem.message] : ["record", ""]
    }
    expect(problem("{nope")).toEqual(["invalid_json", expect.stringMatching(/^topic orders partition 3 offset 17: /)])
    expect(problem("[1]")).toEqual(["not_an_object", "topic orders partition 3 offset 17: expected a JSON object, got an array"])
    expect(problem("42")[0]).toBe("not_an_object")
    expect(problem(null)).toEqual(["no_value", "topic orders partition 3 offset 17: the message has no value (a tombstone)"])
    expect(problem(`{"pad":"${"x".repeat(200)}"}`)).toEqual([
      "value_too_long",
      "topic orders partition 3 offset 17: the value is 210 bytes, over the 100-byte limit"
    ])
  })

  it("a value that is not valid UTF-8 is a dead letter naming its first bad byte, never a record with changed bytes", () => {
    const element = (bytes: Buffer) => Kafka.messageElement(message(null, { value: bytes }), { maxValueBytes: 100 })
    // Still JSON once decoded (the bad byte inside a string becomes U+FFFD): refused all the same.
    const inString = Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([0xe9]), Buffer.from('"}')])
    expect(element(inString)).toMatchObject({
      _tag: "Malformed",
      problem: { code: "invalid_utf8", message: expect.stringMatching(/^topic orders partition 3 offset 17: .*\(byte 12\)/) },
      raw: '{"name":"caf\uFFFD"}'
    })
    // Overlong, surrogate and truncated forms too; valid multibyte text is a record.
    expect(element(Buffer.from([0x7b, 0xc0, 0xaf, 0x7d]))).toMatchObject({ problem: { message: expect.stringContaining("(byte 1)") } })
    expect(element(Buffer.from([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22]))).toMatchObject({ problem: { message: expect.stringContaining("(byte 2)") } })
    expect(element(Buffer.from([0x7b, 0xe2, 0x82]))).toMatchObject({ problem: { message: expect.stringContaining("(byte 1)") } })
    expect(element(Buffer.from('{"name":"café ✓ 𝄞"}'))).toMatchObject({ _tag: "Record", value: { name: "café ✓ 𝄞" } })
  })

  it("a decoder sees key, headers, timestamp and coordinates; a throwing one makes a dead letter", () => {
    const decode: Kafka.Decoder = (m) => {
      if (m.headers["source"] !== "shop") throw new Error("unknown source")
      return { ...JSON.parse(m.value!.toString()), key: m.key?.toString(), at: new Date(m.timestamp).toISOString(), where: `${m.topic}/${m.partition}/${m.offset}` }
    }
    expect(Kafka.messageElement(message('{"id":"a"}'), { decode, maxValueBytes: 100 })).toMatchObject({
      _tag: "Record",
      value: { id: "a", key: "k1", at: "2026-11-01T00:00:00.000Z", where: "orders/3/17" }
    })
    expect(Kafka.messageElement(message('{"id":"a"}', { headers: {} }), { decode, maxValueBytes: 100 })).toMatchObject({
      _tag: "Malformed",
      problem: { code: "undecodable", message: "topic orders partition 3 offset 17: unknown source" }
    })
  })
})

describe("batch cuts in the committed offset's metadata", () => {
  it("round-trip relative to the committed offset", () => {
    const cuts = [{ partition: "t:0", first: 1200, last: 1299 }, { partition: "t:0", first: 1100, last: 1199 }]
    const metadata = Kafka.encodeCuts(cuts, 1100)
    expect(metadata).toBe("t1:0+2r,2s+2r")
    expect(Kafka.decodeCuts(metadata, 1100, "t:0")).toEqual([...cuts].reverse())
    expect(Kafka.decodeCuts(Kafka.encodeCuts([], 5), 5, "t:0")).toEqual([])
  })

  it("a batch that went in parts carries the offsets of its second part; a reader of before reads the cut alone", () => {
    const cuts = [{ partition: "t:0", first: 1100, last: 1199, held: [1100, 1150, 1199] }, { partition: "t:0", first: 1200, last: 1299 }]
    const metadata = Kafka.encodeCuts(cuts, 1100)
    expect(metadata).toBe("t1:0+2r~0~1e~2r,2s+2r")
    expect(Kafka.decodeCuts(metadata, 1100, "t:0")).toEqual(cuts)
    // What a reader without parts made of it: parseInt stops at the first character it cannot read.
    expect(parseInt("2r~0~1e~2r", 36)).toBe(99)
  })

  it("a damaged entry is skipped and a damaged list of held offsets leaves the cut whole; the others are read", () => {
    // Metadata is ours alone, but the broker stores whatever a member of the group writes.
    expect(Kafka.decodeCuts("t1:0+2r~,2s+2r~1~!,zz+,+,5k+2r", 1100, "t:0")).toEqual([
      { partition: "t:0", first: 1100, last: 1199 },
      { partition: "t:0", first: 1200, last: 1299 },
      { partition: "t:0", first: 1100 + 200, last: 1100 + 299 }
    ])
  })

  it("metadata written by another tool, or none, is no cuts", () => {
    expect(Kafka.decodeCuts("written by another tool", 5, "t:0")).toEqual([])
    expect(Kafka.decodeCuts(null, 5, "t:0")).toEqual([])
  })

  it("carry the run identity with the cuts; metadata of before runs had one reads as legacy, another tool's as none", () => {
    const run = "3f2a1c9e-0000-4000-8000-000000000001"
    const cuts = [{ partition: "t:0", first: 1100, last: 1199 }]
    const metadata = Kafka.encodeCuts(cuts, 1100, run)
    expect(metadata).toBe(`t2:${run};0+2r`)
    expect(Kafka.decodeCuts(metadata, 1100, "t:0")).toEqual(cuts)
    expect(Kafka.decodeRun(metadata)).toEqual({ _tag: "Run", run })
    expect(Kafka.decodeRun(Kafka.encodeCuts([], 5, run))).toEqual({ _tag: "Run", run })
    expect(Kafka.decodeRun(Kafka.encodeCuts(cuts, 1100))).toEqual({ _tag: "Legacy" })
    expect(Kafka.decodeRun("")).toEqual({ _tag: "None" })
    expect(Kafka.decodeRun(null)).toEqual({ _tag: "None" })
    expect(Kafka.decodeRun("t2:no-separator")).toEqual({ _tag: "None" })
  })

  it("a partition batched by blocks carries its frontier first; a reader of before passes over it", () => {
    const run = "3f2a1c9e-0000-4000-8000-000000000001"
    const cuts = [{ partition: "t:0", first: 1150, last: 1160 }]
    const metadata = Kafka.encodeCuts(cuts, 1100, run, 11_300)
    expect(metadata).toBe(`t2:${run};@7vc,1e+a`)
    expect(Kafka.decodeFrontier(metadata, 1100)).toBe(11_300)
    expect(Kafka.decodeCuts(metadata, 1100, "t:0")).toEqual(cuts)
    expect(Kafka.decodeFrontier(Kafka.encodeCuts([], 1100, run, 11_300), 1100)).toBe(11_300)
    // What a reader without blocks made of the entry: no number where it wants the cut's length.
    const [, length] = "@7vc".split("+")
    expect(Number.isFinite(parseInt((length ?? "").split(".")[0]!, 36))).toBe(false)
    // A frontier at or below the committed offset says nothing, and is left out.
    expect(Kafka.encodeCuts(cuts, 1100, run, 1100)).toBe(`t2:${run};1e+a`)
    expect(Kafka.decodeFrontier(`t2:${run};1e+a`, 1100)).toBeUndefined()
    expect(Kafka.decodeFrontier(null, 1100)).toBeUndefined()
    expect(Kafka.decodeFrontier(`t2:${run};@!`, 1100)).toBeUndefined()
  })

  it("a hundred cuts of a hundred records fit well within the broker's 4096-byte default", () => {
    const cuts = Array.from({ length: 100 }, (_, i) => ({ partition: "t:0", first: 5000 + i * 100, last: 5099 + i * 100 }))
    expect(Kafka.encodeCuts(cuts, 5000).length).toBeLessThan(1000)
  })
})

describe("kafkajs's log as stderr lines", () => {
  it("leaves out the coordinator's routine answers while the group changes (kafkajs retries them)", () => {
    for (
      const cause of [
        "The group coordinator is not available",
        "This is not the correct coordinator for this group",
        "The coordinator is loading and hence can't process requests",
        "The group is rebalancing, so a rejoin is needed",
        "Specified group generation id is not valid",
        "The coordinator is not aware of this member"
      ]
    ) {
      expect(logLine("Connection", "ERROR", "Response OffsetCommit(key: 8, version: 5)", cause)).toBeUndefined()
    }
  })

  it("says a rebalance once, in plain words", () => {
    expect(logLine("Runner", "WARN", "The group is rebalancing, re-joining", "The group is rebalancing, so a rejoin is needed"))
      .toBe("kafka: the group is rebalancing (a member joined or left); re-joining")
  })

  it("keeps every other line, with its cause", () => {
    expect(logLine("Connection", "ERROR", "Connection error", "connect ECONNREFUSED 127.0.0.1:1"))
      .toBe("kafka error Connection: Connection error: connect ECONNREFUSED 127.0.0.1:1")
    expect(logLine("Consumer", "ERROR", "Crash: KafkaJSNumberOfRetriesExceeded", "The group coordinator is not available"))
      .toBe("kafka error Consumer: Crash: KafkaJSNumberOfRetriesExceeded: The group coordinator is not available")
    expect(logLine("BrokerPool", "WARN", "Failed to connect to seed broker", undefined)).toBe("kafka warn BrokerPool: Failed to connect to seed broker")
  })
})
