import { spawn } from "node:child_process"
import { createServer, type Server } from "node:http"
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { defaultMaxLineBytes } from "../../connectors/ndjson/index.js"
import { defaultRetryPolicy } from "../../src/client/retry.js"
import { commands, ingestCommand, serveCommand, sinkCommand, version } from "../../src/cli/commands.js"
import { deliveryDefaults, parseApiUrl, parseMillis } from "../../src/cli/options.js"
import { failureMessage } from "../../src/cli/errors.js"
import { commandHelp, overviewHelp, usageLine, wantsColor } from "../../src/cli/help.js"
import { parseArgs } from "../../src/cli/parse.js"
import { fileDone, summaryJson } from "../../src/cli/ingest.js"
import { defaultConcurrency, defaultMaxPending } from "../../src/pipeline/run.js"
import { emptyProgress } from "../../src/pipeline/events.js"
import { defaultMaxBodyBytes } from "../../src/server/http/server.js"
import { defaultSchema } from "../../src/server/core/store/sql.js"
import { runNeedsKafka } from "../setup/services.js"
import { binPath, runCli, startServe, type RunningServer } from "../support/cli.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-front-"))
const root = fileURLToPath(new URL("../..", import.meta.url))
const plain = { width: 100, color: false }
const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => parseArgs(commands, args, env)
const problem = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const invocation = run(args, env)
  return invocation._tag === "UsageError" ? invocation.message : `not a usage error: ${invocation._tag}`
}

