/**
 * Kafka source: a consumer group over one or more topics, as a `PartitionedSource`.
 *
 * - Each message is a record (its value parsed as JSON, or by a decoder of your own that sees
 *   key, headers, timestamp, topic, partition and offset). A message that is not one (no
 *   value, not JSON, not an object, over `maxValueBytes`) is a dead letter naming topic,
 *   partition and offset, and its offset is committed like any other: it never stalls the
 *   partition.
 * - Commits and batch cuts live in Kafka: the group's committed offset of a partition is the
 *   next offset to read, and its metadata holds the cuts of the batches sent past it. A new
 *   owner of the partition (after a crash or a rebalance) reads both, so it sends the same
 *   batches again under the same idempotency keys, and the service replays them.
 * - Rebalance (kafkajs knows only the eager protocol: every rebalance revokes every
 *   partition): as soon as kafkajs says the group is rebalancing, nothing more is sent for the
 *   partitions; the run drains their batches in flight and commits. kafkajs gives no way to
 *   hold the member back from re-joining meanwhile, so a commit is written only while it is
 *   still this member's to write: before the group's next generation is formed (not after,
 *   even when the partition came back: see `assignments.ts`), and until the broker refuses one
 *   as fenced. What landed after that is resent by the partition's next owner (this member
 *   too) from the last commit, under the same keys. A returning partition's new assignment
 *   waits until the old one is drained.
 * - `stop` ends the source (no more fetching): the run then delivers what it read and commits.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { Chunk, Effect, Either, Fiber, FiberSet, Option, Queue, Runtime, type Scope, Stream } from "effect"
import type { TributaryClientService } from "../../src/client/Client.js"
import type { Progress } from "../../src/pipeline/events.js"
import { type PipelineConfig, type PipelineError, run } from "../../src/pipeline/run.js"
import type { DeadLetterSink } from "../../src/pipeline/DeadLetter.js"
import { DeadLetterError, encodeLetter } from "../../src/pipeline/DeadLetter.js"
import * as Replay from "../../src/pipeline/Replay.js"
import { groupedWritesIn } from "../../src/pipeline/internal/groupedWrites.js"
import { fromQueue, type QueueItem } from "../internal/queue.js"
import type { Assignment, CheckpointWriter, PartitionedSource, SourceEvent } from "../../src/pipeline/Source.js"
import { CheckpointError, type DeadLetter, type Position } from "../../src/pipeline/vocabulary.js"
import {
  addCuts,
  blocksOf,
  Assignments,
  commitAt,
  committedPosition,
  loadCommitted,
  offsetsToWrite,
  oversizedMetadata,
  type PartitionState,
  roomForParts,
  takeFetched
} from "./assignments.js"
import { type Decoder, defaultMaxValueBytes, type KafkaResume, messageElement, partitionName, parsePartitionName } from "./codec.js"
import { type FetchedBatch, type GroupConsumer, KafkaClient, KafkaError, type KafkaMessage } from "./kafkajs.js"

export * from "./codec.js"
export { KafkaClient, KafkaError, type KafkaMessage, type KafkaSettings, layer, make as makeClient } from "./kafkajs.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface KafkaSourceOptions {
  readonly groupId: string
  readonly topics: ReadonlyArray<string>
  /** Where a partition without a committed offset starts: its beginning (default) or its end. */
  readonly fromBeginning?: boolean | undefined
  /** Turns a message into a record (default: its value as JSON). */
  readonly decode?: Decoder | undefined
  /** Longer values are dead letters (default 1 MiB). */
  readonly maxValueBytes?: number | undefined
  /** The group drops a member it has not heard from for this long (default 10 s). */
  readonly sessionTimeoutMillis?: number | undefined
}

/**
 * A running Kafka source.
 *
 * @since 0.1.0
 * @category models
 */
