/**
 * Keyed batches in parts: a batch that shares a few keys with an earlier unfinished batch sends
 * its other records at once and the shared ones once that batch ended (`internal/parts.ts`).
 *
 * The pure helpers (which records wait, the parts' keys, the merged outcome), then a run
 * against a reference server whose ingestions take 300-400 ms: 20 batches, each sharing one key
 * with the batch before. Waiting whole, each batch would wait for the one before to end, so no
 * more than two ingestions would ever be under way at once; in parts the free records of every
 * batch go at once, the service sees many ingestions under way together, and every key still
 * ends with its last version. And a partition taken away while a held part waits (a rebalance
 * the run hears of later): the part never goes ahead of the earlier batch it waited for.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Queue, Redacted, Stream } from "effect"
import { TributaryClient, type TributaryClientService } from "../../src/client/index.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import { idempotencyKey } from "../../src/pipeline/internal/ingest.js"
import { heldOffsets, mergeDelivered, partName, splitRecords } from "../../src/pipeline/internal/parts.js"
import { type PipelineConfig, run } from "../../src/pipeline/run.js"
import type { PartitionedSource, Source, SourceElement, SourceEvent } from "../../src/pipeline/Source.js"
import { type BatchCut, type BatchRecord, type Delivered, mergeCuts } from "../../src/pipeline/vocabulary.js"
import { parseFaults } from "../../src/server/faults.js"
import { apiData, idAndVersion, maxOverlap, newDataset, readAllRows } from "../support/crash.js"
import { serverLayer, ServerUrl } from "../support/server.js"

const record = (offset: number, key: string, child?: number): BatchRecord => ({
  position: { partition: "0", offset, child: child === undefined ? undefined : { index: child, of: 2 } },
  json: JSON.stringify({ id: key }),
  key
})

describe("a batch in parts", () => {
  it("the held records are those of the held keys, by offset; both parts keep the batch's order", () => {
    const records = [record(1, "a"), record(2, "b"), record(3, "a"), record(4, "c")]
    const offsets = heldOffsets(records, new Set(["a"]))
    expect(offsets).toEqual([1, 3])
    const parts = splitRecords(records, new Set(offsets))
    expect(parts.free.map((r) => r.position.offset)).toEqual([2, 4])
    expect(parts.held.map((r) => r.position.offset)).toEqual([1, 3])
    // Every record held, or none: the batch goes whole.
    expect(heldOffsets(records, new Set(["a", "b", "c"]))).toBeUndefined()
    expect(heldOffsets(records, new Set(["z"]))).toBeUndefined()
    // A key value is itself: 1 is not "1".
    expect(heldOffsets([{ ...record(1, "1"), key: 1 }, record(2, "1")], new Set(["1"]))).toEqual([2])
    // Children of a flatMap share an offset: such a batch always goes whole.
    expect(heldOffsets([record(1, "a", 0), record(1, "b", 1)], new Set(["a"]))).toBeUndefined()
  })

  it("each part has a key of its own: never the whole batch's, never the other part's, the same again for the same records", () => {
    const records = [record(1, "a"), record(2, "b"), record(2, "b", 1), record(3, "c")]
    const keyOf = (part: string | undefined) => idempotencyKey(7, "src", "0", 1, 3, undefined, "run-1", part)
    const free = partName("free", records.slice(1))
    const held = partName("held", records.slice(0, 1))
    const keys = [keyOf(undefined), keyOf(free), keyOf(held), keyOf(partName("free", records.slice(2)))]
    expect(new Set(keys).size).toBe(4)
    expect(keyOf(partName("free", records.slice(1)))).toBe(keys[1])
    expect(free).toBe("free:2,2.1,3")
  })

  it("a cut recorded again with its split replaces the first, matched by partition, offset and child; the rest stay", () => {
    const cuts: Array<BatchCut> = [
      { partition: "0", first: 1, last: 100 },
      { partition: "0", first: 101, last: 200 },
      { partition: "1", first: 101, last: 200 },
      { partition: "0", first: 201, last: 201, firstChild: 0, lastChild: 1 }
    ]
    const merged = mergeCuts(cuts, [{ partition: "0", first: 101, last: 200, held: [150] }, { partition: "0", first: 201, last: 300 }])
    expect(merged).toEqual([
      { partition: "0", first: 1, last: 100 },
      { partition: "1", first: 101, last: 200 },
      { partition: "0", first: 201, last: 201, firstChild: 0, lastChild: 1 },
      { partition: "0", first: 101, last: 200, held: [150] },
      { partition: "0", first: 201, last: 300 }
    ])
    expect(mergeCuts(cuts, [])).toBe(cuts)
  })

  it("the batch's outcome adds both parts' up", () => {
    const letter = (offset: number) => ({
      position: { partition: "0", offset },
      reason: { code: "rejected", field: null, message: "no" },
      stage: "service" as const
    })
    const a: Delivered = { ingestionIds: ["i1"], sent: 3, accepted: 2, replayed: 1, rejected: [letter(1)], refused: [] }
    const b: Delivered = { ingestionIds: ["i2"], sent: 1, accepted: 1, replayed: 0, rejected: [], refused: [letter(4)] }
    expect(mergeDelivered(a, b)).toEqual({
      ingestionIds: ["i1", "i2"],
      sent: 4,
      accepted: 3,
      replayed: 1,
      rejected: [letter(1)],
      refused: [letter(4)]
    })
  })
})

const apiKey = "acme-admin"
const batches = 20
const perBatch = 100
const faults = parseFaults("processing=300-400ms")
if (faults._tag === "Left") throw new Error(faults.left)

/** Batch b: 99 keys of its own at version b, and the first key of batch b-1 at version b. */
const sharedKeySource: Source = {
  name: "parts-test",
  elements: () =>
    Stream.fromIterable(Array.from({ length: batches }, (_, b) =>
      Array.from({ length: perBatch }, (_, i): SourceElement => ({
        _tag: "Record",
        position: { partition: "0", offset: b * perBatch + i + 1 },
        value: i === perBatch - 1 && b > 0 ? { id: `k${b - 1}-0`, version: b } : { id: `k${b}-${i}`, version: b }
      }))).flat())
}

