/**
 * The run's end commits the last position of every partition, even when the committer is in
 * the middle of writing when it is stopped: with slow writes per partition (a checkpoint per
 * partition, as a Postgres backfill or a Kafka group keeps), the committer used to be
 * interrupted between two partitions' writes and drop the rest.
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Stream } from "effect"
import { TributaryClient } from "../../src/client/index.js"
import type { BatchCut } from "../../src/pipeline/Checkpoint.js"
import * as DeadLetter from "../../src/pipeline/DeadLetter.js"
import { run } from "../../src/pipeline/run.js"
import type { PartitionedSource, Position, SourceEvent } from "../../src/pipeline/Source.js"
import { json, scriptedServer } from "../support/http.js"

const schema = { columns: [{ id: "id", dataType: "string" as const }], primaryKey: [] }

/** A client of a service that accepts every batch and answers every ingestion as ended. */
const acceptingClient = Effect.gen(function*() {
  const server = yield* scriptedServer((arrival) => (_a, res) =>
    arrival.method === "POST"
      ? json(res, 200, { requestId: "r", status: "success", data: { ingestionId: randomUUID(), status: "queued" } })
      : json(res, 200, {
        requestId: "r",
        status: "success",
        data: { status: "success", errors: null, summary: { ingestion: { receivedRecordCount: 1, appendedRecordCount: 1, overwrittenRecordCount: 0, rejectedRecordCount: 0 } } }
      })
  )
  return yield* Effect.map(
    Layer.build(TributaryClient.layer({ baseUrl: server.url, apiKey: Redacted.make("k"), retry: { maxRetries: 0 } })),
    Context.get(TributaryClient)
  )
})

describe("the run's final commit", () => {
  it.scopedLive("every partition's last position is committed, however slow each partition's write", () =>
    Effect.gen(function*() {
      const client = yield* acceptingClient
      const committed = new Map<string, number>()
      const writer = {
        recordCuts: (_cuts: ReadonlyArray<BatchCut>) => Effect.void,
        // A durable write per partition that takes a while.
        commit: (position: Position) =>
          Effect.zipRight(Effect.sleep("20 millis"), Effect.sync(() => committed.set(position.partition, position.offset)))
      }
      const partitions = Array.from({ length: 8 }, (_, i) => `p${i}`)
      const events: Array<SourceEvent> = [
        { _tag: "Assigned", assignments: partitions.map((partition) => ({ partition, committed: undefined, cuts: [], checkpoint: writer })) },
        ...partitions.flatMap((partition) =>
          Array.from({ length: 20 }, (_, offset): SourceEvent => ({ _tag: "Record", position: { partition, offset }, value: { id: `${partition}-${offset}` } }))
        )
      ]
      const source: PartitionedSource = { _tag: "PartitionedSource", name: "slow-commits", events: Stream.fromIterable(events) }
      const progress = yield* run(client, {
        source,
        destination: { datasetId: "00000000-0000-4000-8000-000000000000" },
        schema,
        deadLetters: yield* DeadLetter.memory,
        commitInterval: "1 millis",
        batch: { max: 5, linger: "10 millis" },
        poll: { initial: "1 millis", max: "5 millis" }
      })
      expect(progress.read).toBe(160)
      expect(Object.fromEntries(committed)).toEqual(Object.fromEntries(partitions.map((p) => [p, 19])))
    }))

  it.scopedLive("a position is written as soon as it waits and no write is under way, then no sooner than commitInterval after the last write", () =>
    Effect.gen(function*() {
      const client = yield* acceptingClient
      const started = Date.now()
      const commits: Array<{ readonly offset: number; readonly at: number }> = []
      const writer = {
        recordCuts: (_cuts: ReadonlyArray<BatchCut>) => Effect.void,
        commit: (position: Position) => Effect.sync(() => commits.push({ offset: position.offset, at: Date.now() - started }))
      }
      // One record now, one 400 ms later, one 800 ms later: each its own batch (linger 10 ms).
      const record = (offset: number): SourceEvent => ({ _tag: "Record", position: { partition: "p", offset }, value: { id: `r${offset}` } })
      const source: PartitionedSource = {
        _tag: "PartitionedSource",
        name: "quiet-stream",
        events: Stream.concat(
          Stream.make<Array<SourceEvent>>({ _tag: "Assigned", assignments: [{ partition: "p", committed: undefined, cuts: [], checkpoint: writer }] }, record(0)),
          Stream.fromEffect(Effect.as(Effect.sleep("400 millis"), record(1))).pipe(
            Stream.concat(Stream.fromEffect(Effect.as(Effect.sleep("400 millis"), record(2))))
          )
        )
      }
      yield* run(client, {
        source,
        destination: { datasetId: "00000000-0000-4000-8000-000000000000" },
        schema,
        deadLetters: yield* DeadLetter.memory,
        commitInterval: "1 minute",
        batch: { max: 5, linger: "10 millis" },
        poll: { initial: "1 millis", max: "5 millis" }
      })
      // The first at once (not a minute later); the second waits for the interval, so only the
      // run's final write has the last; nothing in between.
      expect(commits.map((c) => c.offset)).toEqual([0, 2])
      expect(commits[0]!.at).toBeLessThan(300)
      expect(commits[1]!.at).toBeGreaterThanOrEqual(800)
    }))
})
