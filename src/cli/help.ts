/**
 * Help written for people, from the command table: one line a command in the list; for a
 * command, its usage line, what it does, each option with its meaning, default and
 * environment variable, and examples. Pure: the text for a width, with or without bold
 * headings (only on a terminal, and never with `NO_COLOR` set; `main.ts` decides).
 *
 * @since 0.3.0
 */
import { type CommandSpec, label, type OptionSpec } from "./spec.js"

/**
 * How help is laid out.
 *
 * @since 0.3.0
 * @category models
 */
export interface HelpStyle {
  /** Columns to wrap at. */
  readonly width: number
  /** Bold headings (ANSI). */
  readonly color: boolean
}

/**
 * Colour only for a terminal, and never when `NO_COLOR` is set (https://no-color.org) or
 * `TERM` is `dumb`.
 *
 * @since 0.3.0
 * @category guards
 */
export const wantsColor = (isTTY: boolean | undefined, env: Readonly<Record<string, string | undefined>>) =>
  isTTY === true && (env["NO_COLOR"] === undefined || env["NO_COLOR"] === "") && env["TERM"] !== "dumb"

const heading = (style: HelpStyle, text: string) => style.color ? `\x1b[1m${text}\x1b[0m` : text

/**
 * `text` wrapped at `width`, every line after the first indented by `indent`.
 *
 * @since 0.3.0
 * @category utils
 */
export const wrap = (text: string, width: number, indent: number): string => {
  const room = Math.max(20, width - indent)
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line !== "" && line.length + 1 + word.length > room) {
      lines.push(line)
      line = word
    } else {
      line = line === "" ? word : `${line} ${word}`
    }
  }
  if (line !== "") lines.push(line)
  return lines.join(`\n${" ".repeat(indent)}`)
}

/** Two columns: the terms padded to the longest (up to a limit), the text wrapped beside them. */
const table = (rows: ReadonlyArray<readonly [string, string]>, width: number): string => {
  const column = Math.min(30, Math.max(...rows.map(([term]) => term.length))) + 4
  return rows.map(([term, text]) =>
    term.length + 4 > column
      ? `  ${term}\n${" ".repeat(column)}${wrap(text, width, column)}`
      : `  ${term.padEnd(column - 2)}${wrap(text, width, column)}`
  ).join("\n")
}

const optionTerm = (spec: OptionSpec<unknown>) =>
  spec.positional ? spec.name : `--${spec.name}${spec.placeholder === undefined ? "" : ` ${spec.placeholder}`}`

const optionText = (spec: OptionSpec<unknown>) => {
  const notes = [
    spec.required && spec.env === undefined ? "required" : undefined,
    spec.required && spec.env !== undefined ? `required, or set ${spec.env}` : undefined,
    !spec.required && spec.env !== undefined ? `env ${spec.env}` : undefined,
    spec.defaultText === undefined ? undefined : `default: ${spec.defaultText}`,
    spec.repeatable ? "repeat for several" : undefined
  ].filter((note) => note !== undefined)
  return notes.length === 0 ? spec.description : `${spec.description} [${notes.join("; ")}]`
}

/**
 * The usage line of a command: its positional arguments and required options, then
 * `[options]`.
 *
 * @since 0.3.0
 * @category utils
 */
export const usageLine = (command: CommandSpec) => {
  const specs = Object.values(command.options) as Array<OptionSpec<unknown>>
  const positional = specs.filter((spec) => spec.positional).map((spec) => spec.required ? spec.name : `[${spec.name}]`)
  const required = specs.filter((spec) => !spec.positional && spec.required && spec.env === undefined)
    .map((spec) => `${label(spec)} ${spec.placeholder}${spec.repeatable ? "..." : ""}`)
  return ["tributary", command.name, ...positional, ...required, "[options]"].join(" ")
}

/**
 * Help for the whole command: the commands, one line each, and where to go next.
 *
 * @since 0.3.0
 * @category utils
 */
