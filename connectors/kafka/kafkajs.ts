/**
 * The one module that speaks to kafkajs. Everything else in the Kafka connector sees the
 * shapes below (`KafkaClient`, `FetchedBatch`, `KafkaError`), so that the client library can
 * be replaced (kafkajs 2.2.4 is dormant upstream) without touching the sink's logic. Foreign
 * errors are translated here, once, into `KafkaError` with a reason.
 *
 * @since 0.1.0
 */
import type { ConnectionOptions } from "node:tls"
import { Context, Data, Effect, Layer, Redacted } from "effect"
import { type Consumer, type IHeaders, Kafka, type KafkaMessage as KafkajsMessage, logLevel, type SASLOptions } from "kafkajs"

// kafkajs 2 warns about its partitioner change on every producer; its default is what we want.
process.env["KAFKAJS_NO_PARTITIONER_WARNING"] = "1"

/**
 * How to reach a cluster: several brokers, a client id, TLS and SASL. Secrets are `Redacted`,
 * so they never show in logs or error messages.
 *
 * @since 0.1.0
 * @category models
 */
export interface KafkaSettings {
  /** `HOST:PORT` of one or more brokers (any of them will do to find the rest). */
  readonly brokers: ReadonlyArray<string>
  readonly clientId?: string | undefined
  /** `true` for TLS with the system's trusted authorities, or Node's TLS options. */
  readonly tls?: boolean | ConnectionOptions | undefined
  readonly sasl?: {
    readonly mechanism: "plain" | "scram-sha-256" | "scram-sha-512"
    readonly username: string
    readonly password: Redacted.Redacted
  } | undefined
}

/**
 * A Kafka operation failed. `reason` names what was being done (topic, partition, group).
 *
 * @since 0.1.0
 * @category errors
 */
export class KafkaError extends Data.TaggedError("KafkaError")<{
  readonly reason: string
  /** The broker's error type when it sent one (`REBALANCE_IN_PROGRESS`, `ILLEGAL_GENERATION`, ...). */
  readonly type?: string | undefined
  readonly cause?: unknown
}> {
  override get message() {
    return this.reason
  }
}

const translate = (doing: string) => (cause: unknown): KafkaError => {
  const error = cause as { message?: string; type?: string }
  return new KafkaError({ reason: `${doing}: ${error?.message ?? String(cause)}`, type: error?.type, cause })
}

/**
 * One message, as the connector sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface KafkaMessage {
  readonly topic: string
  readonly partition: number
  readonly offset: number
  readonly key: Buffer | null
  readonly value: Buffer | null
  /** Header values as UTF-8 text (the first, when a header repeats). */
  readonly headers: Readonly<Record<string, string>>
  /** Milliseconds since the epoch (the producer's or the broker's time, per topic setting). */
  readonly timestamp: number
}

/**
 * The messages of one partition fetched together.
 *
 * @since 0.1.0
 * @category models
 */
export interface FetchedBatch {
  readonly topic: string
  readonly partition: number
  /** The partition's end: the offset the next produced message will get. */
  readonly highWatermark: number
  readonly messages: ReadonlyArray<KafkaMessage>
}

/**
 * What a group consumer calls back. `onBatch` may wait (backpressure); it calls `heartbeat`
 * while it does, so that the group does not think the member is gone. `onRebalancing` is
 * called when the member must give up its partitions (before it joins again); `onAssigned`
 * after it joined, with its new partitions.
 *
 * @since 0.1.0
 * @category models
 */
export interface GroupHandlers {
  readonly onBatch: (batch: FetchedBatch, heartbeat: () => Promise<void>) => Promise<void>
  readonly onRebalancing: () => void
  readonly onAssigned: (partitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }>) => void
  readonly onCrash: (error: KafkaError) => void
  /**
   * The consumer stopped on an error it retries by starting again (kafkajs's "restart"): it left
   * the group, so its partitions are no longer its own; it joins again (`onAssigned`) shortly.
   */
  readonly onRestarting?: (() => void) | undefined
}

/**
 * The error type of a commit the consumer did not send because it was stopped (after a crash
 * it restarts from, or while leaving): kafkajs answers such a commit as if it had landed.
 *
 * @since 0.3.0
 * @category defaults
 */
