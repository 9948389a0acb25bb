/**
 * The checkpoint file's journal (`Checkpoint.file`): cuts recorded between two commits are
 * appended to `FILE.journal` instead of replacing the whole file; a commit writes the whole
 * file and empties the journal; the file is read back with the journal merged in, a line a
 * crash cut short left out. A process's first write replaces the whole file.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Checkpoint from "../../src/pipeline/Checkpoint.js"

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const checkpointPath = () => {
  const dir = mkdtempSync(join(tmpdir(), "tributary-journal-"))
  dirs.push(dir)
  return join(dir, "data.ndjson.checkpoint.json")
}

const at = (offset: number) => ({ partition: "0", offset, resume: { byteOffset: offset * 10 } })
const cut = (first: number, last: number, held?: ReadonlyArray<number>) =>
  held === undefined ? { partition: "0", first, last } : { partition: "0", first, last, held }
const mainFile = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Checkpoint.Checkpoint
const journalText = (path: string) => (existsSync(`${path}.journal`) ? readFileSync(`${path}.journal`, "utf8") : "")
const spans = (checkpoint: Checkpoint.Checkpoint) => checkpoint.cuts.map((c) => [c.first, c.last, ...(c.held ?? [])])

describe("the checkpoint file's journal", () => {
  it.effect("cuts between commits are appended; read back merged; a commit folds them into the file and empties the journal", () =>
    Effect.gen(function*() {
      const path = checkpointPath()
      const store = yield* Checkpoint.file(path)
      yield* store.commit(at(9))
      yield* store.recordCuts([cut(10, 19), cut(20, 29)])
      // A split recorded again replaces the cut with the same start.
      yield* store.recordCuts([cut(20, 29, [20, 25])])
      expect(spans(mainFile(path))).toEqual([])
      expect(journalText(path).split("\n")).toHaveLength(3) // two lines and the last line end
      const read = yield* Checkpoint.readCheckpointFile(path)
      expect(read.positions["0"]?.offset).toBe(9)
      expect(spans(read)).toEqual([[10, 19], [20, 29, 20, 25]])
      // What a new process loads.
      expect(spans(yield* (yield* Checkpoint.file(path)).load)).toEqual([[10, 19], [20, 29, 20, 25]])

      yield* store.commit(at(19))
      expect(spans(mainFile(path))).toEqual([[20, 29, 20, 25]])
      expect(mainFile(path).positions["0"]?.offset).toBe(19)
      expect(journalText(path)).toBe("")
    }))

  it.effect("a process's first write replaces the whole file, with what the journal held", () =>
    Effect.gen(function*() {
      const path = checkpointPath()
      const first = yield* Checkpoint.file(path)
      yield* first.commit(at(9))
      yield* first.recordCuts([cut(10, 19)])
      // A second process (the first was killed): its first cut is not appended behind the other's file.
      const second = yield* Checkpoint.file(path)
      yield* second.recordCuts([cut(20, 29)])
      expect(spans(mainFile(path))).toEqual([[10, 19], [20, 29]])
      expect(journalText(path)).toBe("")
      yield* second.recordCuts([cut(30, 39)])
      expect(journalText(path)).not.toBe("")
      expect(spans(yield* Checkpoint.readCheckpointFile(path))).toEqual([[10, 19], [20, 29], [30, 39]])
    }))

  it.effect("a line a crash cut short is left out, and what follows it", () =>
    Effect.gen(function*() {
      const path = checkpointPath()
      const store = yield* Checkpoint.file(path)
      yield* store.commit(at(9))
      yield* store.recordCuts([cut(10, 19)])
      writeFileSync(`${path}.journal`, `${journalText(path)}{"cuts":[{"partition":"0","first":20,"la`)
      expect(spans(yield* Checkpoint.readCheckpointFile(path))).toEqual([[10, 19]])
      writeFileSync(`${path}.journal`, `${journalText(path).split("\n")[0]}\nnot json\n{"cuts":[${JSON.stringify(cut(30, 39))}]}\n`)
      expect(spans(yield* Checkpoint.readCheckpointFile(path))).toEqual([[10, 19]])
    }))

  it.effect("cuts a commit passed are not read back from a journal a crash left behind it", () =>
    Effect.gen(function*() {
      const path = checkpointPath()
      const store = yield* Checkpoint.file(path)
      yield* store.commit(at(9))
      yield* store.recordCuts([cut(10, 19), cut(20, 29)])
      const journal = journalText(path)
      yield* store.commit(at(19))
      // Killed between the commit's write and the journal's emptying.
      writeFileSync(`${path}.journal`, journal)
      expect(spans(yield* Checkpoint.readCheckpointFile(path))).toEqual([[20, 29]])
    }))

  it.effect("--restart ignores the file and its journal, and replaces both at its first write", () =>
    Effect.gen(function*() {
      const path = checkpointPath()
      const old = yield* Checkpoint.file(path)
      yield* old.commit(at(9))
      yield* old.recordCuts([cut(10, 19)])
      const fresh = yield* Checkpoint.file(path, { restart: true })
      expect(yield* fresh.load).toEqual(Checkpoint.emptyCheckpoint)
      yield* fresh.recordCuts([cut(0, 4)])
      const read = yield* Checkpoint.readCheckpointFile(path)
      expect(read.positions).toEqual({})
      expect(spans(read)).toEqual([[0, 4]])
    }))
})
