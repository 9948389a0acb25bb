/**
 * `tributary sink`: a long-running consumer-group member that moves Kafka topics into a
 * dataset, effectively once. Several processes with the same `--group` share the partitions.
 *
 * SIGTERM or SIGINT stops fetching, delivers what was read, commits and exits 0, within
 * `--drain-timeout` (batches still in flight then are interrupted; their keys make the next
 * owner's resend harmless).
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Config, Console, Duration, Effect, Option, type Redacted } from "effect"
import * as Kafka from "../../connectors/kafka/index.js"
import { TributaryClient } from "../client/Client.js"
import * as DeadLetter from "../pipeline/DeadLetter.js"
import { emptyProgress, type Progress } from "../pipeline/events.js"
import { connectionOptions } from "./ingest.js"
import { lagOf, serveMetrics, type SinkStatus } from "./metrics.js"
import {
  concurrencyOption as concurrency,
  datasetOption as dataset,
  keyOrderOption as keyOrder,
  maxDeadLettersOption,
  maxPendingBytesOption as maxPendingBytes,
  maxPendingOption,
  otlpEndpointOption as otlpEndpoint,
  withTelemetry
} from "./options.js"
import { PipelineMetrics } from "../telemetry/index.js"
import { endProgress, progressDisplay } from "./progress.js"

/**
 * `30s`, `500ms`, `2m` as a duration.
 *
 * @since 0.1.0
 */
export const parseDuration = (text: string): Option.Option<Duration.Duration> => {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text.trim())
  if (match === null) return Option.none()
  const amount = Number(match[1])
  return Option.some(match[2] === "ms" ? Duration.millis(amount) : match[2] === "s" ? Duration.seconds(amount) : Duration.minutes(amount))
}

