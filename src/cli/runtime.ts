/**
 * Runs a command's program: the platform's context, one line on stderr for a failure, and
 * the exit code (0 success, 1 failure, 2 usage error; a command sets its own code for an
 * interruption: `serve` and `sink` end normally on Ctrl-C, an unfinished `ingest` with 130).
 *
 * @since 0.3.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Effect, Exit } from "effect"
import { failureMessage, UsageError } from "./errors.js"

/**
 * Runs `program` as the process's main program, as `tributary NAME`.
 *
 * @since 0.3.0
 * @category running
 */
export const runCommand = (name: string, program: Effect.Effect<unknown, unknown, NodeContext.NodeContext>) =>
  program.pipe(
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.void
      const failure = Cause.squash(cause)
      const code = failure instanceof UsageError ? 2 : 1
      const line = failure instanceof UsageError
        ? `tributary ${name}: ${failure.reason} (see tributary ${name} --help)`
        : `tributary: ${failureMessage(failure)}`
      return Console.error(line).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = code))))
    }),
    Effect.provide(NodeContext.layer),
    NodeRuntime.runMain({
      disableErrorReporting: true,
      teardown: (exit, onExit) =>
        onExit(Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) ? 1 : Number(process.exitCode ?? 0))
    })
  )
