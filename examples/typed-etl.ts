/**
 * A typed ETL job: read orders from an NDJSON file, decode them with a schema, explode each
 * order into its lines, enrich each line with a lookup (the country's sales region), and send
 * the lines to a dataset whose schema is derived from the output schema. Effectively once:
 * run it again after a crash and it resumes from its checkpoint; an order's position is
 * committed only once all of its lines are stored or dead-lettered.
 *
 *   TRIBUTARY_API_URL=... TRIBUTARY_API_KEY=... npx tsx examples/typed-etl.ts FILE DATASET_ID
 *   TRIBUTARY_API_URL=... TRIBUTARY_API_KEY=... npx tsx examples/typed-etl.ts FILE --create DATA_SOURCE_ID
 *
 * With `--create`, a dataset is created from the output schema (primary key `lineId`) and its
 * id printed; give that id to later runs. Otherwise the dataset's schema is compared with the
 * output schema at start, and a mismatch stops the job naming every column that differs.
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Context, Data, Effect, Layer, Schema } from "effect"
import { TributaryClient } from "tributary-ingest/client"
import * as Ndjson from "tributary-ingest/connectors/ndjson"
import { Checkpoint, DeadLetter, run, Typed } from "tributary-ingest/pipeline"

/**
 * An order as the file holds it; `placedAt` is ISO 8601 text, decoded into a `Date` as the
 * service's `datetime` reads it: a day that does not exist (`2026-02-30`) is a dead letter of
 * stage `decode`, not March 2.
 */
const Order = Schema.Struct({
  orderId: Schema.String,
  placedAt: Schema.Date,
  country: Schema.String,
  amount: Schema.Number,
  items: Schema.Int.pipe(Schema.nonNegative()),
  tags: Schema.Array(Schema.String)
})

/** One line of an order, as the dataset stores it. */
const OrderLine = Schema.Struct({
  lineId: Schema.String,
  orderId: Schema.String,
  line: Schema.Int,
  amount: Schema.Number,
  placedAt: Schema.Date,
  region: Schema.Literal("EU", "UK", "NA"),
  tags: Schema.Array(Schema.String),
  note: Schema.optional(Schema.String)
})

class UnknownCountry extends Data.TaggedError("UnknownCountry")<{ readonly message: string }> {}

/** The lookup: a service of its own, as a real one (a database, an HTTP API) would be. */
class Regions extends Context.Tag("examples/Regions")<Regions, {
  readonly of: (country: string) => Effect.Effect<"EU" | "UK" | "NA", UnknownCountry>
}>() {}

const regions = { AT: "EU", DE: "EU", FR: "EU", HR: "EU", IT: "EU", SI: "EU", GB: "UK", US: "NA", CA: "NA" } as const

const RegionsLive = Layer.succeed(Regions, {
  of: (country) =>
    country in regions
      ? Effect.succeed(regions[country as keyof typeof regions])
      : Effect.fail(new UnknownCountry({ message: `no sales region for country ${country}` }))
})

/** Orders in, order lines out: the typed part of the run. */
const orderLines = Typed.records({
  decode: Order,
  transform: (orders) =>
    orders.pipe(
      // An order of n items is n lines, the amount shared out; an order of none is dropped.
      Typed.flatMap((order) =>
        Array.from({ length: order.items }, (_, i) => ({
          lineId: `${order.orderId}-${i + 1}`,
          orderId: order.orderId,
          line: i + 1,
          amount: Math.round((order.amount / order.items) * 100) / 100,
          placedAt: order.placedAt,
          country: order.country,
          tags: order.tags
        }))
      ),
      Typed.mapEffect(({ country, ...line }) => Effect.map(Regions.pipe(Effect.flatMap((r) => r.of(country))), (region) => ({ ...line, region })))
    ),
  encode: OrderLine
})

const [file, datasetArg, dataSourceArg] = process.argv.slice(2)

const job = Effect.gen(function*() {
  if (file === undefined || datasetArg === undefined) {
    return yield* Effect.fail("usage: typed-etl.ts FILE DATASET_ID | typed-etl.ts FILE --create DATA_SOURCE_ID")
  }
  const client = yield* TributaryClient
  const datasetId = datasetArg === "--create"
    ? yield* Typed.createDataset(client, OrderLine, { dataSourceId: Number(dataSourceArg), name: "order lines", primaryKey: ["lineId"] })
    : datasetArg
  if (datasetArg === "--create") yield* Console.log(`created dataset ${datasetId}`)
  const progress = yield* run(client, {
    source: Ndjson.fromFile(file),
    records: orderLines,
    destination: { datasetId },
    checkpoint: yield* Checkpoint.file(`${file}.checkpoint.json`),
    deadLetters: yield* DeadLetter.ndjsonFile(`${file}.dead-letters.ndjson`),
    onEvent: (event) =>
      event._tag === "DeadLettered"
        ? Effect.logWarning(`line ${event.letter.position.offset} (${event.letter.stage}): ${event.letter.reason.message}`)
        : Effect.void
  })
  yield* Console.log(
    `stored ${progress.accepted} order lines; ${progress.deadLettered} dead letters, ${progress.dropped} orders without lines`
  )
  yield* Console.log(`checkpoint: ${file}.checkpoint.json`)
})

job.pipe(
  Effect.provide(RegionsLive),
  Effect.provide(TributaryClient.layerConfig()),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain
)
