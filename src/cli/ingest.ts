/**
 * `tributary ingest FILE|- --dataset ID`: send an NDJSON file or stdin into a dataset.
 *
 * @since 0.1.0
 */
import { existsSync, statSync } from "node:fs"
import type * as FileSystem from "@effect/platform/FileSystem"
import { Console, Effect } from "effect"
import * as Ndjson from "../../connectors/ndjson/index.js"
import { TributaryClient, type TributaryClientService } from "../client/Client.js"
import * as Checkpoint from "../pipeline/Checkpoint.js"
import * as DeadLetter from "../pipeline/DeadLetter.js"
import type { PipelineEvent, Progress } from "../pipeline/events.js"
import { type PipelineConfig, type PipelineError, run, topReasons } from "../pipeline/run.js"
import type { SchemaContract } from "../pipeline/SchemaContract.js"
import { PipelineMetrics } from "../telemetry/index.js"
import type { ingestOptions } from "./options.js"
import { commandClient } from "./client.js"
import { endProgress, progressDisplay } from "./progress.js"
import { schemaSummary } from "./schemaContract.js"
import type { Values } from "./spec.js"
import { withTelemetry } from "./telemetry.js"

/**
 * The shell's code for a command stopped by Ctrl-C: the input was not consumed.
 *
 * @since 0.1.0
 * @category defaults
 */
export const interruptedExitCode = 130

/**
 * What `-` stands for.
 *
 * @since 0.1.0
 * @category defaults
 */
export const stdinPath = "/dev/stdin"

const isStdin = (input: string) => input === "-" || input === stdinPath

/**
 * The files an ingest of `input` uses unless told otherwise.
 *
 * @since 0.1.0
 * @category utils
 */
export const defaultPaths = (input: string) => ({
  deadLetters: isStdin(input) ? "tributary-dead-letters.ndjson" : `${input}.dead-letters.ndjson`,
  checkpoint: isStdin(input) ? undefined : `${input}.checkpoint.json`
})

/**
 * @since 0.1.0
 * @category models
 */
export interface IngestNdjson {
  readonly input: string
  readonly datasetId: string | number
  readonly deadLetterPath: string
  readonly checkpointPath: string | undefined
  readonly concurrency?: PipelineConfig<never, never>["concurrency"]
  readonly maxPending?: PipelineConfig<never, never>["maxPending"]
  readonly keyOrder?: PipelineConfig<never, never>["keyOrder"]
  readonly maxLineBytes?: number | undefined
  readonly api?: "v1" | "v2" | undefined
  /** Start over: the checkpoint is ignored and replaced (a fresh run, new keys). */
  readonly restart?: boolean | undefined
  readonly maxDeadLetters?: PipelineConfig<never, never>["maxDeadLetters"]
  /** Told of every event too (the metrics read the progress from it). */
  readonly onEvent?: ((event: PipelineEvent) => Effect.Effect<void>) | undefined
  readonly schemaContract?: SchemaContract | undefined
}

/**
 * The share of a file done: the committed byte offset (every line before it is stored or
 * dead-lettered) over the file's size.
 *
 * @since 0.3.0
 * @category utils
 */
export const fileDone = (size: number) => (progress: Progress): number => {
  const resume = progress.committed[Ndjson.partition]?.resume as { readonly byteOffset?: number } | undefined
  return size === 0 ? 1 : Math.min(1, (resume?.byteOffset ?? 0) / size)
}

/**
 * The summary as one JSON object, for scripts (`--json`).
 *
 * @since 0.3.0
 * @category utils
 */
export const summaryJson = (
  progress: Progress,
  paths: { readonly deadLetters: string; readonly checkpoint?: string | undefined },
  now: number = Date.now()
) =>
  JSON.stringify({
    read: progress.read,
    stored: progress.accepted - progress.replayed,
    alreadyStored: progress.replayed,
    rejected: progress.rejected,
    deadLettered: progress.deadLettered,
    dropped: progress.dropped,
    deadLetterReasons: progress.deadLetterReasons,
    deadLetters: progress.deadLettered > 0 ? paths.deadLetters : null,
    checkpoint: paths.checkpoint ?? null,
    seconds: Math.round((now - progress.startedAt) / 100) / 10
  })

