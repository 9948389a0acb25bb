/**
 * Formulas of calculated columns: a small expression language, parsed by a hand-written
 * recursive-descent parser into a tree that this module evaluates itself.
 *
 * Nothing here reaches JavaScript: no `eval`, no `Function`, no property access on host
 * objects. Column references and function names are looked up in `Map`s (never in plain
 * objects, whose prototype would answer `constructor` or `__proto__`), so `$constructor` is an
 * unknown column and `constructor(...)` an unknown function.
 *
 * Syntax (keywords and function names are case-insensitive):
 * - column references: `$amount` (letters, digits, `_`), or `${unit price}` for any other id
 *   (inside the braces `\}` is `}` and `\\` is `\`);
 * - numbers `12`, `1.5`, `2e3`; strings `'text'` or `"text"` with `\` escapes; `TRUE`, `FALSE`, `NULL`;
 * - arithmetic `+ - * / %`, comparison `= == != <> < <= > >=`, boolean `AND OR NOT` (also `&& || !`),
 *   parentheses, and calls of the functions in `functions.ts`.
 *
 * Limits (so that a formula's cost is bounded before it runs): {@link MaxFormulaLength}
 * characters, {@link MaxDepth} levels of nesting, {@link MaxStringLiteral} characters per string
 * literal, {@link MaxNumberLiteral} characters per number literal (and a finite value).
 *
 * Positions in errors are 1-based character positions in the formula text.
 *
 * @since 0.1.0
 */
import { withArticle } from "../../../internal/text.js"
import { functionByName } from "./functions.js"
import { compareValues, type FormulaType, type Value } from "./values.js"

/**
 * @since 0.1.0
 * @category defaults
 */
export const MaxFormulaLength = 2000
/**
 * @since 0.1.0
 * @category defaults
 */
export const MaxDepth = 32
/**
 * @since 0.1.0
 * @category defaults
 */
export const MaxStringLiteral = 1000
/**
 * @since 0.1.0
 * @category defaults
 */
export const MaxNumberLiteral = 32

/** @since 0.1.0 @category models */
export type BinaryOperator = "+" | "-" | "*" | "/" | "%" | "=" | "!=" | "<" | "<=" | ">" | ">=" | "AND" | "OR"

/**
 * The expression tree. `position` is where the node starts (1-based).
 *
 * @since 0.1.0
 * @category models
 */
export type Expr =
  | { readonly _tag: "Literal"; readonly value: Value; readonly type: FormulaType; readonly position: number }
  | { readonly _tag: "Column"; readonly id: string; readonly position: number }
  | { readonly _tag: "Unary"; readonly op: "-" | "NOT"; readonly arg: Expr; readonly position: number }
  | {
    readonly _tag: "Binary"
    readonly op: BinaryOperator
    readonly left: Expr
    readonly right: Expr
    readonly position: number
  }
  | { readonly _tag: "Call"; readonly name: string; readonly args: ReadonlyArray<Expr>; readonly position: number }

/**
 * A formula that does not parse or does not type-check.
 *
 * @since 0.1.0
 * @category errors
 */
export class FormulaError {
  readonly _tag = "FormulaError"
  constructor(readonly position: number, readonly message: string) {}
}

type Token =
  | { readonly kind: "number"; readonly value: number; readonly position: number }
  | { readonly kind: "string"; readonly value: string; readonly position: number }
  | { readonly kind: "column"; readonly value: string; readonly position: number }
  | { readonly kind: "name"; readonly value: string; readonly position: number }
  | { readonly kind: "op"; readonly value: string; readonly position: number }
  | { readonly kind: "end"; readonly value: ""; readonly position: number }

