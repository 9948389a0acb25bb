/**
 * The v1 API through the typed client: create a data source and a dataset, ingest two
 * records, wait for the ingestion and print its metrics.
 *
 *   TRIBUTARY_API_URL=http://127.0.0.1:8080 TRIBUTARY_API_KEY=... npx tsx examples/v1-client.ts
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Schedule } from "effect"
import { TributaryClient } from "tributary-ingest/client"

const program = Effect.gen(function*() {
  const client = yield* TributaryClient
  const dataSource = yield* client.v1.v1DataSources.createDataSource({
    payload: { title: "Shop", timezone: "Europe/Ljubljana" }
  })
  const dataset = yield* client.v1.v1Datasets.createDataset({
    payload: { title: "Orders", dataSourceId: dataSource.id, primaryKeys: ["orderId"] }
  })
  const { ingestionId } = yield* client.v1.v1Datasets.ingest({
    path: { datasetId: dataset.id },
    payload: {
      records: [
        { orderId: "A-1", amount: 12.5, country: "SI", placedAt: "2026-11-01T10:00:00Z" },
        { orderId: "A-2", amount: 7, country: "DE", placedAt: "2026-11-01T11:30:00Z" }
      ]
    },
    headers: {}
  })
  // Ingestion is asynchronous: poll the detail until it leaves `processing`.
  const detail = yield* client.v1.v1Datasets.getIngestion({ path: { datasetId: dataset.id, ingestionId } }).pipe(
    Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (d) => d.status !== "processing" }),
    Effect.zipRight(client.v1.v1Datasets.getIngestion({ path: { datasetId: dataset.id, ingestionId } }))
  )
  yield* Console.log(`ingestion ${ingestionId}: ${detail.status}`, detail.metrics)
}).pipe(
  Effect.catchTags({
    Unauthorized: (e) => Console.error(`the key was refused: ${e.errors[0]?.message}`),
    BadRequest: (e) => Console.error(`invalid input on ${e.errors[0]?.field}: ${e.errors[0]?.message}`)
  })
)

program.pipe(Effect.provide(TributaryClient.layerConfig()), NodeRuntime.runMain)
