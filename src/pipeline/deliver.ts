/**
 * `send` and `track`: post a batch with its idempotency key, then follow its ingestion to a
 * terminal state.
 *
 * Transient failures (transport, timeouts, 408, 429, 5xx) are retried by the client, with
 * the same key, so a batch the service already took is replayed, not ingested twice. A 413
 * splits the batch in two (each half with its own key, derived the same way, so the split
 * repeats after a restart). A 400 or 422 refuses the batch: its records become dead letters
 * with the reason. Anything else (a bad key, a missing dataset, retries spent) stops the run
 * before the batch is committed.
 *
 * `run` does the same with its scheduler (conflicting batches in order, a bound on what is
 * pending, an adaptive limit on requests); `deliverUnits` is the stage for pipelines composed
 * by hand. Both go through `deliverBatch`.
 *
 * @since 0.1.0
 */
import { Data, Duration, Effect, Stream } from "effect"
import { dual } from "effect/Function"
import type { Exchanges } from "../client/transport.js"
import { type Accepted, makePost, type Settled, settle } from "./internal/ingest.js"
import { ingestWire } from "./internal/ingestWire.js"
import { makeTracker, type Tracker } from "./internal/tracking.js"
import type { Batch, Delivered, DeliveredUnit, Unit } from "./vocabulary.js"

export type { Delivered, DeliveredUnit } from "./vocabulary.js"

/**
 * Where records go.
 *
 * @since 0.1.0
 * @category models
 */
export interface Destination {
  /**
   * The dataset: its v2 number or its UUID (v1 id). v2 paths take either; a v1 run given a
   * number has it resolved to the UUID before the first send (`run`).
   */
  readonly datasetId: string | number
  /** `v2` (default) sends idempotency keys; `v1` has none. */
  readonly api?: "v1" | "v2" | undefined
}

/**
 * A batch could not be delivered and the run must stop (its positions stay uncommitted).
 *
 * @since 0.1.0
 * @category errors
 */
export class DeliveryError extends Data.TaggedError("DeliveryError")<{
  readonly reason: string
  readonly partition: string
  readonly first: number
  readonly last: number
  readonly status?: number | undefined
}> {
  override get message() {
    return `records ${this.first}..${this.last} of partition ${this.partition}: ${this.reason}`
  }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DeliveryOptions {
  /** The client's `exchanges`. */
  readonly exchanges: Exchanges
  readonly destination: Destination
  readonly sourceName: string
  /** First and longest wait between polls of the pending ingestions. */
  readonly poll?: { readonly initial: Duration.DurationInput; readonly max: Duration.DurationInput } | undefined
  /** Whether the polls are spans linked to the batches they poll for (when the client traces). */
  readonly traced?: boolean | undefined
}

/**
 * Polls start 20 ms after an acceptance and slow down to one a second while nothing ends.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultPoll = { initial: "20 millis", max: "1 second" } as const

/**
 * The parts of a delivery a run shares between its batches: how to post, and the tracker
 * that follows the accepted ingestions.
 *
 * @since 0.2.0
 * @category models
 */
export interface Delivery {
  readonly post: ReturnType<typeof makePost>
  readonly tracker: Tracker
}

/**
 * Posts a batch and follows its ingestion(s) to the end.
 *
 * @since 0.2.0
 * @category utils
 */
export const deliverBatch = (
  delivery: Delivery,
  batch: Batch,
  /** Runs once the service took the batch (or refused it), before its ingestions are followed. */
  accepted: Effect.Effect<void> = Effect.void,
  /** Which of a batch's records `batch` holds, when the batch goes in parts (part of the keys). */
  part?: string
): Effect.Effect<Delivered, DeliveryError> => {
  const { partition, records } = batch
  const failure = (reason: string, status?: number) =>
    new DeliveryError({
      reason,
      partition,
      first: records[0]!.position.offset,
      last: records[records.length - 1]!.position.offset,
      status
    })
  const follow = (accepted: Accepted): Effect.Effect<Settled & Accepted, DeliveryError> =>
    Effect.flatMap(Effect.mapError(delivery.tracker.track(accepted.ingestionId), (reason) => failure(reason)), (terminal) => {
      const settled = settle(accepted, terminal)
      return typeof settled === "string" ? Effect.fail(failure(settled)) : Effect.succeed({ ...accepted, ...settled })
    })
  return delivery.post(partition, records, part).pipe(
    Effect.mapError((failed) => failure(failed.reason, failed.status)),
    Effect.tap(() => accepted),
    Effect.flatMap((posted) =>
      Effect.map(
        posted.accepted.length === 1 ? Effect.map(follow(posted.accepted[0]!), (one) => [one]) : Effect.all(posted.accepted.map(follow)),
        (parts): Delivered => {
          let accepted = 0
          let replayed = 0
          for (const part of parts) {
            accepted += part.stored
            if (part.replayed) replayed += part.stored
          }
          return {
            ingestionIds: parts.map((part) => part.ingestionId),
            sent: records.length,
            accepted,
            replayed,
            rejected: parts.length === 1 ? parts[0]!.rejected : parts.flatMap((part) => part.rejected),
            refused: posted.refused
          }
        }
      )
    )
  )
}

/**
 * A delivery whose tracker lives as long as the scope: posts through `postExchanges` (a run's
 * limited ones) or `exchanges`, polls through `exchanges`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeDelivery = (
  options: DeliveryOptions & {
    readonly postExchanges?: Exchanges | undefined
    /** The run identity of a partition's batches (part of their keys). */
    readonly runOf?: ((partition: string) => string | undefined) | undefined
  }
) =>
  Effect.gen(function*() {
    const { destination } = options
    const wire = ingestWire(destination.api ?? "v2", destination.datasetId)
    const tracker = yield* makeTracker({ exchanges: options.exchanges, wire, poll: options.poll ?? defaultPoll, traced: options.traced })
    const post = makePost({
      exchanges: options.postExchanges ?? options.exchanges,
      wire,
      datasetId: destination.datasetId,
      sourceName: options.sourceName,
      runOf: options.runOf,
      traced: options.traced
    })
    return { post, tracker } satisfies Delivery
  })