const isDigit = (c: string) => c >= "0" && c <= "9"
const isNameChar = (c: string) => (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || isDigit(c) || c === "_"
const isSpace = (c: string) => c === " " || c === "\t" || c === "\n" || c === "\r"

// Longest first, so that `<=` is not read as `<` then `=`.
const operators = ["<=", ">=", "!=", "<>", "==", "&&", "||", "+", "-", "*", "/", "%", "=", "<", ">", "!", "(", ")", ","]

const escapes = new Map([["n", "\n"], ["t", "\t"], ["r", "\r"], ["\\", "\\"], ["'", "'"], ["\"", "\""], ["}", "}"]])

/** Splits a formula into tokens; the text is already known to be at most `MaxFormulaLength` long. */
const tokenize = (text: string): ReadonlyArray<Token> => {
  const tokens: Array<Token> = []
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    const position = i + 1
    if (isSpace(c)) {
      i++
    } else if (isDigit(c) || (c === "." && isDigit(text[i + 1] ?? ""))) {
      let j = i
      while (j < text.length && isDigit(text[j]!)) j++
      if (text[j] === ".") {
        j++
        while (j < text.length && isDigit(text[j]!)) j++
      }
      if (text[j] === "e" || text[j] === "E") {
        let k = j + 1
        if (text[k] === "+" || text[k] === "-") k++
        if (!isDigit(text[k] ?? "")) throw new FormulaError(j + 1, "a number's exponent needs digits")
        while (k < text.length && isDigit(text[k]!)) k++
        j = k
      }
      if (j - i > MaxNumberLiteral) {
        throw new FormulaError(position, `a number literal may have at most ${MaxNumberLiteral} characters`)
      }
      const value = Number(text.slice(i, j))
      if (!Number.isFinite(value)) throw new FormulaError(position, "the number is too large")
      if (isNameChar(text[j] ?? "")) throw new FormulaError(j + 1, `unexpected character "${text[j]}" after a number`)
      tokens.push({ kind: "number", value, position })
      i = j
    } else if (c === "'" || c === "\"") {
      let j = i + 1
      let value = ""
      for (;;) {
        if (j >= text.length) throw new FormulaError(position, "the string is not closed")
        const d = text[j]!
        if (d === c) break
        if (d === "\\") {
          const escaped = escapes.get(text[j + 1] ?? "")
          if (escaped === undefined) throw new FormulaError(j + 1, "unknown escape in a string")
          value += escaped
          j += 2
        } else {
          value += d
          j++
        }
        if (value.length > MaxStringLiteral) {
          throw new FormulaError(position, `a string literal may have at most ${MaxStringLiteral} characters`)
        }
      }
      tokens.push({ kind: "string", value, position })
      i = j + 1
    } else if (c === "$") {
      if (text[i + 1] === "{") {
        let j = i + 2
        let value = ""
        for (;;) {
          if (j >= text.length) throw new FormulaError(position, "the column reference is not closed with }")
          const d = text[j]!
          if (d === "}") break
          if (d === "\\" && (text[j + 1] === "}" || text[j + 1] === "\\")) {
            value += text[j + 1]
            j += 2
          } else {
            value += d
            j++
          }
        }
        if (value.length === 0) throw new FormulaError(position, "empty column reference")
        tokens.push({ kind: "column", value, position })
        i = j + 1
      } else {
        let j = i + 1
        while (j < text.length && isNameChar(text[j]!)) j++
        if (j === i + 1) throw new FormulaError(position, "a column reference needs a name after $ (use ${...} for other ids)")
        tokens.push({ kind: "column", value: text.slice(i + 1, j), position })
        i = j
      }
    } else if (isNameChar(c)) {
      let j = i
      while (j < text.length && isNameChar(text[j]!)) j++
      tokens.push({ kind: "name", value: text.slice(i, j), position })
      i = j
    } else {
      const op = operators.find((o) => text.startsWith(o, i))
      if (op === undefined) throw new FormulaError(position, `unexpected character "${c}"`)
      tokens.push({ kind: "op", value: op, position })
      i += op.length
    }
  }
  tokens.push({ kind: "end", value: "", position: text.length + 1 })
  return tokens
}

