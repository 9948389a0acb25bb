/**
 * tributary from plain JavaScript (no Effect, no build step): create a dataset, send a file
 * of orders into it with progress and dead letters, write a few records one by one, and
 * catch an error of the service.
 *
 *   TRIBUTARY_API_URL=http://127.0.0.1:8080 TRIBUTARY_API_KEY=dev node examples/plain-node.mjs examples/data/orders.ndjson
 */
import { ApiError, createClient } from "tributary-ingest"

const file = process.argv[2] ?? "examples/data/orders.ndjson"
const tributary = createClient({ baseUrl: process.env.TRIBUTARY_API_URL, apiKey: process.env.TRIBUTARY_API_KEY })

try {
  // Every operation of the API is a Promise method (v1 and v2).
  const source = await tributary.v2.v2DataSources.create({ payload: { name: "plain example" } })
  const dataset = await tributary.v2.v2Datasets.create({
    payload: {
      name: `orders ${Date.now()}`,
      dataSourceId: source.data.id,
      schema: [
        { id: "orderId", dataType: "string" },
        { id: "placedAt", dataType: "datetime" },
        { id: "country", dataType: "string" },
        { id: "amount", dataType: "number" },
        { id: "items", dataType: "number" },
        { id: "tags", dataType: "string" }
      ],
      primaryKey: ["orderId"]
    }
  })
  const datasetId = dataset.data.id

  // A file, effectively once: run it again after a crash and it resumes from its checkpoint.
  const letters = []
  const progress = await tributary.ingest({
    from: file,
    dataset: datasetId,
    checkpoint: false,
    deadLetters: (batch) => void letters.push(...batch),
    onProgress: (p) => console.error(`read ${p.read}, stored ${p.accepted}`)
  })
  console.log(`ingested ${progress.accepted} of ${progress.read} records; ${letters.length} dead letters`)
  for (const letter of letters.slice(0, 3)) console.log(`  line ${letter.position.offset}: ${letter.reason.message}`)

  // Records made one at a time: batched, retried under idempotency keys, followed to the end.
  const writer = tributary.writer({ dataset: datasetId, deadLetters: () => undefined })
  for (let i = 1; i <= 5; i++) {
    await writer.write({ orderId: `W-${i}`, placedAt: new Date().toISOString(), country: "SI", amount: i, items: 1, tags: [] })
  }
  const written = await writer.close({ timeout: 30_000 })
  console.log(`written ${written.accepted} records`)

  // Errors are Errors, with the service's status, code, field and request id.
  try {
    await tributary.v2.v2Datasets.get({ path: { id: 987654321 } })
  } catch (error) {
    if (!(error instanceof ApiError)) throw error
    console.log(`not found: status ${error.status}, code ${error.code}, request ${error.requestId}`)
  }
} finally {
  await tributary.close()
}
