/**
 * Sources: streams of records, each with the position it came from, and the partitions a
 * source owns, which may come and go while a run goes on (a consumer group).
 *
 * Two shapes, one core: a `Source` reads a fixed set of partitions whose positions live in a
 * `CheckpointStore` the caller chooses (a file for NDJSON); a `PartitionedSource` announces
 * its partitions itself, each assignment bringing its committed position, the batch cuts
 * recorded by whoever owned it before, and the store where its commits and cuts live (Kafka
 * keeps them in the group's committed offsets). `run` turns the first into the second
 * (`withCheckpoint`) and drives only the second.
 *
 * @since 0.1.0
 */
import { Effect, Stream } from "effect"
import type { BatchCut, CheckpointError, CheckpointStore } from "./Checkpoint.js"
import type { DeadLetter } from "./DeadLetter.js"

/**
 * Where an element sits in its source. `offset` grows within a partition (a line number,
 * a Kafka offset, a row ordinal); `resume` is what the source needs to start right after
 * it (a byte offset, a key value), typed by each source.
 *
 * @since 0.1.0
 */
export interface Position<Resume = unknown> {
  readonly partition: string
  readonly offset: number
  readonly resume?: Resume | undefined
  /**
   * Set on the records a one-to-many transform made of one source record (`Typed.flatMap`):
   * this is child `index` of `of`. Children share their parent's offset; the parent's position
   * is committed only with its last child.
   */
  readonly child?: { readonly index: number; readonly of: number } | undefined
}

/**
 * Whether a position may be committed: any position but that of a child other than the last.
 *
 * @since 0.1.0
 */
export const isCommitPoint = (position: Position): boolean =>
  position.child === undefined || position.child.index === position.child.of - 1

/**
 * Orders two positions of one partition: by offset, then by child index.
 *
 * @since 0.1.0
 */
export const comparePositions = (
  a: { readonly offset: number; readonly child?: { readonly index: number } | undefined },
  b: { readonly offset: number; readonly child?: { readonly index: number } | undefined }
): number =>
  a.offset !== b.offset ? a.offset - b.offset : (a.child?.index ?? -1) - (b.child?.index ?? -1)

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
export type SourceElement<Resume = unknown> = RecordElement<unknown, Resume> | MalformedElement<Resume>

/**
 * A record, its value of type `A` (`unknown` as a source reads it, the schema's `Type` once
 * `Typed.decode` has checked it).
 *
 * @since 0.1.0
 */
export interface RecordElement<A = unknown, Resume = unknown> {
  readonly _tag: "Record"
  readonly position: Position<Resume>
  readonly value: A
  /** The record's JSON text when the source already has it (saves a stringify). */
  readonly json?: string | undefined
}

/**
 * An element the source could not turn into a record.
 *
 * @since 0.1.0
 */
export interface MalformedElement<Resume = unknown> {
  readonly _tag: "Malformed"
  readonly position: Position<Resume>
  readonly problem: Problem
  /** The raw element, cut to a readable length. */
  readonly raw: string
}

/**
 * What a source's elements become on their way through typed stages (`Typed`): records of
 * type `A`, malformed elements, records a stage turned into dead letters (a decode or a
 * transform failed), and records a stage dropped on purpose (`Typed.filter`, a `flatMap`
 * to nothing). Every one of them is counted and committed like a record; only records are sent.
 *
 * @since 0.1.0
 */
export type Element<A = unknown, Resume = unknown> =
  | RecordElement<A, Resume>
  | MalformedElement<Resume>
  | { readonly _tag: "Dead"; readonly letter: DeadLetter }
  | { readonly _tag: "Dropped"; readonly position: Position<Resume> }

/**
 * The position of any element.
 *
 * @since 0.1.0
 */
export const elementPosition = (element: Element): Position => element._tag === "Dead" ? element.letter.position : element.position

/**
 * A source of records over a fixed set of partitions. `name` identifies it stably across
 * restarts: it is part of every idempotency key, so the same records from the same source
 * always map to the same keys. `elements` starts right after the committed positions it is
 * given (none: from the start). Those come back from storage (a checkpoint file anyone may
 * edit), so their `resume` is `unknown` until the source has checked it; the positions it
 * emits carry its own `Resume`.
 *
 * @since 0.1.0
 */
