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
import * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Clock, Duration, Effect, Either, Ref } from "effect"

/**
 * @since 0.1.0
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

/** 8 retries, 100 ms doubling to at most 10 s, 30 s per attempt. @since 0.1.0 */
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
 */
export const isTransientStatus = (status: number): boolean =>
  status === 408 || status === 429 || status === 500 || status === 502 || status === 503 || status === 504

/**
 * The `Retry-After` header as milliseconds: delta seconds or an HTTP date.
 *
 * @since 0.1.0
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
 */
export const backoffMillis = (policy: RetryPolicy, attempt: number, random: number = Math.random()): number => {
  const ceiling = Math.min(Duration.toMillis(policy.maxDelay), Duration.toMillis(policy.baseDelay) * 2 ** attempt)
  return Math.floor(random * ceiling)
}

type Outcome = Either.Either<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>

const isTransient = (outcome: Outcome): boolean =>
  Either.match(outcome, {
    onLeft: (error) => error._tag === "RequestError" && error.reason === "Transport",
    onRight: (response) => isTransientStatus(response.status)
  })

/**
 * Makes a wrapper that retries a client's transient failures per `policy`; the last answer
 * (or error) is returned as it is once the retries are spent. Every client wrapped by the
 * same wrapper shares one `Retry-After` pause.
 *
 * @since 0.1.0
 */
export const makeRetries = (policy: RetryPolicy): Effect.Effect<(client: HttpClient.HttpClient) => HttpClient.HttpClient> =>
  Effect.map(Ref.make(0), (pausedUntil) => (client) =>
    HttpClient.transform(client, (send) => {
      const waitForPause = Effect.flatMap(
        Effect.zip(Ref.get(pausedUntil), Clock.currentTimeMillis),
        ([until, now]) => until > now ? Effect.sleep(Duration.millis(until - now)) : Effect.void
      )
      const attempt = (n: number): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> =>
        Effect.gen(function*() {
          yield* waitForPause
          const outcome: Outcome = yield* Effect.either(send)
          if (n >= policy.maxRetries || !isTransient(outcome)) {
            return yield* Either.match(outcome, { onLeft: Effect.fail, onRight: Effect.succeed })
          }
          const now = yield* Clock.currentTimeMillis
          const floor = Either.isRight(outcome)
            ? retryAfterMillis(outcome.right.headers["retry-after"], now)
            : undefined
          // The answer is dropped: read its body so that its connection serves the next request.
          if (Either.isRight(outcome)) yield* Effect.ignore(outcome.right.text)
          if (floor !== undefined) {
            yield* Ref.update(pausedUntil, (until) => Math.max(until, now + floor))
          }
          yield* Effect.sleep(Duration.millis(Math.max(floor ?? 0, backoffMillis(policy, n))))
          return yield* attempt(n + 1)
        })
      return attempt(0)
    }))
