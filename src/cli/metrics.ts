/**
 * What a running sink exposes to monitoring: Prometheus metrics (per-partition lag and
 * committed offset, records stored and dead-lettered, batches in flight, oldest
 * un-acknowledged age), `/health` and `/ready`.
 *
 * The exposition format is prom-client's (the Prometheus client most Node services use), not
 * ours: a registry whose metrics read a snapshot of the sink's status when scraped, so the
 * hot path does no metrics work at all.
 *
 * @since 0.1.0
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Console, Data, Effect, type Scope } from "effect"
import { Counter, Gauge, Registry } from "prom-client"
import type { PartitionStatus } from "../../connectors/kafka/index.js"
import { emptyProgress, type PipelineEvent, type Progress } from "../pipeline/events.js"

/**
 * A snapshot of the sink, read at every scrape.
 *
 * @since 0.1.0
 * @category models
 */
export interface SinkStatus {
  readonly progress: Progress
  readonly partitions: ReadonlyArray<PartitionStatus>
  /** The sink has joined its group and is running. */
  readonly ready: boolean
}

/**
 * Messages between the committed offset and the end; 0 when either is unknown.
 *
 * @since 0.1.0
 * @category utils
 */
export const lagOf = (p: PartitionStatus): number =>
  p.end === undefined || p.committed === undefined ? 0 : Math.max(0, p.end - p.committed)

/**
 * A registry of the sink's metrics, each read from `status()` when scraped.
 *
 * @since 0.1.0
 * @category constructors
 */
export const sinkRegistry = (status: () => SinkStatus): Registry => {
  const registry = new Registry()
  // One snapshot per scrape, shared by every metric of that scrape.
  let scraped: SinkStatus | undefined
  const current = () => (scraped ??= status())
  new Gauge({
    name: "tributary_partition_lag",
    help: "Messages of the partition not yet committed (end minus committed offset)",
    labelNames: ["partition"],
    registers: [registry],
    collect() {
      scraped = undefined
      this.reset()
      for (const p of current().partitions) this.set({ partition: p.partition }, lagOf(p))
    }
  })
  new Gauge({
    name: "tributary_partition_committed_offset",
    help: "The partition's committed offset (the next offset to read)",
    labelNames: ["partition"],
    registers: [registry],
    collect() {
      this.reset()
      for (const p of current().partitions) if (p.committed !== undefined) this.set({ partition: p.partition }, p.committed)
    }
  })
  const total = (name: string, help: string, read: (progress: Progress) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset()
        this.inc(read(current().progress))
      }
    })
  total("tributary_records_stored_total", "Records the service stored", (p) => p.accepted)
  total("tributary_records_dead_lettered_total", "Elements written as dead letters", (p) => p.deadLettered)
  total("tributary_records_read_total", "Elements read from the source", (p) => p.read)
  total("tributary_columns_added_total", "Columns the records added to the dataset (schema contract evolve)", (p) => p.columnsAdded.length)
  total("tributary_values_discarded_total", "Values a schema contract dropped from records it sent (discard_value)", (p) => p.valuesDiscarded)
  new Gauge({
    name: "tributary_batches_in_flight",
    help: "Batches between the batcher and their commit: sent, followed, or held back",
    registers: [registry],
    collect() {
      this.set(current().progress.inFlight)
    }
  })
  const gauge = (name: string, help: string, read: (progress: Progress) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read(current().progress))
      }
    })
  gauge("tributary_ingestions_pending", "Accepted ingestions followed to their end", (p) => p.pending)
  gauge("tributary_batches_waiting", "Batches held back behind an earlier batch with a shared primary-key value", (p) => p.waiting)
  gauge("tributary_concurrency_limit", "Requests allowed in flight now (the adaptive limit)", (p) => p.concurrencyLimit)
  gauge("tributary_service_outage", "1 while the service cannot be reached, else 0", (p) => (p.outage === null ? 0 : 1))
  gauge(
    "tributary_service_outage_seconds",
    "How long the service has been unreachable (0 when it answers)",
    (p) => (p.outage === null ? 0 : Math.max(0, Date.now() - p.outage.since) / 1000)
  )
  new Gauge({
    name: "tributary_oldest_unacked_seconds",
    help: "Age of the oldest element read and not yet committed",
    registers: [registry],
    collect() {
      this.set(current().progress.oldestUnackedMillis / 1000)
    }
  })
  return registry
}

/**
 * The metrics port could not be opened.
 *
 * @since 0.1.0
 * @category errors
 */
export class MetricsServerError extends Data.TaggedError("MetricsServerError")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/**
 * Serves `/metrics`, `/health` (200 while the process runs) and `/ready` (200 once the sink
 * has joined its group, 503 before) on `port` of `host`, until the scope closes. Three fixed
 * routes with no API behind them: plain `node:http` is enough.
 *
 * @since 0.1.0
 * @category constructors
 */
export const serveMetrics = (options: {
  readonly host: string
  readonly port: number
  readonly status: () => SinkStatus
}): Effect.Effect<{ readonly port: number }, MetricsServerError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly close: () => void }, MetricsServerError>((resume) => {
      const registry = sinkRegistry(options.status)
      const server = createServer((req, res) => {
        const path = (req.url ?? "/").split("?")[0]
        if (path === "/metrics") {
          registry.metrics().then((text) => {
            res.writeHead(200, { "content-type": registry.contentType })
            res.end(text)
          }, (error) => {
            res.writeHead(500, { "content-type": "text/plain" })
            res.end(String(error))
          })
        } else if (path === "/health") {
          res.writeHead(200, { "content-type": "text/plain" })
          res.end("ok\n")
        } else if (path === "/ready") {
          const status = options.status()
          res.writeHead(status.ready ? 200 : 503, { "content-type": "text/plain" })
          res.end(
            status.ready
              ? "ready\n"
              : status.progress.outage !== null
              ? `not ready: the service cannot be reached (${status.progress.outage.cause})\n`
              : "not ready: joining the consumer group\n"
          )
        } else {
          res.writeHead(404, { "content-type": "text/plain" })
          res.end("not found: /metrics, /health, /ready\n")
        }
      })
      server.once("error", (error) =>
        resume(Effect.fail(new MetricsServerError({ reason: `cannot serve metrics on port ${options.port}: ${error.message}` }))))
      server.listen(options.port, options.host, () =>
        resume(Effect.succeed({ port: (server.address() as AddressInfo).port, close: () => server.close() })))
    }),
    (server) => Effect.sync(server.close)
  )

/**
 * `--metrics-port` of a one-shot run (`ingest`, `backfill`): the same metrics as the sink's,
 * read from the run's latest progress, served while it runs; nothing without a port.
 *
 * @since 0.3.0
 * @category constructors
 */
export const metricsFor = (port: number | undefined) =>
  Effect.gen(function*() {
    if (port === undefined) return { onEvent: undefined }
    let latest = emptyProgress(Date.now())
    const served = yield* serveMetrics({ host: "0.0.0.0", port, status: () => ({ progress: latest, partitions: [], ready: true }) })
    yield* Console.error(`metrics on http://127.0.0.1:${served.port}/metrics (also /health, /ready)`)
    return {
      onEvent: (event: PipelineEvent) => Effect.sync(() => {
        if (event._tag === "Progress") latest = event.progress
      })
    }
  })
