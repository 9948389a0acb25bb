/**
 * Checkpoints: the committed position of each partition, and the batch cuts that must be
 * repeated after a restart.
 *
 * Every batch's cut is recorded before the batch is sent. After a crash the batcher finds
 * the cut and closes the batch at the same record, however fast or slowly the records come
 * back, so the batch goes out again with the same records under the same idempotency key,
 * and the service replays instead of ingesting twice.
 *
 * @since 0.1.0
 */
import { Effect, Ref } from "effect"
import { readJsonFile, removeStaleTemporaries, writeFileAtomically } from "./internal/files.js"
import { type BatchCut, CheckpointError, mergeCuts, type Position } from "./vocabulary.js"

export { type BatchCut, CheckpointError } from "./vocabulary.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Checkpoint {
  /** The last committed position per partition. */
  readonly positions: Readonly<Record<string, Position>>
  readonly cuts: ReadonlyArray<BatchCut>
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const emptyCheckpoint: Checkpoint = { positions: {}, cuts: [] }

/**
 * Where checkpoints live. Writes are durable when their effect completes.
 *
 * @since 0.1.0
 * @category models
 */
export interface CheckpointStore {
  readonly load: Effect.Effect<Checkpoint, CheckpointError>
  /** Records batch boundaries, all in one durable write. */
  readonly recordCuts: (cuts: ReadonlyArray<BatchCut>) => Effect.Effect<void, CheckpointError>
  /** Commits a partition's position and forgets the cuts it has passed. */
  readonly commit: (position: Position) => Effect.Effect<void, CheckpointError>
}

const withCommit = (checkpoint: Checkpoint, position: Position): Checkpoint => ({
  positions: { ...checkpoint.positions, [position.partition]: position },
  cuts: checkpoint.cuts.filter((cut) => cut.partition !== position.partition || cut.last > position.offset)
})

const withCuts = (checkpoint: Checkpoint, cuts: ReadonlyArray<BatchCut>): Checkpoint => ({
  ...checkpoint,
  cuts: mergeCuts(checkpoint.cuts, cuts)
})

/**
 * A checkpoint kept in memory (tests, and jobs that restart from the beginning anyway).
 *
 * @since 0.1.0
 * @category constructors
 */
export const memory = (initial: Checkpoint = emptyCheckpoint): Effect.Effect<CheckpointStore & { readonly current: Effect.Effect<Checkpoint> }> =>
  Effect.map(Ref.make(initial), (ref) => ({
    load: Ref.get(ref),
    current: Ref.get(ref),
    recordCuts: (cuts) => Ref.update(ref, (c) => withCuts(c, cuts)),
    commit: (position) => Ref.update(ref, (c) => withCommit(c, position))
  }))

/**
 * A checkpoint file, replaced atomically (write a temporary file, flush it to disk, rename
 * it over the old one), so a crash leaves either the old or the new checkpoint, never half.
 *
 * @since 0.1.0
 * @category constructors
 */
export const file = (path: string): Effect.Effect<CheckpointStore, CheckpointError> =>
  Effect.gen(function*() {
    yield* removeStaleTemporaries(path)
    const loaded = yield* readCheckpointFile(path)
    const state = yield* Ref.make(loaded)
    const lock = yield* Effect.makeSemaphore(1)
    const persist = (update: (c: Checkpoint) => Checkpoint) =>
      lock.withPermits(1)(
        Effect.flatMap(Ref.updateAndGet(state, update), (checkpoint) => writeCheckpointFile(path, checkpoint))
      )
    return {
      load: Ref.get(state),
      recordCuts: (cuts) => (cuts.length === 0 ? Effect.void : persist((c) => withCuts(c, cuts))),
      commit: (position) => persist((c) => withCommit(c, position))
    }
  })

/**
 * Reads a checkpoint file; a missing file is an empty checkpoint.
 *
 * @since 0.1.0
 * @category utils
 */
export const readCheckpointFile = (path: string): Effect.Effect<Checkpoint, CheckpointError> =>
  Effect.flatMap(readJsonFile(path), (json) => {
    if (json === undefined) return Effect.succeed(emptyCheckpoint)
    const parsed = json as Partial<Checkpoint>
    if (typeof parsed !== "object" || parsed === null || typeof parsed.positions !== "object" || !Array.isArray(parsed.cuts)) {
      return Effect.fail(new CheckpointError({ reason: `checkpoint ${path} is not a valid checkpoint: expected { positions, cuts }` }))
    }
    return Effect.succeed({ positions: parsed.positions ?? {}, cuts: parsed.cuts } as Checkpoint)
  })

const writeCheckpointFile = (path: string, checkpoint: Checkpoint): Effect.Effect<void, CheckpointError> =>
  writeFileAtomically(path, JSON.stringify({ version: 1, ...checkpoint }, null, 2))
