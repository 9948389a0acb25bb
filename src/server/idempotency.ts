/**
 * `Idempotency-Key`: a successful answer is kept for 24 hours and replayed for the same
 * key, user and route; the same key with a different body is 422 and runs nothing; a
 * request arriving while the first with its key still runs waits for that one's answer.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Clock, Context, Deferred, Effect, Exit, Layer } from "effect"
import { CurrentPrincipal } from "../api/security.js"
import type { Unprocessable } from "../api/errors.js"
import { failWith } from "./request.js"

/** 24 hours, the service's window. @since 0.1.0 */
export const idempotencyWindowMillis = 24 * 60 * 60 * 1000

interface Entry {
  readonly fingerprint: string
  readonly answer: Deferred.Deferred<unknown, unknown>
  storedAt: number | undefined
}

/**
 * @since 0.1.0
 */
export interface IdempotencyService {
  readonly entries: Map<string, Entry>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class Idempotency extends Context.Tag("tributary/server/Idempotency")<Idempotency, IdempotencyService>() {
  static readonly layer = Layer.sync(Idempotency, () => ({ entries: new Map<string, Entry>() }))
}

const fingerprintOf = (body: unknown): string => createHash("sha256").update(JSON.stringify(body ?? null)).digest("hex")

const markReplayed = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeader(response, "idempotent-replayed", "true"))
)

const prune = (entries: Map<string, Entry>, now: number) => {
  for (const [key, entry] of entries) {
    if (entry.storedAt !== undefined && now - entry.storedAt > idempotencyWindowMillis) entries.delete(key)
  }
}

/**
 * Runs `execute` at most once per idempotency key (within the window) for this user and
 * route; without a key it simply runs.
 *
 * @since 0.1.0
 */
export const idempotent = <A, E, R>(
  key: string | undefined,
  body: unknown,
  execute: Effect.Effect<A, E, R>
): Effect.Effect<
  A,
  E | Unprocessable,
  R | Idempotency | CurrentPrincipal | HttpServerRequest.HttpServerRequest
> => {
  if (key === undefined) return execute
  return Effect.gen(function*() {
    const { entries } = yield* Idempotency
    const principal = yield* CurrentPrincipal
    const request = yield* HttpServerRequest.HttpServerRequest
    const scope = `${principal.userId} ${request.method} ${request.url.split("?")[0]} ${key}`
    const fingerprint = fingerprintOf(body)
    const now = yield* Clock.currentTimeMillis
    const fiberId = yield* Effect.fiberId
    // Look up and claim in one synchronous step, so concurrent requests cannot both claim.
    const claim = yield* Effect.sync(() => {
      const existing = entries.get(scope)
      if (existing !== undefined && (existing.storedAt === undefined || now - existing.storedAt <= idempotencyWindowMillis)) {
        return { _tag: "Existing" as const, entry: existing }
      }
      if (entries.size > 10_000) prune(entries, now)
      const entry: Entry = { fingerprint, answer: Deferred.unsafeMake(fiberId), storedAt: undefined }
      entries.set(scope, entry)
      return { _tag: "Claimed" as const, entry }
    })
    if (claim._tag === "Existing") {
      if (claim.entry.fingerprint !== fingerprint) {
        return yield* failWith("Unprocessable", {
          code: "idempotency_key_reused",
          field: "Idempotency-Key",
          message: `the Idempotency-Key "${key}" was used with a different request body`
        })
      }
      const exit = yield* Effect.exit(Deferred.await(claim.entry.answer))
      if (Exit.isSuccess(exit)) {
        yield* markReplayed
        return exit.value as A
      }
      // The first request failed, and failures are not kept: go again as if first.
      return yield* idempotent(key, body, execute)
    }
    // Settle the claim however the request ends (success, failure or interruption), so
    // waiters never hang: a success is kept, anything else frees the key.
    return yield* execute.pipe(
      Effect.onExit((exit) =>
        Effect.flatMap(Clock.currentTimeMillis, (settledAt) => {
          if (Exit.isSuccess(exit)) {
            claim.entry.storedAt = settledAt
          } else if (entries.get(scope) === claim.entry) {
            entries.delete(scope)
          }
          return Deferred.done(claim.entry.answer, exit as Exit.Exit<unknown, unknown>)
        })
      )
    )
  })
}
