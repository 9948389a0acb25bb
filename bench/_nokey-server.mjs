// The stand-in ingest service for bench/pipeline.mjs: raw node:http doing as little as the
// pipeline's conversation needs, so that the senders, not the server, are what is measured.
//
//   POST /v2/datasets/{id}/data                  200 {requestId, status, data: {ingestionId, status, message}}
//   GET  /v2/datasets/{id}/ingestions/{ingId}    200 {requestId, status, data: {id, status: "success", summary, errors: null}}
//   GET  /v2/datasets/{id}/schema                200 the columns of the generated records, primary key `id`
//   GET  /stats                                  counters (requests, body bytes) for the orchestrator
//
// The body of a POST is read but not parsed; every ingestion reports 100 records (the batch
// size both senders use). The x-api-key header is checked.
//
// Usage: node bench/pipeline-server.mjs <apiKey>
// Prints one JSON line {"port":N} on stdout once it listens on 127.0.0.1.
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"

const apiKey = process.argv[2] ?? ""
const recordsPerIngestion = 100

const schema = JSON.stringify({
  requestId: "schema",
  status: "success",
  data: {
    items: [
      ["id", "string"],
      ["ts", "datetime"],
      ["amount", "number"],
      ["country", "string"],
      ["tags", "string"],
      ["n", "number"]
    ].map(([id, dataType], order) => ({ id, displayName: id, dataType, order, visible: true })),
    primaryKey: []
  }
})

const stats = { posts: 0, keys: 0, polls: 0, bodyBytes: 0, other: 0 }
// The idempotency keys seen: a POST under a key seen before is a retry, not another batch.
const seenKeys = new Set()

const send = (res, status, text) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const ingestionAnswer = (ingestionId) =>
  `{"requestId":"${randomUUID()}","status":"success","data":{"id":"${ingestionId}","status":"success",` +
  `"initiatedAt":null,"initiatedBy":null,"duration":0,"summary":{"ingestion":{"receivedRecordCount":${recordsPerIngestion},` +
  `"appendedRecordCount":${recordsPerIngestion},"overwrittenRecordCount":0,"rejectedRecordCount":0},` +
  `"dataset":{"columnCount":6,"rowCount":${recordsPerIngestion},"size":0}},"errors":null}}`

const server = createServer((req, res) => {
  const url = req.url ?? ""
  if (url === "/stats") return send(res, 200, JSON.stringify(stats))
  if (req.headers["x-api-key"] !== apiKey) {
    return send(res, 401, `{"requestId":"x","status":"error","errors":[{"code":"invalid_api_key","message":"bad key","field":null}]}`)
  }
  if (req.method === "POST" && url.endsWith("/data")) {
    let bytes = 0
    req.on("data", (chunk) => {
      bytes += chunk.length
    })
    req.on("end", () => {
      stats.posts++
      const key = req.headers["idempotency-key"]
      if (typeof key === "string" && !seenKeys.has(key)) {
        seenKeys.add(key)
        stats.keys++
      }
      stats.bodyBytes += bytes
      send(
        res,
        200,
        `{"requestId":"${randomUUID()}","status":"success","data":{"ingestionId":"${randomUUID()}","status":"queued",` +
          `"message":"Data ingestion request accepted"}}`
      )
    })
    return
  }
  if (req.method === "GET") {
    const ingestion = url.lastIndexOf("/ingestions/")
    if (ingestion !== -1) {
      stats.polls++
      return send(res, 200, ingestionAnswer(url.slice(ingestion + 12)))
    }
    if (url.endsWith("/schema")) return send(res, 200, schema)
  }
  stats.other++
  send(res, 404, `{"requestId":"x","status":"error","errors":[{"code":"not_found","message":"no such route","field":null}]}`)
})

server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`)
})
process.on("SIGTERM", () => process.exit(0))