/**
 * A delivered batch as a `DeliveredUnit`: its letters are those read inside it, then those the
 * service refused or rejected.
 *
 * @since 0.1.0
 * @category utils
 */
export const deliveredBatch = (batch: Batch, outcome: Delivered): DeliveredUnit => ({
  partition: batch.partition,
  fromSeq: batch.fromSeq,
  toSeq: batch.toSeq,
  lastPosition: batch.lastPosition,
  letters: outcome.refused.length + outcome.rejected.length === 0
    ? batch.deadLetters
    : [...batch.deadLetters, ...outcome.refused, ...outcome.rejected],
  outcome
})

/**
 * A dead letter read outside any batch (or a record a typed stage dropped) as a
 * `DeliveredUnit`: there is nothing to send.
 *
 * @since 0.1.0
 * @category utils
 */
export const deliveredLetter = (unit: Extract<Unit, { _tag: "Dead" | "Skipped" }>): DeliveredUnit => {
  const position = unit._tag === "Dead" ? unit.letter.position : unit.position
  return {
    partition: position.partition,
    fromSeq: unit.seq,
    toSeq: unit.seq,
    lastPosition: position,
    letters: unit._tag === "Dead" ? [unit.letter] : [],
    outcome: undefined
  }
}

/**
 * `send` and `track` as a stream stage: delivers each unit of `batch`, at most `concurrency`
 * (default 4) at once, and emits them as they finish, in any order. A lone dead letter passes
 * through. Fails with the first batch that cannot be delivered. (It does not order keyed
 * batches: `run` does.)
 *
 * @since 0.1.0
 * @category combinators
 */
export const deliverUnits: {
  (options: DeliveryOptions & { readonly concurrency?: number | undefined }): <E, R>(
    self: Stream.Stream<Unit, E, R>
  ) => Stream.Stream<DeliveredUnit, E | DeliveryError, R>
  <E, R>(
    self: Stream.Stream<Unit, E, R>,
    options: DeliveryOptions & { readonly concurrency?: number | undefined }
  ): Stream.Stream<DeliveredUnit, E | DeliveryError, R>
} = dual(2, <E, R>(self: Stream.Stream<Unit, E, R>, options: DeliveryOptions & { readonly concurrency?: number | undefined }) =>
  Stream.unwrapScoped(Effect.map(makeDelivery(options), (delivery) =>
    Stream.mapEffect(
      self,
      (unit): Effect.Effect<DeliveredUnit, DeliveryError> =>
        unit._tag !== "Batch"
          ? Effect.succeed(deliveredLetter(unit))
          : Effect.map(deliverBatch(delivery, unit.batch), (outcome) => deliveredBatch(unit.batch, outcome)),
      { concurrency: options.concurrency ?? 4, unordered: true }
    ))))