describe("the command line, read against the command table", () => {
  it("answers --version, help and a command's help without running anything", () => {
    expect(run(["--version"])._tag).toBe("Version")
    expect(run(["-V"])._tag).toBe("Version")
    expect(run([])).toEqual({ _tag: "Help", command: undefined })
    expect(run(["ingest", "--help"])).toEqual({ _tag: "Help", command: ingestCommand })
    expect(run(["help", "sink"])).toEqual({ _tag: "Help", command: sinkCommand })
  })

  it("reads options as --name value and --name=value, a lone - as an argument, repeated options in order", () => {
    const ingest = run(["ingest", "-", "--dataset=7", "--api-url", "http://h:1/", "--api-key", "k", "--concurrency", "fixed:3"])
    expect(ingest._tag).toBe("Run")
    if (ingest._tag !== "Run") return
    expect(ingest.values).toMatchObject({ input: "-", dataset: "7", apiUrl: "http://h:1", apiKey: "k", concurrency: { fixed: 3 } })
    expect(ingest.values["retries"]).toBe(8)
    const sink = run(["sink", "--brokers", "b:9092", "--topic", "a", "--topic", "b", "--group", "g", "--dataset", "1"], {
      TRIBUTARY_API_URL: "http://h:1",
      TRIBUTARY_API_KEY: "k"
    })
    expect(sink._tag === "Run" && sink.values).toMatchObject({ topics: ["a", "b"], drainTimeout: 30_000, maxPending: 256 })
  })

  it("takes an option not given from its environment variable, and names the variable when both are missing", () => {
    const fromEnv = run(["ingest", "f", "--dataset", "1"], { TRIBUTARY_API_URL: "https://svc.example", TRIBUTARY_API_KEY: "k" })
    expect(fromEnv._tag === "Run" && fromEnv.values["apiUrl"]).toBe("https://svc.example")
    expect(problem(["ingest", "f", "--dataset", "1"])).toBe(
      "--api-url is missing (or set TRIBUTARY_API_URL); --api-key is missing (or set TRIBUTARY_API_KEY)"
    )
    expect(problem(["ingest", "f", "--dataset", "1", "--api-key", "k"], { TRIBUTARY_API_URL: "localhost:8080" })).toContain(
      "(from TRIBUTARY_API_URL)"
    )
  })

  it("names the option and the value in every usage error", () => {
    expect(problem(["serve", "--port", "abc"])).toBe("--port must be a whole number, got 'abc'")
    expect(problem(["serve", "--port", "-1"])).toBe("--port must be at least 0, got -1")
    expect(problem(["ingest", "--dataset", "1", "--api-url", "http://h", "--api-key", "k"])).toBe(
      "FILE|- is missing: NDJSON file to send, or - for standard input"
    )
    expect(problem(["ingest", "f", "--dataset", "1", "--api-url", "127.0.0.1:18101", "--api-key", "k"])).toBe(
      "--api-url must be an http:// or https:// address such as http://127.0.0.1:8080, got '127.0.0.1:18101'; did you mean http://127.0.0.1:18101?"
    )
    expect(problem(["ingest", "f", "--datset", "1"])).toBe("unknown option --datset; did you mean --dataset?")
    expect(problem(["ingset"])).toContain("unknown command 'ingset'; did you mean 'ingest'?")
    expect(problem(["ingest", "f", "g", "--dataset", "1"])).toContain("unexpected argument 'g'")
    expect(problem(["serve", "--port"])).toBe("--port needs a value (PORT)")
    expect(problem(["sink", "--brokers", "b", "--group", "g", "--dataset", "1", "--api-url", "http://h", "--api-key", "k"])).toBe(
      "--topic is missing"
    )
    expect(problem(["serve", "--request-timeout", "5"])).toBe("--request-timeout must be a duration such as 30s, 500ms or 2m of at least 100 ms, got '5'")
    expect(problem(["serve", "--seed", join(dir, "nothing.json")])).toBe(`--seed: no file at '${join(dir, "nothing.json")}'`)
  })

  it("parses addresses and durations as users write them", () => {
    expect(parseApiUrl("api-url", "http://127.0.0.1:8080/")).toEqual({ ok: true, value: "http://127.0.0.1:8080" })
    expect(parseApiUrl("api-url", "localhost:8080")).toMatchObject({ ok: false })
    expect(parseApiUrl("api-url", "ftp://x")).toMatchObject({ ok: false })
    expect([parseMillis("30s"), parseMillis("500ms"), parseMillis("2m"), parseMillis("60 seconds"), parseMillis("soon")]).toEqual([
      30_000,
      500,
      120_000,
      60_000,
      undefined
    ])
  })

  it("keeps each default equal to the library's own", () => {
    expect(deliveryDefaults.concurrency).toBe(defaultConcurrency)
    expect(deliveryDefaults.maxPending).toBe(defaultMaxPending.batches)
    expect(64 * 1024 ** 2).toBe(defaultMaxPending.bytes)
    expect(deliveryDefaults.retries).toBe(defaultRetryPolicy.maxRetries)
    expect(deliveryDefaults.maxLineBytes).toBe(defaultMaxLineBytes)
    const serve = run(["serve"])
    expect(serve._tag === "Run" && serve.values).toMatchObject({ maxBodyBytes: defaultMaxBodyBytes, databaseSchema: defaultSchema })
    expect(version).toBe(JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version)
  })
})

