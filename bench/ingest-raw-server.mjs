// The baseline for bench/server-ingest.mjs: plain node:http, doing the least the ingest route
// must do (check the key, read the body, JSON.parse it, check 1..100 records that are objects)
// and answering with the same 200 envelope as the reference server.
//
// Usage: node bench/ingest-raw-server.mjs <apiKey>
// Prints one JSON line {"port":N} on stdout once it listens on 127.0.0.1.
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"

const apiKey = process.argv[2] ?? ""
const maxBodyBytes = 10 * 1024 * 1024
const ingestPath = /^\/v[12]\/datasets\/[^/]+\/data$/

const answer = (res, status, body) => {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "x-request-id": body.requestId
  })
  res.end(text)
}

const fail = (res, status, code, message) =>
  answer(res, status, { requestId: randomUUID(), status: "error", errors: [{ code, message, field: null, type: "request" }] })

const isRecord = (u) => typeof u === "object" && u !== null && !Array.isArray(u)

const server = createServer((req, res) => {
  if (req.method !== "POST" || !ingestPath.test(req.url ?? "")) return fail(res, 404, "not_found", "no such route")
  if (req.headers["x-api-key"] !== apiKey) return fail(res, 401, "unauthorized", "the API key is not valid")
  const chunks = []
  let size = 0
  req.on("data", (chunk) => {
    size += chunk.length
    if (size <= maxBodyBytes) chunks.push(chunk)
  })
  req.on("end", () => {
    if (size > maxBodyBytes) return fail(res, 413, "payload_too_large", "the request body is over the size limit")
    let body
    try {
      body = JSON.parse(Buffer.concat(chunks, size).toString("utf8"))
    } catch {
      return fail(res, 400, "invalid_json", "the request body is not valid JSON")
    }
    const records = isRecord(body) ? body.records : undefined
    if (!Array.isArray(records) || records.length < 1 || records.length > 100 || !records.every(isRecord)) {
      return fail(res, 400, "invalid_input", "records: 1 to 100 JSON objects are required")
    }
    answer(res, 200, {
      requestId: randomUUID(),
      status: "success",
      ingestionId: randomUUID(),
      message: `Data ingestion request accepted: ${records.length} records`
    })
  })
})

server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`)
})
process.on("SIGTERM", () => process.exit(0))