/** A fresh keyed dataset (`id`, `version`) on the server, and a client of it. */
const keyedDataset = (name: string) =>
  Effect.gen(function*() {
    const serverUrl = yield* ServerUrl
    const datasetId = yield* Effect.promise(() => newDataset(serverUrl, apiKey, { name, schema: idAndVersion, primaryKey: ["id"] }))
    const client = yield* Effect.map(
      Layer.build(TributaryClient.layer({ baseUrl: serverUrl, apiKey: Redacted.make(apiKey) })),
      Context.get(TributaryClient)
    )
    return { client, datasetId, serverUrl }
  })

/** `sharedKeySource` into the dataset, 100-record batches, 8 requests at once; `more` adds to the config. */
const runShared = (client: TributaryClientService, datasetId: string, more: Partial<PipelineConfig<never, never>> = {}) =>
  Effect.gen(function*() {
    return yield* run(client, {
      source: sharedKeySource,
      destination: { datasetId },
      checkpoint: yield* Checkpoint.memory(),
      deadLetters: yield* DeadLetter.memory,
      batch: { max: perBatch },
      concurrency: { fixed: 8 },
      ...more
    })
  })

/** Each row's `version` by its `id`. */
const versionsOf = (serverUrl: string, datasetId: string) =>
  Effect.map(
    Effect.promise(() => readAllRows(serverUrl, apiKey, datasetId)),
    (rows) => Object.fromEntries(rows.map((row) => [String(row["id"]), Number(row["version"])]))
  )