const comparison = new Map<string, BinaryOperator>([
  ["=", "="],
  ["==", "="],
  ["!=", "!="],
  ["<>", "!="],
  ["<", "<"],
  ["<=", "<="],
  [">", ">"],
  [">=", ">="]
])

const orOps = new Map<string, BinaryOperator>([["OR", "OR"], ["||", "OR"]])
const andOps = new Map<string, BinaryOperator>([["AND", "AND"], ["&&", "AND"]])
const additiveOps = new Map<string, BinaryOperator>([["+", "+"], ["-", "-"]])
const multiplicativeOps = new Map<string, BinaryOperator>([["*", "*"], ["/", "/"], ["%", "%"]])

const describe = (t: Token) => t.kind === "end" ? "the end of the formula" : `"${t.value}"`

/**
 * Parses a formula into its tree. Throws {@link FormulaError}; use {@link parseFormula}.
 *
 * Grammar, loosest first: or := and (OR and)*; and := not (AND not)*;
 * not := NOT not | cmp; cmp := add (CMP add)?; add := mul ((+|-) mul)*;
 * mul := unary ((*|/|%) unary)*; unary := - unary | + unary | primary;
 * primary := literal | column | name ( args ) | ( or ).
 * Every rule that can nest counts a level, so 10,000 parentheses fail at level
 * {@link MaxDepth} instead of exhausting the stack.
 */
class Parser {
  private i = 0
  constructor(private readonly tokens: ReadonlyArray<Token>) {}

  private peek(): Token {
    return this.tokens[this.i]!
  }
  private next(): Token {
    return this.tokens[this.i++]!
  }
  private isOp(value: string): boolean {
    const t = this.peek()
    return t.kind === "op" && t.value === value
  }
  private isKeyword(value: string): boolean {
    const t = this.peek()
    return t.kind === "name" && t.value.toUpperCase() === value
  }
  private enter(depth: number, position: number): number {
    if (depth >= MaxDepth) throw new FormulaError(position, `the formula nests more than ${MaxDepth} levels`)
    return depth + 1
  }

  parse(): Expr {
    const expr = this.or(0)
    const t = this.peek()
    if (t.kind !== "end") throw new FormulaError(t.position, `unexpected ${describe(t)}`)
    return expr
  }

  /** A left-associative chain of `operand`s joined by the operators of `ops`. */
  private chain(depth: number, ops: ReadonlyMap<string, BinaryOperator>, operand: (depth: number) => Expr): Expr {
    let left = operand(depth)
    for (;;) {
      const t = this.peek()
      const op = t.kind === "op" ? ops.get(t.value) : t.kind === "name" ? ops.get(t.value.toUpperCase()) : undefined
      if (op === undefined) return left
      this.next()
      left = { _tag: "Binary", op, left, right: operand(depth), position: t.position }
    }
  }

  private or(depth: number): Expr {
    return this.chain(depth, orOps, (d) => this.and(d))
  }

  private and(depth: number): Expr {
    return this.chain(depth, andOps, (d) => this.not(d))
  }

  private not(depth: number): Expr {
    if (this.isKeyword("NOT") || this.isOp("!")) {
      const op = this.next()
      const d = this.enter(depth, op.position)
      return { _tag: "Unary", op: "NOT", arg: this.not(d), position: op.position }
    }
    return this.comparison(depth)
  }

  private comparison(depth: number): Expr {
    const left = this.additive(depth)
    const t = this.peek()
    const op = t.kind === "op" ? comparison.get(t.value) : undefined
    if (op === undefined) return left
    this.next()
    const right = this.additive(depth)
    const after = this.peek()
    if (after.kind === "op" && comparison.has(after.value)) {
      throw new FormulaError(after.position, "comparisons do not chain: use AND between them")
    }
    return { _tag: "Binary", op, left, right, position: t.position }
  }

  private additive(depth: number): Expr {
    return this.chain(depth, additiveOps, (d) => this.multiplicative(d))
  }

  private multiplicative(depth: number): Expr {
    return this.chain(depth, multiplicativeOps, (d) => this.unary(d))
  }

