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
 * by hand. Both go through one flow in callback form (`deliverWith`): `deliverBatch` is that
 * flow behind one `Effect.async`, and `deliverBatchNow` the flow itself, for a run's batches
 * that take no fiber (a fiber, a `Deferred` or a fan-out under `Effect.forEach` cost more CPU
 * per batch than the requests: measured, `docs/decisions.md`, "Delivery").
 *
 * @since 0.1.0
 */
import { Data, Duration, Effect, Exit, Option, Runtime, Stream, type Tracer } from "effect"
import { dual } from "effect/Function"
import { type Calls, type Cancel, ExchangeError, type Exchanges } from "../client/transport.js"
import { isPostFailure, makePost, type Post, settle } from "./internal/ingest.js"
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
 * The parts of a delivery a run shares between its batches: how to post and through what, and
 * the tracker that follows the accepted ingestions.
 *
 * @since 0.2.0
 * @category models
 */
export interface Delivery {
  readonly post: Post
  /** The posts' exchanges in callback form (untraced runs), else `postExchanges` are used. */
  readonly postCalls: Calls | undefined
  readonly postExchanges: Exchanges
  readonly tracker: Tracker
}

/**
 * One batch from its post to the end of its ingestion(s), in callback form: `accepted` is
 * called once the service took the batch (or refused it), `succeeded` once every ingestion it
 * became is known to have succeeded (before their details are read; not for a batch refused
 * whole, nor after a failure), `done` once with the outcome or the failure, unless cancelled.
 */
const deliverWith = (
  delivery: Delivery,
  calls: Calls,
  batch: Batch,
  accepted: () => void,
  part: string | undefined,
  span: Tracer.AnySpan | undefined,
  done: (outcome: Delivered | DeliveryError) => void,
  succeeded: (() => void) | undefined
): Cancel => {
  const { partition, records } = batch
  const failure = (reason: string, status?: number) =>
    new DeliveryError({
      reason,
      partition,
      first: records[0]!.position.offset,
      last: records[records.length - 1]!.position.offset,
      status
    })
  let cancel = delivery.post(calls, partition, records, part, (posted) => {
    if (isPostFailure(posted)) return done(failure(posted.reason, posted.status))
    accepted()
    const ingestions = posted.accepted
    const outcome = {
      ingestionIds: ingestions.map((one) => one.ingestionId),
      sent: records.length,
      accepted: 0,
      replayed: 0,
      rejected: [] as Delivered["rejected"],
      refused: posted.refused
    }
    if (ingestions.length === 0) return done(outcome)
    let left = ingestions.length
    let over = false
    let unknown = ingestions.length
    const oneSucceeded = succeeded === undefined ? undefined : () => {
      if (!over && --unknown === 0) succeeded()
    }
    const cancels: Array<Cancel> = []
    for (const ingestion of ingestions) {
      if (over) break
      cancels.push(delivery.tracker.follow(ingestion.ingestionId, (terminal) => {
        if (over) return
        const settled = typeof terminal === "string" ? terminal : settle(ingestion, terminal)
        if (typeof settled === "string") {
          over = true
          for (const other of cancels) other()
          return done(failure(settled))
        }
        outcome.accepted += settled.stored
        if (ingestion.replayed) outcome.replayed += settled.stored
        if (settled.rejected.length > 0) outcome.rejected = outcome.rejected.length === 0 ? settled.rejected : [...outcome.rejected, ...settled.rejected]
        if (--left === 0) {
          over = true
          done(outcome)
        }
      }, span, oneSucceeded))
    }
    cancel = () => {
      over = true
      for (const other of cancels) other()
    }
  })
  return () => cancel()
}

/** Exchanges as calls run on `runtime` (the batch's fiber's: its span is their parent). */
const callsOn = (exchanges: Exchanges, runtime: Runtime.Runtime<never>): Calls => {
  const run = Runtime.runCallback(runtime)
  return (exchange, done) => {
    const key = exchange.headers?.["idempotency-key"]
    const traced = key === undefined ? exchanges(exchange) : Effect.zipRight(Effect.annotateCurrentSpan("tributary.idempotency_key", key), exchanges(exchange))
    const cancel = run(traced, {
      onExit: (exit) => {
        if (Exit.isSuccess(exit)) return done(exit.value)
        const failure = exit.cause._tag === "Fail" ? exit.cause.error : new ExchangeError({ method: exchange.method, path: exchange.path, cause: exit.cause })
        done(failure)
      }
    })
    return () => cancel()
  }
}

