/**
 * Sources: streams of records, each with the position it came from, and the partitions a
 * source owns, which may come and go while a run goes on (a consumer group).
 *
 * Two shapes, one core: a `Source` reads a fixed set of partitions whose positions live in a
 * `CheckpointStore` the caller chooses (a file for NDJSON); a `PartitionedSource` announces
 * its partitions itself, each assignment bringing its committed position, the batch cuts
 * recorded by whoever owned it before, and the store where its commits and cuts live (Kafka
 * keeps them in the group's committed offsets). `run` turns the first into the second
 * (`toPartitioned`, which tells them apart with `isPartitionedSource` and lifts a `Source`
 * with `withCheckpoint`) and drives only the second.
 *
 * @since 0.1.0
 */
import { Effect, Stream } from "effect"
import type { Checkpoint, CheckpointError, CheckpointStore } from "./Checkpoint.js"
import type { BatchCut, Blocks, Element, Position, SourceElement, SourceIdentity } from "./vocabulary.js"

export {
  comparePositions,
  type Element,
  elementPosition,
  isCommitPoint,
  type MalformedElement,
  type Position,
  type Problem,
  type RecordElement,
  type SourceElement
} from "./vocabulary.js"

/**
 * A source of records over a fixed set of partitions. `name` identifies it stably across
 * restarts: it is part of every idempotency key, so the same records from the same source
 * always map to the same keys. `elements` starts right after the committed positions it is
 * given (none: from the start). Those come back from storage (a checkpoint file anyone may
 * edit), so their `resume` is `unknown` until the source has checked it; the positions it
 * emits carry its own `Resume`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Source<E = never, R = never, Resume = unknown> {
  readonly name: string
  readonly elements: (committed: Readonly<Record<string, Position>>) => Stream.Stream<SourceElement<Resume>, E, R>
  /**
   * What the source is, for the checkpoint to remember and to check on resume (a file: its
   * path and the hash of its first bytes; `previous` says how many bytes were hashed then).
   * Without it, the source is known by its `name`.
   */
  readonly identify?: ((previous: SourceIdentity | undefined) => Effect.Effect<SourceIdentity, E, R>) | undefined
}

/**
 * Where one partition's batch cuts and commits are written while it is assigned: a
 * `CheckpointStore` without `load` (the assignment brings what was loaded).
 *
 * @since 0.1.0
 * @category models
 */
export type CheckpointWriter = Omit<CheckpointStore, "load">

/**
 * A partition handed to the run: its committed position (none: from its start), the cuts
 * its previous owner recorded (to be honoured, so that the same batches go out again under
 * the same keys), and where its cuts and commits go from now on.
 *
 * @since 0.1.0
 * @category models
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
  /**
   * The identity of the run the partition's batches belong to (part of their idempotency
   * keys), where the source keeps it (a backfill's state); none: keys from the coordinates alone.
   */
  readonly run?: string | undefined
  /**
   * The partition batches by blocks of offsets (its offsets are dense and fixed, as a Kafka
   * partition's): the frontiers its store holds (`Blocks`). None: by count, every cut recorded.
   */
  readonly blocks?: Blocks | undefined
}

/**
 * Partitions come and go. After `Assigned`, elements of those partitions follow; after
 * `Revoked`, none do until they are assigned again. The run answers a revocation by
 * dropping what it has not sent of those partitions, draining their batches in flight,
 * committing, and only then running `release` (the source may then let the partitions go).
 *
 * @since 0.1.0
 * @category models
 */
export type PartitionEvent =
  | { readonly _tag: "Assigned"; readonly assignments: ReadonlyArray<Assignment> }
  | { readonly _tag: "Revoked"; readonly partitions: ReadonlyArray<string>; readonly release: Effect.Effect<void> }

/**
 * What a partitioned source emits.
 *
 * @since 0.1.0
 * @category models
 */
export type SourceEvent<Resume = unknown> = SourceElement<Resume> | PartitionEvent

/**
 * A source that announces its partitions as they are assigned and revoked, and keeps their
 * commits and cuts where it chooses.
 *
 * @since 0.1.0
 * @category models
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
  /** The run identity of the partitions that come without an assignment (see `Assignment.run`). */
  readonly run?: string | undefined
}

/**
 * Whether an element or event is a partition event.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPartitionEvent = <A, Resume>(event: Element<A, Resume> | PartitionEvent): event is PartitionEvent =>
  event._tag === "Assigned" || event._tag === "Revoked"

/**
 * Whether a source announces its partitions itself (a `PartitionedSource`, by its tag) or
 * reads fixed partitions whose positions the caller keeps (a `Source`).
 *
 * @since 0.2.0
 * @category guards
 */
export const isPartitionedSource = <E, R, Resume>(
  source: Source<E, R, Resume> | PartitionedSource<E, R, Resume>
): source is PartitionedSource<E, R, Resume> => (source as Partial<PartitionedSource<E, R, Resume>>)._tag === "PartitionedSource"

/**
 * A `Source` over fixed partitions as a `PartitionedSource` whose positions live in
 * `checkpoint`: one assignment of every partition the checkpoint knows, at the start, then
 * the elements; partitions seen for the first time later are committed to `checkpoint` too.
 *
 * @since 0.1.0
 * @category constructors
 */
export const withCheckpoint = <E, R, Resume>(
  source: Source<E, R, Resume>,
  checkpoint: CheckpointStore,
  /** The checkpoint as already loaded (and its run prepared, see `run`); else it is loaded here. */
  loaded?: Checkpoint | undefined
): PartitionedSource<E | CheckpointError, R, Resume> => ({
  _tag: "PartitionedSource",
  name: source.name,
  fallback: checkpoint,
  run: loaded?.run?.id,
  events: Stream.unwrap(Effect.map(loaded === undefined ? checkpoint.load : Effect.succeed(loaded), (loaded) => {
    const positions = loaded.positions
    const partitions = new Set([...Object.keys(positions), ...loaded.cuts.map((cut) => cut.partition)])
    const assigned: SourceEvent<Resume> = {
      _tag: "Assigned",
      assignments: [...partitions].map((partition) => ({
        partition,
        committed: positions[partition],
        cuts: loaded.cuts.filter((cut) => cut.partition === partition),
        checkpoint,
        run: loaded.run?.id
      }))
    }
    const elements: Stream.Stream<SourceEvent<Resume>, E, R> = source.elements(positions)
    return partitions.size === 0 ? elements : Stream.concat(Stream.succeed(assigned), elements)
  }))
})

/**
 * Either shape of source as the one `run` drives: a `PartitionedSource` as it is, a `Source`
 * lifted with `withCheckpoint` onto `checkpoint`. Undefined for a `Source` without a
 * checkpoint store (its positions would have nowhere to go).
 *
 * @since 0.2.0
 * @category constructors
 */
export const toPartitioned = <E, R, Resume>(
  source: Source<E, R, Resume> | PartitionedSource<E, R, Resume>,
  checkpoint: CheckpointStore | undefined,
  /** The checkpoint as already loaded (see `withCheckpoint`). */
  loaded?: Checkpoint | undefined
): PartitionedSource<E | CheckpointError, R, Resume> | undefined =>
  isPartitionedSource(source) ? source : checkpoint === undefined ? undefined : withCheckpoint(source, checkpoint, loaded)