export const overviewHelp = (commands: ReadonlyArray<CommandSpec>, version: string, style: HelpStyle) =>
  [
    wrap(`tributary ${version}: move Kafka topics, Postgres tables and NDJSON files into the Data Ingestion Service, effectively once`, style.width, 0),
    "",
    heading(style, "USAGE"),
    "  tributary <command> [options]",
    "",
    heading(style, "COMMANDS"),
    table(commands.map((c) => [c.name, c.summary] as const), style.width),
    "",
    heading(style, "OPTIONS"),
    table([
      ["-h, --help", "Show help; tributary <command> --help for a command's options"],
      ["-V, --version", "Print the version"]
    ], style.width),
    "",
    heading(style, "MORE"),
    table([
      ["tributary help <command>", "A command's options, defaults, environment variables and examples"],
      ["tributary completion bash|zsh", "A shell completion script: eval \"$(tributary completion bash)\""]
    ], style.width),
    "",
    heading(style, "EXIT CODES"),
    "  0 success, 1 failure, 2 usage error, 130 interrupted before the end of the input",
    ""
  ].join("\n")

/**
 * Help for one command.
 *
 * @since 0.3.0
 * @category utils
 */
export const commandHelp = (command: CommandSpec, style: HelpStyle) => {
  const entries = Object.entries(command.options) as Array<[string, OptionSpec<unknown>]>
  const positional = entries.filter(([, spec]) => spec.positional)
  const groups = command.groups ?? [{ title: "OPTIONS", keys: entries.filter(([, s]) => !s.positional).map(([k]) => k) }]
  const grouped = new Set(groups.flatMap((group) => group.keys))
  const rest = entries.filter(([key, spec]) => !spec.positional && !grouped.has(key)).map(([key]) => key)
  const sections = [...groups, ...(rest.length === 0 ? [] : [{ title: "OTHER OPTIONS", keys: rest }])]
  const optionsOf = (keys: ReadonlyArray<string>) =>
    table(keys.map((key) => command.options[key] as OptionSpec<unknown>).map((spec) => [optionTerm(spec), optionText(spec)] as const), style.width)
  return [
    wrap(`tributary ${command.name}: ${command.summary}`, style.width, 0),
    "",
    heading(style, "USAGE"),
    `  ${wrap(usageLine(command), style.width, 4)}`,
    "",
    ...command.description.flatMap((paragraph) => [`  ${wrap(paragraph, style.width, 2)}`, ""]),
    ...(positional.length === 0
      ? []
      : [heading(style, "ARGUMENTS"), table(positional.map(([, spec]) => [spec.name, optionText(spec)] as const), style.width), ""]),
    ...sections.flatMap((section) => [heading(style, section.title), optionsOf(section.keys), ""]),
    heading(style, "EXAMPLES"),
    ...command.examples.flatMap((example) => [`  # ${example.what}`, `  ${example.command}`]),
    ""
  ].join("\n")
}

/**
 * A completion script for bash or zsh (zsh through `bashcompinit`): the commands, then each
 * command's options.
 *
 * @since 0.3.0
 * @category utils
 */
export const completionScript = (commands: ReadonlyArray<CommandSpec>, shell: string) => {
  const cases = commands.map((c) => {
    const names = (Object.values(c.options) as Array<OptionSpec<unknown>>).filter((s) => !s.positional).map(label)
    return `    ${c.name}) opts="${[...names, "--help"].join(" ")}" ;;`
  })
  return [
    ...(shell === "zsh" ? ["autoload -U +X bashcompinit && bashcompinit"] : []),
    "_tributary() {",
    "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" opts",
    "  if [ \"$COMP_CWORD\" -eq 1 ]; then",
    `    COMPREPLY=( $(compgen -W "${commands.map((c) => c.name).join(" ")} help completion --help --version" -- "$cur") ); return`,
    "  fi",
    "  case \"${COMP_WORDS[1]}\" in",
    ...cases,
    "    *) opts=\"\" ;;",
    "  esac",
    "  if [[ \"$cur\" == -* ]]; then COMPREPLY=( $(compgen -W \"$opts\" -- \"$cur\") ); else COMPREPLY=( $(compgen -f -- \"$cur\") ); fi",
    "}",
    "complete -F _tributary tributary",
    ""
  ].join("\n")
}
