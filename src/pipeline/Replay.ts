/**
 * Dead-letter replay: read dead letters back (a file, a topic, any list), keep those a filter
 * selects, fix them with a transform, and send them again through `run`, effectively once.
 *
 * The pure parts are apart from the driver: reading a letter (`decodeLetter`, both format
 * versions), the filter (`matches`), the transforms (`set`, `rename`, `drop`, or any function),
 * and the plan (`plan`: twins written twice after a crash counted once, letters grouped by
 * where they came from, in their original order). `replay` drives them.
 *
 * The letters are read as a stream (`fileLetters`, or a topic's) and put in that order by an
 * external sort (`internal/externalSort.ts`): at most `sortBuffer` letters are held while
 * reading, more are sorted in runs on disk and merged, and the run pulls the merged letters
 * one by one as it has room for them, so a replay's memory does not grow with its letters.
 *
 * Why the keys cannot go wrong: the letters of one original source, run and partition are one
 * partition of the replay, their offsets the original offsets, and its run identity the
 * original run's. A batch's idempotency key is then a function of the letters it holds (where
 * they came from, not where they sit in a file), and batches are cut by count and size only
 * (never by time), so the same replay run twice, even as two fresh runs, sends the same
 * batches under the same keys: the service answers the second with the first's result and
 * stores nothing twice. Replays are told apart from the original runs by their source name
 * (`replay`), so a replayed batch can never meet a key its original run used.
 *
 * @since 0.3.0
 */
import { closeSync, openSync, readSync } from "node:fs"
import { Chunk, Data, Effect, Either, Option, type Scope, Stream } from "effect"
import type { TributaryClientService } from "../client/Client.js"
import type { CheckpointStore, RunRecord } from "./Checkpoint.js"
import type { DeadLetterSink } from "./DeadLetter.js"
import type { Destination } from "./deliver.js"
import { byCountThenName, emptyProgress, type Progress } from "./events.js"
import { makeSorter } from "./internal/externalSort.js"
import { type PipelineConfig, type PipelineError, run } from "./run.js"
import type { Assignment, PartitionedSource, SourceEvent } from "./Source.js"
import { comparePositions, type DeadLetter, type Element, type Position, type Problem } from "./vocabulary.js"

/**
 * A dead letter as read back: the letter, the format version it was written in (1: before
 * letters named their source, run and dataset), and when it was written.
 *
 * @since 0.3.0
 * @category models
 */
export interface StoredLetter extends DeadLetter {
  readonly v: 1 | 2
  readonly at?: string | undefined
}

const stages: ReadonlySet<string> = new Set(["source", "decode", "transform", "encode", "validate", "send", "service"])

/**
 * Reads one stored letter (a line of a dead-letter file, a message of a dead-letter topic).
 * Letters of version 1 (no `v`) read as they are, without source, run or dataset.
 *
 * @since 0.3.0
 * @category utils
 */
export const decodeLetter = (text: string): Either.Either<StoredLetter, string> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Either.left(`not JSON: ${(error as Error).message}`)
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return Either.left("not a JSON object")
  const o = json as Record<string, unknown>
  const position = o.position as Record<string, unknown> | undefined
  const reason = o.reason as Record<string, unknown> | undefined
  if (typeof position !== "object" || position === null || typeof position.partition !== "string" || typeof position.offset !== "number") {
    return Either.left("no position (partition and offset)")
  }
  if (typeof reason !== "object" || reason === null || typeof reason.code !== "string") return Either.left("no reason code")
  if (typeof o.stage !== "string" || !stages.has(o.stage)) return Either.left(`unknown stage ${JSON.stringify(o.stage)}`)
  if (o.v !== undefined && o.v !== 1 && o.v !== 2) return Either.left(`format version ${JSON.stringify(o.v)} is newer than this tributary reads`)
  const child = position.child as { index?: unknown; of?: unknown } | undefined
  const text_ = (value: unknown) => (typeof value === "string" ? value : undefined)
  return Either.right({
    v: o.v === 2 ? 2 : 1,
    position: {
      partition: position.partition,
      offset: position.offset,
      resume: position.resume,
      child: typeof child?.index === "number" && typeof child.of === "number" ? { index: child.index, of: child.of } : undefined
    },
    reason: { code: reason.code, field: text_(reason.field) ?? null, message: text_(reason.message) ?? "" },
    stage: o.stage as DeadLetter["stage"],
    ...("record" in o ? { record: o.record } : {}),
    ...(typeof o.raw === "string" ? { raw: o.raw } : {}),
    source: text_(o.source),
    run: text_(o.run),
    dataset: text_(o.dataset),
    at: text_(o.at)
  })
}

