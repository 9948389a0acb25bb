/**
 * Type-checks the README's TypeScript blocks against the built package (imports as a user
 * writes them, `tributary-ingest/...`) and prints the problems, one string each, as a JSON
 * array on stdout. Run as its own process (`node --import tsx`) by test/docs/readme.test.ts:
 * the compiler holds a core for 10-16 s of synchronous work on the shared 2-core machine, and
 * in the test's own process it would stop every other test of the file for that long, where
 * as a child it runs beside the shell blocks (measured: the file took 48 s with the check and
 * the blocks one after another).
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { type Block, extractBlocks, isTypeScript } from "./readme.js"

/**
 * Every type error of the `ts` blocks not marked as not run, each with the README line of its
 * block: the blocks are files beside the README (`README.md.block-LINE.ts`), checked with the
 * repository's compiler options.
 */
const typeCheckBlocks = (root: string, blocks: ReadonlyArray<Block>): Array<string> => {
  const typescript = blocks.filter((block) => isTypeScript(block) && block.notRun === undefined)
  const files = new Map(typescript.map((block) => [join(root, `README.md.block-${block.line}.ts`), `${block.code}\nexport {}\n`]))
  const config = ts.getParsedCommandLineOfConfigFile(join(root, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!
  const host = ts.createCompilerHost(config.options)
  const readFile = host.readFile.bind(host)
  const fileExists = host.fileExists.bind(host)
  host.readFile = (name) => files.get(name) ?? readFile(name)
  host.fileExists = (name) => files.has(name) || fileExists(name)
  const program = ts.createProgram([...files.keys()], { ...config.options, noEmit: true, noUnusedLocals: false }, host)
  return [...files.keys()].flatMap((name) =>
    ts.getPreEmitDiagnostics(program, program.getSourceFile(name)).map((d) =>
      `README.md block at line ${name.match(/block-(\d+)/)![1]}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`
    )
  )
}

const root = fileURLToPath(new URL("../..", import.meta.url))
process.stdout.write(JSON.stringify(typeCheckBlocks(root, extractBlocks(readFileSync(join(root, "README.md"), "utf8")))))
