/**
 * Sources: streams of records, each with the position it came from.
 *
 * @since 0.1.0
 */
import type { Stream } from "effect"

/**
 * Where an element sits in its source. `offset` grows within a partition (a line number,
 * a Kafka offset, a row ordinal); `resume` is what the source needs to start right after
 * it (a byte offset, a key value).
 *
 * @since 0.1.0
 */
export interface Position {
  readonly partition: string
  readonly offset: number
  readonly resume?: unknown
}

/**
 * A problem with an element or a record: a stable `code`, the `field` it concerns (or
 * null) and a message for people.
 *
 * @since 0.1.0
 */
export interface Problem {
  readonly code: string
  readonly field: string | null
  readonly message: string
}

/**
 * What a source emits: a parsed record, or an element it could not turn into one
 * (malformed JSON, a non-object line, invalid UTF-8, an over-long line). Both carry their
 * position: a malformed element is dead-lettered and its position committed like any other.
 *
 * @since 0.1.0
 */
export type SourceElement =
  | {
    readonly _tag: "Record"
    readonly position: Position
    readonly value: unknown
    /** The record's JSON text when the source already has it (saves a stringify). */
    readonly json?: string | undefined
  }
  | {
    readonly _tag: "Malformed"
    readonly position: Position
    readonly problem: Problem
    /** The raw element, cut to a readable length. */
    readonly raw: string
  }

/**
 * A source of records. `name` identifies it stably across restarts: it is part of every
 * idempotency key, so the same records from the same source always map to the same keys.
 * `elements` starts right after the committed positions it is given (none: from the start).
 *
 * @since 0.1.0
 */
export interface Source<E = never, R = never> {
  readonly name: string
  readonly elements: (committed: Readonly<Record<string, Position>>) => Stream.Stream<SourceElement, E, R>
}
