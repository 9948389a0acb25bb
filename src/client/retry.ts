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
import { Clock, Duration, Effect, Either } from "effect"
import { type Calls, callAgain, ExchangeError, type Exchange, type Reply } from "./transport.js"

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

/**
 * The platform's transport error says `Transport error (GET url)` and keeps undici's reason in
 * its `cause`: here it is put in the message (`...: connect ECONNREFUSED 127.0.0.1:8080`), once,
 * so every retry notice and the final failure say why.
 */
const withCause = <E>(error: E): E =>
  error instanceof HttpClientError.RequestError && error.reason === "Transport" && error.description === undefined
    ? new HttpClientError.RequestError({ request: error.request, reason: error.reason, cause: error.cause, description: causeText(error.cause) }) as E
    : error

/** A transport failure's cause as one line: undici's code and message (`ECONNREFUSED ...`). */
const causeText = (cause: unknown): string => {
  const inner = (cause as { cause?: unknown } | null)?.cause
  const deepest = inner instanceof Error ? inner : cause
  if (deepest instanceof Error) {
    const code = (deepest as { code?: unknown }).code
    return typeof code === "string" && !deepest.message.includes(code) ? `${deepest.message} (${code})` : deepest.message
  }
  return String(cause)
}
const transportFailure: Verdict = { transient: true }

/**
 * A retry about to happen, for a caller that shows them (the CLI reports each one while an
 * unreachable service is tried again, instead of a silence that ends in an error).
 *
 * @since 0.3.0
 * @category models
 */
export interface RetryNotice {
  /** The request, `GET http://host/v2/...`. */
  readonly request: string
  /** What went wrong: the transport's cause, or `HTTP 503`. */
  readonly cause: string
  /** This retry's number, from 1, and how many are allowed. */
  readonly attempt: number
  readonly maxRetries: number
  /** The wait before it. */
  readonly waitMillis: number
}

/**
 * Retries for the clients of one `TributaryClient`: an `HttpClient` wrapper and an
 * `Exchanges` wrapper sharing one `Retry-After` pause.
 *
 * @since 0.1.0
 * @category models
 */
export interface Retries {
  readonly client: (client: HttpClient.HttpClient) => HttpClient.HttpClient
  /**
   * Retries over exchanges in callback form (the pipeline's hot path; `Transport.exchangesOf`
   * makes `Exchanges` of them).
   */
  readonly calls: (calls: Calls) => Calls
}

/** What retrying needs to know of an exchange's outcome. */
const judgeExchange = (outcome: Reply | ExchangeError): Verdict => {
  if (outcome instanceof ExchangeError) return transportFailure
  if (!isTransientStatus(outcome.status)) return settled
  const retryAfter = outcome.headers["retry-after"]
  return { transient: true, retryAfter: typeof retryAfter === "string" ? retryAfter : undefined }
}

/**
 * An exchange's request and what went wrong with it, for a `RetryNotice`: its whole address
 * when the base is known, as the typed calls' notices name theirs.
 */
const describeExchange = (base: string, exchange: Exchange, outcome: Reply | ExchangeError) => ({
  request: `${exchange.method} ${base}${exchange.path}`,
  cause: outcome instanceof ExchangeError ? causeText(outcome.cause) : `HTTP ${outcome.status}`
})

/**
 * Makes the wrappers that retry transient failures per `policy`; the last answer (or error)
 * is returned as it is once the retries are spent.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRetries = (
  policy: RetryPolicy,
  onRetry?: ((notice: RetryNotice) => Effect.Effect<void>) | undefined,
  /** The service's base address, named in the notices of exchanges (which carry only a path). */
  baseUrl?: string | undefined
): Effect.Effect<Retries> =>
  Effect.sync(() => {
    const base = baseUrl === undefined ? "" : baseUrl.replace(/\/+$/, "")
    // One mutable instant: read before every attempt, so it costs nothing while never paused.
    let pausedUntil = 0
    const waitForPause = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      pausedUntil > now ? Effect.sleep(Duration.millis(pausedUntil - now)) : Effect.void)

    const retrying = <A, E>(
      attempt: Effect.Effect<A, E>,
      judge: (outcome: Either.Either<A, E>) => Verdict,
      describe: (outcome: Either.Either<A, E>) => { readonly request: string; readonly cause: string }
    ) => {
      const next = (n: number, outcome: Either.Either<A, E>): Effect.Effect<A, E> => {
        const verdict = n >= policy.maxRetries ? settled : judge(outcome)
        if (!verdict.transient) return Either.isRight(outcome) ? Effect.succeed(outcome.right) : Effect.fail(outcome.left)
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const floor = retryAfterMillis(verdict.retryAfter, now)
          if (floor !== undefined) pausedUntil = Math.max(pausedUntil, now + floor)
          const waitMillis = Math.max(floor ?? 0, backoffMillis(policy, n))
          const sleep = Effect.sleep(Duration.millis(waitMillis))
          const wait = onRetry === undefined
            ? sleep
            : Effect.zipRight(onRetry({ ...describe(outcome), attempt: n + 1, maxRetries: policy.maxRetries, waitMillis }), sleep)
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
        HttpClient.transform(client, (send, request) =>
          retrying(
            Effect.mapError(send, withCause),
            (outcome) =>
              Either.match(outcome, {
                onLeft: (error) => error._tag === "RequestError" && error.reason === "Transport" ? transportFailure : settled,
                onRight: (response) =>
                  isTransientStatus(response.status)
                    ? { transient: true, retryAfter: response.headers["retry-after"], drop: Effect.ignore(response.text) }
                    : settled
              }),
            (outcome) => ({
              request: `${request.method} ${request.url}`,
              cause: Either.match(outcome, {
                onLeft: (error) => error._tag === "RequestError" ? error.description ?? error.message : error.message,
                onRight: (response) => `HTTP ${response.status}`
              })
            })
          )),
      calls: (calls) => (exchange, done) =>
        callAgain(calls, exchange, done, (outcome, n) => {
          const verdict = n >= policy.maxRetries ? settled : judgeExchange(outcome)
          if (!verdict.transient) return undefined
          const now = Date.now()
          const floor = retryAfterMillis(verdict.retryAfter, now)
          if (floor !== undefined) pausedUntil = Math.max(pausedUntil, now + floor)
          const waitMillis = Math.max(floor ?? 0, backoffMillis(policy, n))
          // Told on a fiber of its own: a retry is rare, and the caller is not waiting in Effect.
          if (onRetry !== undefined) {
            Effect.runFork(onRetry({ ...describeExchange(base, exchange, outcome), attempt: n + 1, maxRetries: policy.maxRetries, waitMillis }))
          }
          return waitMillis
        }, () => pausedUntil - Date.now())
    }
  })
