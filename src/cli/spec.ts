/**
 * What a command line option is: its name, what it means, its default and environment
 * variable, and how its text becomes a value. Pure data and pure functions, with no import
 * of Effect: the front door (`main.ts`) parses, validates and prints help from these before
 * loading anything else, so that `--version`, `--help` and a usage error answer in the time
 * Node itself takes to start (Effect and @effect/cli alone took 1.0-1.8 s to load on the
 * shared 2-core machine, 2026-11-26; see docs/decisions.md, "Command line").
 *
 * @since 0.3.0
 */
import type * as NodeContext from "@effect/platform-node/NodeContext"
import type { Effect } from "effect"

/**
 * A decoded value, or the reason the text is not one (a sentence that names the option).
 *
 * @since 0.3.0
 * @category models
 */
export type Decoded<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly message: string }

/**
 * @since 0.3.0
 * @category constructors
 */
export const ok = <A>(value: A): Decoded<A> => ({ ok: true, value })

/**
 * @since 0.3.0
 * @category constructors
 */
export const fail = (message: string): Decoded<never> => ({ ok: false, message })

/**
 * An option (`--name VALUE`, or `--name` for a flag) or a positional argument.
 *
 * @since 0.3.0
 * @category models
 */
export interface OptionSpec<A> {
  /** The long name without `--`, or the positional argument's name as help shows it. */
  readonly name: string
  readonly positional: boolean
  /** What help shows for the value (`PORT`); none for a flag. */
  readonly placeholder: string | undefined
  readonly description: string
  /** The environment variable read when the option is not given. */
  readonly env: string | undefined
  /** The default as help shows it. */
  readonly defaultText: string | undefined
  readonly required: boolean
  readonly repeatable: boolean
  /** A secret: help never shows its environment value, errors never echo it. */
  readonly secret: boolean
  /**
   * The value from the texts given (on the command line, or the environment variable's,
   * as one text); an empty list when neither gave one.
   */
  readonly decode: (given: ReadonlyArray<string>) => Decoded<A>
}

/**
 * The values a map of options decodes to.
 *
 * @since 0.3.0
 * @category models
 */
export type Values<O extends Record<string, OptionSpec<any>>> = { readonly [K in keyof O]: O[K] extends OptionSpec<infer A> ? A : never }

/**
 * `--name` followed by the option's name, as messages say it.
 *
 * @since 0.3.0
 * @category utils
 */
export const label = (spec: Pick<OptionSpec<unknown>, "name" | "positional">) => spec.positional ? spec.name : `--${spec.name}`

const base = (name: string, placeholder: string | undefined, description: string) => ({
  name,
  positional: false,
  placeholder,
  description,
  env: undefined,
  defaultText: undefined,
  required: true,
  repeatable: false,
  secret: false
})

const missing = (
  spec: { readonly name: string; readonly positional: boolean; readonly env: string | undefined; readonly description: string }
) =>
  fail(
    spec.positional
      ? `${spec.name} is missing: ${spec.description}`
      : `--${spec.name} is missing${spec.env === undefined ? "" : ` (or set ${spec.env})`}`
  )

/**
 * `--name TEXT`, required until a default or `optional` says otherwise.
 *
 * @since 0.3.0
 * @category constructors
 */
export const text = (name: string, placeholder: string, description: string): OptionSpec<string> => {
  const spec = { ...base(name, placeholder, description) }
  return { ...spec, decode: (given) => given.length === 0 ? missing(spec) : ok(given[given.length - 1]!) }
}

/**
 * A positional argument.
 *
 * @since 0.3.0
 * @category constructors
 */
export const positional = (name: string, description: string): OptionSpec<string> => {
  const spec = { ...base(name, name, description), positional: true }
  return { ...spec, decode: (given) => given.length === 0 ? missing(spec) : ok(given[given.length - 1]!) }
}

/**
 * `--name` with no value: true when given. Its environment variable reads `true`/`1`/`yes`
 * or `false`/`0`/`no`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const flag = (name: string, description: string): OptionSpec<boolean> => ({
  ...base(name, undefined, description),
  required: false,
  decode: (given) => {
    if (given.length === 0) return ok(false)
    const value = given[given.length - 1]!.trim().toLowerCase()
    if (["true", "1", "yes", ""].includes(value)) return ok(true)
    if (["false", "0", "no"].includes(value)) return ok(false)
    return fail(`--${name} is true or false, got '${given[given.length - 1]}'`)
  }
})

/**
 * A whole number of at least `min`, with the option named in the message.
 *
 * @since 0.3.0
 * @category utils
 */