// Filters

/**
 * Which letters a replay takes; every part given must hold (an empty part: any). `reasons`
 * match a letter's code, or its code and field (`invalid_type amount`); `partitions` its
 * original partition (`0` for a file, `orders:3` for a topic's); `from`/`to` bound its
 * original offset (line, Kafka offset, row), both included.
 *
 * @since 0.3.0
 * @category models
 */
export interface Filter {
  readonly reasons?: ReadonlyArray<string> | undefined
  readonly stages?: ReadonlyArray<string> | undefined
  readonly fields?: ReadonlyArray<string> | undefined
  readonly partitions?: ReadonlyArray<string> | undefined
  readonly from?: number | undefined
  readonly to?: number | undefined
}

const any = (values: ReadonlyArray<string> | undefined, test: (value: string) => boolean) =>
  values === undefined || values.length === 0 || values.some(test)

/**
 * Whether `filter` takes `letter`.
 *
 * @since 0.3.0
 * @category guards
 */
export const matches = (filter: Filter) => (letter: DeadLetter): boolean =>
  any(filter.reasons, (r) => r === letter.reason.code || r === `${letter.reason.code} ${letter.reason.field}`) &&
  any(filter.stages, (s) => s === letter.stage) &&
  any(filter.fields, (f) => f === letter.reason.field) &&
  any(filter.partitions, (p) => p === letter.position.partition) &&
  (filter.from === undefined || letter.position.offset >= filter.from) &&
  (filter.to === undefined || letter.position.offset <= filter.to)

/**
 * The reason a letter is counted under: its code, and its field when it has one.
 *
 * @since 0.3.0
 * @category utils
 */
export const reasonOf = (letter: DeadLetter): string =>
  letter.reason.field === null ? letter.reason.code : `${letter.reason.code} ${letter.reason.field}`

// Transforms

/**
 * A fix for records: any function from a record to the record to send. A throw makes that
 * letter a dead letter again (stage `transform`), with the thrown message.
 *
 * @since 0.3.0
 * @category models
 */
export type Transform = (record: Readonly<Record<string, unknown>>) => Readonly<Record<string, unknown>>

/**
 * Sets `column` to `value` in every record.
 *
 * @since 0.3.0
 * @category constructors
 */
export const set = (column: string, value: unknown): Transform => (record) => ({ ...record, [column]: value })

/**
 * Renames `from` to `to` (a record without `from` is left as it is; `to` is replaced).
 *
 * @since 0.3.0
 * @category constructors
 */
export const rename = (from: string, to: string): Transform => (record) => {
  if (!Object.hasOwn(record, from)) return record
  const { [from]: value, ...rest } = record
  return { ...rest, [to]: value }
}

/**
 * Drops `column` from every record.
 *
 * @since 0.3.0
 * @category constructors
 */
export const drop = (column: string): Transform => (record) => {
  if (!Object.hasOwn(record, column)) return record
  const { [column]: _, ...rest } = record
  return rest
}

/**
 * The transforms one after another, in order.
 *
 * @since 0.3.0
 * @category combinators
 */
export const compose = (transforms: ReadonlyArray<Transform>): Transform => (record) =>
  transforms.reduce((current, transform) => transform(current), record)

/**
 * The record a letter holds, to send again: its record, or its raw text parsed (an element
 * that never parsed, fixed in the file since); a problem when there is none to send.
 *
 * @since 0.3.0
 * @category utils
 */
export const recordOf = (letter: DeadLetter): Either.Either<Readonly<Record<string, unknown>>, Problem> => {
  const isObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
    typeof value === "object" && value !== null && !Array.isArray(value)
  if ("record" in letter && letter.record !== undefined) {
    return isObject(letter.record)
      ? Either.right(letter.record)
      : Either.left({ code: "not_an_object", field: null, message: "replay: the letter's record is not an object" })
  }
  if (letter.raw === undefined || letter.raw === "") {
    return Either.left({ code: "not_replayable", field: null, message: "replay: the letter holds no record and no raw text (nothing was kept of it)" })
  }
  try {
    const parsed: unknown = JSON.parse(letter.raw)
    return isObject(parsed)
      ? Either.right(parsed)
      : Either.left({ code: "not_an_object", field: null, message: "replay: the letter's raw text is still not a JSON object" })
  } catch (error) {
    return Either.left({ code: "invalid_json", field: null, message: `replay: the letter's raw text is still not JSON: ${(error as Error).message}` })
  }
}