const brokers = Options.text("brokers").pipe(
  Options.withFallbackConfig(Config.string("TRIBUTARY_KAFKA_BROKERS")),
  Options.withDescription("Kafka brokers, HOST:PORT[,HOST:PORT..] (or TRIBUTARY_KAFKA_BROKERS)")
)
const topics = Options.text("topic").pipe(
  Options.atLeast(1),
  Options.withDescription("Topic to consume (repeat for several)")
)
const group = Options.text("group").pipe(Options.withDescription("Consumer group id: processes with the same group share the partitions"))
const deadLetter = Options.text("dead-letter").pipe(
  Options.optional,
  Options.withDescription("File for dead letters, one JSON object per line (default: tributary-dead-letters.ndjson)")
)
const deadLetterTopic = Options.text("dead-letter-topic").pipe(
  Options.optional,
  Options.withDescription("Kafka topic for dead letters, instead of a file")
)
/** `--NAME 30s`: a duration option (`ms`, `s` or `m`). */
const durationOption = (name: string, fallback: string, description: string) =>
  Options.text(name).pipe(
    Options.withDefault(fallback),
    Options.mapEffect((text) =>
      Option.match(parseDuration(text), {
        onNone: () => Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name} must look like 30s, 500ms or 2m, got ${text}`))),
        onSome: Effect.succeed
      })
    ),
    Options.withDescription(description)
  )
const drainTimeout = durationOption("drain-timeout", "30s", "How long stopping (or a rebalance) may wait for batches in flight")
const metricsPort = Options.integer("metrics-port").pipe(
  Options.optional,
  Options.withDescription("Serve Prometheus metrics, /health and /ready on this port (0 picks one)")
)
const sessionTimeout = durationOption("session-timeout", "10s", "The group gives a silent member's partitions to others after this long")
const clientId = Options.text("client-id").pipe(Options.withDefault("tributary"), Options.withDescription("Kafka client id"))
const tls = Options.boolean("tls").pipe(
  Options.withFallbackConfig(Config.boolean("TRIBUTARY_KAFKA_TLS")),
  Options.withDescription("Connect with TLS (or TRIBUTARY_KAFKA_TLS=true)")
)
const tlsCa = Options.file("tls-ca", { exists: "yes" }).pipe(
  Options.optional,
  Options.withDescription("PEM file of the authorities to trust (implies --tls)")
)
const saslMechanism = Options.choice("sasl-mechanism", ["plain", "scram-sha-256", "scram-sha-512"]).pipe(
  Options.withFallbackConfig(Config.literal("plain", "scram-sha-256", "scram-sha-512")("TRIBUTARY_KAFKA_SASL_MECHANISM")),
  Options.optional,
  Options.withDescription("SASL mechanism (or TRIBUTARY_KAFKA_SASL_MECHANISM)")
)
const saslUsername = Options.text("sasl-username").pipe(
  Options.withFallbackConfig(Config.string("TRIBUTARY_KAFKA_SASL_USERNAME")),
  Options.optional,
  Options.withDescription("SASL user (or TRIBUTARY_KAFKA_SASL_USERNAME)")
)
const saslPassword = Options.redacted("sasl-password").pipe(
  Options.withFallbackConfig(Config.redacted("TRIBUTARY_KAFKA_SASL_PASSWORD")),
  Options.optional,
  Options.withDescription("SASL password (or TRIBUTARY_KAFKA_SASL_PASSWORD; never logged)")
)

/**
 * The connection settings the flags describe.
 *
 * @since 0.1.0
 */
export const kafkaSettings = (options: {
  readonly brokers: string
  readonly clientId: string
  readonly tls: boolean
  readonly tlsCa: Option.Option<string>
  readonly saslMechanism: Option.Option<"plain" | "scram-sha-256" | "scram-sha-512">
  readonly saslUsername: Option.Option<string>
  readonly saslPassword: Option.Option<Redacted.Redacted>
}): Effect.Effect<Kafka.KafkaSettings, ValidationError.ValidationError> =>
  Effect.gen(function*() {
    const list = options.brokers.split(",").map((b) => b.trim()).filter((b) => b.length > 0)
    if (list.length === 0) return yield* Effect.fail(ValidationError.invalidValue(HelpDoc.p("--brokers names no broker")))
    const mechanism = options.saslMechanism
    let sasl: Kafka.KafkaSettings["sasl"]
    if (Option.isSome(mechanism)) {
      if (Option.isNone(options.saslUsername) || Option.isNone(options.saslPassword)) {
        return yield* Effect.fail(ValidationError.invalidValue(HelpDoc.p("--sasl-mechanism needs --sasl-username and --sasl-password")))
      }
      sasl = { mechanism: mechanism.value, username: options.saslUsername.value, password: options.saslPassword.value }
    }
    const tlsSetting = Option.isSome(options.tlsCa) ? { ca: readFileSync(options.tlsCa.value, "utf8") } : options.tls || undefined
    return { brokers: list, clientId: options.clientId, tls: tlsSetting, sasl }
  })

/**
 * The status line: recent records/s, lag, in flight, dead letters.
 *
 * @since 0.1.0
 */
export const describeSink = (partitions: () => ReadonlyArray<Kafka.PartitionStatus>) => {
  let last: { readonly at: number; readonly accepted: number } | undefined
  return (progress: Progress, now: number): string => {
    const seconds = last === undefined ? Math.max(0.001, (now - progress.startedAt) / 1000) : Math.max(0.001, (now - last.at) / 1000)
    const rate = Math.round((progress.accepted - (last?.accepted ?? 0)) / seconds)
    last = { at: now, accepted: progress.accepted }
    const held = partitions()
    const lag = held.reduce((sum, p) => sum + lagOf(p), 0)
    const outage = progress.outage === null
      ? ""
      : `  OUTAGE for ${Math.round((now - progress.outage.since) / 1000)}s (${progress.outage.attempts} failed tries: ${progress.outage.cause})`
    return `${rate} records/s  lag ${lag}  in flight ${progress.inFlight} (${progress.pending} followed, ${progress.waiting} held)  ` +
      `limit ${progress.concurrencyLimit}  dead letters ${progress.deadLettered}  stored ${progress.accepted}  partitions ${held.length}${outage}`
  }
}

/** A line on stderr; on a terminal it replaces the status line, which the next update redraws. */
const say = (line: string) =>
  Effect.sync(() => process.stderr.write(`${process.stderr.isTTY ? "\r\x1b[2K" : ""}${line}\n`))

// A long-running member does not stop for bad messages unless told to.
const maxDeadLetters = maxDeadLettersOption("100%")
// Every batch pending past a partition's commit keeps its cut in the committed offset's metadata
// (4096 characters by default, about 9 a cut): 256 leaves room for one hot partition.
const maxPending = maxPendingOption(256)

/** @since 0.1.0 */
export const sinkCommand = Command.make(
  "sink",
  {
    brokers,
    topics,
    group,
    dataset,
    deadLetter,
    deadLetterTopic,
    concurrency,
    maxPending,
    maxPendingBytes,
    keyOrder,
    maxDeadLetters,
    drainTimeout,
    metricsPort,
    sessionTimeout,
    clientId,
    tls,
    tlsCa,
    saslMechanism,
    saslUsername,
    saslPassword,
    otlpEndpoint,
    ...connectionOptions
  },
  (options) =>
    Effect.gen(function*() {
      if (Option.isSome(options.deadLetter) && Option.isSome(options.deadLetterTopic)) {
        return yield* Effect.fail(ValidationError.invalidValue(HelpDoc.p("--dead-letter and --dead-letter-topic exclude each other")))
      }
      const settings = yield* kafkaSettings(options)
      const client = yield* TributaryClient
      const kafka = yield* Kafka.makeClient(settings)
      const source = yield* Kafka.make({
        groupId: options.group,
        topics: options.topics,
        sessionTimeoutMillis: Duration.toMillis(options.sessionTimeout)
      }).pipe(
        Effect.provideService(Kafka.KafkaClient, kafka)
      )
      const deadLetters = Option.isSome(options.deadLetterTopic)
        ? yield* Kafka.deadLetterTopic(options.deadLetterTopic.value).pipe(Effect.provideService(Kafka.KafkaClient, kafka))
        : yield* DeadLetter.ndjsonFile(Option.getOrElse(options.deadLetter, () => "tributary-dead-letters.ndjson"))

      let latest: Progress = emptyProgress(Date.now())
      const committedThrough = new Map<string, number>()
      const partitions = () => Effect.runSync(source.partitions)
      const display = progressDisplay({ stream: process.stderr, describe: describeSink(partitions) })
      const status = (): SinkStatus => {
        const held = partitions()
        return { progress: latest, partitions: held, ready: held.length > 0 && latest.outage === null }
      }

      if (Option.isSome(options.metricsPort)) {
        const served = yield* serveMetrics({ host: "0.0.0.0", port: options.metricsPort.value, status })
        yield* Console.error(`metrics on http://127.0.0.1:${served.port}/metrics (also /health, /ready)`)
      }
      yield* Console.error(
        `sink: group ${options.group}, topics ${options.topics.join(", ")} -> dataset ${options.dataset}; ` +
          `brokers ${settings.brokers.join(",")}${settings.sasl ? ` (SASL ${settings.sasl.mechanism} as ${settings.sasl.username})` : ""}`
      )

      const metrics = PipelineMetrics.recorder({ dataset: options.dataset, source: source.name }, () =>
        partitions().map((p) => ({ partition: p.partition, lag: lagOf(p) })))
      yield* Kafka.runUntilStopped(client, {
        source,
        destination: { datasetId: options.dataset },
        deadLetters,
        concurrency: options.concurrency,
        maxPending: { batches: options.maxPending, bytes: options.maxPendingBytes },
        keyOrder: options.keyOrder,
        maxDeadLetters: options.maxDeadLetters,
        // A long-running member waits out an outage of the service, staying in its group.
        rideOutOutages: true,
        drainTimeout: options.drainTimeout,
        onStop: say("sink: stopping: no more fetching; delivering what was read and committing"),
        progressInterval: process.stderr.isTTY ? "500 millis" : "5 seconds",
        onEvent: (event) => Effect.zipRight(metrics(event), Effect.suspend((): Effect.Effect<void> => {
          if (event._tag === "Committed") return Effect.sync(() => committedThrough.set(event.position.partition, event.position.offset))
          if (event._tag === "Progress") return Effect.zipRight(Effect.sync(() => (latest = event.progress)), display(event))
          if (event._tag === "Assigned") return say(`sink: assigned ${event.partitions.join(", ")}`)
          if (event._tag === "OutageStarted") {
            return say(`sink: the service cannot be reached (${event.outage.cause}); trying again until it answers, committing nothing new`)
          }
          if (event._tag === "OutageEnded") {
            return say(
              `sink: the service answers again after ${Math.round((event.endedAt - event.outage.since) / 1000)}s ` +
                `(${event.outage.attempts} failed tries); carrying on`
            )
          }
          if (event._tag === "Revoked") {
            return say(`sink: revoked ${event.partitions.join(", ")}: in-flight batches drained, delivered ones committed`)
          }
          return Effect.void
        }))
      }).pipe(
        Effect.onInterrupt(() =>
          Effect.gen(function*() {
            yield* endProgress(process.stderr)
            const committed = [...committedThrough].sort().map(([partition, offset]) => `${partition}@${offset}`)
            yield* Console.error(`sink: stopped; committed through ${committed.length === 0 ? "nothing" : committed.join(" ")}`)
          })
        )
      )
    }).pipe(
      Effect.scoped,
      Effect.provide(TributaryClient.layer({ baseUrl: options.apiUrl, apiKey: options.apiKey, traceRequests: Option.isSome(options.otlpEndpoint) })),
      withTelemetry(options.otlpEndpoint)
    )
).pipe(Command.withDescription("Move Kafka topics into a dataset, effectively once, until stopped (SIGTERM drains and commits)"))
