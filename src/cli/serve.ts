/**
 * `tributary serve`: the reference server on one port, v1 + v2, OpenAPI at `/openapi.json`.
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import * as HttpServer from "@effect/platform/HttpServer"
import { Config, Console, Context, Duration, Effect, Either, Layer, Option, Redacted } from "effect"
import { formatFaults, parseFaults } from "../server/faults.js"
import * as ReferenceServer from "../server/http/server.js"
import { defaultSeed, generateApiKey, loadSeed, type Seed } from "../server/seed.js"
import * as SqlStore from "../server/core/store/sql.js"
import { StoreError } from "../server/core/errors.js"
import { positiveInteger } from "./options.js"

const host = Options.text("host").pipe(
  Options.withDefault("127.0.0.1"),
  Options.withDescription("Address to listen on")
)
const port = Options.integer("port").pipe(
  Options.withDefault(8080),
  Options.withDescription("Port to listen on; 0 picks a free one (the printed URL shows it)")
)
const apiKey = Options.text("api-key").pipe(
  Options.optional,
  Options.withDescription("Make this key an admin key of the default organization")
)
const seed = Options.file("seed", { exists: "yes" }).pipe(
  Options.optional,
  Options.withDescription("JSON seed file with organizations, accounts, users and keys")
)
const maxBodyBytes = positiveInteger("max-body-bytes").pipe(
  Options.withDefault(ReferenceServer.defaultMaxBodyBytes),
  Options.withDescription("Request bodies over this many bytes are answered 413")
)
const faults = Options.text("faults").pipe(
  Options.optional,
  Options.mapEffect(Option.match({
    onNone: () => Effect.succeed(Option.none()),
    onSome: (spec) =>
      Either.match(parseFaults(spec), {
        onLeft: (problem) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(`Invalid --faults "${spec}": ${problem}`))),
        onRight: (parsed) => Effect.succeed(Option.some(parsed))
      })
  })),
  Options.withDescription(
    "Inject faults into API requests, e.g. 5xx=0.05,429=0.02,retry-after=1,latency=5-20ms,drop=0.01,max-body=1mb,seed=7,after=10"
  )
)

const databaseUrl = Options.redacted("database-url").pipe(
  Options.withFallbackConfig(Config.redacted("TRIBUTARY_DATABASE_URL")),
  Options.optional,
  Options.withDescription(
    "Keep everything in this Postgres database (postgres://user:password@host:port/db; or TRIBUTARY_DATABASE_URL) " +
      "instead of in memory: durable, and shared by every server started with the same URL"
  )
)
const databaseSchema = Options.text("database-schema").pipe(
  Options.withFallbackConfig(Config.string("TRIBUTARY_DATABASE_SCHEMA")),
  Options.withDefault(SqlStore.defaultSchema),
  Options.withDescription("The Postgres schema that holds the tables (created if missing)")
)
const workers = Options.integer("workers").pipe(
  Options.mapEffect((n) =>
    n >= 0 ? Effect.succeed(n) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--workers must be 0 or more, got ${n}`)))
  ),
  Options.optional,
  Options.withDescription(
    "Ingestion workers in this process (default: 1 in memory, 4 with --database-url); 0 with --database-url: " +
      "this server accepts ingestions and the other servers on the database process them"
  )
)
/** A duration option of at least 100 ms, in milliseconds. */
const millisOption = (name: string, fallback: string, description: string) =>
  Options.text(name).pipe(
    Options.withDefault(fallback),
    Options.mapEffect((text) => {
      const parsed = Duration.decodeUnknown(text)
      return Option.isSome(parsed) && Duration.toMillis(parsed.value) >= 100
        ? Effect.succeed(Duration.toMillis(parsed.value))
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`Invalid --${name} "${text}": a duration of at least 100 millis, e.g. "${fallback}"`)))
    }),
    Options.withDescription(description)
  )

const ingestionLease = millisOption(
  "ingestion-lease",
  "30 seconds",
  "How long a worker holds an ingestion it took: if its server dies, another server finishes the ingestion after this"
)

const requestTimeout = millisOption(
  "request-timeout",
  "60 seconds",
  "Time to receive a whole request, headers and body; a client slower than this is answered 408"
)

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

/** @since 0.1.0 */
export const serveCommand = Command.make(
  "serve",
  { host, port, apiKey, seed, maxBodyBytes, faults, databaseUrl, databaseSchema, workers, ingestionLease, requestTimeout },
  (options) =>
    Effect.gen(function*() {
      const resolved = yield* resolveSeed(options.seed, options.apiKey)
      const durable = Option.getOrUndefined(options.databaseUrl)
      if (durable === undefined && Option.contains(options.workers, 0)) {
        // A usage error found after parsing: said here, since only parse errors are printed for us.
        const problem = "--workers 0 needs --database-url: in memory, nothing else would process the ingestions"
        yield* Console.error(`tributary: ${problem}`)
        return yield* Effect.fail(ValidationError.invalidValue(HelpDoc.p(problem)))
      }
      const server = ReferenceServer.layer({
        host: options.host,
        port: options.port,
        seed: resolved.seed,
        maxBodyBytes: options.maxBodyBytes,
        requestTimeoutMillis: options.requestTimeout,
        faults: Option.getOrUndefined(options.faults),
        store: durable === undefined
          ? undefined
          : SqlStore.layer({ url: durable, schema: options.databaseSchema }).pipe(
            Layer.mapError((error) =>
              new StoreError({ reason: error.reason, message: `cannot use the database at ${describeUrl(durable)}: ${error.message}`, cause: error.cause })
            )
          ),
        workers: {
          workers: Option.getOrElse(options.workers, () => durable === undefined ? 1 : 4),
          leaseMillis: options.ingestionLease
        }
      })
      yield* Effect.gen(function*() {
        const context = yield* Layer.build(server)
        const url = ReferenceServer.serverUrl(Context.get(context, HttpServer.HttpServer).address)
        const lines = [
          `tributary reference server listening on ${url}`,
          `  OpenAPI ${url}/openapi.json  docs ${url}/docs`,
          durable === undefined
            ? "  store: memory (everything is lost on exit; --database-url keeps it in Postgres)"
            : `  store: Postgres ${describeUrl(durable)} (schema ${options.databaseSchema})`,
          ...Option.toArray(Option.map(options.faults, (active) => `  faults ${formatFaults(active)}`))
        ]
        if (Option.isSome(resolved.adminKey)) {
          const key = resolved.adminKey.value
          lines.push(
            `  API key ${key}${resolved.generated ? " (generated; pass --api-key to choose one)" : ""}`,
            `  try: curl -H 'x-api-key: ${key}' ${url}/v1/auth/validate-key`,
            `  ${yield* firstRequest(url, key)}`
          )
        }
        // One write, so whoever reads the output sees the whole start-up report at once.
        yield* Console.log(lines.join("\n"))
        return yield* Effect.never
      }).pipe(Effect.scoped)
    })
).pipe(Command.withDescription("Start the reference server (v1 and v2 on one port)"))
