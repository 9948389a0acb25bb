/**
 * The Kafka source on the real broker when a member is dropped from its group while it still
 * runs (starved of CPU past its session timeout: it neither fetched nor heartbeated). Another
 * member takes its partition and commits past it; the dropped member, still holding what it
 * delivered before it was dropped, commits that late, and then joins again. Its late commit
 * must never land: the next owner would read an older offset with the older cuts, and cut the
 * other member's batches anew, under other keys (stored twice).
 *
 * Both ways it can join again: its partition goes to the other member, or comes back to it (the
 * other member left meanwhile: a generation it never saw gave the partition to someone else).
 *
 * And a member whose consumer crashes on an error kafkajs retries by starting it again: it
 * leaves the group, and until it has joined again kafkajs answers its commits as landed
 * without sending them. The source must take none of them for written (a cut taken for
 * recorded that never was let the next owner cut the batches anew), and must give up what it
 * held at once.
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "vitest"
import { Effect, Either, Exit, Fiber, Queue, Scope, Stream } from "effect"
import * as Kafka from "../../connectors/kafka/index.js"
import type { GroupConsumer, KafkaClientService } from "../../connectors/kafka/kafkajs.js"
import type { Assignment, SourceEvent } from "../../src/pipeline/Source.js"
import { committedOffset, createTopic, kafka, sleep } from "../support/kafka.js"
import { kafkaBrokers } from "../support/services.js"

const sessionTimeoutMillis = 2000

const produce = async (topic: string, from: number, count: number) => {
  const producer = kafka().producer()
  await producer.connect()
  await producer.send({
    topic,
    acks: -1,
    messages: Array.from({ length: count }, (_, i) => ({ value: JSON.stringify({ id: `m${from + i}`, n: from + i }) }))
  })
  await producer.disconnect()
}

/**
 * A member: the real source over the real client, whose fetched batches can be held before
 * the source sees them (kafkajs then neither fetches nor heartbeats: the group drops it). Its
 * events are collected; `assigned` waits for the next assignment.
 */