describe("help", () => {
  it("lists each command on one line, within 100 columns", () => {
    const lines = overviewHelp(commands, version, plain).split("\n")
    for (const command of commands) {
      expect(lines.filter((line) => line.startsWith(`  ${command.name} `))).toHaveLength(1)
    }
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(100)
  })

  it("shows usage as tributary <command>, and each option's meaning, default and environment variable", () => {
    expect(usageLine(ingestCommand)).toBe("tributary ingest FILE|- --dataset ID [options]")
    expect(usageLine(serveCommand)).toBe("tributary serve [options]")
    const help = commandHelp(ingestCommand, plain)
    expect(help).toContain("--api-url URL")
    expect(help).toMatch(/The service's address \[required, or set\s+TRIBUTARY_API_URL\]/)
    expect(help).toMatch(/--retries N\s+Retries of a failing request/)
    expect(help).toContain("[default: 8]")
    expect(help).toContain("EXAMPLES")
    expect(help).not.toMatch(/user-defined|This setting is optional|redacted/)
    const sink = commandHelp(sinkCommand, plain)
    expect(sink).toMatch(/--brokers HOST:PORT,\.\.\.\s+Kafka brokers \[required, or set TRIBUTARY_KAFKA_BROKERS\]/)
    for (const line of [...help.split("\n"), ...sink.split("\n")].filter((l) => !l.startsWith("  tributary") && !l.startsWith("  gunzip"))) {
      expect(line.length, line).toBeLessThanOrEqual(100)
    }
  })

  it("has colour only on a terminal with NO_COLOR unset", async () => {
    expect(wantsColor(true, {})).toBe(true)
    expect(wantsColor(true, { NO_COLOR: "1" })).toBe(false)
    expect(wantsColor(false, {})).toBe(false)
    expect(wantsColor(true, { TERM: "dumb" })).toBe(false)
    const piped = await runCli(["serve", "--help"])
    expect(piped.code).toBe(0)
    expect(piped.stdout).toContain("USAGE\n  tributary serve [options]")
    expect(piped.stdout).not.toContain("\x1b[")
  })

  it("prints the version, and a usage error as one line on stderr with exit 2", async () => {
    const versionRun = await runCli(["--version"])
    expect(versionRun).toMatchObject({ code: 0, stdout: `${version}\n` })
    const usage = await runCli(["serve", "--port", "abc"])
    expect(usage.code).toBe(2)
    expect(usage.stderr).toBe("tributary serve: --port must be a whole number, got 'abc' (see tributary serve --help)\n")
    const completion = await runCli(["completion", "bash"])
    expect(completion.stdout).toContain("complete -F _tributary tributary")
    expect(completion.stdout).toContain("--max-dead-letters")
  })
})

// Side by side: each case waits on a command of its own (the retries take seconds).
describe.concurrent("errors a user can cause, one line each", () => {
  let holder: Server
  let port: number
  beforeAll(async () => {
    holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve))
    port = (holder.address() as AddressInfo).port
  })
  afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())))

  it("a port in use: serve and demo name the port and the way out, exit 1", async () => {
    for (const command of ["serve", "demo"]) {
      const result = await runCli([command, "--port", String(port)], 30_000)
      expect(result.code, result.stderr).toBe(1)
      expect(result.stderr).toBe(
        `tributary: port ${port} on 127.0.0.1 is in use (EADDRINUSE); pass --port (0 picks a free one) or stop what holds it\n`
      )
    }
  })

  it("an unreachable service: every retry is reported while it happens, with its cause, then one line and exit 1", async () => {
    const file = join(dir, "one.ndjson")
    writeFileSync(file, "{\"id\":1}\n")
    const result = await runCli(["ingest", file, "--dataset", "2", "--api-url", "http://127.0.0.1:1", "--api-key", "k", "--retries", "2"], 60_000)
    expect(result.code).toBe(1)
    const lines = result.stderr.trim().split("\n")
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(/^tributary: GET http:\/\/127\.0\.0\.1:1\/v2\/datasets\/2\/schema failed: .*ECONNREFUSED.*; retry 1 of 2 in \d+\.\d s$/)
    expect(lines[1]).toContain("retry 2 of 2")
    expect(lines[2]).toMatch(/^tributary: cannot read the schema of dataset 2: the service at http:\/\/127\.0\.0\.1:1 could not be reached \(GET \/v2\/datasets\/2\/schema: .*ECONNREFUSED.*\)$/)
    expect(existsSync(`${file}.checkpoint.json`)).toBe(false)
  })

  it("a file that is not there: one line naming it, exit 1", async () => {
    const missing = join(dir, "absent.ndjson")
    const result = await runCli(["ingest", missing, "--dataset", "2", "--api-url", "http://127.0.0.1:1", "--api-key", "k"])
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(`tributary: cannot read FILE '${missing}': there is no such file\n`)
  })

  it("a failure with no message of its own is named by the system error under it", () => {
    const wrapped = { _tag: "ServeError", message: "", cause: Object.assign(new Error("listen"), { code: "EADDRINUSE", port: 80, address: "::" }) }
    expect(failureMessage(wrapped)).toBe("port 80 on :: is in use (EADDRINUSE); pass --port (0 picks a free one) or stop what holds it")
    expect(failureMessage(Object.assign(new Error(""), { code: "ENOENT", path: "/x" }))).toBe("no such file: /x (ENOENT)")
    expect(failureMessage(new Error("cannot join group g"))).toBe("cannot join group g")
  })
})

