/**
 * A run's identity, prepared before anything is sent: a fresh run (no checkpoint, a removed
 * one, stdin, `--restart`) gets a new identity, recorded in its checkpoint first; a resumed
 * run keeps the one it was given, after its checkpoint was checked to belong to this
 * destination and this source; a checkpoint written before runs had an identity resumes as
 * it always did (keys from the source's coordinates alone).
 *
 * Why: keys made of the source's coordinates alone are the same for every run over the same
 * lines, so a second run of the same data (after a purge, or stdin with other data) was
 * answered with the first run's stored answers: `1000 stored` and nothing in the dataset, or
 * every record dead-lettered as `idempotency_key_reused`.
 *
 * @since 0.2.0
 * @internal
 */
import { randomUUID } from "node:crypto"
import { Data, Effect } from "effect"
import type { Checkpoint, CheckpointStore, RunRecord } from "../Checkpoint.js"
import type { Destination } from "../deliver.js"
import type { Source } from "../Source.js"
import type { CheckpointError, SourceIdentity } from "../vocabulary.js"

/**
 * The checkpoint belongs to another destination or source: resuming would send the rest of a
 * run somewhere else, or read another source from where the first one stopped.
 *
 * @since 0.2.0
 * @category errors
 */
export class CheckpointMismatch extends Data.TaggedError("CheckpointMismatch")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/**
 * The run as prepared: the checkpoint (with its run), and whether it resumes one.
 *
 * @since 0.2.0
 * @category models
 */
export interface PreparedRun {
  readonly loaded: Checkpoint
  /** Undefined for a checkpoint without an identity (written before runs had one). */
  readonly run: RunRecord | undefined
  readonly resumed: boolean
  /** The base address the run sent to before, when it differs from this one's. */
  readonly movedFrom?: string | undefined
}

const hasProgress = (checkpoint: Checkpoint) => Object.keys(checkpoint.positions).length > 0 || checkpoint.cuts.length > 0

const describeRun = (run: RunRecord) => `run ${run.id.slice(0, 8)} (started ${run.startedAt})`

/** Why a recorded run is not this one, or undefined. */
const mismatch = (run: RunRecord, destination: Destination, identity: SourceIdentity): string | undefined => {
  const datasetId = String(destination.datasetId)
  const api = destination.api ?? "v2"
  if (run.destination.datasetId !== datasetId || run.destination.api !== api) {
    return `its checkpoint belongs to ${describeRun(run)} into dataset ${run.destination.datasetId}` +
      `${run.destination.api === api ? "" : ` (${run.destination.api})`}, not into dataset ${datasetId}`
  }
  if (run.source.name !== identity.name) {
    return `its checkpoint belongs to ${describeRun(run)} over ${run.source.description}, not ${identity.description}`
  }
  const before = run.source.fingerprint
  const now = identity.fingerprint
  if (before !== undefined && now !== undefined && before.sha1 !== now.sha1) {
    return `${identity.description} is not the one ${describeRun(run)} read: its first ${before.bytes} bytes changed`
  }
  return undefined
}

/**
 * Loads the checkpoint and prepares the run: checks a recorded run against `destination` and
 * the source, or records a new one when the checkpoint is fresh.
 *
 * @since 0.2.0
 * @category constructors
 */
export const prepareRun = <E, R>(
  source: Source<E, R, unknown>,
  checkpoint: CheckpointStore,
  destination: Destination,
  restartHint: string,
  baseUrl?: string | undefined
): Effect.Effect<PreparedRun, E | CheckpointError | CheckpointMismatch, R> =>
  Effect.gen(function*() {
    const loaded = yield* checkpoint.load
    const identity: SourceIdentity = source.identify === undefined
      ? { name: source.name, description: source.name }
      : yield* source.identify(loaded.run?.source)
    if (loaded.run !== undefined) {
      const wrong = mismatch(loaded.run, destination, identity)
      if (wrong !== undefined) return yield* Effect.fail(new CheckpointMismatch({ reason: `${wrong}: ${restartHint}` }))
      const before = loaded.run.destination.baseUrl
      return {
        loaded,
        run: loaded.run,
        resumed: hasProgress(loaded) || loaded.run.totals !== undefined,
        movedFrom: before !== undefined && baseUrl !== undefined && before !== baseUrl ? before : undefined
      }
    }
    // Written before runs had an identity: resumed as it always was.
    if (hasProgress(loaded) || checkpoint.writeRun === undefined) return { loaded, run: undefined, resumed: hasProgress(loaded) }
    const run: RunRecord = {
      id: randomUUID(),
      startedAt: new Date().toISOString(),
      destination: { datasetId: String(destination.datasetId), api: destination.api ?? "v2", baseUrl },
      source: identity
    }
    yield* checkpoint.writeRun(run)
    return { loaded: { ...loaded, run }, run, resumed: false }
  })

/**
 * The run's totals with this run's figures added, to be written at its end.
 *
 * @since 0.2.0
 * @category utils
 */
export const withTotals = (
  run: RunRecord,
  figures: { readonly read: number; readonly stored: number; readonly deadLettered: number }
): RunRecord => ({
  ...run,
  totals: {
    runs: (run.totals?.runs ?? 0) + 1,
    read: (run.totals?.read ?? 0) + figures.read,
    stored: (run.totals?.stored ?? 0) + figures.stored,
    deadLettered: (run.totals?.deadLettered ?? 0) + figures.deadLettered,
    endedAt: new Date().toISOString()
  }
})
