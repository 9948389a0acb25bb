/**
 * Every code block of the README, as a reader would use it: TypeScript blocks type-check
 * against the built package (imports as a user writes them, `tributary-ingest/...`), shell
 * blocks run verbatim with `tributary` on the PATH and `TRIBUTARY_API_URL`/`TRIBUTARY_API_KEY`
 * naming a reference server this test starts, from the repository's root, and leave the
 * working tree as they found it. Blocks marked `<!-- not run: REASON -->` are skipped (shell
 * ones are still parsed by bash). Needs `npm run build` (the CLI and the types are dist's).
 *
 * The type check (a child process, test/support/readme-typecheck.ts) and the shell blocks run
 * side by side, as each block mostly waits on the servers and commands it starts (measured on
 * the 2-core machine: 48 s one after another, 16 s of it the type check). A block that leaves
 * a file fails still: its own `git status` after differs from the one before it started.
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { binPath, type Finished, startServe, type RunningServer } from "../support/cli.js"
import { extractBlocks, isShell } from "../support/readme.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const blocks = extractBlocks(readFileSync(join(root, "README.md"), "utf8"))

/** Runs `command` from the repository's root to its end, killed (SIGTERM) after `timeoutMs`. */
const run = (command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, timeoutMs: number) =>
  new Promise<Finished>((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs)
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

describe("README code blocks", () => {
  it("extracts blocks with their lines and markers", () => {
    const sample = extractBlocks("a\n\n<!-- not run: needs a broker -->\n```sh\nx\n```\n\n```ts\ny\n```\n")
    expect(sample).toEqual([
      { lang: "sh", code: "x", line: 4, notRun: "needs a broker" },
      { lang: "ts", code: "y", line: 8, notRun: undefined }
    ])
  })

  it("shell blocks parse", () => {
    for (const block of blocks.filter(isShell)) {
      const result = spawnSync("bash", ["-n", "-c", block.code], { encoding: "utf8" })
      expect(result.stderr, `README.md block at line ${block.line}`).toBe("")
    }
  })

  it.concurrent("TypeScript blocks type-check against the package", async () => {
    const checked = await run(process.execPath, ["--import", "tsx", join(root, "test/support/readme-typecheck.ts")], process.env, 110_000)
    expect(checked.code, checked.stderr).toBe(0)
    expect(JSON.parse(checked.stdout)).toEqual([])
  }, 120_000)

  describe.concurrent("shell blocks run", () => {
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
      it(`README.md line ${block.line}: ${block.code.split("\n")[0]}`, async () => {
        const before = gitStatus()
        // Background jobs a block starts (a server with `&`) are stopped when it ends, failed or not.
        const result = await run(
          "bash",
          ["-euo", "pipefail", "-c", `trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n${block.code}`],
          { ...process.env, PATH: `${bin}:${process.env["PATH"]}`, TRIBUTARY_API_URL: server.url, TRIBUTARY_API_KEY: "readme-key" },
          90_000
        )
        expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0)
        expect(gitStatus(), "the block left files in the working tree").toBe(before)
      }, 120_000)
    }
  })
})
