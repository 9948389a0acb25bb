/**
 * Dead letters: records that cannot be delivered, with the reason and their position.
 * They never stop the stream and are never dropped silently.
 *
 * @since 0.1.0
 */
import { appendFile } from "node:fs/promises"
import { Data, Effect, Ref, Stream } from "effect"
import { dual } from "effect/Function"
import type { DeadLetter } from "./vocabulary.js"

export type { DeadLetter } from "./vocabulary.js"

/**
 * @since 0.1.0
 * @category errors
 */
export class DeadLetterError extends Data.TaggedError("DeadLetterError")<{ readonly reason: string; readonly cause?: unknown }> {
  override get message() {
    return this.reason
  }
}

/**
 * Where dead letters go. A write is complete when its effect completes; positions are
 * committed only after their dead letters were written.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeadLetterSink {
  readonly write: (letters: ReadonlyArray<DeadLetter>) => Effect.Effect<void, DeadLetterError>
}

/**
 * The version of the dead-letter format written now: `v: 2` letters name their source, run and
 * dataset beside the position, reason, stage and record (or raw text). Letters without `v`
 * (written before) are read as version 1.
 *
 * @since 0.3.0
 * @category defaults
 */
export const formatVersion = 2

/**
 * A dead letter as one JSON text, the way files and topics hold it: the version first, the
 * letter, and `at` (ISO time of the write).
 *
 * @since 0.3.0
 * @category utils
 */
export const encodeLetter = (letter: DeadLetter, at: string): string => JSON.stringify({ v: formatVersion, ...letter, at })

/**
 * Appends dead letters to an NDJSON file, one JSON object per line (`encodeLetter`).
 * After a crash, letters written but not yet committed are written again on resume (a replay
 * counts such twins once).
 *
 * @since 0.1.0
 * @category constructors
 */
export const ndjsonFile = (path: string): Effect.Effect<DeadLetterSink> =>
  Effect.map(Effect.makeSemaphore(1), (lock) => ({
    write: (letters) =>
      letters.length === 0 ? Effect.void : lock.withPermits(1)(
        Effect.tryPromise({
          try: () => {
            const at = new Date().toISOString()
            return appendFile(path, letters.map((letter) => encodeLetter(letter, at) + "\n").join(""))
          },
          catch: (cause) => new DeadLetterError({ reason: `cannot write dead letters to ${path}: ${String(cause)}`, cause })
        })
      )
  }))

/**
 * Keeps dead letters in memory (tests, embedding jobs that handle them themselves).
 *
 * @since 0.1.0
 * @category constructors
 */
export const memory: Effect.Effect<DeadLetterSink & { readonly letters: Effect.Effect<ReadonlyArray<DeadLetter>> }> =
  Effect.map(Ref.make<ReadonlyArray<DeadLetter>>([]), (ref) => ({
    letters: Ref.get(ref),
    write: (letters) => Ref.update(ref, (all) => [...all, ...letters])
  }))

/**
 * Writes the dead letters of each delivered unit to `sink` before passing the unit on, so
 * that a later `commit` never commits a position whose letters are not written.
 *
 * @since 0.1.0
 * @category combinators
 */
export const writeLetters: {
  (sink: DeadLetterSink): <A extends { readonly letters: ReadonlyArray<DeadLetter> }, E, R>(
    self: Stream.Stream<A, E, R>
  ) => Stream.Stream<A, E | DeadLetterError, R>
  <A extends { readonly letters: ReadonlyArray<DeadLetter> }, E, R>(
    self: Stream.Stream<A, E, R>,
    sink: DeadLetterSink
  ): Stream.Stream<A, E | DeadLetterError, R>
} = dual(2, <A extends { readonly letters: ReadonlyArray<DeadLetter> }, E, R>(self: Stream.Stream<A, E, R>, sink: DeadLetterSink) =>
  Stream.tap(self, (unit) => (unit.letters.length === 0 ? Effect.void : sink.write(unit.letters))))