export interface Source<E = never, R = never, Resume = unknown> {
  readonly name: string
  readonly elements: (committed: Readonly<Record<string, Position>>) => Stream.Stream<SourceElement<Resume>, E, R>
}

/**
 * Where one partition's batch cuts and commits are written while it is assigned: a
 * `CheckpointStore` without `load` (the assignment brings what was loaded).
 *
 * @since 0.1.0
 */
export type CheckpointWriter = Omit<CheckpointStore, "load">

/**
 * A partition handed to the run: its committed position (none: from its start), the cuts
 * its previous owner recorded (to be honoured, so that the same batches go out again under
 * the same keys), and where its cuts and commits go from now on.
 *
 * @since 0.1.0
 */
export interface Assignment {
  readonly partition: string
  readonly committed: Position | undefined
  readonly cuts: ReadonlyArray<BatchCut>
  readonly checkpoint: CheckpointWriter
  /**
   * Whether the partition is still this process's, asked before each batch goes out: a
   * source that learns of a revocation before the run does (a consumer group's rebalance)
   * answers false at once, and nothing more is sent for the partition.
   */
  readonly owned?: (() => boolean) | undefined
}

/**
 * Partitions come and go. After `Assigned`, elements of those partitions follow; after
 * `Revoked`, none do until they are assigned again. The run answers a revocation by
 * dropping what it has not sent of those partitions, draining their batches in flight,
 * committing, and only then running `release` (the source may then let the partitions go).
 *
 * @since 0.1.0
 */
export type PartitionEvent =
  | { readonly _tag: "Assigned"; readonly assignments: ReadonlyArray<Assignment> }
  | { readonly _tag: "Revoked"; readonly partitions: ReadonlyArray<string>; readonly release: Effect.Effect<void> }

/**
 * What a partitioned source emits.
 *
 * @since 0.1.0
 */
export type SourceEvent<Resume = unknown> = SourceElement<Resume> | PartitionEvent

/**
 * A source that announces its partitions as they are assigned and revoked, and keeps their
 * commits and cuts where it chooses.
 *
 * @since 0.1.0
 */
export interface PartitionedSource<E = never, R = never, Resume = unknown> {
  readonly _tag: "PartitionedSource"
  readonly name: string
  readonly events: Stream.Stream<SourceEvent<Resume>, E, R>
  /**
   * Where elements of partitions never announced are committed (a `Source` lifted with
   * `withCheckpoint`: its partitions show up as they are read).
   */
  readonly fallback?: CheckpointWriter | undefined
}

/**
 * Whether an element or event is a partition event.
 *
 * @since 0.1.0
 */
export const isPartitionEvent = <A, Resume>(event: Element<A, Resume> | PartitionEvent): event is PartitionEvent =>
  event._tag === "Assigned" || event._tag === "Revoked"

/**
 * A `Source` over fixed partitions as a `PartitionedSource` whose positions live in
 * `checkpoint`: one assignment of every partition the checkpoint knows, at the start, then
 * the elements; partitions seen for the first time later are committed to `checkpoint` too.
 *
 * @since 0.1.0
 */
export const withCheckpoint = <E, R, Resume>(
  source: Source<E, R, Resume>,
  checkpoint: CheckpointStore
): PartitionedSource<E | CheckpointError, R, Resume> => ({
  _tag: "PartitionedSource",
  name: source.name,
  fallback: checkpoint,
  events: Stream.unwrap(Effect.map(checkpoint.load, (loaded) => {
    const positions = loaded.positions
    const partitions = new Set([...Object.keys(positions), ...loaded.cuts.map((cut) => cut.partition)])
    const assigned: SourceEvent<Resume> = {
      _tag: "Assigned",
      assignments: [...partitions].map((partition) => ({
        partition,
        committed: positions[partition],
        cuts: loaded.cuts.filter((cut) => cut.partition === partition),
        checkpoint
      }))
    }
    const elements: Stream.Stream<SourceEvent<Resume>, E, R> = source.elements(positions)
    return partitions.size === 0 ? elements : Stream.concat(Stream.succeed(assigned), elements)
  }))
})
