/**
 * The command line read against the command table: what to do (help, the version, a usage
 * error, or a command with its decoded values). Pure: the arguments and the environment in,
 * a decision out; `main.ts` acts on it.
 *
 * Conventions, as most tools have them: `--name value` and `--name=value`; `-h`/`--help`
 * anywhere; `--` ends the options; a lone `-` is a positional argument (standard input).
 *
 * @since 0.3.0
 */
import type { CommandSpec, OptionSpec } from "./spec.js"

/**
 * What the command line asks for.
 *
 * @since 0.3.0
 * @category models
 */
export type Invocation =
  | { readonly _tag: "Help"; readonly command: CommandSpec | undefined }
  | { readonly _tag: "Version" }
  | { readonly _tag: "Completion"; readonly shell: string }
  | { readonly _tag: "UsageError"; readonly message: string; readonly command: CommandSpec | undefined }
  | { readonly _tag: "Run"; readonly command: CommandSpec; readonly values: Record<string, unknown> }

/** The edit distance of two short words, for "did you mean". */
const distance = (a: string, b: string): number => {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1))
      previous = current
    }
  }
  return row[b.length]!
}

/**
 * The closest of `candidates` to `word`, when close enough to be a slip.
 *
 * @since 0.3.0
 * @category utils
 */
export const closest = (word: string, candidates: ReadonlyArray<string>): string | undefined => {
  let best: { readonly candidate: string; readonly d: number } | undefined
  for (const candidate of candidates) {
    const d = distance(word, candidate)
    if (best === undefined || d < best.d) best = { candidate, d }
  }
  return best !== undefined && best.d <= Math.max(1, Math.floor(word.length / 3)) ? best.candidate : undefined
}

const usageError = (message: string, command: CommandSpec | undefined): Invocation => ({ _tag: "UsageError", message, command })

/**
 * Reads `args` (the arguments after the program's name) against `commands`, taking the
 * values of options not given from `env`.
 *
 * @since 0.3.0
 * @category utils
 */
export const parseArgs = (
  commands: ReadonlyArray<CommandSpec>,
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): Invocation => {
  const [first, ...rest] = args
  if (first === undefined || first === "-h" || first === "--help") return { _tag: "Help", command: undefined }
  if (first === "-V" || first === "--version" || first === "version") return { _tag: "Version" }
  if (first === "help") {
    if (rest[0] === undefined) return { _tag: "Help", command: undefined }
    const named = commands.find((c) => c.name === rest[0])
    return named === undefined ? unknownCommand(commands, rest[0]) : { _tag: "Help", command: named }
  }
  if (first === "completion") {
    const shell = rest[0] ?? "bash"
    return ["bash", "zsh"].includes(shell)
      ? { _tag: "Completion", shell }
      : usageError(`completion is for bash or zsh, got '${shell}'`, undefined)
  }
  const command = commands.find((c) => c.name === first)
  if (command === undefined) return unknownCommand(commands, first)
  if (rest.includes("-h") || rest.includes("--help")) return { _tag: "Help", command }
  return parseCommand(command, rest, env)
}

const unknownCommand = (commands: ReadonlyArray<CommandSpec>, word: string): Invocation => {
  const names = commands.map((c) => c.name)
  const guess = closest(word.replace(/^-+/, ""), names)
  return usageError(
    word.startsWith("-")
      ? `unknown option ${word}; a command comes first (${names.join(", ")})`
      : `unknown command '${word}'${guess === undefined ? "" : `; did you mean '${guess}'?`} (commands: ${names.join(", ")})`,
    undefined
  )
}

/**
 * Reads one command's arguments.
 *
 * @since 0.3.0
 * @category utils
 */
export const parseCommand = (
  command: CommandSpec,
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): Invocation => {
  const entries = Object.entries(command.options) as Array<[string, OptionSpec<unknown>]>
  const byName = new Map(entries.filter(([, spec]) => !spec.positional).map(([key, spec]) => [spec.name, { key, spec }]))
  const positionals = entries.filter(([, spec]) => spec.positional)
  const given = new Map<string, Array<string>>()
  const add = (key: string, value: string) => given.set(key, [...(given.get(key) ?? []), value])
  let free: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--") {
      free = [...free, ...args.slice(i + 1)]
      break
    }
    if (!arg.startsWith("--") || arg === "-") {
      if (arg.startsWith("-") && arg !== "-") return usageError(`unknown option ${arg}`, command)
      free.push(arg)
      continue
    }
    const at = arg.indexOf("=")
    const name = arg.slice(2, at === -1 ? undefined : at)
    const found = byName.get(name)
    if (found === undefined) {
      const guess = closest(name, [...byName.keys()])
      return usageError(
        `unknown option --${name}${guess === undefined ? "" : `; did you mean --${guess}?`}`,
        command
      )
    }
    if (found.spec.placeholder === undefined) {
      add(found.key, at === -1 ? "true" : arg.slice(at + 1))
      continue
    }
    if (at !== -1) {
      add(found.key, arg.slice(at + 1))
      continue
    }
    const value = args[i + 1]
    // A value may start with "-" (a negative number, "-" itself) but not with "--".
    if (value === undefined || (value.startsWith("--") && value.length > 2)) {
      return usageError(`--${name} needs a value (${found.spec.placeholder})`, command)
    }
    add(found.key, value)
    i++
  }
  if (free.length > positionals.length) {
    const extra = free.slice(positionals.length)
    return usageError(
      positionals.length === 0
        ? `tributary ${command.name} takes no arguments, got '${extra.join(" ")}'`
        : `unexpected argument '${extra[0]}' (tributary ${command.name} takes ${positionals.map(([, spec]) => spec.name).join(" ")})`,
      command
    )
  }
  positionals.forEach(([key], i) => {
    if (free[i] !== undefined) given.set(key, [free[i]!])
  })
  const values: Record<string, unknown> = {}
  const problems: Array<string> = []
  for (const [key, spec] of entries) {
    const fromEnv = spec.env === undefined ? undefined : env[spec.env]
    const texts = given.get(key) ?? (fromEnv === undefined || fromEnv === "" ? [] : [fromEnv])
    const decoded = spec.decode(texts)
    if (decoded.ok) values[key] = decoded.value
    else problems.push(given.has(key) || texts.length === 0 ? decoded.message : `${decoded.message} (from ${spec.env})`)
  }
  if (problems.length > 0) return usageError(problems.join("; "), command)
  return { _tag: "Run", command, values }
}

/**
 * How a usage error reads: one line, the problem and where to look.
 *
 * @since 0.3.0
 * @category utils
 */
export const usageMessage = (message: string, command: CommandSpec | undefined) => {
  const name = `tributary${command === undefined ? "" : ` ${command.name}`}`
  return `${name}: ${message} (see ${name} --help)`
}