// The plan

/**
 * Letters of one origin (source, run, partition) in their original order: one partition of a
 * replay. `name` is the replay's name for it (part of its keys and its checkpoint).
 *
 * @since 0.3.0
 * @category models
 */
export interface Group {
  readonly name: string
  readonly source: string | undefined
  readonly run: string | undefined
  readonly partition: string
  readonly letters: ReadonlyArray<StoredLetter>
}

/**
 * The replay's name of an origin: `SOURCE|RUN|PARTITION` (`-` for what a version-1 letter
 * does not say).
 *
 * @since 0.3.0
 * @category utils
 */
export const groupName = (letter: Pick<DeadLetter, "source" | "run" | "position">): string =>
  `${letter.source ?? "-"}|${letter.run ?? "-"}|${letter.position.partition}`

/**
 * The letters `filter` takes, grouped by origin, each group in original order, a letter
 * written twice (a run resumed after a crash writes the letters it had not committed again)
 * counted once: the later one.
 *
 * @since 0.3.0
 * @category utils
 */
export const plan = (letters: Iterable<StoredLetter>, filter: Filter = {}): ReadonlyArray<Group> => {
  const take = matches(filter)
  const groups = new Map<string, Map<string, StoredLetter>>()
  for (const letter of letters) {
    if (!take(letter)) continue
    const name = groupName(letter)
    let group = groups.get(name)
    if (group === undefined) groups.set(name, group = new Map())
    group.set(`${letter.position.offset}:${letter.position.child?.index ?? ""}`, letter)
  }
  return [...groups].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, group]) => {
    const sorted = [...group.values()].sort((a, b) => comparePositions(a.position, b.position))
    const first = sorted[0]!
    return { name, source: first.source, run: first.run, partition: first.position.partition, letters: sorted }
  })
}

/**
 * Counts of what a plan holds, by reason (what `--dry-run` prints).
 *
 * @since 0.3.0
 * @category utils
 */
export const countByReason = (groups: ReadonlyArray<Group>): ReadonlyArray<readonly [string, number]> => {
  const counts = new Map<string, number>()
  for (const group of groups) for (const letter of group.letters) counts.set(reasonOf(letter), (counts.get(reasonOf(letter)) ?? 0) + 1)
  return [...counts].sort(byCountThenName)
}

// The driver

/**
 * A replay could not start: the letters name no dataset (or several) and none was given, its
 * checkpoint belongs to another replay, or its dead letters would go where it reads.
 *
 * @since 0.3.0
 * @category errors
 */
export class ReplayError extends Data.TaggedError("ReplayError")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/**
 * The source name of every replay (part of its keys): never that of an original run.
 *
 * @since 0.3.0
 * @category defaults
 */
export const sourceName = "replay"

/**
 * @since 0.3.0
 * @category models
 */
export interface ReplayOptions<E2 = never, R2 = never, EL = never> extends
  Omit<PipelineConfig<never, never, E2, R2>, "source" | "destination" | "checkpoint" | "batch" | "deadLetters">
{
  /** The letters to replay, as read: a list, or a stream (`fileLetters`, a topic's), read once. */
  readonly letters: Iterable<StoredLetter> | Stream.Stream<StoredLetter, EL>
  /** Letters held in memory at most while they are put in order (default 10,000); more are sorted on disk. */
  readonly sortBuffer?: number | undefined
  /** Told how the reading goes, at each letter read and each letter handed to the run. */
  readonly onReading?: ((reading: Reading) => void) | undefined
  /** What the letters are, in words (the checkpoint remembers it: a resume over other letters is refused). */
  readonly description: string
  readonly filter?: Filter | undefined
  /** The fix, applied to each letter's record before it is sent (or use `records`: typed stages). */
  readonly transform?: Transform | undefined
  /** The dataset; by default the one the letters name (all must name the same). */
  readonly destination?: PipelineConfig<never, never>["destination"] | undefined
  /** Where the replay's own positions live: it resumes from them after a crash. */
  readonly checkpoint: CheckpointStore
  /** Where the letters that fail again go (never where the letters are read from). */
  readonly deadLetters: DeadLetterSink
  /** A fingerprint of the filter and the fix, so that a resume with others is refused (default: none). */
  readonly fingerprint?: string | undefined
  readonly batch?: { readonly max?: number | undefined; readonly maxBytes?: number | undefined } | undefined
}

