/**
 * The run's commits (`internal/commits.ts`) across a partition revoked and assigned again while
 * the committer is busy writing another partition.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { CommitTracker } from "../../src/pipeline/internal/commitTracker.js"
import { Commits } from "../../src/pipeline/internal/commits.js"
import { makeCounters } from "../../src/pipeline/internal/progress.js"
import type { CheckpointWriter } from "../../src/pipeline/Source.js"
import type { DeliveredUnit, Position } from "../../src/pipeline/vocabulary.js"

const writer = (name: string, log: Array<string>, before: Effect.Effect<void> = Effect.void): CheckpointWriter => ({
  recordCuts: () => Effect.void,
  commit: (position: Position) => Effect.zipRight(before, Effect.sync(() => log.push(`${name} ${position.partition}@${position.offset}`)))
})

/** A partition assigned with nothing committed and no cuts, its commits going to `checkpoint`. */
const fresh = (partition: string, checkpoint: CheckpointWriter) => ({ partition, committed: undefined, cuts: [], checkpoint })

/** Commits with no run identity and no events. */
const newCommits = () => new Commits("group", undefined, undefined, new CommitTracker(), makeCounters(0), () => Effect.void)

const delivered = (partition: string, seq: number, offset: number): DeliveredUnit => ({
  partition,
  fromSeq: seq,
  toSeq: seq,
  lastPosition: { partition, offset },
  letters: [],
  outcome: undefined
})

describe("commits", () => {
  it.effect("a commit taken before its partition was revoked and assigned again goes to the old assignment's writer, not the new one's", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const slow = yield* Deferred.make<void>()
      const commits = newCommits()
      commits.assign([
        fresh("p1", writer("p1", log, Deferred.await(slow))),
        fresh("p0", writer("old", log))
      ])
      commits.delivered(delivered("p1", 0, 0))
      commits.delivered(delivered("p0", 0, 7))
      // The committer takes both and writes p1 first, which takes its time.
      const flushing = yield* Effect.fork(commits.flush)
      yield* Effect.yieldNow()
      // Meanwhile p0 is revoked (nothing waits for it any more) and assigned again.
      yield* commits.flushPartition("p0")
      commits.forget("p0")
      commits.assign([{ partition: "p0", committed: { partition: "p0", offset: 3 }, cuts: [], checkpoint: writer("new", log) }])
      yield* Deferred.succeed(slow, undefined)
      yield* Fiber.join(flushing)
      expect([...log].sort()).toEqual(["old p0@7", "p1 p1@0"])
    }))

  it.effect("writers apart are written at once: a slow writer holds back no other writer's commit", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const slow = yield* Deferred.make<void>()
      const commits = newCommits()
      commits.assign([
        fresh("p0", writer("slow", log, Deferred.await(slow))),
        fresh("p1", writer("fast", log))
      ])
      commits.delivered(delivered("p0", 0, 4))
      commits.delivered(delivered("p1", 0, 9))
      const flushing = yield* Effect.fork(commits.flush)
      for (let i = 0; i < 10 && log.length === 0; i++) yield* Effect.yieldNow()
      expect(log).toEqual(["fast p1@9"])
      yield* Deferred.succeed(slow, undefined)
      yield* Fiber.join(flushing)
      expect(log).toEqual(["fast p1@9", "slow p0@4"])
    }))

  it.effect("one writer shared by partitions (one checkpoint store) gets its commits one at a time", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      let writing = 0
      let most = 0
      const shared: CheckpointWriter = {
        recordCuts: () => Effect.void,
        commit: (position) =>
          Effect.gen(function*() {
            most = Math.max(most, ++writing)
            yield* Effect.yieldNow()
            yield* Effect.yieldNow()
            log.push(`${position.partition}@${position.offset}`)
            writing--
          })
      }
      const commits = newCommits()
      commits.assign(["a", "b", "c"].map((partition) => fresh(partition, shared)))
      commits.delivered(delivered("a", 0, 1))
      commits.delivered(delivered("b", 0, 2))
      commits.delivered(delivered("c", 0, 3))
      yield* commits.flush
      expect([...log].sort()).toEqual(["a@1", "b@2", "c@3"])
      expect(most).toBe(1)
    }))
})
