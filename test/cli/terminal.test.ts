/**
 * The command on a real terminal: tmux gives it a pseudo-terminal (its own server socket, so
 * no other session is touched), the test reads the screen and presses Ctrl-C.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { binPath, startServe, type RunningServer } from "../support/cli.js"

const socket = `tributary-test-${process.pid}`
const tmux = (...args: Array<string>) => spawnSync("tmux", ["-L", socket, ...args], { encoding: "utf8" })
const screen = (session: string, escapes = false) => tmux("capture-pane", "-p", ...(escapes ? ["-e"] : []), "-t", session).stdout

const waitForScreen = async (session: string, check: (text: string) => boolean, timeoutMs: number) => {
  const started = Date.now()
  let text = ""
  while (Date.now() - started < timeoutMs) {
    text = screen(session)
    if (check(text)) return text
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`the screen never showed what was expected; last screen:\n${text}`)
}

const dir = mkdtempSync(join(tmpdir(), "tributary-terminal-"))
const key = "terminal-key"

describe("tributary on a terminal", () => {
  let server: RunningServer
  beforeAll(async () => {
    // Each ingestion takes a while, so the run is still going when the screen is read.
    server = await startServe(["--port", "0", "--api-key", key, "--faults", "latency=20-40ms"])
  })
  afterAll(async () => {
    tmux("kill-server")
    await server.stop()
  })

  it("ingest draws a bar with the share done and the time left; Ctrl-C commits, says where it stopped, exits 130", async () => {
    const post = async (path: string, body: unknown) =>
      (await (await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(body)
      })).json()) as any
    const source = await post("/v2/data-sources", { name: "terminal" })
    const dataset = await post("/v2/datasets", { name: "t", dataSourceId: source.data.id, schema: [{ id: "n", dataType: "number" }] })
    const file = join(dir, "many.ndjson")
    writeFileSync(file, Array.from({ length: 30_000 }, (_, i) => `{"n":${i}}`).join("\n") + "\n")
    const command = [
      process.execPath, binPath, "ingest", file, "--dataset", String(dataset.data.id), "--api-url", server.url, "--api-key", key,
      "--concurrency", "fixed:1"
    ].map((word) => `'${word}'`).join(" ")
    const started = tmux("new-session", "-d", "-s", "ingest", "-x", "200", "-y", "20", `${command}; echo EXIT=$?; sleep 60`)
    expect(started.status, started.stderr).toBe(0)

    const drawn = await waitForScreen("ingest", (text) => /ETA \d/.test(text), 60_000)
    expect(drawn).toMatch(/\[#*-+\]\s+\d+%  ETA \d+(s|m\d\ds)  read \d+  stored \d+/)
    // One line, rewritten in place: the bar is on the screen once.
    expect(drawn.match(/%  ETA/g)).toHaveLength(1)

    tmux("send-keys", "-t", "ingest", "C-c")
    const ended = await waitForScreen("ingest", (text) => text.includes("EXIT="), 30_000)
    expect(ended).toContain("EXIT=130")
    expect(ended).toMatch(/tributary: interrupted; committed through line \d+ in .*many\.ndjson\.checkpoint\.json: run the same command again to resume/)
  }, 120_000)

  it("help has bold headings on a terminal, and none with NO_COLOR set", async () => {
    tmux("new-session", "-d", "-s", "help", "-x", "120", "-y", "50", `'${process.execPath}' '${binPath}' --help; sleep 30`)
    await waitForScreen("help", (text) => text.includes("EXIT CODES"), 20_000)
    expect(screen("help", true)).toMatch(/\x1b\[1mUSAGE/)
    tmux("new-session", "-d", "-s", "plain", "-x", "120", "-y", "50", `NO_COLOR=1 '${process.execPath}' '${binPath}' --help; sleep 30`)
    await waitForScreen("plain", (text) => text.includes("EXIT CODES"), 20_000)
    expect(screen("plain", true)).not.toMatch(/\x1b\[1m/)
  }, 60_000)
})
