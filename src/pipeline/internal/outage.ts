/**
 * Outages of the service: when a request still fails after the client's retries (no answer,
 * or 5xx/429 every time), a long-running run (the Kafka sink) waits and tries again for as
 * long as it takes, with a capped backoff, and says so; a one-shot run (ingest, backfill)
 * stops, as its retry bound says.
 *
 * Why: a sink against a durable server that was down for 60 s exited 1 about 15 s into the
 * outage (the client's retries were spent), and its group rebalanced around it. Riding the
 * outage out, it stays in its group, commits nothing new (nothing becomes terminal), and goes
 * on where it was when the service answers again.
 *
 * @since 0.2.0
 * @internal
 */
import { Clock, Duration, Effect, Either } from "effect"
import { type Calls, callAgain, type Exchange, ExchangeError, type Exchanges, type Reply } from "../../client/transport.js"
import { isTransientStatus } from "../../client/retry.js"
import type { Outage, PipelineEvent } from "../events.js"

/**
 * The waits between tries during an outage: 1 s doubling to 30 s, with full jitter above half.
 *
 * @since 0.2.0
 * @category utils
 */
export const outageBackoffMillis = (attempt: number, random: number = Math.random()): number => {
  const ceiling = Math.min(30_000, 1_000 * 2 ** Math.min(attempt, 5))
  return Math.floor(ceiling / 2 + (random * ceiling) / 2)
}

/**
 * What an exchange's outcome says of the service: it answered (any answer that is not a
 * transient failure), or it is out (the cause).
 */
const outcomeCause = (outcome: Reply | ExchangeError): string | undefined =>
  outcome instanceof ExchangeError
    ? outcome.message
    : isTransientStatus(outcome.status)
    ? `${outcome.status} from the service`
    : undefined

/**
 * The outage state of one run, shared by its sends and polls.
 *
 * @since 0.2.0
 * @category models
 */
export class OutageWatch {
  private outage: Outage | null = null

  constructor(
    /** Whether to wait out an outage of any length (else the failure stands). */
    readonly rideOut: boolean,
    private readonly emit: (event: PipelineEvent) => Effect.Effect<void>
  ) {}

  /** The outage going on, or null. */
  get current(): Outage | null {
    return this.outage
  }

  private failed(now: number, cause: string): Effect.Effect<void> {
    const started = this.outage === null
    this.outage = { since: this.outage?.since ?? now, attempts: (this.outage?.attempts ?? 0) + 1, cause }
    return started ? this.emit({ _tag: "OutageStarted", outage: this.outage }) : Effect.void
  }

  private answered(now: number): Effect.Effect<void> {
    const outage = this.outage
    if (outage === null) return Effect.void
    this.outage = null
    return this.emit({ _tag: "OutageEnded", outage, endedAt: now })
  }

  /**
   * `exchanges` that notice outages and, when riding them out, try again until the service
   * answers. A transient answer that is given up on is returned as it is (the caller reads it).
   */
  watch(exchanges: Exchanges): Exchanges {
    const attempt = (exchange: Exchange, n: number): Effect.Effect<Reply, ExchangeError> =>
      Effect.matchEffect(exchanges(exchange), {
        // The common case, a plain answer while the service is up, costs one check.
        onSuccess: (reply) =>
          this.outage === null && !isTransientStatus(reply.status) ? Effect.succeed(reply) : settle(exchange, n, Either.right(reply)),
        onFailure: (error) => settle(exchange, n, Either.left(error))
      })
    const settle = (exchange: Exchange, n: number, either: Either.Either<Reply, ExchangeError>): Effect.Effect<Reply, ExchangeError> => {
      const outcome = either._tag === "Right" ? either.right : either.left
      const cause = outcomeCause(outcome)
      if (cause === undefined) {
        return Effect.zipRight(
          this.outage === null ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => this.answered(now)),
          either._tag === "Right" ? Effect.succeed(either.right) : Effect.fail(either.left)
        )
      }
      return Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.zipRight(
          this.failed(now, cause),
          this.rideOut
            ? Effect.zipRight(Effect.sleep(Duration.millis(outageBackoffMillis(n))), attempt(exchange, n + 1))
            : either._tag === "Right"
            ? Effect.succeed(either.right)
            : Effect.fail(either.left)
        ))
    }
    return (exchange) => attempt(exchange, 0)
  }

  /**
   * The same over exchanges in callback form; what it tells of an outage's start and end is
   * told on a fiber of its own (rare, and the caller is not waiting in Effect).
   */
  watchCalls(calls: Calls): Calls {
    return (exchange, done) =>
      callAgain(calls, exchange, done, (outcome, n) => {
        // The common case, a plain answer while the service is up, costs one check.
        if (this.outage === null && !(outcome instanceof ExchangeError) && !isTransientStatus(outcome.status)) return undefined
        const cause = outcomeCause(outcome)
        const now = Date.now()
        if (cause === undefined) {
          if (this.outage !== null) Effect.runFork(this.answered(now))
          return undefined
        }
        Effect.runFork(this.failed(now, cause))
        return this.rideOut ? outageBackoffMillis(n) : undefined
      })
  }
}