export interface KafkaSource extends PartitionedSource<KafkaError, never, KafkaResume> {
  /** Stops fetching and ends the source's stream (the run then drains and commits). */
  readonly stop: Effect.Effect<void>
  /** The partitions this member holds, with their committed offset and end, for lag. */
  readonly partitions: Effect.Effect<ReadonlyArray<PartitionStatus>>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PartitionStatus {
  readonly partition: string
  /** The next offset to read, as committed (undefined: nothing committed yet). */
  readonly committed: number | undefined
  /** The partition's end as last fetched (undefined: nothing fetched yet). */
  readonly end: number | undefined
}

type Item = QueueItem<SourceEvent<KafkaResume>, KafkaError>

/** Elements per stream chunk, as for NDJSON: big enough to spread costs, small enough to die young. */
const elementsPerChunk = 1024
/** Chunks waiting for the pipeline before fetching waits too. */
const bufferedChunks = 16

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

/**
 * Joins the consumer group and answers the source; leaves the group when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: KafkaSourceOptions): Effect.Effect<KafkaSource, KafkaError, KafkaClient | Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* KafkaClient
    const runtime = yield* Effect.runtime<never>()
    const runPromise = Runtime.runPromise(runtime)
    const queue = yield* Queue.bounded<Item>(bufferedChunks)
    // Never rejects: once the queue is shut down (the source's scope is closing) there is
    // nobody left to hand anything to.
    const offer = (item: Item): Promise<void> => runPromise(Effect.asVoid(Effect.exit(Queue.offer(queue, item))))
    const sessionTimeout = options.sessionTimeoutMillis ?? 10_000
    const heartbeatEvery = Math.max(100, Math.floor(sessionTimeout / 5))
    const maxValueBytes = options.maxValueBytes ?? defaultMaxValueBytes

    const held = new Assignments()
    /** Partition events go out one after another, in the order they happened. */
    let chain: Promise<void> = Promise.resolve()
    const inOrder = (step: () => Promise<void>) => {
      chain = chain.then(step).catch((error) => offer({ _tag: "Failed", error: asKafkaError(error) }))
    }
    /** The last revocation's end: a new assignment reads committed offsets only after it. */
    let lastRelease: Promise<void> = Promise.resolve()
    let stopping = false

    let consumer: GroupConsumer | undefined
    const writers = yield* FiberSet.make<void, never>()

    /**
     * Writes the partitions' committed offsets and cuts, as they are when each attempt goes
     * out; retried here only while the generation is still this member's. Asked before every
     * attempt, not once: kafkajs writes with the generation it holds when the request goes out,
     * so a retry after the member joined again (a member the group dropped is refused, learns
     * it, and joins again within the retries) wrote its old state over the next owner's commit.
     */
    const write = (partitions: ReadonlyArray<PartitionState>, epoch: number): Effect.Effect<void, CheckpointError> => {
      const attempt = (n: number): Effect.Effect<void, CheckpointError> =>
        Effect.suspend(() => {
          if (!held.mayWrite(epoch)) return Effect.void
          const offsets = offsetsToWrite(partitions)
          if (offsets.length === 0) return Effect.void
          const oversized = oversizedMetadata(offsets)
          if (oversized !== undefined) return Effect.fail(new CheckpointError({ reason: oversized }))
          return Effect.catchAll(consumer!.commit(offsets), (error) => {
            if (held.leftToNextOwner(epoch, error.type)) return Effect.void
            if (n >= 5) return Effect.fail(new CheckpointError({ reason: error.reason, cause: error }))
            return Effect.zipRight(Effect.sleep(`${100 * 2 ** n} millis`), attempt(n + 1))
          })
        })
      return attempt(0)
    }