  private unary(depth: number): Expr {
    if (this.isOp("-") || this.isOp("+")) {
      const op = this.next()
      const d = this.enter(depth, op.position)
      const arg = this.unary(d)
      if (op.value === "+") return arg
      // A negative literal stays a literal, so that `-5` is a number, not an operation.
      if (arg._tag === "Literal" && typeof arg.value === "number") {
        return { _tag: "Literal", value: normalZero(-arg.value), type: "number", position: op.position }
      }
      return { _tag: "Unary", op: "-", arg, position: op.position }
    }
    return this.primary(depth)
  }

  private primary(depth: number): Expr {
    const t = this.next()
    switch (t.kind) {
      case "number":
        return { _tag: "Literal", value: t.value, type: "number", position: t.position }
      case "string":
        return { _tag: "Literal", value: t.value, type: "string", position: t.position }
      case "column":
        return { _tag: "Column", id: t.value, position: t.position }
      case "name": {
        const upper = t.value.toUpperCase()
        if (upper === "TRUE" || upper === "FALSE") {
          return { _tag: "Literal", value: upper === "TRUE", type: "boolean", position: t.position }
        }
        if (upper === "NULL") return { _tag: "Literal", value: null, type: "null", position: t.position }
        if (!this.isOp("(")) {
          throw new FormulaError(
            t.position,
            `unknown name "${t.value}": columns are written $${t.value}, functions need parentheses`
          )
        }
        if (functionByName(upper) === undefined) throw new FormulaError(t.position, `unknown function "${t.value}"`)
        const open = this.next()
        const d = this.enter(depth, open.position)
        const args: Array<Expr> = []
        if (!this.isOp(")")) {
          for (;;) {
            args.push(this.or(d))
            if (this.isOp(",")) {
              this.next()
              continue
            }
            break
          }
        }
        const close = this.next()
        if (close.kind !== "op" || close.value !== ")") {
          throw new FormulaError(close.position, `expected "," or ")" but found ${describe(close)}`)
        }
        return { _tag: "Call", name: upper, args, position: t.position }
      }
      case "op": {
        if (t.value === "(") {
          const d = this.enter(depth, t.position)
          const inner = this.or(d)
          const close = this.next()
          if (close.kind !== "op" || close.value !== ")") {
            throw new FormulaError(close.position, `expected ")" but found ${describe(close)}`)
          }
          return inner
        }
        throw new FormulaError(t.position, `unexpected ${describe(t)}`)
      }
      case "end":
        throw new FormulaError(t.position, "the formula ends too early")
    }
  }
}

/** @since 0.1.0 @category models */
export type Parsed =
  | { readonly _tag: "Parsed"; readonly expr: Expr }
  | { readonly _tag: "FormulaError"; readonly error: FormulaError }

/**
 * Parses a formula. Never throws: an invalid formula is a `FormulaError` with its position.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseFormula = (text: string): Parsed => {
  if (text.length > MaxFormulaLength) {
    return {
      _tag: "FormulaError",
      error: new FormulaError(MaxFormulaLength + 1, `a formula may have at most ${MaxFormulaLength} characters`)
    }
  }
  if (text.trim().length === 0) return { _tag: "FormulaError", error: new FormulaError(1, "the formula is empty") }
  try {
    return { _tag: "Parsed", expr: new Parser(tokenize(text)).parse() }
  } catch (error) {
    if (error instanceof FormulaError) return { _tag: "FormulaError", error }
    throw error
  }
}

/**
 * The column ids a formula reads, each once, in order of first use.
 *
 * @since 0.1.0
 * @category utils
 */
export const referencedColumns = (expr: Expr): ReadonlyArray<string> => {
  const seen = new Set<string>()
  // An explicit stack: a tree is at most `MaxDepth` deep, but this costs nothing more.
  const stack: Array<Expr> = [expr]
  const order: Array<string> = []
  while (stack.length > 0) {
    const e = stack.pop()!
    switch (e._tag) {
      case "Column":
        if (!seen.has(e.id)) {
          seen.add(e.id)
          order.push(e.id)
        }
        break
      case "Unary":
        stack.push(e.arg)
        break
      case "Binary":
        stack.push(e.right, e.left)
        break
      case "Call":
        for (let k = e.args.length - 1; k >= 0; k--) stack.push(e.args[k]!)
        break
      case "Literal":
        break
    }
  }
  return order
}