/**
 * `deliverBatch` in callback form, posting through `postCalls` (the delivery's own, which an
 * untraced run has): `done` is called once with the outcome or the failure, unless cancelled.
 *
 * @since 0.3.0
 * @category utils
 */
export const deliverBatchNow = (
  delivery: Delivery,
  postCalls: Calls,
  batch: Batch,
  accepted: () => void,
  done: (outcome: Delivered | DeliveryError) => void,
  /** Called once its ingestions are known to have succeeded, before `done` (see `deliverBatch`). */
  succeeded?: (() => void) | undefined
): Cancel => deliverWith(delivery, postCalls, batch, accepted, undefined, undefined, done, succeeded)

/**
 * Posts a batch and follows its ingestion(s) to the end.
 *
 * @since 0.2.0
 * @category utils
 */
export const deliverBatch = (
  delivery: Delivery,
  batch: Batch,
  /** Called once the service took the batch (or refused it), before its ingestions are followed. */
  accepted: () => void = () => {},
  /**
   * Called once every ingestion of the batch is known to have succeeded: as soon as a list
   * shows it, before the details (counts, rejections) are read and the outcome is answered.
   * Later batches of its keys may go from then on.
   */
  succeeded?: (() => void) | undefined
): Effect.Effect<Delivered, DeliveryError> =>
  Effect.flatMap(postingOf(delivery), ({ calls, span }) =>
    Effect.async<Delivered, DeliveryError>((resume) => {
      const cancel = deliverWith(delivery, calls, batch, accepted, undefined, span, (outcome) =>
        resume(outcome instanceof DeliveryError ? Effect.fail(outcome) : Effect.succeed(outcome)), succeeded)
      return Effect.sync(cancel)
    }))

/**
 * What a batch's posts go through, and the span its polls link to: the delivery's own calls
 * (an untraced run), else the exchanges run on the calling fiber's runtime (its span the
 * parent of the posts' spans).
 *
 * @since 0.3.0
 * @category utils
 */
export const postingOf = (delivery: Delivery): Effect.Effect<{ readonly calls: Calls; readonly span: Tracer.AnySpan | undefined }> =>
  delivery.postCalls !== undefined
    ? Effect.succeed({ calls: delivery.postCalls, span: undefined })
    : Effect.map(
      Effect.zip(Effect.runtime<never>(), Effect.option(Effect.currentParentSpan)),
      ([runtime, span]) => ({ calls: callsOn(delivery.postExchanges, runtime), span: Option.getOrUndefined(span) })
    )

/**
 * One part of a batch that goes in parts (`part`: which of its records, part of the key), in
 * callback form through `calls`: as `deliverBatchNow`.
 *
 * @since 0.3.0
 * @category utils
 */
export const deliverPartNow = (
  delivery: Delivery,
  calls: Calls,
  batch: Batch,
  part: string,
  span: Tracer.AnySpan | undefined,
  accepted: () => void,
  done: (outcome: Delivered | DeliveryError) => void,
  succeeded?: (() => void) | undefined
): Cancel => deliverWith(delivery, calls, batch, accepted, part, span, done, succeeded)

/**
 * A delivery whose tracker lives as long as the scope: posts through `postCalls` or
 * `postExchanges` (a run's limited ones), else `calls` or `exchanges`; polls through `calls`
 * or `exchanges`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeDelivery = (
  options: DeliveryOptions & {
    /** The exchanges in callback form (untraced), used instead of `exchanges` when given. */
    readonly calls?: Calls | undefined
    readonly postExchanges?: Exchanges | undefined
    readonly postCalls?: Calls | undefined
    /** The run identity of a partition's batches (part of their keys). */
    readonly runOf?: ((partition: string) => string | undefined) | undefined
  }
) =>
  Effect.gen(function*() {
    const { destination } = options
    const wire = ingestWire(destination.api ?? "v2", destination.datasetId)
    const tracker = yield* makeTracker({
      exchanges: options.exchanges,
      calls: options.calls,
      wire,
      poll: options.poll ?? defaultPoll,
      traced: options.traced
    })
    const post = makePost({ wire, datasetId: destination.datasetId, sourceName: options.sourceName, runOf: options.runOf })
    return {
      post,
      postCalls: options.postCalls ?? (options.postExchanges === undefined ? options.calls : undefined),
      postExchanges: options.postExchanges ?? options.exchanges,
      tracker
    } satisfies Delivery
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
