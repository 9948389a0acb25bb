/**
 * The pipeline: source -> validate -> batch -> send -> track -> commit.
 *
 * `run` (or `events`) drives a whole pipeline; `Source`s come from the connectors (or your
 * own), their positions live in a `Checkpoint` store and what cannot be delivered goes to a
 * `DeadLetter` sink; `Typed` decodes, transforms and encodes records with your schemas. The
 * stages (`sequence`, `validate`, `batch`, `deliverUnits`, `DeadLetter.writeLetters`,
 * `commit`) are also pipeable Stream combinators for a pipeline of your own shape.
 *
 * @since 0.1.0
 */

// Running
export {
  defaultBatch,
  defaultConcurrency,
  defaultMaxPending,
  events,
  fetchSchema,
  type PipelineConfig,
  type PipelineError,
  run,
  SchemaError
} from "./run.js"
export type { Outage, PipelineEvent, Progress } from "./events.js"

// Sources, checkpoints, dead letters, typed records
export {
  type Assignment,
  type CheckpointWriter,
  isPartitionedSource,
  isPartitionEvent,
  type PartitionedSource,
  type PartitionEvent,
  type Source,
  type SourceEvent,
  toPartitioned,
  withCheckpoint
} from "./Source.js"
export * as Checkpoint from "./Checkpoint.js"
export * as DeadLetter from "./DeadLetter.js"
export * as Replay from "./Replay.js"
export * as SchemaContract from "./SchemaContract.js"
export * as Typed from "./Typed.js"

// The stages, for pipelines composed by hand
export { batch, type BatchOptions } from "./batch.js"
export { commit } from "./commit.js"
export { deliverUnits, DeliveryError, type DeliveryOptions, type Destination } from "./deliver.js"
export { type DatasetSchema, type SchemaObserver, sequence, type Sequenced, validate } from "./validate.js"

// The vocabulary the stages speak
export {
  type Batch,
  type BatchCut,
  type BatchRecord,
  type Blocks,
  type Checked,
  type Delivered,
  type DeliveredUnit,
  type Element,
  elementPosition,
  type Frontier,
  type KeyValue,
  type MalformedElement,
  type Position,
  type Problem,
  type RecordElement,
  type SourceElement,
  type Unit,
  type ValueTypes
} from "./vocabulary.js"