    /**
     * An assignment's writes (its cuts, its splits, its commits) go one at a time, what is
     * asked meanwhile together in the next: each write carries the partitions' state as it is
     * when it goes out, so the last to land is the newest. Written at once, kafkajs's own retry
     * of an older commit (it resends the payload it was given, e.g. when the group's
     * coordinator moved) could land after a newer one and hide cuts whose batches were sent.
     * Several partitions' commits go in one request: four written in turn took four round
     * trips to the group's coordinator (7 ms each on an idle local broker, 27 ms at the median
     * under `bench:kafka`'s load), and doubled the requests it had to serve.
     */
    const writerFor = (epoch: number, byName: ReadonlyMap<string, PartitionState>): CheckpointWriter => {
      const writes = groupedWritesIn<PartitionState, CheckpointError>(writers, (states) => write([...new Set(states)], epoch))
      const commitAll = (positions: ReadonlyArray<Position>) =>
        Effect.suspend(() => {
          const states: Array<PartitionState> = []
          for (const position of positions) {
            const s = byName.get(position.partition)
            if (s === undefined) continue
            commitAt(s, position)
            states.push(s)
          }
          return writes.record(states)
        })
      return {
        recordCuts: (cuts, frontiers) => Effect.suspend(() => writes.record(addCuts(byName, cuts, frontiers))),
        roomForParts: (cut) => roomForParts(byName.get(cut.partition), cut),
        commit: (position) => commitAll([position]),
        commitAll
      }
    }

    const revokeAll = () => {
      const live = held.revokeAll()
      if (live.length === 0) return
      let release!: () => void
      lastRelease = new Promise<void>((resolve) => (release = resolve))
      inOrder(() =>
        offer({
          _tag: "Events",
          events: Chunk.of({ _tag: "Revoked", partitions: live.map((s) => s.name), release: Effect.sync(release) })
        })
      )
    }

    const assign = (partitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }>) => {
      revokeAll() // a member dropped by the group joins again without a rebalance event first
      const { epoch, fresh } = held.assign(partitions)
      const previous = lastRelease
      inOrder(async () => {
        await previous
        const [committed, ends] = await Promise.all([
          runPromise(Effect.either(client.committedOffsets(options.groupId, options.topics))),
          // Read after the previous owner let the partitions go: every block it sent is below these ends.
          runPromise(Effect.either(Effect.forEach(new Set(fresh.map((s) => s.topic)), (topic) =>
            Effect.map(client.topicEnds(topic), (list) => list.map((end) => ({ topic, ...end }))), { concurrency: "unbounded" })))
        ])
        if (committed._tag === "Left") throw committed.left
        if (ends._tag === "Left") throw ends.left
        const byName = new Map(fresh.map((s) => [s.name, s]))
        const assignments: Array<Assignment> = []
        for (const s of fresh) {
          loadCommitted(s, committed.right.find((c) => c.topic === s.topic && c.partition === s.partition))
          if (s.status === "revoked") continue
          assignments.push({
            partition: s.name,
            committed: committedPosition(s),
            cuts: s.cuts,
            checkpoint: writerFor(epoch, byName),
            owned: () => held.owned(s, epoch),
            run: s.run,
            blocks: blocksOf(s, ends.right.flat().find((e) => e.topic === s.topic && e.partition === s.partition)?.end)
          })
        }
        if (assignments.length > 0) await offer({ _tag: "Events", events: Chunk.of({ _tag: "Assigned", assignments }) })
        for (const s of fresh) {
          if (s.status === "pending") s.status = "live"
          s.open()
        }
      })
    }

    /** Waits for `promise`, calling the group's heartbeat meanwhile. */
    const whileBeating = async (promise: Promise<unknown>, heartbeat: () => Promise<void>) => {
      let done = false
      const settled = () => (done = true)
      promise.then(settled, settled)
      while (!done) {
        await Promise.race([promise, sleep(heartbeatEvery)])
        if (!done) await heartbeat()
      }
      await promise
    }

    const toElement = (m: KafkaMessage): SourceEvent<KafkaResume> => messageElement(m, { decode: options.decode, maxValueBytes })
    const onBatch = async (batch: FetchedBatch, heartbeat: () => Promise<void>) => {
      const s = held.get(partitionName(batch.topic, batch.partition))
      if (s === undefined || stopping) return
      if (s.status === "pending") await whileBeating(s.ready, heartbeat)
      if (s.status !== "live" || stopping) return
      const messages = takeFetched(s, batch)
      for (let at = 0; at < messages.length; at += elementsPerChunk) {
        if (s.status !== "live" || stopping) return
        // Parsed when the pipeline takes them, so that they die young.
        const slice = messages.slice(at, at + elementsPerChunk)
        const events = Effect.sync(() => Chunk.unsafeFromArray(slice.map(toElement)))
        await whileBeating(offer({ _tag: "Later", events }), heartbeat)
      }
    }

    consumer = yield* client.consume({
      groupId: options.groupId,
      topics: options.topics,
      fromBeginning: options.fromBeginning ?? true,
      sessionTimeoutMillis: sessionTimeout,
      handlers: {
        onBatch,
        onRebalancing: revokeAll,
        onAssigned: assign,
        onCrash: (error) => void offer({ _tag: "Failed", error }),
        // It left the group: nothing more is written or sent for what it held, and the run
        // drains it, before the consumer joins again.
        onRestarting: () => {
          held.leftGroup()
          revokeAll()
        }
      }
    })
    const running = consumer
    // Runs before the consumer leaves the group (finalizers run last first): a fetch still
    // waiting for room in the queue is let go, or leaving would wait for it forever.
    yield* Effect.addFinalizer(() => Queue.shutdown(queue))

    const events: Stream.Stream<SourceEvent<KafkaResume>, KafkaError> = fromQueue(queue)

    return {
      _tag: "PartitionedSource",
      name: `kafka:${options.groupId}`,
      events,
      stop: Effect.suspend(() => {
        if (stopping) return Effect.void
        stopping = true
        return Effect.zipRight(
          running.pause(held.all().map((s) => ({ topic: s.topic, partition: s.partition }))),
          Effect.sync(() => inOrder(() => offer({ _tag: "End" })))
        )
      }),
      partitions: Effect.sync(() => held.all().map((s) => ({ partition: s.name, committed: s.committed, end: s.end })))
    }
  })