describe("signals", () => {
  /**
   * Starts a sink against `brokerPort`, sends it SIGTERM once it says it is connecting (and a
   * moment more, so that kafkajs is inside its connect), and answers how it ended and how long
   * that took after the signal.
   */
  const stopWhileConnecting = async (brokerPort: number) => {
    const child = spawn(process.execPath, [
      binPath, "sink", "--brokers", `127.0.0.1:${brokerPort}`, "--topic", "t", "--group", "g", "--dataset", "1",
      "--api-url", "http://127.0.0.1:1", "--api-key", "k"
    ])
    let stderr = ""
    const closed = new Promise<number | string | null>((resolve) => child.on("close", (exit, signal) => resolve(exit ?? signal)))
    const connecting = new Promise<void>((resolve) =>
      child.stderr.on("data", (chunk) => {
        stderr += chunk
        if (stderr.includes("sink: connecting to")) resolve()
      })
    )
    const first = await Promise.race([connecting.then(() => "connecting" as const), closed.then(() => "closed" as const)])
    expect(first, stderr).toBe("connecting")
    await new Promise((resolve) => setTimeout(resolve, 300))
    const sentAt = Date.now()
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000)
    const code = await closed
    clearTimeout(timer)
    return { code, seconds: (Date.now() - sentAt) / 1000, stderr }
  }

  it("a sink sent SIGTERM while connecting to a broker that never answers exits 0 at once", async () => {
    // Takes connections and never answers: kafkajs would wait for its request timeout and retries.
    const sockets = new Set<Socket>()
    const silent = createTcpServer((socket) => {
      sockets.add(socket)
      socket.on("error", () => {})
    })
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    try {
      const stopped = await stopWhileConnecting((silent.address() as AddressInfo).port)
      expect(stopped.code, stopped.stderr).toBe(0)
      expect(stopped.seconds, stopped.stderr).toBeLessThan(5)
      expect(sockets.size, "the sink reached the silent broker").toBeGreaterThan(0)
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })

  it("a sink sent SIGTERM while its broker's port refuses connections exits 0 at once", async () => {
    // A port just closed: kafkajs tries again for about 10 s before it gives up with an error.
    const probe = createTcpServer()
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve))
    const port = (probe.address() as AddressInfo).port
    await new Promise((resolve) => probe.close(resolve))
    const stopped = await stopWhileConnecting(port)
    expect(stopped.code, stopped.stderr).toBe(0)
    expect(stopped.seconds, stopped.stderr).toBeLessThan(5)
    expect(stopped.stderr).not.toContain("tributary: cannot connect")
  })

  it("`npx tributary serve &` then `kill $!` in the clone stops the server, though the signal reaches npx", async () => {
    const out = join(dir, "npx-serve.txt")
    // --no: never the registry's unrelated `tributary`; scripts off: npx would rebuild the
    // package (its prepare script) into its cache the first time, and dist/ is built already.
    const script = [
      `npx --no tributary serve --port 0 --api-key npx-key > ${out} &`,
      `end=$((SECONDS + 40)); until grep -q listening ${out}; do [ $SECONDS -lt $end ] || exit 2; sleep 0.2; done`,
      `URL=$(grep -om1 'http://[0-9.:]*' ${out})`,
      "kill $!",
      // The server answers until it is gone: 0 once nothing listens, 1 if it is still there after 15 s.
      "end=$((SECONDS + 15)); while [ $SECONDS -lt $end ]; do curl -s -m 1 -o /dev/null $URL/openapi.json || exit 0; sleep 0.2; done; exit 1"
    ].join("\n")
    const shell = spawn("bash", ["-c", script], { cwd: root, detached: true, env: { ...process.env, npm_config_ignore_scripts: "true" } })
    let output = ""
    shell.stdout.on("data", (chunk) => (output += chunk))
    shell.stderr.on("data", (chunk) => (output += chunk))
    try {
      const code = await new Promise((resolve) => shell.on("exit", resolve)) // not "close": a server left running holds its stderr
      expect(code, `${output}\n${existsSync(out) ? readFileSync(out, "utf8") : ""}`).toBe(0)
      expect(readFileSync(out, "utf8")).toContain("listening on http://127.0.0.1:")
    } finally {
      // npx and the server it started are in the shell's process group: nothing outlives the test.
      try {
        process.kill(-shell.pid!, "SIGKILL")
      } catch {}
    }
  }, 90_000)
})

