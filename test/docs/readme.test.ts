/**
 * Every code block of the README, as a reader would use it: TypeScript blocks type-check
 * against the built package (imports as a user writes them, `tributary-ingest/...`), shell
 * blocks run verbatim with `tributary` on the PATH and `TRIBUTARY_API_URL`/`TRIBUTARY_API_KEY`
 * naming a reference server this test starts, from the repository's root, and leave the
 * working tree as they found it. Blocks marked `<!-- not run: REASON -->` are skipped (shell
 * ones are still parsed by bash). Needs `npm run build` (the CLI and the types are dist's).
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { binPath, startServe, type RunningServer } from "../support/cli.js"
import { extractBlocks, isShell, isTypeScript } from "../support/readme.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const blocks = extractBlocks(readFileSync(join(root, "README.md"), "utf8"))

describe("README code blocks", () => {
  it("extracts blocks with their lines and markers", () => {
    const sample = extractBlocks("a\n\n<!-- not run: needs a broker -->\n```sh\nx\n```\n\n```ts\ny\n```\n")
    expect(sample).toEqual([
      { lang: "sh", code: "x", line: 4, notRun: "needs a broker" },
      { lang: "ts", code: "y", line: 8, notRun: undefined }
    ])
  })

  it("TypeScript blocks type-check against the package", () => {
    const typescript = blocks.filter((block) => isTypeScript(block) && block.notRun === undefined)
    const files = new Map(typescript.map((block) => [join(root, `README.md.block-${block.line}.ts`), `${block.code}\nexport {}\n`]))
    const config = ts.getParsedCommandLineOfConfigFile(join(root, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!
    const host = ts.createCompilerHost(config.options)
    const readFile = host.readFile.bind(host)
    const fileExists = host.fileExists.bind(host)
    host.readFile = (name) => files.get(name) ?? readFile(name)
    host.fileExists = (name) => files.has(name) || fileExists(name)
    const program = ts.createProgram([...files.keys()], { ...config.options, noEmit: true, noUnusedLocals: false }, host)
    const problems = [...files.keys()].flatMap((name) =>
      ts.getPreEmitDiagnostics(program, program.getSourceFile(name)).map((d) =>
        `README.md block at line ${name.match(/block-(\d+)/)![1]}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`
      )
    )
    expect(problems).toEqual([])
  }, 120_000)

  it("shell blocks parse", () => {
    for (const block of blocks.filter(isShell)) {
      const result = spawnSync("bash", ["-n", "-c", block.code], { encoding: "utf8" })
      expect(result.stderr, `README.md block at line ${block.line}`).toBe("")
    }
  })

  describe("shell blocks run", () => {
    let server: RunningServer
    const bin = mkdtempSync(join(tmpdir(), "tributary-readme-bin-"))
    beforeAll(async () => {
      server = await startServe(["--port", "0", "--api-key", "readme-key"])
      mkdirSync(bin, { recursive: true })
      symlinkSync(binPath, join(bin, "tributary"))
    })
    afterAll(() => server.stop())

    const gitStatus = () => spawnSync("git", ["status", "--porcelain"], { cwd: root, encoding: "utf8" }).stdout
    for (const block of blocks.filter((b) => isShell(b) && b.notRun === undefined)) {
      it(`README.md line ${block.line}: ${block.code.split("\n")[0]}`, () => {
        const before = gitStatus()
        // Background jobs a block starts (a server with `&`) are stopped when it ends, failed or not.
        const result = spawnSync("bash", ["-euo", "pipefail", "-c", `trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n${block.code}`], {
          cwd: root,
          encoding: "utf8",
          timeout: 90_000,
          env: { ...process.env, PATH: `${bin}:${process.env["PATH"]}`, TRIBUTARY_API_URL: server.url, TRIBUTARY_API_KEY: "readme-key" }
        })
        expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0)
        expect(gitStatus(), "the block left files in the working tree").toBe(before)
      }, 120_000)
    }
  })
})