/**
 * Runs the pipeline from an NDJSON file or stdin, showing progress on stderr.
 *
 * @since 0.1.0
 * @category utils
 */
export const ingestNdjson = (
  client: TributaryClientService,
  options: IngestNdjson
): Effect.Effect<Progress, PipelineError | Ndjson.NdjsonReadError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const source = isStdin(options.input)
      ? Ndjson.fromStdin({ maxLineBytes: options.maxLineBytes })
      : Ndjson.fromFile(options.input, { maxLineBytes: options.maxLineBytes })
    const checkpoint = options.checkpointPath === undefined
      ? yield* Checkpoint.memory()
      : yield* Checkpoint.file(options.checkpointPath, { restart: options.restart })
    const size = isStdin(options.input) ? undefined : statSync(options.input).size
    const display = progressDisplay({ stream: process.stderr, done: size === undefined ? undefined : fileDone(size) })
    // Effect metrics, exported when a telemetry layer is given (`--otlp-endpoint`).
    const metrics = PipelineMetrics.recorder({ dataset: String(options.datasetId), source: source.name })
    const progress = yield* run(client, {
      source,
      destination: { datasetId: options.datasetId, api: options.api },
      checkpoint,
      deadLetters: yield* DeadLetter.ndjsonFile(options.deadLetterPath),
      concurrency: options.concurrency,
      maxPending: options.maxPending,
      keyOrder: options.keyOrder,
      maxDeadLetters: options.maxDeadLetters,
      schemaContract: options.schemaContract,
      restartHint: options.checkpointPath === undefined
        ? "give another --checkpoint"
        : `run with --restart to start over into dataset ${options.datasetId} (or give another --checkpoint)`,
      onEvent: (event) =>
        event._tag === "Resumed"
          ? Console.error(resumedMessage(event, "line", options.checkpointPath))
          : Effect.zipRight(Effect.zipRight(metrics(event), options.onEvent?.(event) ?? Effect.void), display(event)),
      // Nothing here reads the batches' events: without them a batch costs no step in Effect.
      batchEvents: false,
      progressInterval: process.stderr.isTTY ? "200 millis" : "1 second"
    }).pipe(Effect.ensuring(endProgress(process.stderr)))
    return progress
  })

/**
 * What an interrupted ingest says: where it stopped and how to go on.
 *
 * @since 0.1.0
 * @category utils
 */
export const interruptedMessage = (checkpointPath: string | undefined) =>
  checkpointPath === undefined
    ? Effect.succeed(
      "tributary: interrupted; standard input has no checkpoint: what was delivered is stored, and feeding the same " +
        "input again is a new run that stores it again (a dataset with a primary key keeps one row per key); to " +
        "resume instead, save the input to a file and ingest the file"
    )
    : Effect.map(
      Effect.orElseSucceed(Checkpoint.readCheckpointFile(checkpointPath), () => Checkpoint.emptyCheckpoint),
      (checkpoint) => {
        const line = checkpoint.positions[Ndjson.partition]?.offset
        return `tributary: interrupted; ${line === undefined ? "nothing committed yet" : `committed through line ${line}`} ` +
          `in ${checkpointPath}: run the same command again to resume`
      }
    )

/**
 * The closing summary of an ingest.
 *
 * @since 0.1.0
 * @category utils
 */
export const summarize = (progress: Progress, paths: { readonly deadLetters: string; readonly checkpoint: string | undefined }) =>
  [
    `read ${progress.read} ${progress.read === 1 ? "line" : "lines"}: ${storedText(progress)}, ` +
    `${progress.rejected} rejected by the service, ` +
    `${progress.deadLettered} dead-lettered in total`,
    progress.deadLettered > 0
      ? `dead letters: ${paths.deadLetters} (most: ${topReasons(progress.deadLetterReasons)})`
      : "no dead letters",
    paths.checkpoint === undefined ? "no checkpoint (standard input)" : `checkpoint: ${paths.checkpoint}`,
    ...schemaSummary(progress)
  ].join("\n")