/**
 * How a replay's reading goes: letters read, those the filter took, those held in memory now
 * (by the sort while reading, by the merge after), and those handed to the run. A replay
 * reads every letter before it sends one (they must be in order), then hands them to the run
 * only as fast as the run takes them: `taken` stays within the run's bounds (`maxPending`,
 * `concurrency`) of what it sent.
 *
 * @since 0.3.0
 * @category models
 */
export interface Reading {
  readonly read: number
  readonly selected: number
  readonly held: number
  readonly taken: number
}

/**
 * The letters a filter took, in order, read once: `next` answers them one by one, grouped by
 * origin, each group in original order, twins counted once (the later).
 *
 * @since 0.3.0
 * @category models
 */
export interface Ordered {
  /** Letters read, and those the filter took (twins counted each time). */
  readonly read: number
  readonly selected: number
  /** The origins, by name, with what their first letter says of them. */
  readonly groups: ReadonlyArray<Omit<Group, "letters">>
  /** The datasets the letters name (undefined: a letter names none). */
  readonly datasets: ReadonlySet<string | undefined>
  readonly next: () => StoredLetter | undefined
  /** Letters held in memory now. */
  readonly held: () => number
}

interface Named {
  readonly name: string
  readonly letter: StoredLetter
}

const compareNamed = (a: Named, b: Named) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : comparePositions(a.letter.position, b.letter.position)

/**
 * Reads `letters`, keeps those `filter` takes, and puts them in order with at most
 * `sortBuffer` in memory (the rest in runs on disk, removed when the scope closes).
 *
 * @since 0.3.0
 * @category constructors
 */