describe("scripts' view of a run", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServe(["--port", "0", "--api-key", "front-key"])
  })
  afterAll(() => server.stop())

  it("--json prints one JSON object on stdout; --metrics-port serves the run's metrics", async () => {
    const post = async (path: string, body: unknown) =>
      (await (await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "x-api-key": "front-key", "content-type": "application/json" },
        body: JSON.stringify(body)
      })).json()) as any
    const source = await post("/v2/data-sources", { name: "front" })
    const dataset = await post("/v2/datasets", { name: "d", dataSourceId: source.data.id, schema: [{ id: "id", dataType: "number" }] })
    const file = join(dir, "json.ndjson")
    writeFileSync(file, "{\"id\":1}\n{\"id\":2}\nnot json\n")
    const result = await runCli([
      "ingest", file, "--dataset", String(dataset.data.id), "--api-url", server.url, "--api-key", "front-key", "--json", "--metrics-port", "0"
    ])
    expect(result.code, result.stderr).toBe(0)
    const summary = JSON.parse(result.stdout)
    expect(summary).toMatchObject({ read: 3, stored: 2, deadLettered: 1, deadLetters: `${file}.dead-letters.ndjson`, checkpoint: `${file}.checkpoint.json` })
    expect(result.stderr).toMatch(/metrics on http:\/\/127\.0\.0\.1:\d+\/metrics/)
  })

  it("the share of a file done is its committed bytes over its size", () => {
    const progress = { ...emptyProgress(0), committed: { "0": { partition: "0", offset: 10, resume: { byteOffset: 250 } } } }
    expect(fileDone(1000)(progress)).toBe(0.25)
    expect(fileDone(1000)(emptyProgress(0))).toBe(0)
    expect(JSON.parse(summaryJson({ ...emptyProgress(0), read: 3, accepted: 3, replayed: 1 }, { deadLetters: "d" }, 1500))).toMatchObject({
      stored: 2,
      alreadyStored: 1,
      deadLetters: null,
      seconds: 1.5
    })
  })
})

describe("the test setup", () => {
  it("starts a Kafka broker only for runs whose files talk to it", () => {
    const files = ["broker", "plain"].map((name) => {
      const file = join(dir, `${name}.test.ts`)
      writeFileSync(file, name === "broker" ? `import { createTopic } from "../support/${"kafka"}.js"\n` : "export {}\n")
      return file
    })
    expect(runNeedsKafka(["run", "plain.test.ts"], files)).toBe(false)
    expect(runNeedsKafka(["run", "--project", "memory", "broker.test.ts"], files)).toBe(true)
    expect(runNeedsKafka(["run", "--project", "memory"], files)).toBe(true)
  })
})
