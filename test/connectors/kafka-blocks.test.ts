/**
 * A Kafka partition batched by blocks of offsets (`Blocks`), on the real broker: the frontier
 * the run records goes into the committed offset's metadata (with the commits that follow it),
 * and the partition's next owner is assigned with it, capped by the blocks wholly in the log
 * when it was assigned (a block past the log's end must stay free to linger).
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "vitest"
import { Effect, Exit, Queue, Scope, Stream } from "effect"
import * as Kafka from "../../connectors/kafka/index.js"
import type { Assignment, SourceEvent } from "../../src/pipeline/Source.js"
import { committedOffset, createTopic, kafka, sleep } from "../support/kafka.js"
import { kafkaBrokers } from "../support/services.js"

const produce = async (topic: string, count: number) => {
  const producer = kafka().producer()
  await producer.connect()
  await producer.send({ topic, acks: -1, messages: Array.from({ length: count }, (_, i) => ({ value: JSON.stringify({ n: i }) })) })
  await producer.disconnect()
}

/** A member of the group: its assignments, and how many messages it has read. */
const member = (scope: Scope.Scope, group: string, topic: string) =>
  Effect.gen(function*() {
    const client = yield* Kafka.makeClient({ brokers: kafkaBrokers(), clientId: `blocks-${randomUUID()}` })
    const source = yield* Kafka.make({ groupId: group, topics: [topic], sessionTimeoutMillis: 6000 }).pipe(
      Effect.provideService(Kafka.KafkaClient, client)
    )
    const assignments = yield* Queue.unbounded<Assignment>()
    let read = 0
    yield* Effect.forkIn(
      Stream.runForEach(source.events, (event: SourceEvent<unknown>) =>
        Effect.suspend(() => {
          if (event._tag === "Assigned") return Queue.offerAll(assignments, event.assignments)
          if (event._tag === "Revoked") return event.release
          read++
          return Effect.void
        })),
      scope
    )
    return { assigned: Queue.take(assignments), read: () => read }
  }).pipe(Scope.extend(scope))

describe("Kafka: a partition batched by blocks (real broker)", () => {
  it("the frontier is written with the commits, and the next owner gets it, capped by the blocks in the log", async () => {
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const id = randomUUID()
      const topic = `blocks-${id}`
      const group = `blocks-${id}`
      yield* Effect.promise(() => createTopic(topic, 1))
      yield* Effect.promise(() => produce(topic, 250))
      const partition = `${topic}:0`

      const scopeA = yield* Scope.make()
      const a = yield* member(scopeA, group, topic)
      const first = yield* a.assigned
      // Nothing committed yet: every block is free to linger, and a frontier must be written first.
      expect(first.blocks).toEqual({ whole: 0, recorded: 0 })
      yield* Effect.promise(async () => {
        while (a.read() < 250) await sleep(20)
      })
      yield* first.checkpoint.recordCuts([], [{ partition, offset: 10_200 }])
      yield* first.checkpoint.commit({ partition, offset: 99, resume: { topic, partition: 0 } })
      const written = yield* Effect.promise(() => committedOffset(group, topic))
      expect(written.offset).toBe(100)
      expect(Kafka.decodeFrontier(written.metadata, 100)).toBe(10_200)
      yield* Scope.close(scopeA, Exit.void)

      // The next owner: blocks up to the frontier go only whole, but none past the log's 250.
      const b = yield* member(yield* Effect.scope, group, topic)
      const second = yield* b.assigned
      expect(second.committed?.offset).toBe(99)
      expect(second.blocks).toEqual({ whole: 200, recorded: 10_200 })
    })))
  }, 60_000)
})
