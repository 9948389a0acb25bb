/**
 * `tributary demo`: the whole product on the embedded defaults. Starts the reference
 * server, creates a data source and a dataset with a schema, ingests the bundled sample
 * (a few of its lines are bad on purpose) with the progress display, and prints the outcome
 * and where the dead letters went.
 *
 * @since 0.1.0
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as HttpServer from "@effect/platform/HttpServer"
import { Console, Context, Effect, Layer, Redacted } from "effect"
import { TributaryClient } from "../client/Client.js"
import * as ReferenceServer from "../server/http/server.js"
import { defaultSeed, generateApiKey } from "../server/seed.js"
import type { demoOptions } from "./options.js"
import { ingestNdjson, summarize } from "./ingest.js"
import type { Values } from "./spec.js"

/**
 * The bundled sample: 2,000 orders and six bad lines.
 *
 * @since 0.1.0
 * @category defaults
 */
export const sampleFile = fileURLToPath(new URL("../../../examples/data/orders.ndjson", import.meta.url))

/**
 * Runs `tributary demo`.
 *
 * @since 0.3.0
 * @category running
 */
export const main = (options: Values<typeof demoOptions>) =>
  Effect.gen(function*() {
    const input = options.file ?? sampleFile
    const apiKey = generateApiKey()
    const context = yield* Layer.build(
      ReferenceServer.layer({
        host: "127.0.0.1",
        port: options.port,
        seed: defaultSeed(apiKey),
        maxBodyBytes: ReferenceServer.defaultMaxBodyBytes
      })
    )
    const url = ReferenceServer.serverUrl(Context.get(context, HttpServer.HttpServer).address)
    yield* Console.log(`reference server on ${url} (API key ${apiKey})`)
    const client = yield* Effect.map(
      Layer.build(TributaryClient.layer({ baseUrl: url, apiKey: Redacted.make(apiKey) })),
      Context.get(TributaryClient)
    )
    const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "Shop", timezone: "UTC" }, headers: {} })
    const dataset = yield* client.v2.v2Datasets.create({
      payload: {
        name: "Orders",
        dataSourceId: dataSource.data.id,
        primaryKey: ["orderId"],
        schema: [
          { id: "orderId", dataType: "string" },
          { id: "placedAt", dataType: "datetime" },
          { id: "country", dataType: "string" },
          { id: "amount", dataType: "number" },
          { id: "items", dataType: "number" },
          { id: "tags", dataType: "string" }
        ]
      },
      headers: {}
    })
    yield* Console.log(`created data source ${dataSource.data.id} and dataset ${dataset.data.id} (primary key orderId)`)
    yield* Console.log(`ingesting ${input}`)
    // A directory of its own, removed when the demo ends (Ctrl-C too), unless the user named one.
    const workDir = options.workDir ?? (yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "tributary-demo-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    ))
    if (options.workDir !== undefined) mkdirSync(workDir, { recursive: true })
    const paths = { deadLetters: join(workDir, "dead-letters.ndjson"), checkpoint: join(workDir, "checkpoint.json") }
    const progress = yield* ingestNdjson(client, {
      input: input,
      datasetId: dataset.data.id,
      deadLetterPath: paths.deadLetters,
      checkpointPath: paths.checkpoint
    })
    yield* Console.log(summarize(progress, paths))
    if (options.workDir === undefined) {
      yield* Console.log(`(${workDir} is removed when the demo ends; --work-dir DIR keeps these files)`)
    }
    const stored = yield* client.v2.v2Datasets.get({ path: { id: dataset.data.id } })
    yield* Console.log(`dataset ${dataset.data.id} now holds ${stored.data.rowCount} rows`)
    if (options.keepServing) {
      yield* Console.log(`still serving on ${url}; try: curl -H 'x-api-key: ${apiKey}' '${url}/v2/datasets/${dataset.data.id}/data?pageSize=3'`)
      return yield* Effect.never
    }
  }).pipe(Effect.scoped)
