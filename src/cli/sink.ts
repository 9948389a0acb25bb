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
import { Console, Duration, Effect, Redacted } from "effect"
import * as Kafka from "../../connectors/kafka/index.js"
import { TributaryClient } from "../client/Client.js"
import * as DeadLetter from "../pipeline/DeadLetter.js"
import { PipelineMetrics } from "../telemetry/index.js"
import { emptyProgress, type Progress } from "../pipeline/events.js"
import type { sinkOptions } from "./options.js"
import { UsageError } from "./errors.js"
import { lagOf, serveMetrics, type SinkStatus } from "./metrics.js"
import { endProgress, progressDisplay } from "./progress.js"
import { columnAddedLine } from "./schemaContract.js"
import type { Values } from "./spec.js"
import { withTelemetry } from "./telemetry.js"

/**
 * The connection settings the flags describe.
 *
 * @since 0.1.0
 * @category utils
 */
export const kafkaSettings = (options: {
  readonly brokers: string
  readonly clientId: string
  readonly tls: boolean
  readonly tlsCa: string | undefined
  readonly saslMechanism: "plain" | "scram-sha-256" | "scram-sha-512" | undefined
  readonly saslUsername: string | undefined
  readonly saslPassword: string | undefined
}): Effect.Effect<Kafka.KafkaSettings, UsageError> =>
  Effect.gen(function*() {
    const list = options.brokers.split(",").map((b) => b.trim()).filter((b) => b.length > 0)
    if (list.length === 0) return yield* new UsageError({ reason: "--brokers names no broker" })
    const mechanism = options.saslMechanism
    let sasl: Kafka.KafkaSettings["sasl"]
    if (mechanism !== undefined) {
      if (options.saslUsername === undefined || options.saslPassword === undefined) {
        return yield* new UsageError({ reason: "--sasl-mechanism needs --sasl-username and --sasl-password" })
      }
      sasl = { mechanism, username: options.saslUsername, password: Redacted.make(options.saslPassword) }
    }
    const tlsSetting = options.tlsCa !== undefined ? { ca: readFileSync(options.tlsCa, "utf8") } : options.tls || undefined
    return { brokers: list, clientId: options.clientId, tls: tlsSetting, sasl }
  })

/**
 * The status line: recent records/s, lag, in flight, dead letters.
 *
 * @since 0.1.0
 * @category utils
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

/**
 * Runs `tributary sink` until stopped.
 *
 * @since 0.3.0
 * @category running
 */
export const main = (options: Values<typeof sinkOptions>) =>
    Effect.gen(function*() {
      if (options.deadLetter !== undefined && options.deadLetterTopic !== undefined) {
        return yield* new UsageError({ reason: "--dead-letter and --dead-letter-topic exclude each other" })
      }
      const settings = yield* kafkaSettings(options)
      const client = yield* TributaryClient
      // Said before the first connection: kafkajs can take long to reach a broker or give up,
      // and a stop (Ctrl-C, SIGTERM) during that wait ends the sink with 0 at once.
      yield* Console.error(
        `sink: connecting to ${settings.brokers.join(",")}${settings.sasl ? ` (SASL ${settings.sasl.mechanism} as ${settings.sasl.username})` : ""}` +
          ` for group ${options.group}`
      )
      const kafka = yield* Kafka.makeClient(settings)
      const source = yield* Kafka.make({
        groupId: options.group,
        topics: options.topics,
        sessionTimeoutMillis: options.sessionTimeout
      }).pipe(
        Effect.provideService(Kafka.KafkaClient, kafka)
      )
      const deadLetters = options.deadLetterTopic !== undefined
        ? yield* Kafka.deadLetterTopic(options.deadLetterTopic).pipe(Effect.provideService(Kafka.KafkaClient, kafka))
        : yield* DeadLetter.ndjsonFile(options.deadLetter ?? "tributary-dead-letters.ndjson")

      let latest: Progress = emptyProgress(Date.now())
      const committedThrough = new Map<string, number>()
      const partitions = () => Effect.runSync(source.partitions)
      const display = progressDisplay({ stream: process.stderr, describe: describeSink(partitions) })
      // Effect metrics, exported when a telemetry layer is given (`--otlp-endpoint`).
      const metrics = PipelineMetrics.recorder({ dataset: options.dataset, source: source.name }, () =>
        partitions().map((p) => ({ partition: p.partition, lag: lagOf(p) })))
      const status = (): SinkStatus => {
        const held = partitions()
        return { progress: latest, partitions: held, ready: held.length > 0 && latest.outage === null }
      }

      if (options.metricsPort !== undefined) {
        const served = yield* serveMetrics({ host: "0.0.0.0", port: options.metricsPort, status })
        yield* Console.error(`metrics on http://127.0.0.1:${served.port}/metrics (also /health, /ready)`)
      }
      yield* Console.error(
        `sink: group ${options.group}, topics ${options.topics.join(", ")} -> dataset ${options.dataset}; ` +
          `brokers ${settings.brokers.join(",")}${settings.sasl ? ` (SASL ${settings.sasl.mechanism} as ${settings.sasl.username})` : ""}`
      )

      yield* Kafka.runUntilStopped(client, {
        source,
        destination: { datasetId: options.dataset },
        deadLetters,
        concurrency: options.concurrency,
        maxPending: { batches: options.maxPending, bytes: options.maxPendingBytes },
        keyOrder: options.keyOrder,
        maxDeadLetters: options.maxDeadLetters,
        schemaContract: options.schemaContract,
        // A long-running member waits out an outage of the service, staying in its group.
        rideOutOutages: true,
        drainTimeout: Duration.millis(options.drainTimeout),
        onStop: say("sink: stopping: no more fetching; delivering what was read and committing"),
        // Nothing here reads the batches' events: without them a batch costs no step in Effect.
        batchEvents: false,
        progressInterval: process.stderr.isTTY ? "500 millis" : "5 seconds",
        onEvent: (event) => Effect.zipRight(metrics(event), Effect.suspend((): Effect.Effect<void> => {
          if (event._tag === "Committed") return Effect.sync(() => committedThrough.set(event.position.partition, event.position.offset))
          if (event._tag === "Progress") return Effect.zipRight(Effect.sync(() => (latest = event.progress)), display(event))
          if (event._tag === "Assigned") return say(`sink: assigned ${event.partitions.join(", ")}`)
          if (event._tag === "ColumnAdded") return say(`sink: ${columnAddedLine(event, "offset")}`)
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
      Effect.provide(TributaryClient.layer({
        baseUrl: options.apiUrl,
        apiKey: Redacted.make(options.apiKey),
        traceRequests: options.otlpEndpoint !== undefined
      })),
      withTelemetry(options.otlpEndpoint)
    )