export const consumerStopped = "CONSUMER_STOPPED"

/** Whether a landed commit's payload (kafkajs's `COMMIT_OFFSETS` event) holds every one of `offsets`. */
const holdsAll = (
  topics: ReadonlyArray<{ readonly topic: string; readonly partitions: ReadonlyArray<{ readonly partition: number; readonly offset: unknown; readonly metadata?: string | null }> }>,
  offsets: ReadonlyArray<CommittedOffset>
): boolean =>
  offsets.every((o) =>
    topics.some((t) =>
      t.topic === o.topic &&
      t.partitions.some((p) => p.partition === o.partition && String(p.offset) === String(o.offset) && (p.metadata ?? null) === o.metadata)
    )
  )

/**
 * A committed offset (the next offset to read) with its metadata text.
 *
 * @since 0.1.0
 * @category models
 */
export interface CommittedOffset {
  readonly topic: string
  readonly partition: number
  /** -1 when the group has committed nothing for the partition. */
  readonly offset: number
  readonly metadata: string | null
}

/**
 * A member of a consumer group, running.
 *
 * @since 0.1.0
 * @category models
 */
export interface GroupConsumer {
  readonly commit: (offsets: ReadonlyArray<CommittedOffset>) => Effect.Effect<void, KafkaError>
  /** Stops fetching the given partitions (they stay assigned: the group sees no change). */
  readonly pause: (partitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }>) => Effect.Effect<void>
}

/**
 * A connected client: group consumers, committed offsets, topic ends, and a producer.
 *
 * @since 0.1.0
 * @category models
 */
