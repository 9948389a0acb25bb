/**
 * The `tributary` command line.
 *
 * Exit codes: 0 success, 1 failure, 2 usage error, 130 for an ingest or backfill interrupted (Ctrl-C or
 * SIGTERM) before the end of its input; errors are one line on stderr.
 *
 * @since 0.1.0
 */
import { Command, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Effect, Exit } from "effect"
import { demoCommand } from "./demo.js"
import { backfillCommand } from "./backfill.js"
import { ingestCommand, stdinPath } from "./ingest.js"
import { replayCommand } from "./replay.js"
import { serveCommand } from "./serve.js"
import { sinkCommand } from "./sink.js"

const tributary = Command.make("tributary").pipe(
  Command.withDescription("Move records into the Data Ingestion Service, effectively once"),
  Command.withSubcommands([serveCommand, ingestCommand, sinkCommand, backfillCommand, replayCommand, demoCommand])
)

const cli = Command.run(tributary, { name: "tributary", version: "0.1.0" })

/** One clear line for what went wrong, and the exit code it deserves. */
const reportFailure = (cause: Cause.Cause<unknown>) => {
  const failure = Cause.squash(cause)
  if (ValidationError.isValidationError(failure)) {
    // @effect/cli has already printed the usage problem.
    return Effect.sync(() => (process.exitCode = 2))
  }
  const message = failure instanceof Error ? failure.message : String(failure)
  return Console.error(`tributary: ${message}`).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))
}

// @effect/cli reads a lone "-" as an unknown flag; the conventional stdin argument is
// passed on under the name the ingest command also accepts for it.
const argv = process.argv.map((arg) => (arg === "-" ? stdinPath : arg))

cli(argv).pipe(
  Effect.catchAllCause((cause) => Cause.isInterruptedOnly(cause) ? Effect.void : reportFailure(cause)),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // A command sets its own code for an interruption: `serve` ends normally on Ctrl-C, an
    // unfinished `ingest` does not.
    teardown: (exit, onExit) =>
      onExit(Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) ? 1 : Number(process.exitCode ?? 0))
  })
)
