/**
 * Progress as typed data: what a running pipeline reports.
 *
 * @since 0.1.0
 */
import type { DeadLetter } from "./DeadLetter.js"
import type { Position } from "./Source.js"

/**
 * Counters of a run so far. Every element read ends up stored, rejected by the service,
 * dead-lettered or dropped by a typed stage: `read = accepted + rejected + deadLettered +
 * dropped` once nothing is in flight. With typed records, elements are counted after the
 * typed stages (a `flatMap`'s children each count).
 *
 * @since 0.1.0
 */
export interface Progress {
  /** Elements taken from the source (records and malformed elements). */
  readonly read: number
  /** Records that passed the schema check. */
  readonly valid: number
  /** Records posted to the service (a record retried after a split counts once). */
  readonly sent: number
  /** Records the service stored (appended or overwritten). */
  readonly accepted: number
  /** Records the service refused one by one (they are dead-lettered too). */
  readonly rejected: number
  readonly deadLettered: number
  /** Records a typed stage dropped on purpose (`Typed.filter`, a `flatMap` to nothing): committed, not sent. */
  readonly dropped: number
  /** Batches posted and not yet at a terminal ingestion state. */
  readonly inFlight: number
  /** The committed position per partition. */
  readonly committed: Readonly<Record<string, Position>>
  /** Milliseconds since the oldest element not yet committed was read (0 when none). */
  readonly oldestUnackedMillis: number
  readonly startedAt: number
}

/** @since 0.1.0 */
export const emptyProgress = (startedAt: number): Progress => ({
  read: 0,
  valid: 0,
  sent: 0,
  accepted: 0,
  rejected: 0,
  deadLettered: 0,
  dropped: 0,
  inFlight: 0,
  committed: {},
  oldestUnackedMillis: 0,
  startedAt
})

/**
 * What happened, as it happens.
 *
 * @since 0.1.0
 */
export type PipelineEvent =
  | {
    readonly _tag: "BatchSent"
    readonly partition: string
    readonly first: number
    readonly last: number
    readonly records: number
    readonly idempotencyKey: string | null
  }
  | {
    readonly _tag: "BatchDone"
    readonly partition: string
    readonly first: number
    readonly last: number
    readonly ingestionId: string
    readonly accepted: number
    readonly rejected: number
  }
  | { readonly _tag: "DeadLettered"; readonly letter: DeadLetter }
  | { readonly _tag: "Committed"; readonly position: Position }
  /** Partitions handed to the run (a consumer group's assignment). */
  | { readonly _tag: "Assigned"; readonly partitions: ReadonlyArray<string> }
  /** Partitions taken away: their batches in flight drained, what landed committed. */
  | { readonly _tag: "Revoked"; readonly partitions: ReadonlyArray<string> }
  | { readonly _tag: "Progress"; readonly progress: Progress }
