/**
 * `tributary replay FILE | --from-topic NAME --brokers ..`: send dead letters again, after the
 * data, the schema or the code was fixed. The filters and fixes are parsed here into the
 * pure ones of `Replay`; the replay itself is `Replay.replay`.
 *
 * @since 0.3.0
 */
import { createHash } from "node:crypto"
import { resolve } from "node:path"
import { Console, Effect, Option, Stream } from "effect"
import * as Kafka from "../../connectors/kafka/index.js"
import { TributaryClient } from "../client/Client.js"
import * as Checkpoint from "../pipeline/Checkpoint.js"
import * as DeadLetter from "../pipeline/DeadLetter.js"
import type { Progress } from "../pipeline/events.js"
import * as Replay from "../pipeline/Replay.js"
import { topReasons } from "../pipeline/run.js"
import type { replayOptions } from "./options.js"
import { UsageError } from "./errors.js"
import { interruptedExitCode, storedText } from "./ingest.js"
import { commandClient } from "./client.js"
import { endProgress, progressDisplay } from "./progress.js"
import { schemaSummary } from "./schemaContract.js"
import type { Values } from "./spec.js"

/**
 * `column=value`: the value read as JSON when it is JSON (`12`, `null`, `"12"`, `["a"]`), as
 * text otherwise (`EUR`).
 *
 * @since 0.3.0
 * @category utils
 */
export const parseSet = (text: string): Option.Option<readonly [string, unknown]> => {
  const at = text.indexOf("=")
  if (at <= 0) return Option.none()
  const raw = text.slice(at + 1)
  let value: unknown = raw
  try {
    value = JSON.parse(raw)
  } catch {
    // Not JSON: the text itself.
  }
  return Option.some([text.slice(0, at), value] as const)
}

/**
 * `old=new`.
 *
 * @since 0.3.0
 * @category utils
 */
export const parseRename = (text: string): Option.Option<readonly [string, string]> => {
  const at = text.indexOf("=")
  return at <= 0 || at === text.length - 1 ? Option.none() : Option.some([text.slice(0, at), text.slice(at + 1)] as const)
}

const list = (values: ReadonlyArray<string>) => values.flatMap((value) => value.split(",")).map((v) => v.trim()).filter((v) => v !== "")

/**
 * The closing summary of a replay.
 *
 * @since 0.3.0
 * @category utils
 */
export const summarizeReplay = (progress: Progress, deadLetters: string) =>
  [
    `replayed ${progress.read} ${progress.read === 1 ? "letter" : "letters"}: ${storedText(progress)}, ` +
    `${progress.deadLettered} dead-lettered again`,
    progress.deadLettered > 0 ? `dead letters: ${deadLetters} (most: ${topReasons(progress.deadLetterReasons)})` : "no dead letters",
    ...schemaSummary(progress)
  ].join("\n")

/**
 * Runs `tributary replay`.
 *
 * @since 0.3.0
 * @category running
 */
export const main = (options: Values<typeof replayOptions>) =>
  Effect.gen(function*() {
    if ((options.input === undefined) === (options.fromTopic === undefined)) {
      return yield* new UsageError({ reason: "give either FILE or --from-topic NAME" })
    }
    if (options.fromTopic !== undefined && options.brokers === undefined) {
      return yield* new UsageError({ reason: "--from-topic needs --brokers (or TRIBUTARY_KAFKA_BROKERS)" })
    }
    const name = options.input ?? `replay-${options.fromTopic}`
    const paths = {
      deadLetters: options.deadLetter ?? `${name}.replay-dead-letters.ndjson`,
      checkpoint: options.checkpoint ?? `${name}.replay.checkpoint.json`
    }
    if (options.input !== undefined && resolve(paths.deadLetters) === resolve(options.input)) {
      return yield* new UsageError({
        reason: "--dead-letter must not be the file being replayed (its letters would be read and written at once)"
      })
    }
    const filter: Replay.Filter = {
      reasons: list(options.reason),
      stages: list(options.stage),
      fields: list(options.field),
      partitions: list(options.partition),
      from: options.from,
      to: options.to
    }
    // Renames first, then sets, then drops: each flag's order among its own is kept (the
    // command table checked their shape).
    const transforms = [
      ...options.rename.map((text) => Replay.rename(...Option.getOrThrow(parseRename(text)))),
      ...options.set.map((text) => Replay.set(...Option.getOrThrow(parseSet(text)))),
      ...options.drop.map((column) => Replay.drop(column))
    ]
    // Read as a stream, once per use (a dry run or the replay): the topic's reader is made when it is read.
    const letters = options.fromTopic === undefined
      ? Replay.fileLetters(options.input!)
      : Stream.unwrapScoped(Effect.map(
        Kafka.makeClient({ brokers: list([options.brokers!]), clientId: "tributary-replay" }),
        (client) => Stream.provideService(Kafka.deadLetterTopicLetters(options.fromTopic!), Kafka.KafkaClient, client)
      ))
    const nothing = (read: number) => Console.log(`nothing to replay: ${read} ${read === 1 ? "letter" : "letters"} read, none selected`)

    if (options.dryRun) {
      const survey = yield* Replay.survey(letters, filter)
      const total = survey.counts.reduce((sum, [, n]) => sum + n, 0)
      if (total === 0) return yield* nothing(survey.read)
      yield* Console.log(
        [
          `would replay ${total} of ${survey.read} ${survey.read === 1 ? "letter" : "letters"} ` +
          `into dataset ${options.dataset ?? (survey.datasets.map((d) => d ?? "?").join(", ") || "?")}`,
          ...survey.counts.map(([reason, n]) => `  ${reason}: ${n}`)
        ].join("\n")
      )
      return
    }

    const client = yield* TributaryClient
    const fingerprint = createHash("sha1")
      .update(JSON.stringify([filter, options.rename, options.set, options.drop]))
      .digest("hex")
      .slice(0, 12)
    let reading: Replay.Reading = { read: 0, selected: 0, held: 0, taken: 0 }
    const progress = yield* Replay.replay(client, {
      letters,
      onReading: (now) => (reading = now),
      description: options.fromTopic !== undefined ? `dead-letter topic ${options.fromTopic}` : `dead-letter file ${resolve(name)}`,
      fingerprint: `filter and fix ${fingerprint}`,
      filter,
      transform: Replay.compose(transforms),
      destination: options.dataset === undefined ? undefined : { datasetId: options.dataset },
      checkpoint: yield* Checkpoint.file(paths.checkpoint, { restart: options.restart }),
      deadLetters: yield* DeadLetter.ndjsonFile(paths.deadLetters),
      concurrency: options.concurrency,
      maxPending: { batches: options.maxPending },
      onEvent: progressDisplay({ stream: process.stderr }),
      progressInterval: process.stderr.isTTY ? "200 millis" : "1 second"
    }).pipe(
      Effect.ensuring(endProgress(process.stderr)),
      Effect.onInterrupt(() =>
        Effect.zipRight(
          Console.error(`tributary: interrupted; what was delivered is committed in ${paths.checkpoint}: run the same command again to resume`),
          Effect.sync(() => (process.exitCode = interruptedExitCode))
        )
      )
    )
    if (reading.selected === 0) return yield* nothing(reading.read)
    yield* Console.log(summarizeReplay(progress, paths.deadLetters))
  }).pipe(
    Effect.provide(commandClient(options))
  )