export interface KafkaClientService {
  /** Joins `groupId` over `topics`; leaves the group when the scope closes. */
  readonly consume: (options: {
    readonly groupId: string
    readonly topics: ReadonlyArray<string>
    readonly fromBeginning: boolean
    readonly sessionTimeoutMillis: number
    readonly handlers: GroupHandlers
  }) => Effect.Effect<GroupConsumer, KafkaError, import("effect/Scope").Scope>
  readonly committedOffsets: (groupId: string, topics: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<CommittedOffset>, KafkaError>
  /** Each partition's end (high watermark). */
  readonly topicEnds: (topic: string) => Effect.Effect<ReadonlyArray<{ readonly partition: number; readonly end: number }>, KafkaError>
  /** Sends messages and waits for every in-sync replica to have them. */
  readonly produce: (
    topic: string,
    messages: ReadonlyArray<{ readonly key?: string | undefined; readonly value: string }>
  ) => Effect.Effect<void, KafkaError>
}

/**
 * @since 0.1.0
 * @category services
 */
export class KafkaClient extends Context.Tag("tributary/connectors/kafka/KafkaClient")<KafkaClient, KafkaClientService>() {}

const headerText = (headers: IHeaders | undefined): Record<string, string> => {
  const out: Record<string, string> = {}
  if (headers === undefined) return out
  for (const name in headers) {
    const value = headers[name]
    const first = Array.isArray(value) ? value[0] : value
    if (first !== undefined) out[name] = first.toString()
  }
  return out
}

const message = (topic: string, partition: number, m: KafkajsMessage): KafkaMessage => ({
  topic,
  partition,
  offset: Number(m.offset),
  key: m.key ?? null,
  value: m.value ?? null,
  headers: headerText(m.headers),
  timestamp: Number(m.timestamp)
})

const saslOptions = (sasl: NonNullable<KafkaSettings["sasl"]>): SASLOptions =>
  ({ mechanism: sasl.mechanism, username: sasl.username, password: Redacted.value(sasl.password) }) as SASLOptions

/**
 * Connects (or joins a group) so that a stop can come at any moment. kafkajs takes no abort
 * signal and keeps trying for a long time (a broker that accepts and never answers holds a
 * connect for its request timeout and retries, a refused port for its retries, seconds to
 * minutes), so the wait is interruptible and the way out is registered before it starts:
 * interrupted or failed, the connection is let go without waiting (kafkajs's disconnect first
 * waits for requests a silent broker will never answer); connected, it is closed and waited
 * for when the scope closes, as the group must be left in order.
 */
const connectOrStop = (
  connect: () => Promise<unknown>,
  disconnect: () => Promise<unknown>,
  doing: string
): Effect.Effect<void, KafkaError, import("effect/Scope").Scope> =>
  Effect.suspend(() => {
    let connected = false
    const release = () => disconnect().catch(() => undefined)
    return Effect.zipRight(
      Effect.addFinalizer(() => connected ? Effect.promise(release) : Effect.sync(() => void release())),
      Effect.tryPromise({ try: connect, catch: translate(doing) }).pipe(
        Effect.zipRight(Effect.sync(() => (connected = true))),
        Effect.interruptible
      )
    )
  })

/**
 * What the group's coordinator answers while members come and go: kafkajs retries each of these
 * by itself, and logs each at error level as the connection's (a member joining or leaving made
 * a healthy sink print two or three "kafka error" lines). A coordinator that stays away still
 * ends in an error of the consumer, which the sink reports.
 */
const routineGroupAnswers =
  /group coordinator is not available|not the correct coordinator|coordinator is loading|rebalancing|generation id is not valid|not aware of this member/i

/**
 * The stderr line of one kafkajs log entry, or none for the routine answers of a group in
 * motion (`routineGroupAnswers`); the runner's notice that the group rebalances becomes one
 * plain line.
 *
 * @since 0.3.0
 * @category utils
 */
export const logLine = (namespace: string, label: string, message: string, error: unknown): string | undefined => {
  const cause = typeof error === "string" ? error : undefined
  if (namespace === "Connection" && cause !== undefined && routineGroupAnswers.test(cause)) return undefined
  if (namespace === "Runner" && /rebalancing/i.test(message)) return "kafka: the group is rebalancing (a member joined or left); re-joining"
  return `kafka ${label.toLowerCase()} ${namespace}: ${message}${cause === undefined ? "" : `: ${cause}`}`
}

/**
 * A client of the cluster in `settings`. kafkajs's own log goes to stderr at warning level
 * and above, as one line each (it never prints SASL secrets).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (settings: KafkaSettings): Effect.Effect<KafkaClientService, KafkaError, import("effect/Scope").Scope> =>
  Effect.gen(function*() {
    const kafka = new Kafka({
      clientId: settings.clientId ?? "tributary",
      brokers: [...settings.brokers],
      ...(settings.tls === undefined ? {} : { ssl: settings.tls }),
      ...(settings.sasl === undefined ? {} : { sasl: saslOptions(settings.sasl) }),
      logLevel: logLevel.WARN,
      logCreator: () => ({ namespace, label, log }) => {
        const line = logLine(namespace, label, log.message, log["error"])
        if (line !== undefined) process.stderr.write(`${line}\n`)
      }
    })
    const admin = kafka.admin()
    yield* connectOrStop(
      () => admin.connect(),
      () => admin.disconnect(),
      `cannot connect to ${settings.brokers.join(",")}`
    )
    const producer = kafka.producer({ allowAutoTopicCreation: false })
    let producerConnected: Promise<void> | undefined
    yield* Effect.addFinalizer(() =>
      producerConnected === undefined ? Effect.void : Effect.promise(() => producer.disconnect().catch(() => undefined))
    )

    const consume: KafkaClientService["consume"] = (options) =>
      Effect.gen(function*() {
        const consumer: Consumer = kafka.consumer({
          groupId: options.groupId,
          sessionTimeout: options.sessionTimeoutMillis,
          heartbeatInterval: Math.max(100, Math.floor(options.sessionTimeoutMillis / 5)),
          // kafkajs heartbeats between fetches only, and a fetch of a caught-up partition
          // waits up to this long at the broker (kafkajs's default, 5 s, is longer than short
          // session timeouts: the member was dropped from its group while it waited).
          maxWaitTimeInMs: Math.min(5000, Math.max(100, Math.floor(options.sessionTimeoutMillis / 5))),
          // Few and quick: kafkajs retries a failed commit with the generation current at the
          // retry, so a commit retried across a rebalance could land for a partition that has
          // gone to another member. Three tries within about 300 ms end well before a
          // rebalance can complete (other members only learn of it at their next heartbeat);
          // the source retries further itself, only while the partition is still its own.
          retry: { retries: 2, initialRetryTime: 100 }
        })
        consumer.on(consumer.events.REBALANCING, () => options.handlers.onRebalancing())
        consumer.on(consumer.events.GROUP_JOIN, ({ payload }) =>
          options.handlers.onAssigned(
            Object.entries(payload.memberAssignment).flatMap(([topic, partitions]) => partitions.map((partition) => ({ topic, partition })))
          ))
        consumer.on(consumer.events.CRASH, ({ payload }) => {
          if (!payload.restart) options.handlers.onCrash(translate(`consumer of group ${options.groupId}`)(payload.error))
          else options.handlers.onRestarting?.()
        })
        yield* connectOrStop(
          async () => {
            await consumer.connect()
            await consumer.subscribe({ topics: [...options.topics], fromBeginning: options.fromBeginning })
            await consumer.run({
              autoCommit: false,
              eachBatchAutoResolve: false,
              eachBatch: async ({ batch, heartbeat, resolveOffset }) => {
                if (batch.messages.length === 0) return
                await options.handlers.onBatch({
                  topic: batch.topic,
                  partition: batch.partition,
                  highWatermark: Number(batch.highWatermark),
                  messages: batch.messages.map((m) => message(batch.topic, batch.partition, m))
                }, heartbeat)
                // Only moves kafkajs's fetch position: commits are the pipeline's.
                resolveOffset(batch.lastOffset())
              }
            })
          },
          () => consumer.disconnect(),
          `cannot join group ${options.groupId} on ${options.topics.join(",")}`
        )
        return {
          // kafkajs answers a commit of a stopped consumer (crashed and about to start again, or
          // leaving) as if it had landed, without sending it: a commit counts only when kafkajs
          // tells it landed (its `COMMIT_OFFSETS` event, sent before the commit answers). A cut
          // taken for written that never was let the next owner cut the batches anew, under
          // other keys: stored twice, and a key's older version applied after its newer one.
          commit: (offsets) =>
            Effect.tryPromise({
              try: async () => {
                let landed = false
                const stopListening = consumer.on(consumer.events.COMMIT_OFFSETS, ({ payload }) => {
                  if (!landed && holdsAll(payload.topics, offsets)) landed = true
                })
                try {
                  await consumer.commitOffsets(offsets.map((o) => ({
                    topic: o.topic,
                    partition: o.partition,
                    offset: String(o.offset),
                    metadata: o.metadata
                  })))
                } finally {
                  stopListening()
                }
                if (!landed) throw Object.assign(new Error("the consumer is stopped: the commit was not sent"), { type: consumerStopped })
              },
              catch: translate(
                `cannot commit ${offsets.map((o) => `${o.topic} partition ${o.partition} offset ${o.offset}`).join(", ")} ` +
                  `for group ${options.groupId}`
              )
            }),
          pause: (partitions) =>
            Effect.sync(() => {
              for (const { partition, topic } of partitions) consumer.pause([{ topic, partitions: [partition] }])
            })
        }
      })

    return {
      consume,
      committedOffsets: (groupId, topics) =>
        Effect.tryPromise({
          try: () => admin.fetchOffsets({ groupId, topics: [...topics] }),
          catch: translate(`cannot read the committed offsets of group ${groupId}`)
        }).pipe(Effect.map((answer) =>
          answer.flatMap(({ partitions, topic }) =>
            partitions.map((p) => ({ topic, partition: p.partition, offset: Number(p.offset), metadata: p.metadata }))
          )
        )),
      topicEnds: (topic) =>
        Effect.tryPromise({
          try: () => admin.fetchTopicOffsets(topic),
          catch: translate(`cannot read the ends of topic ${topic}`)
        }).pipe(Effect.map((answer) => answer.map((p) => ({ partition: p.partition, end: Number(p.high) })))),
      produce: (topic, messages) =>
        Effect.tryPromise({
          try: async () => {
            producerConnected ??= producer.connect()
            await producerConnected
            await producer.send({ topic, acks: -1, messages: messages.map((m) => ({ key: m.key ?? null, value: m.value })) })
          },
          catch: translate(`cannot produce to topic ${topic}`)
        })
    }
  })

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = (settings: KafkaSettings): Layer.Layer<KafkaClient, KafkaError> => Layer.scoped(KafkaClient, make(settings))