const typeName = (t: FormulaType) => t === "null" ? "NULL" : t

const compatible = (a: FormulaType, b: FormulaType) => a === "null" || b === "null" || a === b

/**
 * A type-checked tree: every node knows its type, and a comparison knows its operands' type
 * (two `datetime` strings compare as instants, two `string`s by code units).
 *
 * @since 0.1.0
 * @category models
 */
export type Typed =
  | { readonly _tag: "Literal"; readonly value: Value; readonly type: FormulaType }
  | { readonly _tag: "Column"; readonly id: string; readonly type: FormulaType }
  | { readonly _tag: "Unary"; readonly op: "-" | "NOT"; readonly arg: Typed; readonly type: FormulaType }
  | {
    readonly _tag: "Binary"
    readonly op: BinaryOperator
    readonly left: Typed
    readonly right: Typed
    readonly type: FormulaType
    readonly operand: FormulaType
  }
  | { readonly _tag: "Call"; readonly name: string; readonly args: ReadonlyArray<Typed>; readonly type: FormulaType }

const typed = (expr: Expr, columnType: (id: string) => FormulaType | undefined): Typed => {
  switch (expr._tag) {
    case "Literal":
      return { _tag: "Literal", value: expr.value, type: expr.type }
    case "Column": {
      const t = columnType(expr.id)
      if (t === undefined) throw new FormulaError(expr.position, `unknown column "${expr.id}"`)
      return { _tag: "Column", id: expr.id, type: t }
    }
    case "Unary": {
      const arg = typed(expr.arg, columnType)
      const wanted: FormulaType = expr.op === "-" ? "number" : "boolean"
      if (!compatible(arg.type, wanted)) {
        throw new FormulaError(expr.arg.position, `${expr.op} needs ${withArticle(wanted)}, not ${withArticle(typeName(arg.type))}`)
      }
      return { _tag: "Unary", op: expr.op, arg, type: wanted }
    }
    case "Binary": {
      const left = typed(expr.left, columnType)
      const right = typed(expr.right, columnType)
      const l = left.type
      const r = right.type
      const node = (type: FormulaType): Typed => ({
        _tag: "Binary",
        op: expr.op,
        left,
        right,
        type,
        operand: l === "null" ? r : l
      })
      switch (expr.op) {
        case "+":
        case "-":
        case "*":
        case "/":
        case "%":
          if (!compatible(l, "number")) {
            throw new FormulaError(expr.left.position, `${expr.op} needs numbers, not ${withArticle(typeName(l))} (use CONCAT for text)`)
          }
          if (!compatible(r, "number")) {
            throw new FormulaError(expr.right.position, `${expr.op} needs numbers, not ${withArticle(typeName(r))}`)
          }
          return node("number")
        case "AND":
        case "OR":
          if (!compatible(l, "boolean")) {
            throw new FormulaError(expr.left.position, `${expr.op} needs conditions, not ${withArticle(typeName(l))}`)
          }
          if (!compatible(r, "boolean")) {
            throw new FormulaError(expr.right.position, `${expr.op} needs conditions, not ${withArticle(typeName(r))}`)
          }
          return node("boolean")
        default:
          if (!compatible(l, r)) {
            throw new FormulaError(expr.right.position, `cannot compare a ${typeName(l)} with a ${typeName(r)}`)
          }
          return node("boolean")
      }
    }
    case "Call": {
      const fn = functionByName(expr.name)!
      const args = expr.args.map((a) => typed(a, columnType))
      const result = fn.check(args.map((a) => a.type))
      if (typeof result !== "string") {
        const at = result.argument === undefined ? expr.position : expr.args[result.argument]?.position ?? expr.position
        throw new FormulaError(at, `${fn.name}: ${result.message}`)
      }
      return { _tag: "Call", name: fn.name, args, type: result }
    }
  }
}

