/**
 * The sink's metrics as Prometheus scrapes them (prom-client's exposition), and the status line.
 */
import { describe, expect, it } from "vitest"
import { emptyProgress } from "../../src/pipeline/events.js"
import { lagOf, sinkRegistry } from "../../src/cli/metrics.js"
import { describeSink } from "../../src/cli/sink.js"

const partitions = [
  { partition: "orders:0", committed: 90, end: 100 },
  { partition: "orders:1", committed: undefined, end: 40 }
]
const progress = {
  ...emptyProgress(0),
  read: 120,
  accepted: 100,
  deadLettered: 3,
  inFlight: 2,
  pending: 1,
  waiting: 1,
  concurrencyLimit: 6,
  oldestUnackedMillis: 1500
}

describe("sink metrics", () => {
  it("reads the status at scrape time: lag and committed offset per partition, totals, in flight, oldest un-acked", async () => {
    const text = await sinkRegistry(() => ({ progress, partitions, ready: true })).metrics()
    expect(text).toContain('tributary_partition_lag{partition="orders:0"} 10')
    expect(text).toContain('tributary_partition_lag{partition="orders:1"} 0')
    expect(text).toContain('tributary_partition_committed_offset{partition="orders:0"} 90')
    expect(text).not.toContain('tributary_partition_committed_offset{partition="orders:1"}')
    expect(text).toContain("tributary_records_stored_total 100")
    expect(text).toContain("tributary_records_dead_lettered_total 3")
    expect(text).toContain("tributary_batches_in_flight 2")
    expect(text).toContain("tributary_oldest_unacked_seconds 1.5")
    expect(text).toContain("tributary_ingestions_pending 1")
    expect(text).toContain("tributary_batches_waiting 1")
    expect(text).toContain("tributary_concurrency_limit 6")
    expect(text).toContain("tributary_service_outage 0")
    expect(text).toContain("# TYPE tributary_records_stored_total counter")
  })

  it("schema changes are counted: columns added, values discarded", async () => {
    const changed = { ...progress, columnsAdded: [{ id: "coupon", dataType: "string" as const }], valuesDiscarded: 4 }
    const text = await sinkRegistry(() => ({ progress: changed, partitions, ready: true })).metrics()
    expect(text).toContain("tributary_columns_added_total 1")
    expect(text).toContain("tributary_values_discarded_total 4")
  })

  it("lag is end minus committed, 0 while either is unknown", () => {
    expect(partitions.map(lagOf)).toEqual([10, 0])
  })

  it("the status line shows the rate since the last line, the summed lag, in flight, the limit and dead letters", () => {
    const describe = describeSink(() => partitions)
    describe(progress, 10_000)
    expect(describe({ ...progress, accepted: 600 }, 11_000)).toBe(
      "500 records/s  lag 10  in flight 2 (1 followed, 1 held)  limit 6  dead letters 3  stored 600  partitions 2"
    )
  })

  it("an outage shows on the status line, in the metrics and on /ready's reason", async () => {
    const outage = { since: 1_000, attempts: 7, cause: "GET /v2/datasets/1/ingestions: connect ECONNREFUSED" }
    const describe = describeSink(() => partitions)
    expect(describe({ ...progress, outage }, 31_000)).toContain(
      "OUTAGE for 30s (7 failed tries: GET /v2/datasets/1/ingestions: connect ECONNREFUSED)"
    )
    const text = await sinkRegistry(() => ({ progress: { ...progress, outage }, partitions, ready: false })).metrics()
    expect(text).toContain("tributary_service_outage 1")
    expect(text).toMatch(/tributary_service_outage_seconds \d+/)
  })
})
