/**
 * A run's counters. They change for every record, so they are one mutable object, copied only
 * for a snapshot (a `Progress` event, the run's answer).
 *
 * @since 0.2.0
 * @internal
 */
import type { Outage, Progress } from "../events.js"
import { emptyProgress } from "../events.js"
import type { Position } from "../vocabulary.js"

/**
 * @since 0.2.0
 * @category models
 */
export type Counters = { -readonly [K in keyof Progress]: Progress[K] }

/**
 * The live figures that are read, not counted, when a snapshot is taken.
 *
 * @since 0.2.0
 * @category models
 */
export interface Gauges {
  readonly oldestUnackedMillis: (now: number) => number
  readonly inFlight: () => number
  readonly pending: () => number
  readonly waiting: () => number
  readonly concurrencyLimit: () => number
  readonly outage: () => Outage | null
}

/**
 * @since 0.2.0
 * @category constructors
 */
export const makeCounters = (startedAt: number): Counters => ({
  ...emptyProgress(startedAt),
  deadLetterReasons: {},
  discardedReasons: {}
})

/**
 * The counters with the gauges read at `now`.
 *
 * @since 0.2.0
 * @category utils
 */
export const snapshot = (counters: Counters, gauges: Gauges, now: number): Progress => ({
  ...counters,
  deadLetterReasons: { ...counters.deadLetterReasons },
  discardedReasons: { ...counters.discardedReasons },
  oldestUnackedMillis: gauges.oldestUnackedMillis(now),
  inFlight: gauges.inFlight(),
  pending: gauges.pending(),
  waiting: gauges.waiting(),
  concurrencyLimit: gauges.concurrencyLimit(),
  outage: gauges.outage()
})

/**
 * Notes a committed position (a new object: snapshots share the old one).
 *
 * @since 0.2.0
 * @category utils
 */
export const noteCommitted = (counters: Counters, position: Position): void => {
  counters.committed = { ...counters.committed, [position.partition]: position }
}
