/**
 * Replay reads its letters as a stream and holds few of them: the external sort gives the
 * in-memory plan's order exactly (groups by origin, original order, the later of twins), and a
 * replay of a large generated dead-letter file with a small sort buffer and a small
 * `maxPending` holds at most the buffer while reading and hands letters to the run only as
 * fast as it sends them (`onReading` against the run's `BatchSent` events).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { expect, layer } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import * as Replay from "../../src/pipeline/Replay.js"
import { clientFor, serverLayer } from "../support/server.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-replay-stream-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A deterministic shuffle (the letters of a file are in the order their batches ended). */
const shuffled = <A>(items: ReadonlyArray<A>, seed: number): Array<A> => {
  const out = [...items]
  let state = seed
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31
    const j = state % (i + 1)
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

const letter = (dataset: string, run: string, partition: string, offset: number, record: Record<string, unknown>, child?: number): Replay.StoredLetter => ({
  v: 2,
  position: { partition, offset, child: child === undefined ? undefined : { index: child, of: 2 } },
  reason: { code: "invalid_type", field: "n", message: "n is not a number" },
  stage: "validate",
  record,
  raw: JSON.stringify(record),
  source: "ndjson:/data/orders.ndjson",
  run,
  dataset
})


layer(serverLayer(), { excludeTestServices: true })("replay as a stream", (it) => {
  it.effect("the external sort orders as the in-memory plan does: origins, original order, the later twin, across runs on disk", () =>
    Effect.gen(function*() {
      const letters: Array<Replay.StoredLetter> = []
      for (const [run, partition] of [["r1", "0"], ["r2", "0"], ["r1", "orders:3"]] as const) {
        for (let offset = 1; offset <= 300; offset++) letters.push(letter("7", run, partition, offset, { id: `${run}-${partition}-${offset}`, note: "é ✓ 日本" }))
        letters.push(letter("7", run, partition, 40, { id: `${run}-${partition}-40-child` }, 1))
      }
      const input = shuffled(letters, 7)
      // Twins: 50 letters written again later (a resumed run), with a record of their own.
      for (const twin of input.slice(0, 50)) input.push({ ...twin, record: { ...(twin.record as object), again: true } })
      const filter: Replay.Filter = { from: 5 }
      const expected = Replay.plan(input, filter).flatMap((group) => group.letters)
      const ordered = yield* Effect.scoped(Effect.flatMap(Replay.order(Stream.fromIterable(input), filter, { sortBuffer: 37 }), (ordered) =>
        Effect.sync(() => {
          const out: Array<Replay.StoredLetter> = []
          for (let next = ordered.next(); next !== undefined; next = ordered.next()) out.push(next)
          return out
        })))
      expect(ordered.length).toBe(expected.length)
      expect(ordered).toEqual(expected)
      expect(ordered.filter((l) => (l.record as { again?: boolean }).again === true)).toHaveLength(
        expected.filter((l) => (l.record as { again?: boolean }).again === true).length
      )
    }))

  it.effect("a file is read in chunks: characters across chunk ends whole, a cut-short last line left out, a line that is not a letter named", () =>
    Effect.gen(function*() {
      const many = Array.from({ length: 3000 }, (_, i) => letter("7", "r1", "0", i + 1, { id: `k${i}`, note: "日本語 ✓ é".repeat(i % 7) }))
      const text = many.map((l) => DeadLetter.encodeLetter(l, "2026-11-26T00:00:00.000Z")).join("\n") + "\n"
      expect(Buffer.byteLength(text)).toBeGreaterThan(4 * 64 * 1024)
      const whole = join(dir, "whole.ndjson")
      writeFileSync(whole, text + `{"v":2,"position":{"partition":"0","offset":9999}`)
      const read = yield* Replay.readFile(whole)
      expect(read.map((l) => l.record)).toEqual(many.map((l) => l.record))
      // Runs on disk larger than a chunk, read back whole.
      const sorted = yield* Effect.scoped(Effect.map(Replay.order(Replay.fileLetters(whole), {}, { sortBuffer: 1000 }), (ordered) => {
        const out: Array<unknown> = []
        for (let next = ordered.next(); next !== undefined; next = ordered.next()) out.push(next.record)
        return out
      }))
      expect(sorted).toEqual(many.map((l) => l.record))
      const bad = join(dir, "bad.ndjson")
      writeFileSync(bad, text + "not a letter\n")
      const failed = yield* Effect.flip(Replay.readFile(bad))
      expect(failed.message).toContain("line 3001 is not a dead letter")
    }))

  it.effect("a large file with a small sort buffer and maxPending: memory bounded, the reader never far ahead of what was sent, all stored once", () =>
    Effect.gen(function*() {
      const client = yield* clientFor("acme-admin")
      const source = yield* client.v2.v2DataSources.create({ payload: { name: "stream" }, headers: {} })
      const created = yield* client.v2.v2Datasets.create({
        payload: { name: "stream", dataSourceId: source.data.id, schema: [{ id: "id", dataType: "string" }, { id: "n", dataType: "number" }], primaryKey: ["id"] },
        headers: {}
      })
      const dataset = String(created.data.id)
      const total = 12_000
      const path = join(dir, "large.dead-letters.ndjson")
      const lines = shuffled(Array.from({ length: total }, (_, i) => letter(dataset, "r1", String(i % 3), i + 1, { id: `k${i}`, n: "bad" })), 11)
        .map((l) => DeadLetter.encodeLetter(l, "2026-11-26T00:00:00.000Z"))
      writeFileSync(path, lines.join("\n") + "\n")

      const sortBuffer = 500
      let maxHeld = 0
      let maxAhead = 0
      let sent = 0
      const replayOnce = Effect.gen(function*() {
        const progress = yield* Replay.replay(client, {
          letters: Replay.fileLetters(path),
          description: "large file",
          transform: Replay.set("n", 1),
          sortBuffer,
          maxPending: { batches: 2 },
          concurrency: { fixed: 1 },
          checkpoint: yield* Checkpoint.memory(),
          deadLetters: yield* DeadLetter.memory,
          poll: { initial: "5 millis", max: "20 millis" },
          commitInterval: "10 millis",
          onReading: (reading) => {
            maxHeld = Math.max(maxHeld, reading.held)
            maxAhead = Math.max(maxAhead, reading.taken - sent)
          },
          onEvent: (event) => Effect.sync(() => {
            if (event._tag === "BatchSent") sent += event.records
          })
        })
        return progress
      })
      const progress = yield* replayOnce
      expect([progress.read, progress.accepted, progress.deadLettered]).toEqual([total, total, 0])
      // While reading: the buffer; while sending: the merge's heads (one per run on disk) and the buffer's rest.
      expect(maxHeld).toBeLessThanOrEqual(sortBuffer + Math.ceil(total / sortBuffer) + 1)
      // Taken but not sent: the batches pending (2), the one being filled, and a pull or two of 64.
      expect(maxAhead).toBeGreaterThan(0)
      expect(maxAhead).toBeLessThanOrEqual(600)
      // A fresh replay of the same file stores nothing new: the same batches under the same keys.
      sent = 0
      const again = yield* replayOnce
      expect([again.accepted, again.replayed]).toEqual([total, total])
      const page = yield* client.v2.v2Datasets.getData({ path: { id: created.data.id }, urlParams: { pageSize: 1 } })
      expect(page.data.pagination.totalItems).toBe(total)
    }), { timeout: 120_000 })
})
