/**
 * Checkpoints: the committed position of each partition, and the batch cuts that must be
 * repeated after a restart.
 *
 * Every batch's cut is recorded before the batch is sent. After a crash the batcher finds
 * the cut and closes the batch at the same record, however fast or slowly the records come
 * back, so the batch goes out again with the same records under the same idempotency key,
 * and the service replays instead of ingesting twice. (A partition batched by blocks of
 * offsets records only the cuts timing decided, and a frontier: see `Blocks`.)
 *
 * @since 0.1.0
 */
import { Effect, Ref } from "effect"
import {
  appendDurably,
  emptyFile,
  readJsonFile,
  readTextFile,
  removeStaleTemporaries,
  writeFileAtomically
} from "./internal/files.js"
import { type BatchCut, CheckpointError, type Frontier, mergeCuts, type Position, type SourceIdentity } from "./vocabulary.js"

export { type BatchCut, CheckpointError } from "./vocabulary.js"

/**
 * A run: a job over one source into one destination, from its fresh start to its end, across
 * any number of resumes. Its `id` is part of every idempotency key of its batches: a resume
 * keeps it (what was sent before a crash is replayed, not stored twice), a fresh run gets a
 * new one (its batches are stored, even when the same data was sent before). Recorded in the
 * checkpoint before anything is sent.
 *
 * @since 0.2.0
 * @category models
 */
export interface RunRecord {
  readonly id: string
  /** ISO time of the fresh start. */
  readonly startedAt: string
  /** Where it sends: resuming it into another dataset is refused. */
  readonly destination: {
    readonly datasetId: string
    readonly api: "v1" | "v2"
    /** The service's base address it sent to (a resume elsewhere is told so). */
    readonly baseUrl?: string | undefined
  }
  /** What it reads: resuming it over another source is refused. */
  readonly source: SourceIdentity
  /** What its runs did so far, as written at the end of each (a killed one writes nothing). */
  readonly totals?: {
    readonly runs: number
    readonly read: number
    readonly stored: number
    readonly deadLettered: number
    readonly endedAt: string
  } | undefined
  /** Something the run made for itself before its first batch (a created dataset's id). */
  readonly created?: { readonly datasetId?: string | undefined } | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Checkpoint {
  /** The last committed position per partition. */
  readonly positions: Readonly<Record<string, Position>>
  readonly cuts: ReadonlyArray<BatchCut>
  /** The run these positions belong to; absent in checkpoints written before runs had one. */
  readonly run?: RunRecord | undefined
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
  /**
   * Records batch boundaries, all in one durable write; with them the `frontiers` of
   * partitions that batch by blocks of offsets (`Blocks`: only a source whose assignments say
   * so, so a store that never holds such partitions may ignore them).
   */
  readonly recordCuts: (cuts: ReadonlyArray<BatchCut>, frontiers?: ReadonlyArray<Frontier>) => Effect.Effect<void, CheckpointError>
  /** Commits a partition's position and forgets the cuts it has passed. */
  readonly commit: (position: Position) => Effect.Effect<void, CheckpointError>
  /**
   * Commits several partitions' positions in one durable write. Without it, the committer
   * writes them one `commit` after another.
   */
  readonly commitAll?: ((positions: ReadonlyArray<Position>) => Effect.Effect<void, CheckpointError>) | undefined
  /**
   * Records the run (durably, before anything is sent) or its totals. A store without it
   * runs without an identity: its keys are those of the source's coordinates alone.
   */
  readonly writeRun?: ((run: RunRecord) => Effect.Effect<void, CheckpointError>) | undefined
  /**
   * Whether a batch's cut with its split (`BatchCut.held`) may be recorded: a store with
   * little room (Kafka's offset metadata) says no while it is filling up, and the batch then
   * goes whole. Without it, always.
   */
  readonly roomForParts?: ((cut: BatchCut) => boolean) | undefined
}

const withCommit = (checkpoint: Checkpoint, position: Position): Checkpoint => ({
  ...checkpoint,
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
    commit: (position) => Ref.update(ref, (c) => withCommit(c, position)),
    commitAll: (positions) => Ref.update(ref, (c) => positions.reduce(withCommit, c)),
    writeRun: (run) => Ref.update(ref, (c) => ({ ...c, run }))
  }))

