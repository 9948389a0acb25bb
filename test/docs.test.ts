/**
 * Module docs: every export declared in src (the contract, the client, the pipeline, the
 * server, the command line and the rest) and in connectors carries `@since` (a version) and one
 * `@category` from the fixed list in docs/decisions.md ("Module docs"). Re-exports (`export { x } from`, `export *`) are checked where `x` is declared.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import ts from "typescript"

const roots = ["src", "connectors"]

const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

/** The category words, read from the list under "## Module docs" in docs/decisions.md. */
const categories = (): ReadonlySet<string> => {
  const text = readFileSync("docs/decisions.md", "utf8")
  const section = text.split(/^## /m).find((part) => part.startsWith("Module docs"))
  if (section === undefined) throw new Error("docs/decisions.md has no \"Module docs\" section")
  return new Set([...section.matchAll(/^- `([a-z]+)`/gm)].map((match) => match[1]!))
}

const isExported = (node: ts.Node): boolean =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)

/** The exported declarations of a file, by name, with their JSDoc tags. */
const exportsOf = (
  file: string,
  text: string = readFileSync(file, "utf8")
): Array<{ readonly name: string; readonly tags: ReadonlyArray<ts.JSDocTag> }> => {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  return source.statements.flatMap((statement) => {
    if (!isExported(statement)) return []
    if (ts.isVariableStatement(statement)) {
      return statement.declarationList.declarations.map((declaration) => ({
        name: declaration.name.getText(source),
        tags: ts.getJSDocTags(declaration)
      }))
    }
    if (
      ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement) ||
      ts.isTypeAliasDeclaration(statement) || ts.isEnumDeclaration(statement) || ts.isModuleDeclaration(statement)
    ) {
      return [{ name: statement.name?.getText(source) ?? "default", tags: ts.getJSDocTags(statement) }]
    }
    return []
  })
}

const tagText = (tag: ts.JSDocTag): string => (ts.getTextOfJSDocComment(tag.comment) ?? "").trim()

/** What is wrong with one export's tags (nothing: an empty list). */
const problemsOf = (tags: ReadonlyArray<ts.JSDocTag>, allowed: ReadonlySet<string>): Array<string> => {
  const since = tags.filter((tag) => tag.tagName.text === "since")
  const category = tags.filter((tag) => tag.tagName.text === "category")
  return [
    ...(since.length === 1 && /^\d+\.\d+\.\d+$/.test(tagText(since[0]!)) ? [] : ["one @since with a version"]),
    ...(category.length === 1 ? [] : ["one @category"]),
    ...category.map(tagText).filter((word) => !allowed.has(word)).map((word) => `@category ${JSON.stringify(word)} is not in the list`)
  ]
}

describe("module docs", () => {
  it("the category list in docs/decisions.md holds a handful of words", () => {
    const words = categories()
    expect(words.size).toBeGreaterThanOrEqual(8)
    expect(words.size).toBeLessThanOrEqual(12)
  })

  it("every export of src and connectors has @since and a @category from the list", () => {
    const allowed = categories()
    const files = roots.flatMap(filesUnder)
    expect(files.length).toBeGreaterThan(150)
    const missing = files.flatMap((file) =>
      exportsOf(file).flatMap(({ name, tags }) => {
        const problems = problemsOf(tags, allowed)
        return problems.length === 0 ? [] : [`${file}: ${name}: ${problems.join(", ")}`]
      })
    )
    expect(missing).toEqual([])
  })

  it("sees what it checks: a declaration without tags, a word outside the list; re-exports are left to their origin", () => {
    const probe = exportsOf(
      "probe.ts",
      [
        "export const a = 1",
        "/** @since 0.1.0\n * @category cogs */",
        "export interface B {}",
        "/** @since 0.1.0\n * @category models */",
        "export type C = 1",
        "export { a as d }",
        "export * from \"./elsewhere.js\""
      ].join("\n")
    )
    expect(probe.map(({ name, tags }) => [name, problemsOf(tags, new Set(["models"]))])).toEqual([
      ["a", ["one @since with a version", "one @category"]],
      ["B", ["@category \"cogs\" is not in the list"]],
      ["C", []]
    ])
  })
})
