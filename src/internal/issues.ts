/**
 * Schema decode failures as short, readable issues, for everything that reports them to a
 * person: the seed file's errors, typed records' dead letters, the API's 400s.
 *
 * `ParseResult.ArrayFormatter` reports every member of a union that failed: an optional
 * field that is wrong also says `Expected undefined`, a nullable one `Expected null`, a
 * literal one `Expected "admin"` then `Expected "editor"`; and it echoes the whole value
 * that failed (a seed's invoice list, a record). Here those are folded: the union's other
 * members are dropped when a deeper or sibling issue says what is wrong, literals are listed
 * in one issue, and echoed values are cut.
 *
 * @since 0.1.0
 * @internal
 */
import { Option, ParseResult } from "effect"
import * as AST from "effect/SchemaAST"

/**
 * One issue: where (`["lines", 1, "qty"]`) and what.
 *
 * @since 0.1.0
 * @category models
 */
export interface Issue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/**
 * `["organizations", 0, "users"]` -> `organizations[0].users`; `""` for the value itself.
 *
 * @since 0.1.0
 * @category utils
 */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string => {
  let text = ""
  for (const key of path) {
    text += typeof key === "number" ? `[${key}]` : text === "" ? String(key) : `.${String(key)}`
  }
  return text
}

const maxActual = 60

const startsWith = (path: ReadonlyArray<PropertyKey>, prefix: ReadonlyArray<PropertyKey>) =>
  prefix.length <= path.length && prefix.every((key, i) => path[i] === key)

/** `Expected X, actual Y`, split; undefined for messages of another form (filters' own). */
const expectation = (message: string): { readonly expected: string; readonly actual: string } | undefined => {
  if (!message.startsWith("Expected ")) return undefined
  const at = message.indexOf(", actual ")
  return at < 0 ? undefined : { expected: message.slice("Expected ".length, at), actual: message.slice(at + ", actual ".length) }
}

/** The schema's name of a type, in words where it is an AST dump or the name of an object. */
const expectedText = (expected: string, objects: ReadonlySet<string>): string =>
  expected.startsWith("ReadonlyArray<") || expected.startsWith("readonly [")
    ? "an array"
    : expected.startsWith("{") || expected.includes("Struct (") || objects.has(expected)
    ? "an object"
    : expected

/**
 * The identifiers of the object schemas reachable from these: a struct named `MetricColumn`
 * fails as `Expected MetricColumn, actual "amount"`, which a caller cannot act on, while
 * `Expected an object` says what to send. Only formatted issues reach the API's error
 * mapping, so the names are collected from the schemas once, up front.
 *
 * @since 0.1.0
 * @category utils
 */
export const objectIdentifiers = (asts: Iterable<AST.AST>): ReadonlySet<string> => {
  const names = new Set<string>()
  const seen = new Set<AST.AST>()
  const pending = [...asts]
  const named = (ast: AST.AST) => {
    const id = AST.getIdentifierAnnotation(ast)
    if (Option.isSome(id)) names.add(id.value)
  }
  for (let ast = pending.pop(); ast !== undefined; ast = pending.pop()) {
    if (seen.has(ast)) continue
    seen.add(ast)
    switch (ast._tag) {
      case "TypeLiteral":
        named(ast)
        for (const property of ast.propertySignatures) pending.push(property.type)
        for (const index of ast.indexSignatures) pending.push(index.type)
        break
      case "Union":
        pending.push(...ast.types)
        break
      case "TupleType":
        for (const element of ast.elements) pending.push(element.type)
        for (const rest of ast.rest) pending.push(rest.type)
        break
      case "Refinement":
        pending.push(ast.from)
        break
      case "Transformation":
        if (AST.isTypeLiteral(ast.from) || AST.isTypeLiteral(ast.to)) named(ast)
        pending.push(ast.from, ast.to)
        break
      case "Suspend":
        pending.push(ast.f())
        break
      case "Declaration":
        pending.push(...ast.typeParameters)
        break
    }
  }
  return names
}

const actualText = (actual: string): string => actual.length > maxActual ? `${actual.slice(0, maxActual)}…` : actual

/** The members of a union that "failed" only because another member is the one meant. */
const isOtherMember = (expected: string) => expected === "undefined" || expected === "null"

/**
 * Folds a list of issues (see the module's comment); the order of first appearance is kept.
 * `objects` names the object schemas (`objectIdentifiers`), said as "an object".
 *
 * @since 0.1.0
 * @category utils
 */
export const tidyIssues = (
  issues: ReadonlyArray<Issue>,
  objects: ReadonlySet<string> = new Set()
): ReadonlyArray<Issue> => {
  const kept = issues.filter((issue) => {
    const parts = expectation(issue.message)
    if (parts === undefined || !isOtherMember(parts.expected)) return true
    return !issues.some((other) => other !== issue && startsWith(other.path, issue.path) && !isOtherMember(expectation(other.message)?.expected ?? ""))
  })
  const out: Array<Issue> = []
  const merged = new Map<string, { readonly at: number; readonly expected: Array<string>; readonly actual: string }>()
  for (const issue of kept) {
    const parts = expectation(issue.message)
    if (parts === undefined) {
      out.push(issue)
      continue
    }
    const key = formatPath(issue.path)
    const expected = expectedText(parts.expected, objects)
    const same = merged.get(key)
    if (same !== undefined && same.actual === parts.actual) {
      if (!same.expected.includes(expected)) same.expected.push(expected)
      out[same.at] = { path: issue.path, message: `Expected ${same.expected.join(" | ")}, actual ${actualText(parts.actual)}` }
      continue
    }
    merged.set(key, { at: out.length, expected: [expected], actual: parts.actual })
    out.push({ path: issue.path, message: `Expected ${expected}, actual ${actualText(parts.actual)}` })
  }
  return out
}

/**
 * A parse error's issues, folded (see `tidyIssues`).
 *
 * @since 0.1.0
 * @category utils
 */
export const parseIssues = (error: ParseResult.ParseError, objects?: ReadonlySet<string>): ReadonlyArray<Issue> =>
  tidyIssues(ParseResult.ArrayFormatter.formatErrorSync(error), objects)
