import { describe, expect, inject, it } from "vitest"
import { databaseUrl, kafkaBrokers } from "../support/services.js"

describe("service environment", () => {
  it("reaches the workers as set by the global setup", () => {
    expect(kafkaBrokers()).toEqual(inject("kafkaBrokers").split(","))
    expect(databaseUrl()).toBe(inject("databaseUrl"))
  })
})
