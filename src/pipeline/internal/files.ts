/**
 * Files the pipeline and its connectors keep their state in (checkpoint files, a backfill's
 * state file): read as JSON, replaced atomically, and the temporaries of a killed write
 * cleaned up. Failures are `CheckpointError`s naming the file.
 *
 * @since 0.2.0
 * @internal
 */
import { open, readdir, readFile, rename, truncate, unlink } from "node:fs/promises"
import { basename, dirname, join } from "node:path"
import { Effect } from "effect"
import { CheckpointError } from "../vocabulary.js"

/**
 * Reads a JSON file; a missing file is `undefined`.
 *
 * @since 0.1.0
 * @category utils
 */
export const readJsonFile = (path: string): Effect.Effect<unknown, CheckpointError> =>
  Effect.flatMap(readTextFile(path), (text) =>
    text === undefined ? Effect.succeed(undefined) : Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (cause) => new CheckpointError({ reason: `checkpoint ${path} is not JSON: ${(cause as Error).message}`, cause })
    }))

/**
 * Reads a text file; a missing file is `undefined`.
 *
 * @since 0.3.0
 * @category utils
 */
export const readTextFile = (path: string): Effect.Effect<string | undefined, CheckpointError> =>
  Effect.tryPromise({
    try: () => unlessMissing(readFile(path, "utf8")),
    catch: (cause) => new CheckpointError({ reason: `cannot read checkpoint ${path}: ${String(cause)}`, cause })
  })

/** What `operation` answers, or `undefined` when the file it touched does not exist. */
const unlessMissing = <A>(operation: Promise<A>): Promise<A | undefined> =>
  operation.catch((cause: NodeJS.ErrnoException) => (cause.code === "ENOENT" ? undefined : Promise.reject(cause)))

/** Writes `text` to `path` opened with `flags` and flushes it to disk. */
const writeSynced = async (path: string, flags: "w" | "a", text: string): Promise<void> => {
  const handle = await open(path, flags)
  try {
    await handle.writeFile(text)
    await handle.sync()
  } finally {
    await handle.close()
  }
}

let writes = 0

/**
 * Removes the temporary files of `path` left by a process killed in the middle of a write.
 *
 * @since 0.1.0
 * @category utils
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

/**
 * Replaces a file atomically: writes a temporary file, flushes it to disk and renames it over
 * the old one. Uninterruptible: an interrupted promise would go on writing while the next
 * write starts.
 *
 * @since 0.1.0
 * @category utils
 */
export const writeFileAtomically = (path: string, text: string): Effect.Effect<void, CheckpointError> =>
  Effect.uninterruptible(Effect.tryPromise({
    try: async () => {
      const temporary = `${path}.${process.pid}.${writes++}.tmp`
      await writeSynced(temporary, "w", text)
      await rename(temporary, path)
    },
    catch: (cause) => new CheckpointError({ reason: `cannot write checkpoint ${path}: ${String(cause)}`, cause })
  }))

/**
 * Appends text to a file and flushes it to disk (the file is made when missing).
 * Uninterruptible, as `writeFileAtomically`.
 *
 * @since 0.3.0
 * @category utils
 */
export const appendDurably = (path: string, text: string): Effect.Effect<void, CheckpointError> =>
  Effect.uninterruptible(Effect.tryPromise({
    try: () => writeSynced(path, "a", text),
    catch: (cause) => new CheckpointError({ reason: `cannot write ${path}: ${String(cause)}`, cause })
  }))

/**
 * Empties a file, when it exists.
 *
 * @since 0.3.0
 * @category utils
 */
export const emptyFile = (path: string): Effect.Effect<void, CheckpointError> =>
  Effect.uninterruptible(Effect.tryPromise({
    try: () => unlessMissing(truncate(path, 0)),
    catch: (cause) => new CheckpointError({ reason: `cannot empty ${path}: ${String(cause)}`, cause })
  }))