export const order = <EL>(
  letters: Iterable<StoredLetter> | Stream.Stream<StoredLetter, EL>,
  filter: Filter = {},
  options: { readonly sortBuffer?: number | undefined; readonly onRead?: ((read: number, selected: number, held: number) => void) | undefined } = {}
): Effect.Effect<Ordered, EL, Scope.Scope> =>
  Effect.gen(function*() {
    const take = matches(filter)
    const sorter = yield* Effect.acquireRelease(
      Effect.sync(() =>
        makeSorter<Named>({
          compare: compareNamed,
          encode: (item) => JSON.stringify(item),
          decode: (line) => JSON.parse(line) as Named,
          bufferSize: options.sortBuffer
        })
      ),
      (sorter) => Effect.sync(sorter.close)
    )
    const groups = new Map<string, Omit<Group, "letters">>()
    const datasets = new Set<string | undefined>()
    let read = 0
    let selected = 0
    const add = (letter: StoredLetter) => {
      read++
      if (take(letter)) {
        selected++
        const name = groupName(letter)
        if (!groups.has(name)) groups.set(name, { name, source: letter.source, run: letter.run, partition: letter.position.partition })
        datasets.add(letter.dataset)
        sorter.add({ name, letter })
      }
      options.onRead?.(read, selected, sorter.held())
    }
    if (Stream.StreamTypeId in letters) {
      yield* Stream.runForEach(letters, (letter) => Effect.sync(() => add(letter)))
    } else {
      for (const letter of letters) add(letter)
    }
    const merged = sorter.finish()
    let following = merged.next()
    return {
      read,
      selected,
      groups: [...groups.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
      datasets,
      // Twins are next to each other once in order, the later last: the last of a run of them is kept.
      next: () => {
        if (following === undefined) return undefined
        let current = following
        for (;;) {
          following = merged.next()
          if (following === undefined || compareNamed(following, current) !== 0) return current.letter
          current = following
        }
      },
      held: () => merged.held() + (following === undefined ? 0 : 1)
    }
  })

/**
 * What a replay would send, counted by reason (what `--dry-run` prints), with the letters
 * read and the datasets they name; read as a replay reads them.
 *
 * @since 0.3.0
 * @category utils
 */
export const survey = <EL>(
  letters: Iterable<StoredLetter> | Stream.Stream<StoredLetter, EL>,
  filter: Filter = {},
  options: { readonly sortBuffer?: number | undefined } = {}
): Effect.Effect<{ readonly read: number; readonly counts: ReadonlyArray<readonly [string, number]>; readonly datasets: ReadonlyArray<string | undefined> }, EL> =>
  Effect.scoped(Effect.map(order(letters, filter, options), (ordered) => {
    const counts = new Map<string, number>()
    for (let letter = ordered.next(); letter !== undefined; letter = ordered.next()) {
      counts.set(reasonOf(letter), (counts.get(reasonOf(letter)) ?? 0) + 1)
    }
    return {
      read: ordered.read,
      counts: [...counts].sort(byCountThenName),
      datasets: [...ordered.datasets]
    }
  }))

/**
 * Replays dead letters into their dataset and answers the run's progress. Letters that fail
 * again (their record is still not valid, the service refuses it) go to `deadLetters` with
 * their original position, source and run, so a later replay of those keys them as before.
 * When the filter takes no letter, nothing is sent and the progress is empty (`onReading`
 * tells how many were read).
 *
 * @since 0.3.0
 * @category running
 */
export const replay = <E2 = never, R2 = never, EL = never>(
  client: TributaryClientService,
  options: ReplayOptions<E2, R2, EL>
): Effect.Effect<Progress, E2 | EL | PipelineError | ReplayError, R2> =>
  Effect.scoped(Effect.gen(function*() {
    let taken = 0
    const tell = options.onReading
    const ordered = yield* order(options.letters, options.filter, {
      sortBuffer: options.sortBuffer,
      onRead: tell === undefined ? undefined : (read, selected, held) => tell({ read, selected, held, taken })
    })
    if (ordered.selected === 0) return emptyProgress(Date.now())
    const { groups } = ordered
    const destination = options.destination ?? (yield* destinationOf(ordered.datasets))
    const identity = {
      name: sourceName,
      description: `${options.description}${options.fingerprint === undefined ? "" : ` (${options.fingerprint})`}`
    }
    const loaded = yield* options.checkpoint.load
    if (loaded.run !== undefined && loaded.run.source.description !== identity.description) {
      return yield* Effect.fail(
        new ReplayError({
          reason: `the replay checkpoint belongs to another replay (${loaded.run.source.description}): ` +
            "start over with --restart (or give another --checkpoint)"
        })
      )
    }
    if (loaded.run === undefined && options.checkpoint.writeRun !== undefined) {
      const record: RunRecord = {
        id: sourceName,
        startedAt: new Date().toISOString(),
        destination: { datasetId: String(destination.datasetId), api: destination.api ?? "v2", baseUrl: client.baseUrl },
        source: identity
      }
      yield* options.checkpoint.writeRun(record)
    }
    const origins = new Map(groups.map((group) => [group.name, group]))
    const transform = options.transform ?? ((record) => record)
    // The next letters not committed yet, as elements, a few at a time: pulled as the run takes them.
    const pullChunk = Effect.sync(() => {
      const out: Array<SourceEvent> = []
      while (out.length < 64) {
        const letter = ordered.next()
        if (letter === undefined) break
        const name = groupName(letter)
        const committed = loaded.positions[name]
        if (committed !== undefined && comparePositions(letter.position, committed) <= 0) continue
        // A letter that fails before it is sent again is a dead letter element, as typed stages make
        // (`run` takes those from any stage before validation).
        out.push(elementOf(name, letter, transform) as SourceEvent)
      }
      taken += out.length
      if (tell !== undefined && out.length > 0) tell({ read: ordered.read, selected: ordered.selected, held: ordered.held(), taken })
      return out
    })
    const source: PartitionedSource<never, never> = {
      _tag: "PartitionedSource",
      name: sourceName,
      fallback: options.checkpoint,
      events: Stream.suspend(() => {
        const assigned: SourceEvent = {
          _tag: "Assigned",
          assignments: groups.map((group): Assignment => ({
            partition: group.name,
            committed: loaded.positions[group.name],
            cuts: loaded.cuts.filter((cut) => cut.partition === group.name),
            checkpoint: options.checkpoint,
            // The original run's identity: a replay's keys are those of where its letters came from.
            run: group.run
          }))
        }
        return Stream.concat(
          Stream.succeed(assigned),
          Stream.repeatEffectChunkOption(Effect.flatMap(pullChunk, (out) =>
            out.length === 0 ? Effect.fail(Option.none()) : Effect.succeed(Chunk.unsafeFromArray(out))))
        )
      })
    }
    return yield* run(client, {
      ...options,
      source,
      destination,
      // Cut by count and size only: batches (and so keys) are the same however fast the letters come.
      batch: { ...options.batch, linger: "1 days" },
      deadLetters: { write: (letters) => options.deadLetters.write(letters.map((letter) => asOriginal(letter, origins))) }
    })
  }))

/** A letter as an element of the replay: its record, fixed, at its original place; or a dead letter again. */
const elementOf = (partition: string, letter: StoredLetter, transform: Transform): Element => {
  const position: Position = { partition, offset: letter.position.offset, child: letter.position.child }
  const again = (reason: Problem, stage: DeadLetter["stage"], record?: unknown): { readonly _tag: "Dead"; readonly letter: DeadLetter } => ({
    _tag: "Dead",
    letter: {
      position,
      reason,
      stage,
      ...(record === undefined ? {} : { record }),
      ...(letter.raw === undefined ? {} : { raw: letter.raw })
    }
  })
  return Either.match(recordOf(letter), {
    onLeft: (problem) => again(problem, "source"),
    onRight: (record) => {
      try {
        return { _tag: "Record", position, value: transform(record) }
      } catch (error) {
        return again({ code: "transform_failed", field: null, message: `replay: ${error instanceof Error ? error.message : String(error)}` }, "transform", record)
      }
    }
  })
}

/** A letter of the replay with its original partition, source and run (for a later replay). */
const asOriginal = (letter: DeadLetter, origins: ReadonlyMap<string, Omit<Group, "letters">>): DeadLetter => {
  const group = origins.get(letter.position.partition)
  if (group === undefined) return letter
  return { ...letter, position: { ...letter.position, partition: group.partition }, source: group.source, run: group.run }
}

/** The dataset every letter names. */
const destinationOf = (datasets: ReadonlySet<string | undefined>): Effect.Effect<Destination, ReplayError> => {
  if (datasets.size === 1) {
    const [only] = datasets
    if (only !== undefined) return Effect.succeed({ datasetId: only })
  }
  return Effect.fail(
    new ReplayError({
      reason: datasets.size === 0
        ? "no letter to replay"
        : datasets.has(undefined)
        ? "some letters name no dataset (written before letters did): give the dataset (--dataset)"
        : `the letters name ${datasets.size} datasets (${[...datasets].join(", ")}): give one (--dataset), or filter`
    })
  )
}

/**
 * The letters of a dead-letter file, read as a stream (64 KiB at a time). A line that is not a
 * letter fails the stream, naming it, except a last line without its line end (an append cut
 * short by a crash: the run that wrote it writes the letter again when it resumes), which is
 * left out.
 *
 * @since 0.3.0
 * @category constructors
 */
export const fileLetters = (path: string): Stream.Stream<StoredLetter, ReplayError> =>
  Stream.unwrapScoped(Effect.map(
    Effect.acquireRelease(
      Effect.try({
        try: () => openSync(path, "r"),
        catch: (cause) => new ReplayError({ reason: `cannot read dead letters from ${path}: ${String(cause)}` })
      }),
      (fd) => Effect.sync(() => closeSync(fd))
    ),
    (fd) => {
      const chunk = Buffer.alloc(64 * 1024)
      let rest = Buffer.alloc(0)
      let line = 0
      return Stream.repeatEffectChunkOption(Effect.suspend((): Effect.Effect<Chunk.Chunk<StoredLetter>, Option.Option<ReplayError>> => {
        for (;;) {
          let n: number
          try {
            n = readSync(fd, chunk, 0, chunk.length, null)
          } catch (cause) {
            return Effect.fail(Option.some(new ReplayError({ reason: `cannot read dead letters from ${path}: ${String(cause)}` })))
          }
          // The end; what follows the last line end is a cut-short append.
          if (n === 0) return Effect.fail(Option.none())
          const bytes = rest.length === 0 ? chunk.subarray(0, n) : Buffer.concat([rest, chunk.subarray(0, n)])
          const end = bytes.lastIndexOf(10)
          rest = Buffer.from(bytes.subarray(end + 1))
          if (end < 0) continue
          const letters: Array<StoredLetter> = []
          for (const text of bytes.toString("utf8", 0, end).split("\n")) {
            line++
            if (text.trim() === "") continue
            const letter = decodeLetter(text)
            if (Either.isLeft(letter)) {
              return Effect.fail(Option.some(new ReplayError({ reason: `${path} line ${line} is not a dead letter: ${letter.left}` })))
            }
            letters.push(letter.right)
          }
          if (letters.length > 0) return Effect.succeed(Chunk.unsafeFromArray(letters))
        }
      }))
    }
  ))

/**
 * The letters of a dead-letter file, all of them (`fileLetters` collected).
 *
 * @since 0.3.0
 * @category constructors
 */
export const readFile = (path: string): Effect.Effect<ReadonlyArray<StoredLetter>, ReplayError> =>
  Effect.map(Stream.runCollect(fileLetters(path)), Chunk.toReadonlyArray)
