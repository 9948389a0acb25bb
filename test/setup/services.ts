/**
 * vitest globalSetup: brings up the real services (`scripts/services.sh start`: Postgres and a
 * local Kafka broker) so that `npm test` works on a machine where they are down, and exports
 * `KAFKA_BROKERS` / `DATABASE_URL` to the test workers (also available as `inject(...)`).
 *
 * Teardown stops Kafka only when this run started it and no other test run in this checkout is
 * still using it; a broker started beforehand (`npm run services:start`, CI) is left running.
 *
 * A run whose files need no Kafka (`npx vitest run test/server/fuzz.test.ts`) starts none:
 * only Postgres. Which files need one is read from the files themselves (they import Kafka
 * helpers or name the brokers); the files of a run are the test files that the command line's
 * filters match, or all of them when no filter matches a file.
 *
 * `TRIBUTARY_EXTERNAL_SERVICES=1` skips all of this: tests then use the variables as given.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { Kafka, logLevel } from "kafkajs"
import type { TestProject } from "vitest/node"
import { databaseUrl, kafkaBrokers } from "../support/services.js"

declare module "vitest" {
  export interface ProvidedContext {
    kafkaBrokers: string
    databaseUrl: string
  }
}

const root = fileURLToPath(new URL("../..", import.meta.url))
const envFile = `${root}.services/env`
/** One file per test run (named by its pid) that currently relies on the broker. */
const kafkaUsers = `${root}.services/kafka.users`

const script = (name: string, command: string): number => {
  const result = spawnSync("bash", [`scripts/${name}.sh`, command], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"]
  })
  if (result.error) throw result.error
  return result.status ?? 1
}

/** KEY=value lines, as written by `scripts/services.sh start`. */
const readEnvFile = (path: string): Record<string, string> =>
  Object.fromEntries(
    readFileSync(path, "utf8")
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line.length > 0 && !line.startsWith("#"))
      .map((line) => {
        const at = line.indexOf("=")
        return [line.slice(0, at), line.slice(at + 1)]
      })
  )

const testFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? testFiles(join(dir, entry.name)) : entry.name.endsWith(".test.ts") ? [join(dir, entry.name)] : []
  )

/** A file that talks to Kafka: imports a Kafka helper or connector, or reads the brokers. */
const usesKafka = (file: string) => /support\/kafka|connectors\/kafka|kafkaBrokers|\bKAFKA_[A-Z]+_?BROKERS/.test(readFileSync(file, "utf8"))

/**
 * Whether the files this run executes need a broker. The filters are the command line's words
 * that are not options; a word that matches no test file (an option's value, `run`) is not one.
 */
export const runNeedsKafka = (argv: ReadonlyArray<string>, files: ReadonlyArray<string> = testFiles(`${root}test`)): boolean => {
  const paths = files.map((file) => relative(root, file))
  const filters = argv.filter((word) => !word.startsWith("-") && paths.some((path) => path.includes(word)))
  const selected = filters.length === 0 ? files : files.filter((_, i) => filters.some((word) => paths[i]!.includes(word)))
  return selected.some(usesKafka)
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * A fresh broker creates `__consumer_offsets` on the first group lookup and answers
 * "coordinator not available / loading" until it is ready; kafkajs logs each retry as an error.
 * Looking a group up once here keeps that noise (and its delay) out of the tests.
 */
const warmUpGroupCoordinator = async (brokers: string[]): Promise<void> => {
  const kafka = new Kafka({ clientId: "tributary-test-setup", brokers, logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  try {
    await admin.describeGroups(["tributary-test-setup"])
  } finally {
    await admin.disconnect()
  }
}

export default async function setup(project: TestProject): Promise<(() => void) | undefined> {
  const external = process.env["TRIBUTARY_EXTERNAL_SERVICES"] === "1"
  let startedKafka = false
  const needsKafka = external || runNeedsKafka(process.argv.slice(2))
  if (!external && !needsKafka) {
    if (script("postgres", "start") !== 0) throw new Error("scripts/postgres.sh start failed (output above)")
    const url = spawnSync("bash", ["scripts/postgres.sh", "url"], { cwd: root, encoding: "utf8" }).stdout.trim()
    if (url !== "") process.env["DATABASE_URL"] ??= url
  } else if (!external) {
    const kafkaWasRunning = script("kafka", "status") === 0
    if (script("services", "start") !== 0) {
      throw new Error("scripts/services.sh start failed (output above)")
    }
    startedKafka = !kafkaWasRunning
    // Workers are forked after globalSetup and inherit this process's environment.
    Object.assign(process.env, readEnvFile(envFile))
    mkdirSync(kafkaUsers, { recursive: true })
    writeFileSync(`${kafkaUsers}/${process.pid}`, "")
  }
  project.provide("kafkaBrokers", kafkaBrokers().join(","))
  project.provide("databaseUrl", databaseUrl())
  if (needsKafka) await warmUpGroupCoordinator(kafkaBrokers())

  if (external || !needsKafka) return undefined
  return () => {
    rmSync(`${kafkaUsers}/${process.pid}`, { force: true })
    const othersUsingKafka = readdirSync(kafkaUsers).some((name) => isAlive(Number(name)))
    if (startedKafka && !othersUsingKafka) script("kafka", "stop")
  }
}
