/**
 * A run's figures as Effect metrics, which the telemetry layer exports over OTLP (and any
 * other metrics exporter of Effect's can read): the same figures the sink serves to
 * Prometheus (`src/cli/metrics.ts`), so a board built on one reads the other. Records read,
 * stored and dead-lettered, columns added and values discarded by a schema contract
 * (counters); batches in flight and held back, pending ingestions, the adaptive concurrency
 * limit, the service's outage, the oldest record not yet committed (gauges); the committed
 * position and the lag of each partition (gauges by partition).
 *
 * They are fed from the run's events (`record`), so the pipeline pays nothing for them: one
 * update per progress report and per commit, none per record.
 *
 * @since 0.3.0
 */
import { Effect, Metric } from "effect"
import type { PipelineEvent, Progress } from "../pipeline/events.js"

const recordsRead = Metric.counter("tributary.records.read", { description: "Records read from the source", incremental: true })
const recordsStored = Metric.counter("tributary.records.stored", { description: "Records the service stored", incremental: true })
const recordsDeadLettered = Metric.counter("tributary.records.dead_lettered", { description: "Records written as dead letters", incremental: true })
const columnsAdded = Metric.counter("tributary.columns.added", { description: "Columns the records added to the dataset (schema contract evolve)", incremental: true })
const valuesDiscarded = Metric.counter("tributary.values.discarded", { description: "Values a schema contract dropped from records it sent", incremental: true })
const batchesWaiting = Metric.gauge("tributary.batches.waiting", { description: "Batches held back behind an earlier batch with a shared primary-key value" })
const concurrencyLimit = Metric.gauge("tributary.concurrency.limit", { description: "Requests allowed in flight now (the adaptive limit)" })
const serviceOutage = Metric.gauge("tributary.service.outage", { description: "1 while the service cannot be reached, else 0" })
const batchesInFlight = Metric.gauge("tributary.batches.in_flight", { description: "Batches sent or waiting, not yet terminal" })
const pendingIngestions = Metric.gauge("tributary.ingestions.pending", { description: "Accepted ingestions followed to their end" })
const oldestUnacked = Metric.gauge("tributary.oldest_unacked.ms", { description: "Age of the oldest record read and not committed" })
const committedPosition = Metric.gauge("tributary.committed.position", { description: "The committed position of a partition" })
const partitionLag = Metric.gauge("tributary.lag", { description: "Records of a partition not yet committed" })

/**
 * What identifies a run's metrics: its dataset and source.
 *
 * @since 0.3.0
 * @category models
 */
export interface MetricLabels {
  readonly dataset: string
  readonly source?: string | undefined
}

/**
 * A recorder of one run's events into the metrics; `lag` (a sink's partitions: their end
 * minus their committed offset) is read at each progress report.
 *
 * @since 0.3.0
 * @category constructors
 */
export const recorder = (
  labels: MetricLabels,
  lag?: (() => ReadonlyArray<{ readonly partition: string; readonly lag: number }>) | undefined
): (event: PipelineEvent) => Effect.Effect<void> => {
  let last: Progress | undefined
  const tagged = <T extends Metric.Metric<any, any, any>>(metric: T): T =>
    Metric.tagged(Metric.tagged(metric, "dataset", labels.dataset), "source", labels.source ?? "") as T
  const read = tagged(recordsRead)
  const stored = tagged(recordsStored)
  const dead = tagged(recordsDeadLettered)
  const inFlight = tagged(batchesInFlight)
  const pending = tagged(pendingIngestions)
  const oldest = tagged(oldestUnacked)
  const added = tagged(columnsAdded)
  const discarded = tagged(valuesDiscarded)
  const waiting = tagged(batchesWaiting)
  const limit = tagged(concurrencyLimit)
  const outage = tagged(serviceOutage)
  return (event) => {
    if (event._tag === "Committed") {
      return Metric.set(Metric.tagged(tagged(committedPosition), "partition", event.position.partition), event.position.offset)
    }
    if (event._tag !== "Progress") return Effect.void
    const now = event.progress
    const before = last
    last = now
    return Effect.all([
      Metric.incrementBy(read, now.read - (before?.read ?? 0)),
      Metric.incrementBy(stored, now.accepted - (before?.accepted ?? 0)),
      Metric.incrementBy(dead, now.deadLettered - (before?.deadLettered ?? 0)),
      Metric.incrementBy(added, now.columnsAdded.length - (before?.columnsAdded.length ?? 0)),
      Metric.incrementBy(discarded, now.valuesDiscarded - (before?.valuesDiscarded ?? 0)),
      Metric.set(waiting, now.waiting),
      Metric.set(limit, now.concurrencyLimit),
      Metric.set(outage, now.outage === null ? 0 : 1),
      Metric.set(inFlight, now.inFlight),
      Metric.set(pending, now.pending),
      Metric.set(oldest, now.oldestUnackedMillis),
      Effect.forEach(lag?.() ?? [], (p) => Metric.set(Metric.tagged(tagged(partitionLag), "partition", p.partition), p.lag), { discard: true })
    ], { discard: true })
  }
}
