/**
 * `tributary replay FILE | --from-topic NAME --brokers ..`: send dead letters again, after the
 * data, the schema or the code was fixed. The filters and fixes are parsed here into the
 * pure ones of `Replay`; the replay itself is `Replay.replay`.
 *
 * @since 0.3.0
 */
import { createHash } from "node:crypto"
import { resolve } from "node:path"
import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import * as Kafka from "../../connectors/kafka/index.js"
import { TributaryClient } from "../client/Client.js"
import * as Checkpoint from "../pipeline/Checkpoint.js"
import * as DeadLetter from "../pipeline/DeadLetter.js"
import type { Progress } from "../pipeline/events.js"
import * as Replay from "../pipeline/Replay.js"
import { topReasons } from "../pipeline/run.js"
import { connectionOptions, interruptedExitCode, storedText } from "./ingest.js"
import { concurrencyOption as concurrency, restartOption as restart, retriesOption as retries } from "./options.js"
import { endProgress, progressDisplay } from "./progress.js"
import { schemaSummary } from "./schemaContract.js"

/**
 * `column=value`: the value read as JSON when it is JSON (`12`, `null`, `"12"`, `["a"]`), as
 * text otherwise (`EUR`).
 *
 * @since 0.3.0
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
 */
export const summarizeReplay = (progress: Progress, deadLetters: string) =>
  [
    `replayed ${progress.read} ${progress.read === 1 ? "letter" : "letters"}: ${storedText(progress)}, ` +
    `${progress.deadLettered} dead-lettered again`,
    progress.deadLettered > 0 ? `dead letters: ${deadLetters} (most: ${topReasons(progress.deadLetterReasons)})` : "no dead letters",
    ...schemaSummary(progress)
  ].join("\n")

const input = Args.text({ name: "FILE" }).pipe(Args.withDescription("Dead-letter file to replay (or --from-topic)"), Args.optional)
const fromTopic = Options.text("from-topic").pipe(Options.optional, Options.withDescription("Dead-letter topic to replay, read to its end (with --brokers)"))
const brokers = Options.text("brokers").pipe(Options.optional, Options.withDescription("Kafka brokers for --from-topic, HOST:PORT[,..]"))
const dataset = Options.text("dataset").pipe(
  Options.optional,
  Options.withDescription("Destination dataset (default: the one the letters name; letters written before they named one need it)")
)
const repeated = (name: string, description: string) => Options.text(name).pipe(Options.repeated, Options.withDescription(description))
const reason = repeated("reason", "Only letters with this reason: a code (invalid_type) or a code and field (\"invalid_type amount\"); repeat or comma-separate")
const stage = repeated("stage", "Only letters stopped at this stage: source, decode, transform, encode, validate, send, service")
const field = repeated("field", "Only letters whose reason names this field")
const partition = repeated("partition", "Only letters from this original partition (0 for a file, TOPIC:N for a Kafka partition)")
const from = Options.integer("from").pipe(Options.optional, Options.withDescription("Only letters at this original offset (line, Kafka offset, row) or after"))
const to = Options.integer("to").pipe(Options.optional, Options.withDescription("Only letters at this original offset or before"))
const setOption = repeated("set", "Fix: set column=value in every record (JSON when it parses: 12, null, \"12\"; text otherwise)")
const renameOption = repeated("rename", "Fix: rename column old=new")
const dropOption = repeated("drop", "Fix: drop this column")
const dryRun = Options.boolean("dry-run").pipe(Options.withDescription("Send nothing: count what would be sent, by reason"))
const deadLetter = Options.text("dead-letter").pipe(
  Options.optional,
  Options.withDescription("Where letters that fail again go (default: FILE.replay-dead-letters.ndjson; never the file being read)")
)
const checkpoint = Options.text("checkpoint").pipe(
  Options.optional,
  Options.withDescription("The replay's checkpoint, to resume it after a crash (default: FILE.replay.checkpoint.json)")
)

/** A usage problem found past option parsing: said on stderr, exit 2. */
const usage = (message: string) =>
  Effect.zipRight(Console.error(`tributary replay: ${message}`), Effect.fail(ValidationError.invalidValue(HelpDoc.p(message))))