/**
 * A checkpoint file, replaced atomically (write a temporary file, flush it to disk, rename
 * it over the old one), so a crash leaves either the old or the new checkpoint, never half.
 *
 * Cuts recorded between two commits are appended to a journal beside it (`FILE.journal`, a
 * line of cuts each write, flushed to disk) instead of replacing the whole file: each commit
 * writes the whole file, cuts included, then empties the journal, and the file is read back
 * with the journal's lines merged in (a line a crash cut short is left out: its write never
 * completed, so nothing it records was sent). A process's first write replaces the whole
 * file, so a journal is only ever appended to behind a file this process wrote. Why: a keyed
 * run whose batches go in parts records a split for nearly every batch, and replacing a file
 * of some 4,000 pending cuts for each group of splits was 14% of its CPU (`bench:tracking`
 * (b), `terminal`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const file = (
  path: string,
  options: {
    /**
     * Start over: what the file holds is ignored (and replaced at the run's first write), so
     * the run is a fresh one with a new identity.
     */
    readonly restart?: boolean | undefined
  } = {}
): Effect.Effect<CheckpointStore, CheckpointError> =>
  Effect.gen(function*() {
    yield* removeStaleTemporaries(path)
    const loaded = options.restart === true ? emptyCheckpoint : yield* readCheckpointFile(path)
    // Changed only under the lock: the positions and the run, and the cuts by their start.
    let head: Omit<Checkpoint, "cuts"> = { positions: loaded.positions, ...(loaded.run === undefined ? {} : { run: loaded.run }) }
    const cuts = new CutsByStart(loaded.cuts)
    const current = (): Checkpoint => ({ ...head, cuts: cuts.list() })
    const lock = yield* Effect.makeSemaphore(1)
    const journal = journalPath(path)
    // Whether this process has written the whole file yet (until then, nothing is appended),
    // and whether the journal holds lines since.
    let written = false
    let journaled = false
    const writeWhole = Effect.suspend(() =>
      Effect.zipRight(
        writeCheckpointFile(path, current()),
        Effect.suspend(() => {
          const empty = journaled || !written ? emptyFile(journal) : Effect.void
          written = true
          journaled = false
          return empty
        })
      )
    )
    const persist = (change: () => void) => lock.withPermits(1)(Effect.zipRight(Effect.sync(change), writeWhole))
    const commitOne = (position: Position) => {
      head = { ...head, positions: { ...head.positions, [position.partition]: position } }
      cuts.commit(position)
    }
    const append = (added: ReadonlyArray<BatchCut>) =>
      lock.withPermits(1)(Effect.suspend(() => {
        cuts.add(added)
        if (!written) return writeWhole
        journaled = true
        return appendDurably(journal, journalLine(added))
      }))
    return {
      load: Effect.sync(current),
      recordCuts: (added) => (added.length === 0 ? Effect.void : append(added)),
      commit: (position) => persist(() => commitOne(position)),
      commitAll: (positions) => persist(() => positions.forEach(commitOne)),
      writeRun: (run) =>
        persist(() => {
          head = { ...head, run }
        })
    }
  })

/**
 * A checkpoint file's cuts by their start (partition, first offset, first child): a cut
 * recorded replaces the one with its start, in its place, and a commit drops the cuts of its
 * partition it has passed. Why not `mergeCuts` over the list: it walks every pending cut at
 * each write, and a keyed run in parts records a split for nearly every batch with some 3,000
 * cuts pending: 4% of its CPU (`bench:tracking` (b), `terminal`). The start's key is made once,
 * when the cut is added.
 */
class CutsByStart {
  private readonly byPartition = new Map<string, Map<number | string, BatchCut>>()
  constructor(cuts: ReadonlyArray<BatchCut>) {
    this.add(cuts)
  }
  add(cuts: ReadonlyArray<BatchCut>): void {
    for (const cut of cuts) {
      let starts = this.byPartition.get(cut.partition)
      if (starts === undefined) this.byPartition.set(cut.partition, starts = new Map())
      starts.set(cut.firstChild === undefined ? cut.first : `${cut.first}.${cut.firstChild}`, cut)
    }
  }
  commit(position: Position): void {
    const starts = this.byPartition.get(position.partition)
    if (starts === undefined) return
    for (const [start, cut] of starts) {
      if (cut.last <= position.offset) starts.delete(start)
    }
  }
  list(): Array<BatchCut> {
    const all: Array<BatchCut> = []
    for (const starts of this.byPartition.values()) {
      for (const cut of starts.values()) all.push(cut)
    }
    return all
  }
}

/**
 * Reads a checkpoint file; a missing file is an empty checkpoint.
 *
 * @since 0.1.0
 * @category utils
 */