describe("keyed batches in parts against a service that takes its time", () => {
  layer(serverLayer({ faults: faults.right }), { excludeTestServices: true })("processing=300-400ms", (it) => {
    it.effect("20 batches each sharing a key with the one before: many ingestions under way at once, every key at its last version", () =>
      Effect.gen(function*() {
        const { client, datasetId, serverUrl } = yield* keyedDataset("parts")
        const final = yield* runShared(client, datasetId)
        expect(final.accepted).toBe(batches * perBatch)
        expect(final.deadLettered).toBe(0)

        // Every key at its last version: k{b}-0 was written by batch b, then by batch b+1.
        const versions = yield* versionsOf(serverUrl, datasetId)
        expect(Object.keys(versions)).toHaveLength(batches * (perBatch - 1) + 1) // batch 0 shares nothing
        for (let b = 0; b < batches; b++) {
          expect(versions[`k${b}-0`], `k${b}-0`).toBe(b === batches - 1 ? b : b + 1)
          expect(versions[`k${b}-1`], `k${b}-1`).toBe(b)
        }

        // The service's account: a batch whose shared key was still held went in two parts, and
        // the free parts did not wait: many ingestions were under way together.
        const listed = yield* Effect.promise(() => apiData(serverUrl, apiKey, "GET", `/v2/datasets/${datasetId}/ingestions?pageSize=100`))
        const ingestions: Array<{ status: string; initiatedAt: string; duration: number | null }> = listed.items
        expect(ingestions.filter((i) => i.status !== "success")).toEqual([])
        expect(ingestions.length).toBeGreaterThan(batches + batches / 2)
        const intervals = ingestions.map((i) => {
          const start = Date.parse(i.initiatedAt)
          return [start, start + (i.duration ?? 0)] as const
        })
        expect(maxOverlap(intervals)).toBeGreaterThanOrEqual(5)
      }).pipe(Effect.scoped))

    it.effect("maxPending 4: batches whose held records wait keep only those records' share of a place, so more than 4 batches are under way (never more than 8), and every key ends at its last version", () =>
      Effect.gen(function*() {
        const { client, datasetId, serverUrl } = yield* keyedDataset("parts-bound")
        let peak = 0
        const final = yield* runShared(client, datasetId, {
          maxPending: { batches: 4 },
          progressInterval: "10 millis",
          onEvent: (event) =>
            Effect.sync(() => {
              if (event._tag === "Progress") peak = Math.max(peak, event.progress.inFlight)
            })
        })
        expect(final.accepted).toBe(batches * perBatch)
        // Held whole, a batch kept its place until its held record ended: 4 at most.
        expect(peak).toBeGreaterThan(4)
        expect(peak).toBeLessThanOrEqual(8)
        const versions = yield* versionsOf(serverUrl, datasetId)
        for (let b = 0; b < batches; b++) expect(versions[`k${b}-0`], `k${b}-0`).toBe(b === batches - 1 ? b : b + 1)
      }).pipe(Effect.scoped))

    it.effect("the split is recorded before a part goes: after a crash before any commit, every batch goes again in the same parts, under the same keys, and is only replayed", () =>
      Effect.gen(function*() {
        const { client, datasetId } = yield* keyedDataset("parts-restart")
        // A checkpoint that records the run and the cuts but never a commit: as if the process
        // died after every batch was sent and before its position was written.
        const store = yield* Checkpoint.memory()
        const uncommitted = { ...store, commit: () => Effect.void }
        const letters = yield* DeadLetter.memory
        const runOnce = (checkpoint: Checkpoint.CheckpointStore) =>
          run(client, {
            source: sharedKeySource,
            destination: { datasetId },
            checkpoint,
            deadLetters: letters,
            batch: { max: perBatch },
            concurrency: { fixed: 8 }
          })
        const first = yield* runOnce(uncommitted)
        expect(first.replayed).toBe(0)
        const recorded = (yield* store.current).cuts
        const inParts = recorded.filter((cut) => cut.held !== undefined)
        // Batches went in parts, each cut recorded with the offsets of its held records.
        expect(inParts.length).toBeGreaterThan(0)
        for (const cut of inParts) expect(cut.held).toEqual([cut.last])

        // The restart: the same batches, the same parts, the same keys: all replays.
        const again = yield* runOnce(uncommitted)
        expect([again.accepted, again.replayed]).toEqual([batches * perBatch, batches * perBatch])

        // Without the recorded split the parts are lost: those batches go whole, under keys the
        // service has not seen, and are applied again (this is what the record prevents).
        const forgetful = yield* Checkpoint.memory({ ...(yield* store.current), cuts: recorded.map(({ held: _held, ...cut }) => cut) })
        const whole = yield* runOnce({ ...forgetful, commit: () => Effect.void })
        expect(whole.replayed).toBeLessThan(batches * perBatch)
        expect(batches * perBatch - whole.replayed).toBe(inParts.length * perBatch)
      }).pipe(Effect.scoped))

    it.effect("a partition taken away while a held part waits: the part does not go ahead of the earlier batch that ended unsent; back with its next assignment, every key ends at its last version", () =>
      Effect.gen(function*() {
        const { client, datasetId, serverUrl } = yield* keyedDataset("parts-revoked")
        const events = yield* Queue.unbounded<SourceEvent | null>()
        const store = yield* Checkpoint.memory()
        const writer = { recordCuts: store.recordCuts, commit: store.commit }
        let owned = true
        const source: PartitionedSource = {
          _tag: "PartitionedSource",
          name: "parts-revoked",
          events: Stream.takeWhile(Stream.fromQueue(events), (e) => e !== null) as Stream.Stream<SourceEvent>
        }
        const at = (offset: number, id: string, version: number): SourceEvent => ({
          _tag: "Record",
          position: { partition: "p", offset },
          value: { id, version }
        })
        // Batches of two: [a b] goes; [b a] waits whole (every key held); [a z]: z goes, a waits for [b a].
        const records = [at(1, "a", 0), at(2, "b", 0), at(3, "b", 1), at(4, "a", 1), at(5, "a", 2), at(6, "z", 2)]
        const running = yield* Effect.fork(run(client, {
          source,
          destination: { datasetId },
          deadLetters: yield* DeadLetter.memory,
          batch: { max: 2, linger: "10 millis" },
          concurrency: { fixed: 8 },
          poll: { initial: "10 millis", max: "20 millis" }
        }))
        yield* Queue.offer(events, {
          _tag: "Assigned",
          assignments: [{ partition: "p", committed: undefined, cuts: [], checkpoint: writer, owned: () => owned }]
        })
        yield* Queue.offerAll(events, records)
        yield* Effect.sleep("150 millis")
        // The group takes the partition away; the run hears of it only later. [a b] ends
        // meanwhile (300-400 ms), so [b a] ends unsent, and [a z]'s held record may not go either.
        owned = false
        yield* Effect.sleep("900 millis")
        expect(yield* versionsOf(serverUrl, datasetId)).toEqual({ a: 0, b: 0, z: 2 })

        const released = yield* Deferred.make<void>()
        yield* Queue.offer(events, { _tag: "Revoked", partitions: ["p"], release: Deferred.succeed(released, undefined) })
        yield* Deferred.await(released)
        // It comes back, from its last commit with the cuts recorded past it (the split too).
        const checkpoint = yield* store.current
        owned = true
        yield* Queue.offer(events, {
          _tag: "Assigned",
          assignments: [{ partition: "p", committed: checkpoint.positions["p"], cuts: checkpoint.cuts, checkpoint: writer, owned: () => owned }]
        })
        const from = (checkpoint.positions["p"]?.offset ?? 0) + 1
        yield* Queue.offerAll(events, [...records.filter((r) => r._tag === "Record" && r.position.offset >= from), null])
        yield* Fiber.join(running)
        expect(yield* versionsOf(serverUrl, datasetId)).toEqual({ a: 2, b: 1, z: 2 })
      }).pipe(Effect.scoped))
  })
})