/** @since 0.3.0 */
export const replayCommand = Command.make(
  "replay",
  {
    input,
    fromTopic,
    brokers,
    dataset,
    reason,
    stage,
    field,
    partition,
    from,
    to,
    set: setOption,
    rename: renameOption,
    drop: dropOption,
    dryRun,
    deadLetter,
    checkpoint,
    restart,
    concurrency,
    retries,
    ...connectionOptions
  },
  (options) =>
    Effect.gen(function*() {
      if (Option.isSome(options.input) === Option.isSome(options.fromTopic)) return yield* usage("give either FILE or --from-topic NAME")
      if (Option.isSome(options.fromTopic) && Option.isNone(options.brokers)) return yield* usage("--from-topic needs --brokers")
      const sets = options.set.map((text) => [text, parseSet(text)] as const)
      const renames = options.rename.map((text) => [text, parseRename(text)] as const)
      const badSet = sets.find(([, parsed]) => Option.isNone(parsed))
      if (badSet !== undefined) return yield* usage(`--set must look like column=value, got '${badSet[0]}'`)
      const badRename = renames.find(([, parsed]) => Option.isNone(parsed))
      if (badRename !== undefined) return yield* usage(`--rename must look like old=new, got '${badRename[0]}'`)

      const name = Option.match(options.input, { onSome: (path) => path, onNone: () => `replay-${Option.getOrThrow(options.fromTopic)}` })
      const paths = {
        deadLetters: Option.getOrElse(options.deadLetter, () => `${name}.replay-dead-letters.ndjson`),
        checkpoint: Option.getOrElse(options.checkpoint, () => `${name}.replay.checkpoint.json`)
      }
      if (Option.isSome(options.input) && resolve(paths.deadLetters) === resolve(options.input.value)) {
        return yield* usage("--dead-letter must not be the file being replayed (its letters would be read and written at once)")
      }
      const filter: Replay.Filter = {
        reasons: list(options.reason),
        stages: list(options.stage),
        fields: list(options.field),
        partitions: list(options.partition),
        from: Option.getOrUndefined(options.from),
        to: Option.getOrUndefined(options.to)
      }
      // Renames first, then sets, then drops: each flag's order among its own is kept.
      const transforms = [
        ...renames.map(([, parsed]) => Replay.rename(...Option.getOrThrow(parsed))),
        ...sets.map(([, parsed]) => Replay.set(...Option.getOrThrow(parsed))),
        ...options.drop.map((column) => Replay.drop(column))
      ]
      const letters = yield* Option.match(options.fromTopic, {
        onNone: () => Replay.readFile(Option.getOrThrow(options.input)),
        onSome: (topic) =>
          Effect.scoped(Effect.flatMap(
            Kafka.makeClient({ brokers: list([Option.getOrThrow(options.brokers)]), clientId: "tributary-replay" }),
            (client) => Effect.provideService(Kafka.readDeadLetterTopic(topic), Kafka.KafkaClient, client)
          ))
      })

      const groups = Replay.plan(letters, filter)
      if (groups.length === 0) {
        yield* Console.log(`nothing to replay: ${letters.length} ${letters.length === 1 ? "letter" : "letters"} read, none selected`)
        return
      }
      if (options.dryRun) {
        const counts = Replay.countByReason(groups)
        const total = counts.reduce((sum, [, n]) => sum + n, 0)
        const datasets = [...new Set(groups.flatMap((group) => group.letters.map((letter) => letter.dataset ?? "?")))]
        yield* Console.log(
          [
            `would replay ${total} of ${letters.length} ${letters.length === 1 ? "letter" : "letters"} ` +
            `into dataset ${Option.getOrElse(options.dataset, () => datasets.join(", ") || "?")}`,
            ...counts.map(([reason, n]) => `  ${reason}: ${n}`)
          ].join("\n")
        )
        return
      }

      const client = yield* TributaryClient
      const fingerprint = createHash("sha1")
        .update(JSON.stringify([filter, options.rename, options.set, options.drop]))
        .digest("hex")
        .slice(0, 12)
      const progress = yield* Replay.replay(client, {
        letters,
        description: Option.match(options.fromTopic, { onSome: (topic) => `dead-letter topic ${topic}`, onNone: () => `dead-letter file ${resolve(name)}` }),
        fingerprint: `filter and fix ${fingerprint}`,
        filter,
        transform: Replay.compose(transforms),
        destination: Option.match(options.dataset, { onNone: () => undefined, onSome: (datasetId) => ({ datasetId }) }),
        checkpoint: yield* Checkpoint.file(paths.checkpoint, { restart: options.restart }),
        deadLetters: yield* DeadLetter.ndjsonFile(paths.deadLetters),
        concurrency: options.concurrency,
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
      yield* Console.log(summarizeReplay(progress, paths.deadLetters))
    }).pipe(
      Effect.provide(TributaryClient.layer({ baseUrl: options.apiUrl, apiKey: options.apiKey, retry: { maxRetries: options.retries } }))
    )
).pipe(Command.withDescription("Send dead letters (a file, or a topic) again after a fix, effectively once; resumable"))