/**
 * What a Kafka sink (`runUntilStopped`, `tributary sink`) changes of `run`'s defaults. Every
 * batch pending past a partition's commit keeps its cut in the committed offset's metadata
 * (4096 characters at the broker): fewer pending batches than `run`'s 4096. A commit is one
 * request to the group coordinator, cheap next to a checkpoint file's synced write: at most
 * one each 25 ms, not 100 (the wait for the next commit was about 50 ms of a message's
 * latency on average).
 *
 * @since 0.3.0
 * @category defaults
 */
export const sinkDefaults = { maxPending: { batches: 256 }, commitInterval: "25 millis" } as const

/**
 * Runs the pipeline over a Kafka source until it fails or is interrupted (SIGTERM through
 * `NodeRuntime.runMain`). Interrupted, it stops fetching, delivers what was read and commits,
 * within `drainTimeout` (default 30 s): batches still in flight then are interrupted, and
 * their keys make the next owner's resend harmless.
 *
 * @since 0.1.0
 * @category running
 */
export const runUntilStopped = <E2 = never, R2 = never>(
  client: TributaryClientService,
  config: Omit<PipelineConfig<KafkaError, never, E2, R2>, "source" | "checkpoint"> & {
    readonly source: KafkaSource
    /** Runs first when the sink is told to stop (to say so). */
    readonly onStop?: Effect.Effect<void> | undefined
  }
): Effect.Effect<Progress, KafkaError | PipelineError | E2, R2> =>
  Effect.gen(function*() {
    // A daemon: the caller's fiber is what the signal interrupts, and the run must outlive
    // that interruption long enough to drain.
    // Until the run took its first partitions (it may still be reading the dataset's schema,
    // or retrying an unreachable service), it holds nothing to deliver or commit: a stop then
    // ends it at once instead of waiting for that start to finish.
    let assigned = false
    const onEvent = config.onEvent
    const running = yield* Effect.forkDaemon(run(client, {
      ...config,
      maxPending: config.maxPending ?? sinkDefaults.maxPending,
      commitInterval: config.commitInterval ?? sinkDefaults.commitInterval,
      onEvent: (event) => {
        if (event._tag === "Assigned") assigned = true
        return onEvent === undefined ? Effect.void : onEvent(event)
      }
    }))
    const drain = Effect.gen(function*() {
      if (config.onStop !== undefined) yield* config.onStop
      yield* config.source.stop
      if (!assigned) return yield* Fiber.interrupt(running)
      const finished = yield* Fiber.await(running).pipe(Effect.timeout(config.drainTimeout ?? "30 seconds"), Effect.option)
      if (Option.isNone(finished)) yield* Fiber.interrupt(running)
    })
    return yield* Fiber.join(running).pipe(Effect.onInterrupt(() => drain))
  })

