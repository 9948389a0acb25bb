/**
 * Progress as typed data: what a running pipeline reports.
 *
 * @since 0.1.0
 */
import type { Column } from "../records.js"
import type { RunRecord } from "./Checkpoint.js"
import type { DeadLetter, Position } from "./vocabulary.js"

/**
 * Counters of a run so far. Every element read ends up stored, rejected by the service,
 * dead-lettered or dropped by a typed stage: `read = accepted + rejected + deadLettered +
 * dropped` once nothing is in flight. With typed records, elements are counted after the
 * typed stages (a `flatMap`'s children each count).
 *
 * @since 0.1.0
 * @category models
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
  /** Dead letters by reason (`code`, or `code field`): what the summary's top reasons come from. */
  readonly deadLetterReasons: Readonly<Record<string, number>>
  /** Records a typed stage dropped on purpose (`Typed.filter`, a `flatMap` to nothing): committed, not sent. */
  readonly dropped: number
  /** Columns the records added to the dataset (schema contract `evolve`), in the order they first appeared. */
  readonly columnsAdded: ReadonlyArray<Column>
  /** Values a schema contract dropped (`discard_value`) from records that were sent. */
  readonly valuesDiscarded: number
  /** Those values by reason (`unknown_column coupon`, `invalid_type amount`). */
  readonly discardedReasons: Readonly<Record<string, number>>
  /** Batches taken from the batcher and not yet at a terminal ingestion state (sending, waiting or tracked). */
  readonly inFlight: number
  /** Of those, batches whose ingestion the service accepted and that are followed to their end. */
  readonly pending: number
  /** Of those, batches held back until an earlier batch with a shared primary-key value is terminal. */
  readonly waiting: number
  /** Records the service answered as replays of an earlier request with the same key (stored before). */
  readonly replayed: number
  /** Requests allowed in flight now (the adaptive limit; the ceiling when fixed). */
  readonly concurrencyLimit: number
  /** The service has been unreachable since `since` (null when it answers). */
  readonly outage: Outage | null
  /** The committed position per partition. */
  readonly committed: Readonly<Record<string, Position>>
  /** Milliseconds since the oldest element not yet committed was read (0 when none). */
  readonly oldestUnackedMillis: number
  readonly startedAt: number
}

/**
 * The service cannot be reached (transport errors, or 5xx/429 after every retry): since when,
 * how many attempts failed since, and the last cause.
 *
 * @since 0.2.0
 * @category models
 */
export interface Outage {
  readonly since: number
  readonly attempts: number
  readonly cause: string
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const emptyProgress = (startedAt: number): Progress => ({
  read: 0,
  valid: 0,
  sent: 0,
  accepted: 0,
  rejected: 0,
  deadLettered: 0,
  deadLetterReasons: {},
  dropped: 0,
  columnsAdded: [],
  valuesDiscarded: 0,
  discardedReasons: {},
  inFlight: 0,
  pending: 0,
  waiting: 0,
  replayed: 0,
  concurrencyLimit: 0,
  outage: null,
  committed: {},
  oldestUnackedMillis: 0,
  startedAt
})

/**
 * What happened, as it happens.
 *
 * @since 0.1.0
 * @category models
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
  /**
   * The dataset gains a column (schema contract `evolve`): the first record that holds it,
   * by its position, is on its way to the service (which adds the column when it stores it).
   */
  | { readonly _tag: "ColumnAdded"; readonly column: Column; readonly position: Position }
  | { readonly _tag: "Committed"; readonly position: Position }
  /** Partitions handed to the run (a consumer group's assignment). */
  | { readonly _tag: "Assigned"; readonly partitions: ReadonlyArray<string> }
  /** Partitions taken away: their batches in flight drained, what landed committed. */
  | { readonly _tag: "Revoked"; readonly partitions: ReadonlyArray<string> }
  | { readonly _tag: "Progress"; readonly progress: Progress }
  /** A fresh run began: its identity is recorded in its checkpoint (none for a store without runs). */
  | { readonly _tag: "Started"; readonly run: RunRecord | undefined }
  /**
   * A run resumed from its checkpoint: where each partition stands, and what its earlier runs
   * did (`run.totals`; `run` is undefined for a checkpoint written before runs had an identity).
   */
  | {
    readonly _tag: "Resumed"
    readonly run: RunRecord | undefined
    readonly committed: Readonly<Record<string, Position>>
    /** The service address the run sent to before, when it is another now (said, not refused). */
    readonly movedFrom?: string | undefined
  }
  /** The service stopped answering (a long-running run keeps trying; a one-shot run stops after its bound). */
  | { readonly _tag: "OutageStarted"; readonly outage: Outage }
  /** The service answers again after an outage. */
  | { readonly _tag: "OutageEnded"; readonly outage: Outage; readonly endedAt: number }
  /** The adaptive concurrency limit moved. */
  | { readonly _tag: "LimitChanged"; readonly limit: number }

/**
 * Counts by name, the largest first; counts as large as each other in the order of their names,
 * so the same input reads the same whatever order it was counted in.
 *
 * @since 0.3.0
 * @category utils
 */
export const byCountThenName = (a: readonly [string, number], b: readonly [string, number]): number =>
  b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