const member = (scope: Scope.Scope, group: string, topic: string, clientId: string) =>
  Effect.gen(function*() {
    const client = yield* Kafka.makeClient({ brokers: kafkaBrokers(), clientId })
    let hold: Promise<void> | undefined
    let release = () => {}
    // Crashing: each fetched batch fails until kafkajs gives up its retries and starts the
    // consumer again; meanwhile commits go out back to back through the consumer, each answer kept.
    let crashing = false
    let rejoined = false
    let consumer: GroupConsumer | undefined
    const answers: Array<Either.Either<void, { readonly type?: string | undefined }>> = []
    const commitUntilRejoined = async (offset: number) => {
      while (!rejoined) {
        answers.push(await Effect.runPromise(Effect.either(consumer!.commit([{ topic, partition: 0, offset, metadata: null }]))))
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    const holding: KafkaClientService = {
      ...client,
      consume: (options) =>
        Effect.tap(
          client.consume({
            ...options,
            handlers: {
              ...options.handlers,
              onBatch: async (batch, heartbeat) => {
                while (hold !== undefined) await hold
                if (crashing) throw new Error("a fetched batch fails (test)")
                return options.handlers.onBatch(batch, heartbeat)
              },
              onRestarting: () => {
                crashing = false
                void commitUntilRejoined(3)
                options.handlers.onRestarting?.()
              },
              onAssigned: (partitions) => {
                rejoined = true
                options.handlers.onAssigned(partitions)
              }
            }
          }),
          (running) => {
            consumer = running
          }
        )
    }
    const source = yield* Kafka.make({ groupId: group, topics: [topic], sessionTimeoutMillis }).pipe(
      Effect.provideService(Kafka.KafkaClient, holding)
    )
    const assignments = yield* Queue.unbounded<Assignment>()
    const offsets: Array<number> = []
    let revoked = 0
    yield* Effect.forkIn(
      Stream.runForEach(source.events, (event: SourceEvent<unknown>) =>
        Effect.suspend(() => {
          if (event._tag === "Assigned") return Queue.offerAll(assignments, event.assignments)
          if (event._tag === "Revoked") {
            revoked++
            return event.release
          }
          offsets.push(event.position.offset)
          return Effect.void
        })),
      scope
    )
    return {
      source,
      offsets,
      assigned: Queue.take(assignments),
      starve: () => {
        hold = new Promise((resolve) => (release = resolve))
      },
      feed: () => {
        hold = undefined
        release()
      },
      crash: () => {
        crashing = true
        rejoined = false
      },
      revoked: () => revoked,
      rejoined: () => rejoined,
      answers
    }
  }).pipe(Scope.extend(scope))

const partitionOf = (topic: string) => `${topic}:0`
const at = (topic: string, offset: number) => ({ partition: partitionOf(topic), offset, resume: { topic, partition: 0 } })

const droppedMemberCase = (otherStays: boolean) =>
  Effect.gen(function*() {
    const id = randomUUID()
    const topic = `fencing-${id}`
    const group = `fencing-${id}`
    yield* Effect.promise(() => createTopic(topic, 1))
    yield* Effect.promise(() => produce(topic, 0, 20))

    const scopeA = yield* Scope.make()
    const scopeB = yield* Scope.make()
    let starved: { readonly feed: () => void } | undefined
    try {
      const a = yield* member(scopeA, group, topic, "fencing-a")
      starved = a
      const first = yield* a.assigned
      yield* Effect.promise(async () => {
        while (a.offsets.length < 20) await sleep(20)
      })
      // Two batches recorded, the first delivered and committed: 10 committed, [10..19] to repeat.
      yield* first.checkpoint.recordCuts([
        { partition: partitionOf(topic), first: 0, last: 9 },
        { partition: partitionOf(topic), first: 10, last: 14 },
        { partition: partitionOf(topic), first: 15, last: 19 }
      ])
      yield* first.checkpoint.commit(at(topic, 9))
      expect((yield* Effect.promise(() => committedOffset(group, topic))).offset).toBe(10)

      // The member stalls with a fetched batch in hand, and the group drops it.
      a.starve()
      yield* Effect.promise(() => produce(topic, 20, 1))
      yield* Effect.sleep(`${sessionTimeoutMillis + 1500} millis`)

      // Another member takes the partition, repeats [10..14] and [15..19] and goes on: 21 committed.
      const b = yield* member(scopeB, group, topic, "fencing-b")
      const second = yield* b.assigned
      expect(second.committed?.offset).toBe(9)
      expect(second.cuts.map((c) => [c.first, c.last])).toEqual([[10, 14], [15, 19]])
      expect(second.run).toBe(first.run)
      yield* second.checkpoint.recordCuts([{ partition: partitionOf(topic), first: 20, last: 20 }])
      yield* second.checkpoint.commit(at(topic, 20))
      const next = yield* Effect.promise(() => committedOffset(group, topic))
      expect(next.offset).toBe(21)
      if (!otherStays) yield* Scope.close(scopeB, Exit.void)

      // The dropped member delivered [10..14] meanwhile and commits it, late; it is fed again,
      // learns it was dropped, and joins again.
      const late = yield* Effect.fork(first.checkpoint.commit(at(topic, 14)))
      a.feed()
      const rejoined = yield* Effect.fork(a.assigned)
      yield* Fiber.join(late)
      if (!otherStays) {
        // The partition came back to it: its old assignment's commit is still not its to write.
        const again = yield* Fiber.join(rejoined)
        yield* first.checkpoint.commit(at(topic, 14))
        expect(again.committed?.offset).toBe(20)
        expect(again.cuts).toEqual([])
      }
      // kafkajs retried within 300 ms, the source within about 3 s: whatever was going to land has.
      yield* Effect.sleep("3500 millis")
      expect(yield* Effect.promise(() => committedOffset(group, topic))).toEqual(next)
    } finally {
      starved?.feed() // kafkajs leaves the group only once the batch in hand is handled
      yield* Scope.close(scopeA, Exit.void)
      yield* Scope.close(scopeB, Exit.void)
    }
  })

describe("Kafka source: a member dropped from its group (real broker)", () => {
  it("its late commit does not overwrite the next owner's, when the partition stays with the next owner", async () => {
    await Effect.runPromise(Effect.scoped(droppedMemberCase(true)))
  }, 60_000)

  it("its late commit does not overwrite the next owner's, when the partition comes back to it", async () => {
    await Effect.runPromise(Effect.scoped(droppedMemberCase(false)))
  }, 60_000)
})

describe("Kafka source: a member whose consumer crashes and starts again (real broker)", () => {
  it("gives up its partitions at once, takes no unsent commit for written, and resumes from the last commit that landed", async () => {
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const id = randomUUID()
      const topic = `crash-${id}`
      const group = `crash-${id}`
      yield* Effect.promise(() => createTopic(topic, 1))
      yield* Effect.promise(() => produce(topic, 0, 20))
      const scope = yield* Scope.make()
      try {
        const a = yield* member(scope, group, topic, "crash-a")
        const first = yield* a.assigned
        yield* Effect.promise(async () => {
          while (a.offsets.length < 20) await sleep(20)
        })
        yield* first.checkpoint.recordCuts([
          { partition: partitionOf(topic), first: 10, last: 14 },
          { partition: partitionOf(topic), first: 15, last: 19 }
        ])
        yield* first.checkpoint.commit(at(topic, 9))
        const before = yield* Effect.promise(() => committedOffset(group, topic))
        expect(before.offset).toBe(10)

        // The next fetched batch fails until kafkajs restarts the consumer.
        a.crash()
        yield* Effect.promise(() => produce(topic, 20, 1))
        const again = yield* a.assigned
        expect(a.rejoined()).toBe(true)

        // Given up at the crash, before the consumer joined again.
        expect(a.revoked()).toBeGreaterThanOrEqual(1)
        expect(first.owned?.()).toBe(false)
        // Nothing sent while the consumer was stopped was answered as landed; kafkajs answered
        // some of them as landed (the case at hand), the others failed outright.
        const stopped = a.answers.filter((answer) => Either.isLeft(answer) && answer.left.type === "CONSUMER_STOPPED")
        expect(a.answers.filter(Either.isRight)).toEqual([])
        expect(stopped.length).toBeGreaterThan(0)
        // The old assignment's writes are the next owner's now: skipped, not landed.
        yield* first.checkpoint.recordCuts([{ partition: partitionOf(topic), first: 20, last: 20 }])
        yield* first.checkpoint.commit(at(topic, 14))
        expect(yield* Effect.promise(() => committedOffset(group, topic))).toEqual(before)
        // Joined again: from the last commit that landed, with its cuts.
        expect(again.committed?.offset).toBe(9)
        expect(again.cuts.map((c) => [c.first, c.last])).toEqual([[10, 14], [15, 19]])
      } finally {
        yield* Scope.close(scope, Exit.void)
      }
    })))
  }, 60_000)
})
