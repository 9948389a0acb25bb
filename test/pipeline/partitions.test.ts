/**
 * Partitions assigned and revoked during a run (a consumer group's rebalance), against a real
 * HTTP server on loopback that answers slowly, so that batches are in flight when a partition
 * is revoked.
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Deferred, Effect, Fiber, Layer, Queue, Redacted, Stream } from "effect"
import { TributaryClient } from "../../src/client/index.js"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import { run } from "../../src/pipeline/run.js"
import type { PartitionedSource, SourceEvent } from "../../src/pipeline/Source.js"
import { json, scriptedServer } from "../support/http.js"

const schema = { columns: [{ id: "id", dataType: "string" as const }], primaryKey: [] }
const record = (partition: string, offset: number): SourceEvent => ({
  _tag: "Record",
  position: { partition, offset },
  value: { id: `${partition}-${offset}` }
})

/** Answers each POST after `delayMs`; every ingestion is a success. */
const slowServer = (delayMs: number) =>
  scriptedServer((arrival) => (_a, res) => {
    if (arrival.method === "POST") {
      setTimeout(() => json(res, 200, { requestId: "r", status: "success", data: { ingestionId: randomUUID(), status: "queued" } }), delayMs)
      return
    }
    json(res, 200, {
      requestId: "r",
      status: "success",
      data: { status: "success", errors: null, summary: { ingestion: { receivedRecordCount: 1, appendedRecordCount: 1, overwrittenRecordCount: 0, rejectedRecordCount: 0 } } }
    })
  })

describe("partitions assigned and revoked during a run", () => {
  it.scopedLive("a revoked partition's batch in flight lands and is committed before the partition is released; nothing more of it is sent", () =>
    Effect.gen(function*() {
      const server = yield* slowServer(400)
      const client = yield* Effect.map(
        Layer.build(TributaryClient.layer({ baseUrl: server.url, apiKey: Redacted.make("k"), retry: { maxRetries: 0 } })),
        Context.get(TributaryClient)
      )
      const events = yield* Queue.unbounded<SourceEvent>()
      const store = yield* Checkpoint.memory()
      const log: Array<string> = []
      const writer = {
        recordCuts: (cuts: ReadonlyArray<Checkpoint.BatchCut>) =>
          Effect.zipRight(Effect.sync(() => log.push(`cuts ${cuts.map((c) => `${c.partition}:${c.first}-${c.last}`).join(",")}`)), store.recordCuts(cuts)),
        commit: (position: { partition: string; offset: number }) =>
          Effect.zipRight(Effect.sync(() => log.push(`commit ${position.partition}@${position.offset}`)), store.commit(position))
      }
      const source: PartitionedSource = {
        _tag: "PartitionedSource",
        name: "group",
        events: Stream.fromQueue(events)
      }
      const running = yield* Effect.fork(run(client, {
        source,
        destination: { datasetId: "00000000-0000-4000-8000-000000000000" },
        schema,
        deadLetters: yield* DeadLetter.memory,
        commitInterval: "1 hour", // only the revocation commits
        batch: { max: 3, linger: "1 second" },
        poll: { initial: "5 millis", max: "20 millis" }
      }))

      // p0 comes with a cut recorded by its previous owner: records 10..11 go out as one batch.
      yield* Queue.offer(events, {
        _tag: "Assigned",
        assignments: [{ partition: "p0", committed: { partition: "p0", offset: 9 }, cuts: [{ partition: "p0", first: 10, last: 11 }], checkpoint: writer }]
      })
      yield* Queue.offerAll(events, [record("p0", 10), record("p0", 11), record("p0", 12)])
      // The batch 10..11 is in flight (the server waits 400 ms), 12 waits in an open batch; then a rebalance.
      yield* Effect.sleep("150 millis")
      const released = yield* Deferred.make<void>()
      yield* Queue.offer(events, {
        _tag: "Revoked",
        partitions: ["p0"],
        release: Effect.zipRight(Effect.sync(() => log.push("released p0")), Deferred.succeed(released, undefined))
      })
      yield* Deferred.await(released)
      yield* Queue.offer(events, { _tag: "Assigned", assignments: [{ partition: "p1", committed: undefined, cuts: [], checkpoint: writer }] })
      yield* Queue.offerAll(events, [record("p1", 0), record("p1", 1), record("p1", 2)])
      yield* Effect.sleep("600 millis")
      yield* Fiber.interrupt(running)

      const posted = server.arrivals.filter((a) => a.method === "POST").map((a) =>
        (JSON.parse(a.body).records as Array<{ id: string }>).map((r) => r.id).join(",")
      )
      // 10..11 as recorded; 12 (read, never sent) is left to the partition's next owner.
      expect(posted).toEqual(["p0-10,p0-11", "p1-0,p1-1,p1-2"])
      expect(log.slice(0, 3)).toEqual(["commit p0@11", "released p0", "cuts p1:0-2"])
      expect((yield* store.current).positions["p0"]?.offset).toBe(11)
      expect(Chunk.size(yield* Queue.takeAll(events))).toBe(0)
    }))
})