export const parseInteger = (name: string, textValue: string, min: number | undefined): Decoded<number> => {
  const trimmed = textValue.trim()
  const n = /^-?[0-9]+$/.test(trimmed) ? Number(trimmed) : NaN
  if (!Number.isSafeInteger(n)) return fail(`--${name} must be a whole number, got '${textValue}'`)
  if (min !== undefined && n < min) return fail(`--${name} must be at least ${min}, got ${n}`)
  return ok(n)
}

/**
 * `--name N`, a whole number (of at least `min` when given).
 *
 * @since 0.3.0
 * @category constructors
 */
export const integer = (name: string, placeholder: string, description: string, min?: number): OptionSpec<number> =>
  map(text(name, placeholder, description), (value) => parseInteger(name, value, min))

/**
 * `--name A|B|C`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const choice = <const C extends string>(name: string, choices: ReadonlyArray<C>, description: string): OptionSpec<C> =>
  map(text(name, choices.join("|"), description), (value) =>
    (choices as ReadonlyArray<string>).includes(value)
      ? ok(value as C)
      : fail(`--${name} must be one of ${choices.join(", ")}, got '${value}'`))

/**
 * The value decoded further (a check, a conversion), with the option's texts kept.
 *
 * @since 0.3.0
 * @category combinators
 */
export const map = <A, B>(spec: OptionSpec<A>, f: (a: A) => Decoded<B>): OptionSpec<B> => ({
  ...spec,
  decode: (given) => {
    const decoded = spec.decode(given)
    return decoded.ok ? f(decoded.value) : decoded
  }
})

/**
 * Read from `variable` when not given.
 *
 * @since 0.3.0
 * @category combinators
 */
export const withEnv = <A>(spec: OptionSpec<A>, variable: string): OptionSpec<A> => {
  const next = { ...spec, env: variable }
  // The missing-option message names the variable too.
  return { ...next, decode: (given) => given.length === 0 && spec.required ? missing(next) : spec.decode(given) }
}

/**
 * `fallback` when not given; `shown` is what help prints (the value's text by default).
 *
 * @since 0.3.0
 * @category combinators
 */
export const withDefault = <A>(spec: OptionSpec<A>, fallback: A, shown: string = String(fallback)): OptionSpec<A> => ({
  ...spec,
  required: false,
  defaultText: shown,
  decode: (given) => given.length === 0 ? ok(fallback) : spec.decode(given)
})

/**
 * `undefined` when not given; `shown` says in help what happens then.
 *
 * @since 0.3.0
 * @category combinators
 */
export const optional = <A>(spec: OptionSpec<A>, shown?: string): OptionSpec<A | undefined> => ({
  ...spec,
  required: false,
  defaultText: shown,
  decode: (given) => given.length === 0 ? ok(undefined) : spec.decode(given)
})

/**
 * Given at least once; every occurrence is kept (`--topic a --topic b`).
 *
 * @since 0.3.0
 * @category combinators
 */
export const repeated = <A>(spec: OptionSpec<A>): OptionSpec<ReadonlyArray<A>> => ({
  ...spec,
  repeatable: true,
  decode: (given) => {
    if (given.length === 0) return spec.decode(given) as Decoded<never>
    const values: Array<A> = []
    for (const one of given) {
      const decoded = spec.decode([one])
      if (!decoded.ok) return decoded
      values.push(decoded.value)
    }
    return ok(values)
  }
})

/**
 * A secret (an API key, a password): never echoed.
 *
 * @since 0.3.0
 * @category combinators
 */
export const secret = <A>(spec: OptionSpec<A>): OptionSpec<A> => ({ ...spec, secret: true })

/**
 * One command: what it is for, its options, and the module that runs it, loaded only when
 * the command is run.
 *
 * @since 0.3.0
 * @category models
 */
export interface CommandSpec<O extends Record<string, OptionSpec<any>> = any> {
  readonly name: string
  /** One line for the list of commands. */
  readonly summary: string
  /** Paragraphs for the command's own help. */
  readonly description: ReadonlyArray<string>
  readonly options: O
  /** Groups of option keys with a heading, in the order help shows them. */
  readonly groups?: ReadonlyArray<{ readonly title: string; readonly keys: ReadonlyArray<keyof O & string> }>
  readonly examples: ReadonlyArray<{ readonly what: string; readonly command: string }>
  /** The exit code of a stop by Ctrl-C or SIGTERM: 0 for what runs until stopped, 130 for a job. */
  readonly stoppedExitCode: 0 | 130
  readonly load: () => Promise<{ readonly main: (values: Values<O>) => Effect.Effect<unknown, unknown, NodeContext.NodeContext> }>
}

/**
 * A command whose handler is typed by its options.
 *
 * @since 0.3.0
 * @category constructors
 */
export const command = <O extends Record<string, OptionSpec<any>>>(spec: CommandSpec<O>): CommandSpec<O> => spec
