/**
 * The memory store's `IngestionStore` port, over the store's shared state.
 *
 * @since 0.1.0
 */
import { Clock, Deferred, Effect, Exit, Option, Queue } from "effect"
import { sortedBy } from "../order.js"
import { newIngestion, sameSchema } from "../entities.js"
import { writeRows } from "../rowLedger.js"
import { type ClaimedIngestion, type Dataset, type Ingestion, statsOf } from "../Store.js"
import { IdempotencyKeyReused } from "../../errors.js"
import type { IngestionStoreService } from "../ports/ingestions.js"
import type { IdempotencyEntry } from "./idempotencyKeys.js"
import { type MemoryState, type Pending, takeable, slice, afterIo } from "./state.js"

/**
 * The port over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: MemoryState): IngestionStoreService => {
  const {
    wakeUp, datasets, storedRows, ingestions, ingestionsByDataset, pending, queues, idempotency, acceptance,
    setIngestion, holds, finish
  } = state
  const port: IngestionStoreService = {
    rows: (datasetId, query) =>
      Effect.sync(() => {
        const rows = storedRows.get(datasetId)?.rows ?? []
        const sort = query.sort
        if (sort === undefined) return slice(rows, query)
        const id = sort.column.id
        return slice(
          sortedBy(rows, (row) => {
            const value = row[id]
            return typeof value === "string" || typeof value === "number" ? value : null
          }, sort.order),
          query
        )
      }),
    createIngestion: (input, records) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const ingestion = newIngestion(input, records, now)
        ingestions.set(ingestion.id, ingestion)
        const ofDataset = ingestionsByDataset.get(ingestion.datasetId)
        if (ofDataset === undefined) ingestionsByDataset.set(ingestion.datasetId, [ingestion.id])
        else ofDataset.push(ingestion.id)
        const delay = input.processingDelayMillis
        const entry: Pending = {
          id: ingestion.id,
          datasetId: ingestion.datasetId,
          records,
          traceparent: input.traceparent ?? null,
          dueAt: delay === undefined ? 0 : now + delay,
          accepted: acceptance(),
          owner: undefined,
          leaseUntil: 0
        }
        pending.set(ingestion.id, entry)
        const queue = queues.get(entry.datasetId)
        if (queue === undefined) queues.set(entry.datasetId, [entry])
        else queue.push(entry)
        const dataset = datasets.get(input.datasetId)
        if (dataset !== undefined) {
          datasets.set(dataset.id, {
            ...dataset,
            activity: {
              lastIngestionId: ingestion.id,
              lastIngestionAt: ingestion.initiatedAt,
              lastStatus: ingestion.status,
              lastSuccessAt: dataset.activity?.lastSuccessAt ?? null
            }
          })
        }
        return Effect.as(Queue.offer(wakeUp, undefined), ingestion)
      }),
    ingestion: (id) => Effect.sync(() => Option.fromNullable(ingestions.get(id))),
    listIngestions: (datasetId, { limit, offset }) =>
      Effect.sync(() => {
        // Newest first: the page is read from the end of the dataset's ids.
        const ids = ingestionsByDataset.get(datasetId) ?? []
        const items: Array<Ingestion> = []
        for (let i = ids.length - 1 - offset; i >= 0 && items.length < limit; i--) items.push(ingestions.get(ids[i]!)!)
        return { items, totalItems: ids.length }
      }),
    finishedIngestions: (datasetId) =>
      Effect.sync(() => {
        const ids = ingestionsByDataset.get(datasetId) ?? []
        const finished: Array<Ingestion> = []
        for (let i = ids.length - 1; i >= 0; i--) {
          const ingestion = ingestions.get(ids[i]!)!
          if (ingestion.status === "success" || ingestion.status === "failed") finished.push(ingestion)
        }
        return finished
      }),
    claimIngestions: (owner, leaseMillis, max) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        // The dataset whose oldest pending ingestion can be taken and waits longest; a
        // dataset whose oldest is held or not due gives nothing (its later ones wait).
        let queue: Array<Pending> | undefined
        for (const candidate of queues.values()) {
          const head = candidate[0]!
          if (takeable(head, now) && (queue === undefined || head.accepted < queue[0]!.accepted)) queue = candidate
        }
        const claims: Array<ClaimedIngestion> = []
        if (queue === undefined) return claims
        for (const entry of queue) {
          if (claims.length >= max || !takeable(entry, now)) break
          entry.owner = owner
          entry.leaseUntil = now + leaseMillis
          const processing: Ingestion = { ...ingestions.get(entry.id)!, status: "processing" }
          setIngestion(processing)
          claims.push({ ingestion: processing, records: entry.records, owner, traceparent: entry.traceparent })
        }
        return claims
      }),
    completeIngestions: ({ decided, schema }) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const claims = decided.map((d) => d.claim)
        const completed: Array<string> = []
        for (const { claim, decision } of decided) {
          const entry = pending.get(claim.ingestion.id)
          // In acceptance order: an ingestion ends only as the oldest pending one of its dataset.
          if (entry?.owner !== claim.owner || queues.get(entry.datasetId)?.[0] !== entry) break
          const dataset = datasets.get(claim.ingestion.datasetId)
          if (dataset === undefined) break
          // Decided against another schema (the first one only: the rest follow from it).
          if (completed.length === 0 && !sameSchema(dataset.schema, schema)) break
          const written = writeRows(decision.rows, dataset.primaryKey, storedRows.get(dataset.id)!)
          const updated: Dataset = {
            ...dataset,
            schema: decision.newColumns.length > 0 ? [...dataset.schema, ...decision.newColumns] : dataset.schema,
            rowCount: dataset.rowCount + written.rowDelta,
            size: dataset.size + written.bytesDelta
          }
          datasets.set(dataset.id, updated)
          finish(claim, now, {
            status: "success",
            counts: {
              received: claim.records.length,
              appended: written.appended,
              overwritten: written.overwritten,
              rejected: decision.problems.length
            },
            datasetStats: statsOf(updated),
            problems: decision.problems
          })
          completed.push(claim.ingestion.id)
        }
        // Those left out that are still held go back to the queue, to be taken again in order.
        for (const claim of claims.slice(completed.length)) {
          if (!holds(claim)) continue
          const entry = pending.get(claim.ingestion.id)!
          entry.owner = undefined
          entry.leaseUntil = 0
          setIngestion({ ...ingestions.get(entry.id)!, status: "queued" })
        }
        return Effect.succeed(completed)
      }),
    failIngestion: (claim, failure) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (!holds(claim)) return false
        finish(claim, now, { status: "failed", failure })
        return true
      }),
    // Woken once the event loop has taken in the requests that arrived with the one that
    // woke it (setImmediate runs after this turn's I/O callbacks), a worker claims many
    // ingestions at once. Woken at once, a worker under load claimed each ingestion alone and
    // then found nothing: 40,021 claims for 20,010 ingestions; now about 8 per claim.
    // Woken too when the first ingestion that waits for its `processing` delay is due, or
    // whose claim's lease ran out. A head that can be taken already is not waited for: it may
    // have come due since the worker's claim found nothing (the clock moved between the two),
    // and waiting then for an arrival hung the worker at the end of a run, with nothing more
    // to arrive (seen once in `bench:tracking`: the last 77 ingestions never processed).
    awaitIngestions: Effect.flatMap(Clock.currentTimeMillis, (now) => {
      let due = Infinity
      for (const queue of queues.values()) {
        const head = queue[0]!
        const at = Math.max(head.dueAt, head.owner === undefined ? 0 : head.leaseUntil)
        if (at < due) due = at
      }
      if (due <= now) return afterIo
      const woken = Queue.take(wakeUp)
      return Effect.zipRight(due === Infinity ? woken : Effect.timeoutOption(woken, due - now), afterIo)
    }),
    once: ({ fingerprint, key, scope, windowMillis }, execute) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const fiberId = yield* Effect.fiberId
        const existing = idempotency.get(scope)
        if (existing !== undefined && (existing.storedAt === undefined || now - existing.storedAt <= windowMillis)) {
          if (existing.fingerprint !== fingerprint) return yield* new IdempotencyKeyReused({ key })
          const exit = yield* Effect.exit(Deferred.await(existing.answer))
          // The first request failed, and failures are not kept: go again as if first.
          if (Exit.isFailure(exit)) return yield* port.once({ fingerprint, key, scope, windowMillis }, execute)
          return { answer: exit.value as any, replayed: true }
        }
        idempotency.sweep(now)
        // Claimed in the same synchronous step as the lookup: concurrent requests cannot both claim.
        const entry: IdempotencyEntry = { fingerprint, answer: Deferred.unsafeMake(fiberId), storedAt: undefined, windowMillis }
        idempotency.claim(scope, entry)
        // Settled however the request ends, so waiters never hang: a success is kept,
        // anything else frees the key.
        const answer = yield* execute.pipe(
          Effect.onExit((exit) =>
            Effect.flatMap(Clock.currentTimeMillis, (settledAt) => {
              if (Exit.isSuccess(exit)) idempotency.stored(scope, entry, settledAt)
              else idempotency.release(scope, entry)
              return Deferred.done(entry.answer, exit as Exit.Exit<unknown, unknown>)
            })
          )
        )
        return { answer, replayed: false }
      })
  }
  return port
}
