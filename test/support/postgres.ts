/**
 * Helpers for the Postgres source's tests: a schema of their own on the test database
 * (dropped at the end), and `tributary backfill` children that can be killed.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { randomUUID } from "node:crypto"
import pg from "pg"
import { binPath } from "./cli.js"
import { databaseUrl } from "./services.js"

/** A fresh schema on the test database; `drop` removes it and closes the connection. */
export const testSchema = async () => {
  const name = `tributary_${randomUUID().replaceAll("-", "").slice(0, 12)}`
  const client = new pg.Client(databaseUrl())
  await client.connect()
  await client.query(`CREATE SCHEMA ${name}`)
  return {
    name,
    client,
    sql: (text: string, values?: ReadonlyArray<unknown>) => client.query(text, values as Array<unknown>),
    drop: async () => {
      await client.query(`DROP SCHEMA ${name} CASCADE`).catch(() => undefined)
      await client.end()
    }
  }
}

const running = new Set<ChildProcess>()

/** Kills every backfill child still running (after a failed test). */
export const killAllBackfills = () => {
  for (const child of running) child.kill("SIGKILL")
  running.clear()
}

export interface BackfillRun {
  readonly child: ChildProcess
  readonly done: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly stdout: string; readonly stderr: string }>
}

/** Starts `tributary backfill ...args` (the database URL comes from the environment). */
export const startBackfill = (args: ReadonlyArray<string>, timeoutMs = 120_000): BackfillRun => {
  const child = spawn(process.execPath, [binPath, "backfill", ...args], {
    env: { ...process.env, TRIBUTARY_DATABASE_URL: databaseUrl() },
    stdio: ["ignore", "pipe", "pipe"]
  })
  running.add(child)
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (chunk) => (stdout += chunk))
  child.stderr!.on("data", (chunk) => (stderr = (stderr + chunk).slice(-20_000)))
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`tributary backfill did not finish in ${timeoutMs} ms:\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on("error", reject)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      running.delete(child)
      resolve({ code, signal, stdout, stderr })
    })
  })
  return { child, done }
}

/** Runs `tributary backfill ...args` to its end. */
export const runBackfill = (args: ReadonlyArray<string>, timeoutMs?: number) => startBackfill(args, timeoutMs).done
