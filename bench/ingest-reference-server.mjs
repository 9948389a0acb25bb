// The reference server (built JS) for bench/server-ingest.mjs, in a process of its own.
//
// Usage: node bench/ingest-reference-server.mjs <apiKey> [distDir]
// distDir defaults to the project's dist/ (run `npm run build` first); another directory holding
// the same layout (src/server/http.js, ...) can be given to measure a patched copy. Such a copy
// must be able to resolve the project's node_modules (e.g. a node_modules symlink beside it) and
// find the console's files above it, as the package has them: e.g. DIR/dist with
// DIR/package.json, DIR/src/server/http/console/ and DIR/node_modules beside it.
// With BENCH_DATABASE_URL (and BENCH_DATABASE_SCHEMA) set, the server keeps its data in that
// Postgres database (the Postgres store, its 4 default workers) instead of in memory.
// Prints one JSON line {"port":N} on stdout once it listens on 127.0.0.1.
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { HttpServer } from "@effect/platform"
import { Effect, Redacted } from "effect"

const apiKey = process.argv[2] ?? ""
const distDir = process.argv[3] ? resolve(process.argv[3]) : new URL("../dist", import.meta.url).pathname
const distUrl = (path) => pathToFileURL(`${distDir}/${path}`).href

const http = await import(distUrl("src/server/http/server.js"))
const { defaultSeed } = await import(distUrl("src/server/seed.js"))
const databaseUrl = process.env.BENCH_DATABASE_URL
const durable = databaseUrl
  ? {
    store: (await import(distUrl("src/server/features/sqlStore.js"))).layer({
      url: Redacted.make(databaseUrl),
      schema: process.env.BENCH_DATABASE_SCHEMA
    }),
    workers: { workers: 4, leaseMillis: 30_000 }
  }
  : {}

const program = Effect.flatMap(HttpServer.HttpServer, (server) =>
  Effect.zipRight(
    Effect.sync(() => {
      const address = server.address
      process.stdout.write(`${JSON.stringify({ port: address.port })}\n`)
    }),
    Effect.never
  )).pipe(
    Effect.provide(http.layer({
      host: "127.0.0.1",
      port: 0,
      seed: defaultSeed(apiKey),
      maxBodyBytes: http.defaultMaxBodyBytes,
      ...durable
    }))
  )

process.on("SIGTERM", () => process.exit(0))
Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exit(1)
})
