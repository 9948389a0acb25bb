/**
 * vitest globalSetup: brings up the real services (`scripts/services.sh start`: Postgres and a
 * local Kafka broker) so that `npm test` works on a machine where they are down, and exports
 * `KAFKA_BROKERS` / `DATABASE_URL` to the test workers (also available as `inject(...)`).
 *
 * Teardown stops Kafka only when this run started it and no other test run in this checkout is
 * still using it; a broker started beforehand (`npm run services:start`, CI) is left running.
 *
 * `TRIBUTARY_EXTERNAL_SERVICES=1` skips all of this: tests then use the variables as given.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
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
  if (!external) {
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
  await warmUpGroupCoordinator(kafkaBrokers())

  if (external) return undefined
  return () => {
    rmSync(`${kafkaUsers}/${process.pid}`, { force: true })
    const othersUsingKafka = readdirSync(kafkaUsers).some((name) => isAlive(Number(name)))
    if (startedKafka && !othersUsingKafka) script("kafka", "stop")
  }
}
