/**
 * `tributary serve`: the reference server on one port, v1 + v2, OpenAPI at `/openapi.json`.
 *
 * @since 0.1.0
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { Console, Context, Effect, Either, Layer, Option, Redacted } from "effect"
import { formatFaults, parseFaults } from "../server/faults.js"
import { consolePath } from "../server/http/console.js"
import * as ReferenceServer from "../server/http/server.js"
import { defaultSeed, generateApiKey, loadSeed, type Seed } from "../server/seed.js"
import * as SqlStore from "../server/features/sqlStore.js"
import { StoreError } from "../server/core/errors.js"
import type { serveOptions } from "./options.js"
import { UsageError } from "./errors.js"
import type { Values } from "./spec.js"
import { withTelemetry } from "./telemetry.js"

/** The URL without its password, to say where the data is. */
const describeUrl = (url: Redacted.Redacted): string => {
  try {
    const parsed = new URL(Redacted.value(url))
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "(the given URL)"
  }
}

/**
 * The seed to start with: the file's, or the default organization; `--api-key` adds an
 * admin key to the first organization.
 *
 * @since 0.1.0
 * @category utils
 */
export const resolveSeed = (file: Option.Option<string>, key: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isNone(file)) {
      const generated = Option.isNone(key)
      const adminKey = Option.getOrElse(key, generateApiKey)
      return { seed: defaultSeed(adminKey), adminKey: Option.some(adminKey), generated }
    }
    const loaded = yield* loadSeed(file.value)
    if (Option.isNone(key)) return { seed: loaded, adminKey: Option.none<string>(), generated: false }
    const [first, ...rest] = loaded.organizations
    const withKey: Seed = {
      organizations: [
        {
          ...first,
          users: [...first.users, { name: "Admin", email: "admin@tributary.local", role: "admin", apiKeys: [key.value] }]
        },
        ...rest
      ]
    }
    return { seed: withKey, adminKey: key, generated: false }
  })

/**
 * Answers `GET /v1/auth/validate-key` once, so start-up shows a real first request.
 */
const firstRequest = (url: string, key: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/v1/auth/validate-key`, { headers: { "x-api-key": key } })
    return `GET /v1/auth/validate-key -> ${response.status} ${await response.text()}`
  })

/**
 * Runs `tributary serve` until interrupted.
 *
 * @since 0.3.0
 * @category running
 */
export const main = (options: Values<typeof serveOptions>) =>
  Effect.gen(function*() {
    const faults = options.faults === undefined
      ? undefined
      : yield* Either.match(parseFaults(options.faults), {
        onLeft: (problem) => Effect.fail(new UsageError({ reason: `--faults '${options.faults}': ${problem}` })),
        onRight: Effect.succeed
      })
    if (options.databaseUrl === undefined && options.workers === 0) {
      return yield* new UsageError({ reason: "--workers 0 needs --database-url: in memory, nothing else would process the ingestions" })
    }
    const durable = options.databaseUrl === undefined ? undefined : Redacted.make(options.databaseUrl)
    const resolved = yield* resolveSeed(Option.fromNullable(options.seed), Option.fromNullable(options.apiKey))
    const server = ReferenceServer.layer({
      host: options.host,
      port: options.port,
      seed: resolved.seed,
      maxBodyBytes: options.maxBodyBytes,
      requestTimeoutMillis: options.requestTimeout,
      faults,
      store: durable === undefined
        ? undefined
        : SqlStore.layer({ url: durable, schema: options.databaseSchema }).pipe(
          Layer.mapError((error) =>
            new StoreError({ reason: error.reason, message: `cannot use the database at ${describeUrl(durable)}: ${error.message}`, cause: error.cause })
          )
        ),
      workers: {
        workers: options.workers ?? (durable === undefined ? 1 : 4),
        leaseMillis: options.ingestionLease
      },
      traced: options.otlpEndpoint !== undefined
    })
    yield* Effect.gen(function*() {
      const context = yield* Layer.build(server)
      const url = ReferenceServer.serverUrl(Context.get(context, HttpServer.HttpServer).address)
      const lines = [
        `tributary reference server listening on ${url}`,
        `  console ${url}${consolePath} (sign in with an API key)`,
        `  OpenAPI ${url}/openapi.json  docs ${url}/docs`,
        durable === undefined
          ? "  store: memory (everything is lost on exit; --database-url keeps it in Postgres)"
          : `  store: Postgres ${describeUrl(durable)} (schema ${options.databaseSchema})`,
        ...(faults === undefined ? [] : [`  faults ${formatFaults(faults)}`])
      ]
      if (Option.isSome(resolved.adminKey)) {
        const key = resolved.adminKey.value
        lines.push(
          `  API key ${key}${resolved.generated ? " (generated; pass --api-key to choose one)" : ""}`,
          `  try: curl -H 'x-api-key: ${key}' ${url}/v1/auth/validate-key`,
          `  ${yield* firstRequest(url, key)}`
        )
      }
      lines.push("  Ctrl-C stops it")
      // One write, so whoever reads the output sees the whole start-up report at once.
      yield* Console.log(lines.join("\n"))
      return yield* Effect.never
    }).pipe(Effect.scoped, withTelemetry(options.otlpEndpoint))
  })