export const readCheckpointFile = (path: string): Effect.Effect<Checkpoint, CheckpointError> =>
  Effect.zipWith(readMainFile(path), readTextFile(journalPath(path)), (checkpoint, text) => {
    if (text === undefined || text === "") return checkpoint
    const cuts = new CutsByStart(checkpoint.cuts)
    for (const line of journalLines(text)) cuts.add(line)
    // A crash between a commit's write and the journal's emptying leaves cuts it has passed.
    for (const position of Object.values(checkpoint.positions)) cuts.commit(position)
    return { ...checkpoint, cuts: cuts.list() }
  })

/**
 * The journal beside a checkpoint file: the cuts recorded since its last commit.
 *
 * @since 0.3.0
 * @category utils
 */
export const journalPath = (path: string): string => `${path}.journal`

/** A journal's line: the cuts of one write. */
const journalLine = (cuts: ReadonlyArray<BatchCut>): string => `{"cuts":[${cuts.map(cutText).join(",")}]}\n`

/**
 * The cuts of each of a journal's lines, in order (a later line's cut replaces an earlier one
 * with the same start); a line a crash cut short (the last, without its line end, or not
 * JSON) ends the reading.
 */
const journalLines = (text: string): ReadonlyArray<ReadonlyArray<BatchCut>> => {
  const lines: Array<ReadonlyArray<BatchCut>> = []
  let at = 0
  for (let end = text.indexOf("\n"); end !== -1; at = end + 1, end = text.indexOf("\n", at)) {
    let line: unknown
    try {
      line = JSON.parse(text.slice(at, end))
    } catch {
      break
    }
    const list = (line as { readonly cuts?: unknown } | null)?.cuts
    if (!Array.isArray(list)) break
    lines.push(list as ReadonlyArray<BatchCut>)
  }
  return lines
}

const readMainFile = (path: string): Effect.Effect<Checkpoint, CheckpointError> =>
  Effect.flatMap(readJsonFile(path), (json) => {
    if (json === undefined) return Effect.succeed(emptyCheckpoint)
    const parsed = json as Partial<Checkpoint>
    if (typeof parsed !== "object" || parsed === null || typeof parsed.positions !== "object" || !Array.isArray(parsed.cuts)) {
      return Effect.fail(new CheckpointError({ reason: `checkpoint ${path} is not a valid checkpoint: expected { positions, cuts }` }))
    }
    const run = isRunRecord(parsed.run) ? parsed.run : undefined
    return Effect.succeed({ positions: parsed.positions ?? {}, cuts: parsed.cuts, ...(run === undefined ? {} : { run }) } as Checkpoint)
  })

/** A run record as a file holds it (anyone may edit the file: checked, not trusted). */
const isRunRecord = (value: unknown): value is RunRecord => {
  const run = value as Partial<RunRecord> | null | undefined
  return typeof run === "object" && run !== null && typeof run.id === "string" && typeof run.startedAt === "string" &&
    typeof run.destination?.datasetId === "string" && typeof run.source?.name === "string"
}

const writeCheckpointFile = (path: string, checkpoint: Checkpoint): Effect.Effect<void, CheckpointError> =>
  writeFileAtomically(path, checkpointText(checkpoint))

/**
 * The file's text: indented, with each cut on a line of its own. Indenting the cuts too took
 * twice the bytes and the time: with some 4,000 cuts pending (a keyed run whose batches go in
 * parts, `bench:tracking` (b)) the text was 6% of the run's CPU, written once a group of splits.
 */
const checkpointText = (checkpoint: Checkpoint): string => {
  const { cuts, ...rest } = checkpoint
  // Ends with "\n}"; the cuts go last.
  const head = JSON.stringify({ version: checkpoint.run === undefined ? 1 : 2, ...rest }, null, 2)
  const list = cuts.length === 0 ? "[]" : `[\n    ${cuts.map(cutText).join(",\n    ")}\n  ]`
  return `${head.slice(0, -2)},\n  "cuts": ${list}\n}`
}

/**
 * A cut's line, made once: a cut stays in the file, unchanged, from its batch's send to its
 * commit, through every write in between (a keyed run in parts wrote its 4,000 pending cuts
 * once a group of splits, and making their text was 5% of its CPU, `bench:tracking` (b)).
 */
const cutText = (cut: BatchCut): string => {
  let text = cutTexts.get(cut)
  if (text === undefined) cutTexts.set(cut, text = JSON.stringify(cut))
  return text
}

const cutTexts = new WeakMap<BatchCut, string>()
