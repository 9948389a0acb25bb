/**
 * The `tributary` command line's front door.
 *
 * It reads the arguments against the command table (`commands.ts`) with nothing else loaded:
 * `--version`, help and usage errors are answered from there, and only a command that runs
 * loads its module (and Effect with it). Measured on the shared 2-core machine (2026-11-26):
 * loading @effect/cli and every command before parsing made `tributary --version` take
 * 1.3-4.7 s; see docs/decisions.md, "Command line", for the figures after.
 *
 * Exit codes: 0 success, 1 failure, 2 usage error, 130 for an ingest or backfill interrupted
 * (Ctrl-C or SIGTERM) before the end of its input; errors are one line on stderr.
 *
 * @since 0.1.0
 */
import { commands, version } from "./commands.js"
import { commandHelp, completionScript, overviewHelp, wantsColor } from "./help.js"
import { parseArgs, usageMessage } from "./parse.js"

const invocation = parseArgs(commands, process.argv.slice(2), process.env)
const style = { width: Math.min(100, process.stdout.columns ?? 100), color: wantsColor(process.stdout.isTTY, process.env) }

switch (invocation._tag) {
  case "Version":
    process.stdout.write(`${version}\n`)
    break
  case "Help":
    process.stdout.write(invocation.command === undefined ? overviewHelp(commands, version, style) : commandHelp(invocation.command, style))
    break
  case "Completion":
    process.stdout.write(completionScript(commands, invocation.shell))
    break
  case "UsageError":
    process.stderr.write(`${usageMessage(invocation.message, invocation.command)}\n`)
    process.exitCode = 2
    break
  case "Run": {
    const { command, values } = invocation
    // A signal while the command's modules load (a second or more on a busy machine) would
    // kill the process with 143 before any handler exists: it is held here and answered as
    // the command answers a stop, with nothing started yet.
    let early: NodeJS.Signals | undefined
    const hold = (signal: NodeJS.Signals) => (early = signal)
    process.on("SIGINT", hold).on("SIGTERM", hold)
    const [{ runCommand }, module] = await Promise.all([import("./runtime.js"), command.load()])
    process.off("SIGINT", hold).off("SIGTERM", hold)
    if (early !== undefined) {
      process.exitCode = command.stoppedExitCode
    } else {
      stopWithLauncher()
      runCommand(command.name, module.main(values as never))
    }
  }
}

/**
 * Under npx or an npm script, a signal sent to the launcher (`npx tributary serve &` then
 * `kill $!`) reaches npm and the shell it started, not this process, which would be left
 * running: when the launcher goes, this process stops as if it had been sent SIGTERM.
 */
function stopWithLauncher() {
  if (process.env["npm_command"] === undefined) return
  const launcher = process.ppid
  const watch = setInterval(() => {
    if (process.ppid === launcher) return
    clearInterval(watch)
    process.kill(process.pid, "SIGTERM")
  }, 250).unref()
}