/**
 * Checks a parsed formula against the types of the columns it reads: the typed tree, or the
 * error at the first operand whose type does not fit. `NULL` fits every type.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkFormula = (
  expr: Expr,
  columnType: (id: string) => FormulaType | undefined
): { readonly _tag: "Typed"; readonly typed: Typed } | {
  readonly _tag: "FormulaError"
  readonly error: FormulaError
} => {
  try {
    return { _tag: "Typed", typed: typed(expr, columnType) }
  } catch (error) {
    if (error instanceof FormulaError) return { _tag: "FormulaError", error }
    throw error
  }
}

const arithmetic = (op: BinaryOperator, a: number, b: number): Value => {
  let r: number
  switch (op) {
    case "+":
      r = a + b
      break
    case "-":
      r = a - b
      break
    case "*":
      r = a * b
      break
    case "/":
      if (b === 0) return null
      r = a / b
      break
    default:
      if (b === 0) return null
      r = a % b
  }
  // Overflow to Infinity (or NaN) is no value, as division by zero.
  return Number.isFinite(r) ? normalZero(r) : null
}

/** -0 is 0: JSON cannot tell them apart, and a stored row never holds -0. */
const normalZero = (n: number) => n === 0 ? 0 : n

/**
 * Evaluates a typed formula on one row. `column` gives a column's value (null when absent).
 * Semantics, as SQL's where they differ from JavaScript's:
 * - an operator with a `null` operand gives `null`; division or remainder by zero gives `null`;
 *   a result that is not finite gives `null`;
 * - comparisons give `null` when an operand is `null`; `AND`/`OR` are three-valued
 *   (`FALSE AND NULL` is `FALSE`, `TRUE OR NULL` is `TRUE`, otherwise `NULL` wins);
 * - strings compare by UTF-16 code units, datetimes by the instant they denote.
 * A value whose type does not fit (a stored row that breaks its schema) gives `null`, never
 * an exception.
 *
 * @since 0.1.0
 * @category utils
 */
export const evaluate = (expr: Typed, column: (id: string) => Value): Value => {
  switch (expr._tag) {
    case "Literal":
      return expr.value
    case "Column":
      return column(expr.id)
    case "Unary": {
      const v = evaluate(expr.arg, column)
      if (expr.op === "-") return typeof v === "number" ? normalZero(-v) : null
      return typeof v === "boolean" ? !v : null
    }
    case "Binary": {
      if (expr.op === "AND" || expr.op === "OR") {
        const l = evaluate(expr.left, column)
        const decisive = expr.op === "OR"
        if (l === decisive) return decisive
        const r = evaluate(expr.right, column)
        if (r === decisive) return decisive
        return typeof l === "boolean" && typeof r === "boolean" ? !decisive : null
      }
      const l = evaluate(expr.left, column)
      const r = evaluate(expr.right, column)
      if (l === null || r === null) return null
      switch (expr.op) {
        case "+":
        case "-":
        case "*":
        case "/":
        case "%":
          return typeof l === "number" && typeof r === "number" ? arithmetic(expr.op, l, r) : null
        default: {
          const c = compareValues(l, r, expr.operand)
          if (c === undefined) return null
          switch (expr.op) {
            case "=":
              return c === 0
            case "!=":
              return c !== 0
            case "<":
              return c < 0
            case "<=":
              return c <= 0
            case ">":
              return c > 0
            default:
              return c >= 0
          }
        }
      }
    }
    case "Call": {
      const fn = functionByName(expr.name)
      if (fn === undefined) return null
      // Arguments are thunks: IF and COALESCE evaluate only what they need.
      return fn.apply(expr.args.map((a) => () => evaluate(a, column)), expr.args.map((a) => a.type))
    }
  }
}
