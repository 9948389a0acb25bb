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

describe("the run's final commit", () => {
  it.scopedLive("every partition's last position is committed, however slow each partition's write", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer((arrival) => (_a, res) =>
        arrival.method === "POST"
          ? json(res, 200, { requestId: "r", status: "success", data: { ingestionId: randomUUID(), status: "queued" } })
          : json(res, 200, {
            requestId: "r",
            status: "success",
            data: { status: "success", errors: null, summary: { ingestion: { receivedRecordCount: 1, appendedRecordCount: 1, overwrittenRecordCount: 0, rejectedRecordCount: 0 } } }
          })
      )
      const client = yield* Effect.map(
        Layer.build(TributaryClient.layer({ baseUrl: server.url, apiKey: Redacted.make("k"), retry: { maxRetries: 0 } })),
        Context.get(TributaryClient)
      )
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
})
