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
import { open, readdir, readFile, rename, unlink } from "node:fs/promises"
import { basename, dirname, join } from "node:path"
import { Data, Effect, Ref } from "effect"
import type { Position } from "./Source.js"

/**
 * A batch boundary: the batch of `partition` that starts at offset `first` ends at `last`.
 *
 * @since 0.1.0
 */
export interface BatchCut {
  readonly partition: string
  readonly first: number
  readonly last: number
  /** The child indexes of the first and last records, when they are children of a `flatMap`. */
  readonly firstChild?: number | undefined
  readonly lastChild?: number | undefined
}

/** @since 0.1.0 */
export interface Checkpoint {
  /** The last committed position per partition. */
  readonly positions: Readonly<Record<string, Position>>
  readonly cuts: ReadonlyArray<BatchCut>
}

/** @since 0.1.0 */
export const emptyCheckpoint: Checkpoint = { positions: {}, cuts: [] }

/**
 * A checkpoint could not be read or written.
 *
 * @since 0.1.0
 */
export class CheckpointError extends Data.TaggedError("CheckpointError")<{
  readonly reason: string
  readonly cause?: unknown
}> {
  override get message() {
    return this.reason
  }
}

/**
 * Where checkpoints live. Writes are durable when their effect completes.
 *
 * @since 0.1.0
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

const cutKey = (cut: BatchCut) => `${cut.partition}\u0000${cut.first}\u0000${cut.firstChild ?? ""}`

/**
 * Recorded cuts with `added` recorded too: a new cut replaces one recorded with the same start
 * (partition, first offset, first child). One pass each: a checkpoint can hold hundreds of
 * cuts and take a hundred more at a time.
 *
 * @since 0.1.0
 */
export const mergeCuts = (cuts: ReadonlyArray<BatchCut>, added: ReadonlyArray<BatchCut>): ReadonlyArray<BatchCut> => {
  const replaced = new Set(added.map(cutKey))
  return [...cuts.filter((c) => !replaced.has(cutKey(c))), ...added]
}

const withCuts = (checkpoint: Checkpoint, cuts: ReadonlyArray<BatchCut>): Checkpoint => ({
  ...checkpoint,
  cuts: mergeCuts(checkpoint.cuts, cuts)
})

/**
 * A checkpoint kept in memory (tests, and jobs that restart from the beginning anyway).
 *
 * @since 0.1.0
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
 * Reads a JSON file; a missing file is `undefined`.
 *
 * @since 0.1.0
 */
export const readJsonFile = (path: string): Effect.Effect<unknown, CheckpointError> =>
  Effect.tryPromise({
    try: () => readFile(path, "utf8"),
    catch: (cause) => cause
  }).pipe(
    Effect.catchIf(
      (cause) => (cause as NodeJS.ErrnoException).code === "ENOENT",
      () => Effect.succeed(undefined)
    ),
    Effect.mapError((cause) => new CheckpointError({ reason: `cannot read checkpoint ${path}: ${String(cause)}`, cause })),
    Effect.flatMap((text) =>
      text === undefined ? Effect.succeed(undefined) : Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (cause) => new CheckpointError({ reason: `checkpoint ${path} is not JSON: ${(cause as Error).message}`, cause })
      })
    )
  )

/**
 * Reads a checkpoint file; a missing file is an empty checkpoint.
 *
 * @since 0.1.0
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

let writes = 0

/**
 * Removes the temporary files of `path` left by a process killed in the middle of a write.
 *
 * @since 0.1.0
 */
export const removeStaleTemporaries = (path: string): Effect.Effect<void> =>
  Effect.promise(async () => {
    const folder = dirname(path)
    const prefix = `${basename(path)}.`
    const names = await readdir(folder).catch(() => [] as Array<string>)
    await Promise.all(
      names.filter((name) => name.startsWith(prefix) && name.endsWith(".tmp")).map((name) => unlink(join(folder, name)).catch(() => undefined))
    )
  })

const writeCheckpointFile = (path: string, checkpoint: Checkpoint): Effect.Effect<void, CheckpointError> =>
  writeFileAtomically(path, JSON.stringify({ version: 1, ...checkpoint }, null, 2))

/**
 * Replaces a file atomically: writes a temporary file, flushes it to disk and renames it over
 * the old one. Uninterruptible: an interrupted promise would go on writing while the next
 * write starts.
 *
 * @since 0.1.0
 */
export const writeFileAtomically = (path: string, text: string): Effect.Effect<void, CheckpointError> =>
  Effect.uninterruptible(Effect.tryPromise({
    try: async () => {
      const temporary = `${path}.${process.pid}.${writes++}.tmp`
      const handle = await open(temporary, "w")
      try {
        await handle.writeFile(text)
        await handle.sync()
      } finally {
        await handle.close()
      }
      await rename(temporary, path)
    },
    catch: (cause) => new CheckpointError({ reason: `cannot write checkpoint ${path}: ${String(cause)}`, cause })
  }))
