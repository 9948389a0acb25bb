/**
 * A programmatic backfill: a Postgres query into a dataset (made from the query's columns on
 * the first run), in 4 partitions read in parallel, resumable from a checkpoint file, and
 * incremental: a later run sends only the rows whose `updated_at` moved since the last.
 *
 *   TRIBUTARY_API_URL=... TRIBUTARY_API_KEY=... DATABASE_URL=postgres://... \
 *     npx tsx examples/postgres-backfill.ts TABLE CHECKPOINT_FILE (DATA_SOURCE_ID | --dataset DATASET_ID)
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Config, Console, Effect } from "effect"
import { TributaryClient } from "tributary-ingest/client"
import * as Postgres from "tributary-ingest/connectors/postgres"
import { DeadLetter, run } from "tributary-ingest/pipeline"

const [table, checkpoint, ...target] = process.argv.slice(2)

const job = Effect.gen(function*() {
  if (table === undefined || checkpoint === undefined || target.length === 0) {
    return yield* Effect.fail("usage: postgres-backfill.ts TABLE CHECKPOINT_FILE (DATA_SOURCE_ID | --dataset DATASET_ID)")
  }
  const client = yield* TributaryClient
  const source = yield* Postgres.make({
    relation: { _tag: "Query", sql: `SELECT id, name, amount, updated_at FROM ${table}` },
    key: ["id"],
    partitions: 4,
    since: "updated_at",
    checkpoint: { _tag: "File", path: checkpoint }
  })
  // A new dataset takes the query's columns, and the key as its primary key.
  const datasetId = target[0] === "--dataset" ? target[1]! : String(
    (yield* client.v2.v2Datasets.create({
      payload: { name: table, dataSourceId: Number(target[0]), schema: source.schema.columns, primaryKey: source.schema.primaryKey },
      headers: {}
    })).data.id
  )
  yield* Console.log(`dataset ${datasetId}`)
  const progress = yield* run(client, {
    source,
    destination: { datasetId },
    deadLetters: yield* DeadLetter.ndjsonFile(`${checkpoint}.dead-letters.ndjson`),
    onEvent: (event) =>
      event._tag === "DeadLettered" ? Effect.logWarning(event.letter.reason.message) : Effect.void
  })
  // Every partition of this run's generation done (else the next run would go on with it).
  yield* source.ensureFinished
  yield* Console.log(`stored ${progress.accepted} of ${progress.read} rows; ${progress.deadLettered} dead letters`)
})

job.pipe(
  Effect.provide(Postgres.layerConfig(Config.all({ url: Config.redacted("DATABASE_URL") }))),
  Effect.provide(TributaryClient.layerConfig()),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain
)
