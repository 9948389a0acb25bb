/**
 * Runs the built `tributary` command as a child process, as a user would.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process"
import { fileURLToPath } from "node:url"

export const binPath = fileURLToPath(new URL("../../bin/tributary.js", import.meta.url))

export interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `tributary ...args` to completion. */
export const runCli = (args: ReadonlyArray<string>, timeoutMs = 20_000): Promise<Finished> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, ...args], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`tributary ${args.join(" ")} did not finish in ${timeoutMs} ms:\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

export interface RunningServer {
  readonly url: string
  readonly output: () => string
  readonly stop: () => Promise<void>
  readonly child: ChildProcessWithoutNullStreams
}

/** Starts `tributary serve ...args` and waits for the line with its URL. */
export const startServe = (args: ReadonlyArray<string>, timeoutMs = 20_000): Promise<RunningServer> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, "serve", ...args])
    let output = ""
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`tributary serve did not print its URL in ${timeoutMs} ms:\n${output}`))
    }, timeoutMs)
    const stop = () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done()
        child.once("close", () => done())
        child.kill("SIGTERM")
      })
    child.stderr.on("data", (chunk) => (output += chunk))
    child.stdout.on("data", (chunk) => {
      output += chunk
      // The start-up report is written at once, so its first line means all of it is there.
      const match = /listening on (http:\/\/[^\s]+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve({ url: match[1]!, output: () => output, stop, child })
      }
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      reject(new Error(`tributary serve exited with ${code}:\n${output}`))
    })
  })