/**
 * `800 stored, already stored earlier 200`: records the service answered as replays of an
 * earlier request of this run under the same key (sent before a crash, or an attempt whose
 * answer was lost) are counted apart.
 *
 * @since 0.2.0
 * @category utils
 */
export const storedText = (progress: Progress) =>
  progress.replayed === 0
    ? `${progress.accepted} stored`
    : `${progress.accepted - progress.replayed} stored, already stored earlier ${progress.replayed} ` +
      "(by an earlier request of this run under the same keys: an answer lost on the way, or a resend after an interruption)"

/**
 * What a resumed run says first: which run, where it stands, what its earlier runs did.
 *
 * @since 0.2.0
 * @category utils
 */
export const resumedMessage = (
  event: Extract<PipelineEvent, { readonly _tag: "Resumed" }>,
  unit: "line" | "row",
  checkpointPath: string | undefined
) => {
  const at = Object.values(event.committed).map((position) => position.offset)
  const where = at.length === 0 ? "nothing committed yet" : at.length === 1 ? `after ${unit} ${at[0]}` : `after ${at.length} partitions' commits`
  const run = event.run
  const totals = run?.totals
  const earlier = totals === undefined
    ? ""
    : `; its earlier ${totals.runs === 1 ? "run" : `${totals.runs} runs`} read ${totals.read}, stored ${totals.stored}, ` +
      `dead-lettered ${totals.deadLettered} (last ended ${totals.endedAt})`
  const moved = event.movedFrom === undefined ? "" : `; it sent to ${event.movedFrom} before, to another address now`
  return `tributary: resuming ${run === undefined ? "a run" : `run ${run.id.slice(0, 8)} started ${run.startedAt}`} ` +
    `${where}${checkpointPath === undefined ? "" : ` (${checkpointPath})`}${earlier}${moved}; --restart starts over`
}

/**
 * Runs `tributary ingest`.
 *
 * @since 0.3.0
 * @category running
 */
export const main = (options: Values<typeof ingestOptions>) =>
  Effect.gen(function*() {
    const defaults = defaultPaths(options.input)
    const paths = {
      deadLetters: options.deadLetter ?? defaults.deadLetters,
      checkpoint: options.checkpoint ?? defaults.checkpoint
    }
    if (!isStdin(options.input) && !existsSync(options.input)) {
      return yield* Effect.fail(new Ndjson.NdjsonReadError({ reason: `cannot read FILE '${options.input}': there is no such file` }))
    }
    const client = yield* TributaryClient
    // prom-client (0.3-0.4 s to load on a busy machine) only when metrics are asked for.
    const metrics = options.metricsPort === undefined
      ? { onEvent: undefined }
      : yield* Effect.flatMap(Effect.promise(() => import("./metrics.js")), (m) => m.metricsFor(options.metricsPort))
    const progress = yield* ingestNdjson(client, {
      onEvent: metrics.onEvent,
      input: options.input,
      datasetId: options.dataset,
      deadLetterPath: paths.deadLetters,
      checkpointPath: paths.checkpoint,
      concurrency: options.concurrency,
      maxPending: { batches: options.maxPending, bytes: options.maxPendingBytes },
      keyOrder: options.keyOrder,
      maxDeadLetters: options.maxDeadLetters,
      restart: options.restart,
      maxLineBytes: options.maxLineBytes,
      schemaContract: options.schemaContract
    }).pipe(
      Effect.onInterrupt(() =>
        Effect.zipRight(
          Effect.flatMap(interruptedMessage(paths.checkpoint), Console.error),
          Effect.sync(() => (process.exitCode = interruptedExitCode))
        )
      )
    )
    yield* Console.log(options.json ? summaryJson(progress, paths) : summarize(progress, paths))
  }).pipe(
    Effect.scoped,
    Effect.provide(commandClient(options)),
    withTelemetry(options.otlpEndpoint)
  )
