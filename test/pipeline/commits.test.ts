/**
 * The run's commits (`internal/commits.ts`) across a partition revoked and assigned again while
 * the committer is busy writing another partition.
 */
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"
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

  it.effect("a writer that commits several partitions at once gets them in one write; each is still told as committed", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const events: Array<string> = []
      const shared: CheckpointWriter = {
        ...writer("one", log),
        commitAll: (positions) => Effect.sync(() => log.push(`all ${positions.map((p) => `${p.partition}@${p.offset}`).join(" ")}`))
      }
      const commits = new Commits("group", undefined, undefined, new CommitTracker(), makeCounters(0), (event) =>
        Effect.sync(() => {
          if (event._tag === "Committed") events.push(`${event.position.partition}@${event.position.offset}`)
        }))
      commits.assign([fresh("p0", shared), fresh("p1", shared), fresh("p2", writer("other", log))])
      commits.delivered(delivered("p0", 0, 4))
      commits.delivered(delivered("p1", 0, 9))
      commits.delivered(delivered("p2", 0, 2))
      yield* commits.flush
      expect([...log].sort()).toEqual(["all p0@4 p1@9", "other p2@2"])
      expect([...events].sort()).toEqual(["p0@4", "p1@9", "p2@2"])
      // One partition waiting: its own commit, as before.
      commits.delivered(delivered("p1", 1, 12))
      yield* commits.flush
      expect(log.at(-1)).toBe("one p1@12")
    }))

  it.effect("a checkpoint file commits several partitions in one write: each position kept, the cuts they passed forgotten", () =>
    Effect.gen(function*() {
      const path = join(mkdtempSync(join(tmpdir(), "tributary-commit-all-")), "checkpoint.json")
      const store = yield* Checkpoint.file(path)
      yield* store.recordCuts([
        { partition: "a", first: 0, last: 9 },
        { partition: "a", first: 10, last: 19 },
        { partition: "b", first: 0, last: 4 }
      ])
      yield* store.commitAll!([{ partition: "a", offset: 9 }, { partition: "b", offset: 4 }])
      const read = yield* Checkpoint.readCheckpointFile(path)
      expect(read.positions).toEqual({ a: { partition: "a", offset: 9 }, b: { partition: "b", offset: 4 } })
      expect(read.cuts).toEqual([{ partition: "a", first: 10, last: 19 }])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("a checkpoint file is indented JSON with each cut on a line of its own, and reads back as written", () =>
    Effect.gen(function*() {
      const path = join(mkdtempSync(join(tmpdir(), "tributary-checkpoint-text-")), "checkpoint.json")
      const store = yield* Checkpoint.file(path)
      const cuts = [
        { partition: "a", first: 0, last: 9 },
        { partition: "a", first: 10, last: 19, held: [12, 15] },
        { partition: "b \"[]\"", first: 0, last: 4 }
      ]
      yield* store.recordCuts(cuts)
      yield* store.commit({ partition: "c", offset: 7, resume: { byteOffset: 70 } })
      const text = readFileSync(path, "utf8")
      const lines = text.split("\n")
      for (const cut of cuts) expect(lines).toContain(`    ${JSON.stringify(cut)}${cut === cuts[2] ? "" : ","}`)
      expect(lines).toContain(`  "positions": {`)
      const read = yield* Checkpoint.readCheckpointFile(path)
      expect(read.cuts).toEqual(cuts)
      expect(read.positions).toEqual({ c: { partition: "c", offset: 7, resume: { byteOffset: 70 } } })
      // With no cuts: an empty list.
      yield* store.commitAll!([{ partition: "a", offset: 19 }, { partition: "b \"[]\"", offset: 4 }])
      expect(JSON.parse(readFileSync(path, "utf8")).cuts).toEqual([])
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
