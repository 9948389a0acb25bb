/**
 * The wire shape of a schema as a set of field paths, for comparing response schemas with
 * the shapes the research recorded: `name` (required, never null), `name|null`, `name?`
 * (optional); nested objects add `parent.child`, arrays of objects `parent[].child`.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import { type Schema, SchemaAST as AST } from "effect"

/** Refinements and transformations do not change which fields the wire carries: look through them (encoded side). */
const unwrap = (ast: AST.AST): AST.AST =>
  AST.isRefinement(ast) ? unwrap(ast.from) : AST.isTransformation(ast) ? unwrap(ast.from) : AST.isSuspend(ast) ? unwrap(ast.f()) : ast

const isNull = (ast: AST.AST) => AST.isLiteral(ast) && ast.literal === null

/** The members of `ast` besides null, and whether null is one. */
const nullable = (ast: AST.AST): { readonly nullable: boolean; readonly rest: ReadonlyArray<AST.AST> } => {
  // Unions nest (`optional(NullOr(X))`); `undefined` is the optional mark, counted apart.
  const members = (a: AST.AST): ReadonlyArray<AST.AST> => {
    const node = unwrap(a)
    return AST.isUnion(node) ? node.types.flatMap(members) : [node]
  }
  const all = members(ast).filter((m) => !AST.isUndefinedKeyword(m))
  return { nullable: all.some(isNull), rest: all.filter((m) => !isNull(m)) }
}

/** The object shape inside `ast` (itself, or the element of an array of objects), if any. */
const objectOf = (ast: AST.AST): { readonly literal: AST.TypeLiteral; readonly array: boolean } | undefined => {
  const node = unwrap(ast)
  if (AST.isTypeLiteral(node) && node.propertySignatures.length > 0) return { literal: node, array: false }
  if (AST.isTupleType(node) && node.elements.length === 0 && node.rest.length === 1) {
    const element = unwrap(node.rest[0]!.type)
    if (AST.isTypeLiteral(element) && element.propertySignatures.length > 0) return { literal: element, array: true }
  }
  return undefined
}

/** The field paths of an object shape. */
export const fieldPaths = (ast: AST.AST, prefix = ""): ReadonlyArray<string> => {
  const shape = objectOf(ast)
  if (shape === undefined) return []
  return shape.literal.propertySignatures.flatMap((ps) => {
    const name = `${prefix}${String(ps.name)}`
    const { nullable: isNullable, rest } = nullable(ps.type)
    const own = `${name}${isNullable ? "|null" : ""}${ps.isOptional ? "?" : ""}`
    const inner = rest.length === 1 ? objectOf(rest[0]!) : undefined
    return [own, ...(inner === undefined ? [] : fieldPaths(rest[0]!, `${name}${inner.array ? "[]" : ""}.`))]
  })
}

const identifierOf = (ast: AST.AST): string | undefined => {
  const id = AST.getIdentifierAnnotation(ast)
  if (id._tag === "Some") return id.value
  return AST.isRefinement(ast) || AST.isTransformation(ast) ? identifierOf(AST.isRefinement(ast) ? ast.from : ast.to) : undefined
}

/** One v2 answer payload: what `data` holds (or, for a page, one item), named by its identifier. */
export interface Payload {
  readonly route: string
  readonly name: string
  readonly ast: AST.AST
}

/** The `data` payload of every v2 success answer of an API. */
export const v2Payloads = (api: HttpApi.HttpApi.Any): ReadonlyArray<Payload> => {
  const found: Array<Payload> = []
  HttpApi.reflect(api as any, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group }) => {
      if (!endpoint.path.startsWith("/v2/")) return
      const route = `${group.identifier}.${endpoint.name}`
      const response = endpoint.successSchema as Schema.Schema.Any
      const envelope = objectOf(response.ast)
      const data = envelope?.literal.propertySignatures.find((ps) => ps.name === "data")
      if (data === undefined) return
      const page = objectOf(data.type)?.literal.propertySignatures
      const items = page?.find((ps) => ps.name === "items")
      const isPage = items !== undefined && page!.some((ps) => ps.name === "pagination")
      const payload = isPage ? (objectOf(items.type)?.array ? unwrap(items.type) : data.type) : data.type
      const ast = isPage && AST.isTupleType(payload) ? payload.rest[0]!.type : payload
      found.push({ route, name: identifierOf(ast) ?? identifierOf(response.ast) ?? route, ast })
    }
  })
  return found
}
