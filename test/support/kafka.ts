/**
 * Helpers for tests on the real broker: topics, producing, reading a topic whole, the
 * group's lag, and `tributary sink` children.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { Kafka, logLevel } from "kafkajs"
import { binPath } from "./cli.js"
import { kafkaBrokers } from "./services.js"

process.env["KAFKAJS_NO_PARTITIONER_WARNING"] = "1"

export const kafka = () => new Kafka({ clientId: "tributary-test", brokers: kafkaBrokers(), logLevel: logLevel.NOTHING })

export const createTopic = async (topic: string, numPartitions: number) => {
  const admin = kafka().admin()
  await admin.connect()
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions, replicationFactor: 1 }], waitForLeaders: true })
  } finally {
    await admin.disconnect()
  }
}

/** The offset `groupId` committed for partition 0 of `topic`, with its metadata. */
export const committedOffset = async (groupId: string, topic: string) => {
  const admin = kafka().admin()
  await admin.connect()
  try {
    const [answer] = await admin.fetchOffsets({ groupId, topics: [topic] })
    const p = answer!.partitions.find((p) => p.partition === 0)!
    return { offset: Number(p.offset), metadata: p.metadata }
  } finally {
    await admin.disconnect()
  }
}

/** Messages not yet committed by `groupId`, summed over the topic's partitions. */
export const groupLag = async (groupId: string, topic: string): Promise<number> => {
  const admin = kafka().admin()
  await admin.connect()
  try {
    const ends = await admin.fetchTopicOffsets(topic)
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] })
    return ends.reduce((sum, end) => {
      const at = Number(committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? -1)
      return sum + Number(end.high) - Math.max(0, at)
    }, 0)
  } finally {
    await admin.disconnect()
  }
}

/** Every message of a topic from its start, as text. */
export const readTopic = async (topic: string): Promise<Array<string>> => {
  const admin = kafka().admin()
  await admin.connect()
  const ends = await admin.fetchTopicOffsets(topic)
  await admin.disconnect()
  const total = ends.reduce((sum, end) => sum + Number(end.high) - Number(end.low), 0)
  const values: Array<string> = []
  if (total === 0) return values
  const consumer = kafka().consumer({ groupId: `reader-${Math.random()}`, sessionTimeout: 6000 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value?.toString("utf8") ?? "")
        if (values.length >= total) resolve()
      }
    })
  })
  await consumer.disconnect()
  return values
}

export interface SinkChild {
  readonly child: ChildProcess
  readonly output: () => string
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
}

const children = new Set<ChildProcess>()

/** Starts `tributary sink ...args`, with `env` added to this process's environment. */
export const startSink = (args: ReadonlyArray<string>, env: Record<string, string> = {}): SinkChild => {
  const child = spawn(process.execPath, [binPath, "sink", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env }
  })
  children.add(child)
  let output = ""
  child.stdout!.on("data", (chunk) => (output = (output + chunk).slice(-50_000)))
  child.stderr!.on("data", (chunk) => (output = (output + chunk).slice(-50_000)))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => {
      children.delete(child)
      resolve({ code, signal })
    })
  )
  return { child, output: () => output, exited }
}

/** Kills (SIGKILL) every sink child still running. */
export const killAllSinks = () => {
  for (const child of children) child.kill("SIGKILL")
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `check` every 200 ms until it holds, or fails with `describe()` after `timeoutMs`. */
export const waitFor = async (check: () => Promise<boolean>, timeoutMs: number, describe: () => string | Promise<string>) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${await describe()}`)
    await sleep(200)
  }
}

/**
 * Live traffic: `messages` sent in bursts of `burst.min` to `burst.max` messages with pauses of
 * up to `maxPauseMs` between them, each burst whole before the next (so a key's messages keep
 * their order). Resolves when all are sent, with how long it took since `started`.
 */
export const produceInBursts = async (
  topic: string,
  messages: ReadonlyArray<{ readonly key: string; readonly value: string }>,
  options: { readonly random: () => number; readonly burst: { readonly min: number; readonly max: number }; readonly maxPauseMs: number; readonly started: number }
): Promise<string> => {
  const { burst, maxPauseMs, random, started } = options
  const producer = kafka().producer()
  await producer.connect()
  for (let at = 0; at < messages.length;) {
    const size = burst.min + Math.floor(random() * (burst.max - burst.min))
    await producer.send({ topic, acks: -1, messages: messages.slice(at, at + size) })
    at += size
    await sleep(Math.floor(random() * maxPauseMs))
  }
  await producer.disconnect()
  return `produced ${messages.length} messages in ${Date.now() - started} ms`
}