const asKafkaError = (error: unknown): KafkaError =>
  error instanceof KafkaError ? error : new KafkaError({ reason: String(error), cause: error })

/**
 * Dead letters as messages of a Kafka topic (the Kafka way), one JSON object each with `at`,
 * keyed by the letter's partition; written with every in-sync replica's acknowledgement
 * before anything past them is committed.
 *
 * @since 0.1.0
 * @category constructors
 */
export const deadLetterTopic = (topic: string): Effect.Effect<DeadLetterSink, never, KafkaClient> =>
  Effect.map(KafkaClient, (client) => ({
    write: (letters: ReadonlyArray<DeadLetter>) => {
      if (letters.length === 0) return Effect.void
      const at = new Date().toISOString()
      return client.produce(
        topic,
        letters.map((letter) => ({ key: letter.position.partition, value: encodeLetter(letter, at) }))
      ).pipe(Effect.mapError((error) => new DeadLetterError({ reason: error.reason, cause: error })))
    }
  }))

/**
 * The dead letters a topic holds now (for `Replay.replay`), as a stream: every partition read
 * from its start up to its end as it was when the read began, with a consumer group of its own
 * that commits nothing (the topic's own groups are left alone). The consumer waits while 1,024
 * letters are read and not taken (kafkajs fetches the next batch when a batch's handler
 * returns). A message that is not a letter fails the stream, naming topic, partition and
 * offset.
 *
 * @since 0.3.0
 * @category constructors
 */
export const deadLetterTopicLetters = (topic: string): Stream.Stream<Replay.StoredLetter, KafkaError | Replay.ReplayError, KafkaClient> =>
  Stream.asyncScoped<Replay.StoredLetter, KafkaError | Replay.ReplayError, KafkaClient>((emit) =>
    Effect.gen(function*() {
      const client = yield* KafkaClient
      const ends = yield* client.topicEnds(topic)
      const remaining = new Map(ends.filter((end) => end.end > 0).map((end) => [end.partition, end.end]))
      if (remaining.size === 0) return yield* Effect.promise(() => emit.end())
      yield* client.consume({
        groupId: `tributary-replay-${randomUUID()}`,
        topics: [topic],
        fromBeginning: true,
        sessionTimeoutMillis: 10_000,
        handlers: {
          onBatch: async (batch) => {
            const end = remaining.get(batch.partition)
            if (end === undefined) return
            for (const message of batch.messages) {
              if (message.offset >= end) break
              const letter = Replay.decodeLetter(message.value?.toString("utf8") ?? "")
              if (Either.isLeft(letter)) {
                const where = `topic ${topic} partition ${batch.partition} offset ${message.offset}`
                remaining.clear()
                await emit.fail(new Replay.ReplayError({ reason: `${where} is not a dead letter: ${letter.left}` }))
                return
              }
              await emit.single(letter.right)
            }
            if (batch.messages.length > 0 && batch.messages[batch.messages.length - 1]!.offset >= end - 1) {
              remaining.delete(batch.partition)
              if (remaining.size === 0) await emit.end()
            }
          },
          onRebalancing: () => {},
          onAssigned: () => {},
          onCrash: (error) => void emit.fail(error)
        }
      })
    }), 1024)

/**
 * The dead letters a topic holds now, all of them (`deadLetterTopicLetters` collected).
 *
 * @since 0.3.0
 * @category constructors
 */
export const readDeadLetterTopic = (topic: string): Effect.Effect<ReadonlyArray<Replay.StoredLetter>, KafkaError | Replay.ReplayError, KafkaClient> =>
  Effect.map(Stream.runCollect(deadLetterTopicLetters(topic)), Chunk.toReadonlyArray)

/** Re-exported for sources that name partitions the Kafka way. @since 0.1.0 */
export { parsePartitionName }
