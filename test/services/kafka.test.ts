import { randomUUID } from "node:crypto"
import { Kafka, logLevel } from "kafkajs"
import { describe, expect, it } from "vitest"
import { kafkaBrokers } from "../support/services.js"

// kafkajs 2 warns about its partitioner change on every producer; the default is what we want.
process.env["KAFKAJS_NO_PARTITIONER_WARNING"] = "1"

const messageCount = 1000

describe("Kafka (real broker)", () => {
  it("produces 1,000 messages to a 3-partition topic, consumes them all in a group and commits", async () => {
    const id = randomUUID()
    const topic = `smoke-${id}`
    const groupId = `smoke-group-${id}`
    const kafka = new Kafka({ clientId: "tributary-smoke", brokers: kafkaBrokers(), logLevel: logLevel.WARN })
    const admin = kafka.admin()
    const producer = kafka.producer()
    const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 1000 })

    try {
      await admin.connect()
      const created = await admin.createTopics({
        topics: [{ topic, numPartitions: 3, replicationFactor: 1 }],
        waitForLeaders: true
      })
      expect(created).toBe(true)

      await producer.connect()
      const sent = Array.from({ length: messageCount }, (_, i) => `value-${i}`)
      await producer.send({
        topic,
        acks: -1,
        messages: sent.map((value, i) => ({ key: `key-${i}`, value }))
      })

      const received: string[] = []
      const nextOffset = new Map<number, bigint>()
      let allReceived!: () => void
      const done = new Promise<void>((resolve) => {
        allReceived = resolve
      })
      await consumer.connect()
      await consumer.subscribe({ topic, fromBeginning: true })
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          received.push(message.value?.toString() ?? "")
          nextOffset.set(partition, BigInt(message.offset) + 1n)
          if (received.length === messageCount) allReceived()
        }
      })
      await done

      expect(received).toHaveLength(messageCount)
      expect(new Set(received)).toEqual(new Set(sent))

      await consumer.commitOffsets(
        [...nextOffset].map(([partition, offset]) => ({ topic, partition, offset: offset.toString() }))
      )
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] })
      const offsets = committed?.partitions.map((p) => Number(p.offset)) ?? []
      expect(offsets).toHaveLength(3)
      expect(offsets.every((offset) => offset > 0)).toBe(true)
      expect(offsets.reduce((sum, offset) => sum + offset, 0)).toBe(messageCount)
    } finally {
      await consumer.disconnect()
      await producer.disconnect()
      await admin.disconnect()
    }
  }, 60_000)
})
