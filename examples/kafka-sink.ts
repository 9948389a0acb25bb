/**
 * A Kafka sink embedded in a service of your own: every message of a topic into a dataset,
 * effectively once, until the process is told to stop (SIGTERM or Ctrl-C: it stops fetching,
 * delivers what it read, commits, and exits 0). Start it several times with the same group to
 * share the partitions. The message key and timestamp go into columns of their own.
 *
 *   TRIBUTARY_API_URL=... TRIBUTARY_API_KEY=... npx tsx examples/kafka-sink.ts BROKERS TOPIC GROUP DATASET_ID [DEAD_LETTERS]
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { TributaryClient } from "tributary-ingest/client"
import * as Kafka from "tributary-ingest/connectors/kafka"
import { DeadLetter } from "tributary-ingest/pipeline"

const [brokers, topic, groupId, datasetId, deadLetterPath] = process.argv.slice(2)

const sink = Effect.gen(function*() {
  if (brokers === undefined || topic === undefined || groupId === undefined || datasetId === undefined) {
    return yield* Effect.fail("usage: kafka-sink.ts BROKERS TOPIC GROUP DATASET_ID")
  }
  const client = yield* TributaryClient
  const source = yield* Kafka.make({
    groupId,
    topics: [topic],
    // The value's fields, plus where the message came from.
    decode: (message) => ({
      ...JSON.parse(message.value?.toString("utf8") ?? "null"),
      key: message.key?.toString("utf8") ?? null,
      producedAt: new Date(message.timestamp).toISOString()
    })
  })
  yield* Console.log(`sinking ${topic} into ${datasetId} as group ${groupId}`)
  yield* Kafka.runUntilStopped(client, {
    source,
    destination: { datasetId },
    deadLetters: yield* DeadLetter.ndjsonFile(deadLetterPath ?? `${groupId}.dead-letters.ndjson`),
    onEvent: (event) => (event._tag === "Committed" ? Console.log(`committed ${event.position.partition} through ${event.position.offset}`) : Effect.void)
  }).pipe(Effect.onInterrupt(() => Console.log("stopped: everything delivered is committed")))
})

sink.pipe(
  Effect.scoped,
  Effect.provide(Kafka.layer({ brokers: (brokers ?? "").split(","), clientId: "kafka-sink-example" })),
  Effect.provide(TributaryClient.layerConfig()),
  NodeRuntime.runMain
)
