import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import * as Ndjson from "../../connectors/ndjson/index.js"
import type { Position, SourceElement } from "../../src/pipeline/Source.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-ndjson-"))
const write = (name: string, content: string | Buffer) => {
  const path = join(dir, name)
  writeFileSync(path, content)
  return path
}

const collect = (stream: Stream.Stream<SourceElement, unknown, any>) =>
  Stream.runCollect(stream).pipe(Effect.map(Chunk.toReadonlyArray), Effect.provide(NodeContext.layer))

const describeElement = (e: SourceElement) =>
  e._tag === "Record" ? [e.position.offset, "record", e.value] : [e.position.offset, e.problem.code]

describe("NDJSON source", () => {
  it.effect("numbers lines from 1, skips blank lines, accepts CRLF and a byte-order mark", () =>
    Effect.gen(function*() {
      const path = write("mixed.ndjson", "\uFEFF{\"a\":1}\r\n\r\n   \n{\"a\":2}\n{\"a\":3}")
      const elements = yield* collect(Ndjson.fromFile(path).elements({}))
      expect(elements.map(describeElement)).toEqual([
        [1, "record", { a: 1 }],
        [4, "record", { a: 2 }],
        [5, "record", { a: 3 }]
      ])
      expect(elements[0]!._tag === "Record" && elements[0]!.json).toBe("{\"a\":1}")
    }))

  it.effect("turns malformed JSON, non-objects, invalid UTF-8 and over-long lines into malformed elements naming the line", () =>
    Effect.gen(function*() {
      const path = write(
        "bad.ndjson",
        Buffer.concat([
          Buffer.from("{\"ok\":1}\n{\"broken\": \n[1,2]\n\"text\"\n"),
          Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d, 0x0a]), // {"a":"\xC3("}
          Buffer.from(`{"long":"${"x".repeat(200)}"}\n{"ok":2}\n`)
        ])
      )
      const elements = yield* collect(Ndjson.fromFile(path, { maxLineBytes: 100 }).elements({}))
      expect(elements.map(describeElement)).toEqual([
        [1, "record", { ok: 1 }],
        [2, "invalid_json"],
        [3, "not_an_object"],
        [4, "not_an_object"],
        [5, "invalid_utf8"],
        [6, "line_too_long"],
        [7, "record", { ok: 2 }]
      ])
      const malformed = elements.filter((e) => e._tag === "Malformed")
      for (const e of malformed) if (e._tag === "Malformed") expect(e.problem.message).toContain(`line ${e.position.offset}`)
    }))

  it.effect("resumes right after a committed position without reading what came before", () =>
    Effect.gen(function*() {
      const path = write("resume.ndjson", "{\"n\":1}\n{\"n\":2}\n\n{\"n\":3}\n")
      const all = yield* collect(Ndjson.fromFile(path).elements({}))
      const second = all[1]!.position as Position
      const rest = yield* collect(Ndjson.fromFile(path).elements({ [Ndjson.partition]: second }))
      expect(rest.map(describeElement)).toEqual([[4, "record", { n: 3 }]])
      // Corrupt the bytes before the resume point: a resumed read must not touch them.
      writeFileSync(path, "garbage!garbage\n\n{\"n\":3}\n") // same length up to the resume point
      const again = yield* collect(Ndjson.fromFile(path).elements({ [Ndjson.partition]: second }))
      expect(again.map(describeElement)).toEqual([[4, "record", { n: 3 }]])
    }))

  it.effect("refuses to resume a file that is now shorter than its checkpoint", () =>
    Effect.gen(function*() {
      const path = write("shrunk.ndjson", "{\"n\":1}\n{\"n\":2}\n")
      const [first] = yield* collect(Ndjson.fromFile(path).elements({}))
      const committed = { "0": { ...first!.position, resume: { byteOffset: 100 } } }
      const error = yield* Effect.flip(collect(Ndjson.fromFile(path).elements(committed)))
      expect(error).toBeInstanceOf(Ndjson.NdjsonReadError)
      expect((error as Ndjson.NdjsonReadError).message).toBe(
        `${path} has 16 bytes but the checkpoint is at byte 100: the file was replaced or truncated since the last run ` +
          "(start over with --restart, or remove the checkpoint, to read it from the start)"
      )
    }))

  it.effect("a missing file is a read error naming it", () =>
    Effect.gen(function*() {
      const path = join(dir, "no-such-file.ndjson")
      const error = yield* Effect.flip(collect(Ndjson.fromFile(path).elements({})))
      expect((error as Ndjson.NdjsonReadError).message).toBe(`cannot read ${path}: no such file`)
    }))

  it.effect("frames lines that cross chunk boundaries, from any byte stream", () =>
    Effect.gen(function*() {
      const text = "{\"a\":1}\n{\"b\":\"two\"}\n{\"c\":3}\n"
      const bytes = Buffer.from(text)
      const chunks = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1))
      const source = Ndjson.fromBytes("test", Stream.fromIterable(chunks))
      const elements = yield* collect(source.elements({}))
      expect(elements.map(describeElement)).toEqual([[1, "record", { a: 1 }], [2, "record", { b: "two" }], [3, "record", { c: 3 }]])
      const resumed = yield* collect(source.elements({ "0": elements[0]!.position }))
      expect(resumed.map(describeElement)).toEqual([[2, "record", { b: "two" }], [3, "record", { c: 3 }]])
    }))

  it.effect("hands a large read on in chunks of at most 1024 lines", () =>
    Effect.gen(function*() {
      const text = Array.from({ length: 3000 }, (_, i) => `{"n":${i + 1}}`).join("\n") + "\n"
      const source = Ndjson.fromBytes("test", Stream.make(Buffer.from(text)))
      const sizes = yield* Stream.runCollect(Stream.chunks(source.elements({}))).pipe(
        Effect.map((chunks) => Chunk.toReadonlyArray(chunks).map((chunk) => chunk.length).filter((n) => n > 0))
      )
      expect(sizes).toEqual([1024, 1024, 952])
    }))

  it.effect("gives the same elements and byte offsets however the bytes are cut into chunks", () =>
    Effect.gen(function*() {
      // Multi-byte characters, a bad UTF-8 line, CRLF, blank lines, an over-long line, no final newline.
      const bytes = Buffer.concat([
        Buffer.from("{\"name\":\"Žiga\",\"city\":\"Škofja Loka\"}\r\n\n{\"emoji\":\"🦀\"}\n"),
        Buffer.from([0x7b, 0x22, 0x78, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d, 0x0a]),
        Buffer.from(`{"long":"${"x".repeat(60)}"}\n{"ok":"é"}\n\n{"last":true}`)
      ])
      const read = (chunkSize: number) => {
        const chunks = Array.from({ length: Math.ceil(bytes.length / chunkSize) }, (_, i) => bytes.subarray(i * chunkSize, (i + 1) * chunkSize))
        return collect(Ndjson.fromBytes("test", Stream.fromIterable(chunks), { maxLineBytes: 50 }).elements({}))
      }
      const whole = yield* read(bytes.length)
      expect(whole.map(describeElement)).toEqual([
        [1, "record", { name: "Žiga", city: "Škofja Loka" }],
        [3, "record", { emoji: "🦀" }],
        [4, "invalid_utf8"],
        [5, "line_too_long"],
        [6, "record", { ok: "é" }],
        [8, "record", { last: true }]
      ])
      const offsets = whole.map((e) => (e.position.resume as { byteOffset: number }).byteOffset)
      expect(offsets[offsets.length - 1]).toBe(bytes.length)
      for (const size of [1, 2, 3, 5, 7, 16, 64]) {
        const cut = yield* read(size)
        expect(cut).toEqual(whole)
      }
    }))
})
