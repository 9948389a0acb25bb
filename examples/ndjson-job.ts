/**
 * An ETL job embedding the pipeline: send an NDJSON file into a dataset, effectively once,
 * logging progress, and print what happened.
 *
 *   TRIBUTARY_API_URL=... TRIBUTARY_API_KEY=... npx tsx examples/ndjson-job.ts FILE DATASET_ID
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { TributaryClient } from "tributary-ingest/client"
import * as Ndjson from "tributary-ingest/connectors/ndjson"
import { Checkpoint, DeadLetter, run } from "tributary-ingest/pipeline"

const [file, datasetId] = process.argv.slice(2)

const job = Effect.gen(function*() {
  if (file === undefined || datasetId === undefined) return yield* Effect.fail("usage: ndjson-job.ts FILE DATASET_ID")
  const client = yield* TributaryClient
  const progress = yield* run(client, {
    source: Ndjson.fromFile(file),
    destination: { datasetId },
    checkpoint: yield* Checkpoint.file(`${file}.checkpoint.json`),
    deadLetters: yield* DeadLetter.ndjsonFile(`${file}.dead-letters.ndjson`),
    concurrency: 4,
    onEvent: (event) =>
      event._tag === "DeadLettered"
        ? Effect.logWarning(`line ${event.letter.position.offset}: ${event.letter.reason.message}`)
        : Effect.void
  })
  yield* Console.log(`stored ${progress.accepted} of ${progress.read} records; ${progress.deadLettered} dead letters`)
})

job.pipe(Effect.provide(TributaryClient.layerConfig()), Effect.provide(NodeContext.layer), NodeRuntime.runMain)
