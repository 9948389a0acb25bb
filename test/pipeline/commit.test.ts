import { describe, expect, it } from "@effect/vitest"
import { CommitTracker } from "../../src/pipeline/internal/commitTracker.js"

const at = (offset: number) => ({ partition: "p", offset })

describe("CommitTracker", () => {
  it("commits only the highest contiguous delivered position", () => {
    const tracker = new CommitTracker()
    for (let i = 0; i < 6; i++) tracker.read("p", 1000)
    expect(tracker.delivered("p", 2, 3, at(40))).toBeUndefined() // 0..1 still out
    expect(tracker.delivered("p", 0, 1, at(20))).toEqual(at(40)) // 0..3 now contiguous
    expect(tracker.delivered("p", 5, 5, at(60))).toBeUndefined() // 4 still out
    expect(tracker.delivered("p", 4, 4, at(50))).toEqual(at(60))
  })

  it("keeps partitions apart", () => {
    const tracker = new CommitTracker()
    tracker.read("a", 0)
    tracker.read("b", 0)
    expect(tracker.delivered("b", 0, 0, { partition: "b", offset: 7 })).toEqual({ partition: "b", offset: 7 })
    expect(tracker.oldestPendingMillis(10)).toBe(10) // a's element 0 is still pending
  })

  it("reports the age of the oldest element not yet delivered", () => {
    const tracker = new CommitTracker()
    expect(tracker.oldestPendingMillis(500)).toBe(0)
    tracker.read("p", 100)
    tracker.read("p", 100)
    tracker.read("p", 200)
    tracker.read("p", 300)
    expect(tracker.oldestPendingMillis(1000)).toBe(900)
    tracker.delivered("p", 0, 1, at(2))
    expect(tracker.oldestPendingMillis(1000)).toBe(800)
    tracker.delivered("p", 3, 3, at(4)) // out of order: element 2 is still the oldest
    expect(tracker.oldestPendingMillis(1000)).toBe(800)
    tracker.delivered("p", 2, 2, at(3))
    expect(tracker.oldestPendingMillis(1000)).toBe(0)
    tracker.read("p", 900)
    expect(tracker.oldestPendingMillis(1000)).toBe(100)
  })
})
