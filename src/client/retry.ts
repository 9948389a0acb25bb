/**
 * Retries for transient failures: transport errors, timeouts, 408, 429 and 5xx.
 *
 * Each retry waits a full-jitter exponential backoff (a random delay between 0 and
 * `base * 2^attempt`, capped). A `Retry-After` answer is a floor for that wait and pauses
 * the whole client: every request of the client waits until the pause is over before its
 * next attempt, so a rate-limited service is not hammered by the other in-flight calls.
 *
 * @since 0.1.0
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { Clock, Duration, Effect, Either } from "effect"
import type { Exchanges } from "./transport.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly maxRetries: number
  /** Backoff of the first retry; doubles each time. */
  readonly baseDelay: Duration.DurationInput
  /** Longest backoff (before jitter). */
  readonly maxDelay: Duration.DurationInput
  /**
   * Per-attempt time limit (headers, and each wait for the body); an attempt over it is a
   * transport error and retried. Enforced by the transport of `TributaryClient.layer`; with
   * `TributaryClient.make`, the given `HttpClient` keeps its own limits.
   */
  readonly attemptTimeout: Duration.DurationInput
}

/**
 * 8 retries, 100 ms doubling to at most 10 s, 30 s per attempt.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultRetryPolicy: RetryPolicy = {
  maxRetries: 8,
  baseDelay: "100 millis",
  maxDelay: "10 seconds",
  attemptTimeout: "30 seconds"
}

/**
 * Statuses worth another attempt.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTransientStatus = (status: number): boolean =>
  status === 408 || status === 429 || status === 500 || status === 502 || status === 503 || status === 504

/**
 * The `Retry-After` header as milliseconds: delta seconds or an HTTP date.
 *
 * @since 0.1.0
 * @category utils
 */
export const retryAfterMillis = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined || value.trim() === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/**
 * The full-jitter backoff before retry `attempt` (0-based).
 *
 * @since 0.1.0
 * @category utils
 */
export const backoffMillis = (policy: RetryPolicy, attempt: number, random: number = Math.random()): number => {
  const ceiling = Math.min(Duration.toMillis(policy.maxDelay), Duration.toMillis(policy.baseDelay) * 2 ** attempt)
  return Math.floor(random * ceiling)
}

/**
 * What retrying needs to know of an attempt's outcome: whether it is worth another attempt,
 * the `Retry-After` it came with, and what to do with an answer that is dropped.
 */
interface Verdict {
  readonly transient: boolean
  readonly retryAfter?: string | undefined
  readonly drop?: Effect.Effect<void> | undefined
}

const settled: Verdict = { transient: false }
const transportFailure: Verdict = { transient: true }

/**
 * Retries for the clients of one `TributaryClient`: an `HttpClient` wrapper and an
 * `Exchanges` wrapper sharing one `Retry-After` pause.
 *
 * @since 0.1.0
 * @category models
 */
export interface Retries {
  readonly client: (client: HttpClient.HttpClient) => HttpClient.HttpClient
  readonly exchanges: (exchanges: Exchanges) => Exchanges
}

/**
 * Makes the wrappers that retry transient failures per `policy`; the last answer (or error)
 * is returned as it is once the retries are spent.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRetries = (policy: RetryPolicy): Effect.Effect<Retries> =>
  Effect.sync(() => {
    // One mutable instant: read before every attempt, so it costs nothing while never paused.
    let pausedUntil = 0
    const waitForPause = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      pausedUntil > now ? Effect.sleep(Duration.millis(pausedUntil - now)) : Effect.void)

    const retrying = <A, E>(attempt: Effect.Effect<A, E>, judge: (outcome: Either.Either<A, E>) => Verdict) => {
      const next = (n: number, outcome: Either.Either<A, E>): Effect.Effect<A, E> => {
        const verdict = n >= policy.maxRetries ? settled : judge(outcome)
        if (!verdict.transient) return Either.isRight(outcome) ? Effect.succeed(outcome.right) : Effect.fail(outcome.left)
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const floor = retryAfterMillis(verdict.retryAfter, now)
          if (floor !== undefined) pausedUntil = Math.max(pausedUntil, now + floor)
          const wait = Effect.sleep(Duration.millis(Math.max(floor ?? 0, backoffMillis(policy, n))))
          // A dropped answer's body is read, so that its connection serves the next request.
          return Effect.zipRight(verdict.drop === undefined ? wait : Effect.zipRight(verdict.drop, wait), run(n + 1))
        })
      }
      const run = (n: number): Effect.Effect<A, E> => {
        const once = Effect.matchEffect(attempt, {
          onFailure: (error) => next(n, Either.left(error)),
          onSuccess: (answer) => next(n, Either.right(answer))
        })
        return pausedUntil === 0 ? once : Effect.zipRight(waitForPause, once)
      }
      return Effect.suspend(() => run(0))
    }

    return {
      client: (client) =>
        HttpClient.transform(client, (send) =>
          retrying(send, (outcome) =>
            Either.match(outcome, {
              onLeft: (error) => error._tag === "RequestError" && error.reason === "Transport" ? transportFailure : settled,
              onRight: (response) =>
                isTransientStatus(response.status)
                  ? { transient: true, retryAfter: response.headers["retry-after"], drop: Effect.ignore(response.text) }
                  : settled
            }))),
      exchanges: (exchanges) => (exchange) =>
        retrying(exchanges(exchange), (outcome) =>
          Either.match(outcome, {
            onLeft: () => transportFailure,
            onRight: (reply) => {
              if (!isTransientStatus(reply.status)) return settled
              const retryAfter = reply.headers["retry-after"]
              return { transient: true, retryAfter: typeof retryAfter === "string" ? retryAfter : undefined }
            }
          }))
    }
  })
