/**
 * Sorting more items than memory should hold: items are added one by one into a buffer of at
 * most `bufferSize`; a full buffer is sorted and written to a file of its own (a run); at the
 * end the runs and the buffer are merged, one item of each run in memory at a time.
 *
 * Why it exists: a replay must send the letters of each origin in their original order (their
 * batches, and so their idempotency keys, are cut from that order, and a resume skips what is
 * at or before the committed position), while a dead-letter file or topic holds them in the
 * order batches ended, twice for letters a crashed run wrote again. Sorting in memory held
 * every letter; this holds `bufferSize` of them and one per run.
 *
 * The sort is stable: of items the order calls equal, the one added first comes first, across
 * runs too (a run written earlier holds earlier items), so "the later of twins" means the same
 * as in an in-memory sort. Files are read and written with synchronous calls, in chunks: they
 * are the process's own temporaries on a local disk, and a chunk costs less than a promise a
 * line.
 *
 * @since 0.3.0
 * @internal
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * @since 0.3.0
 * @category models
 */
export interface SorterOptions<T> {
  readonly compare: (a: T, b: T) => number
  /** One line of text (no line end) for an item, and the item back from it. */
  readonly encode: (item: T) => string
  readonly decode: (line: string) => T
  /** Items held in memory at most while adding (default 10,000). */
  readonly bufferSize?: number | undefined
  /** Where the runs' directory is made (default the system's temporary directory). */
  readonly directory?: string | undefined
}

/**
 * The items in order, pulled one at a time.
 *
 * @since 0.3.0
 * @category models
 */
export interface Merged<T> {
  /** The next item, undefined at the end. */
  readonly next: () => T | undefined
  /** Items held in memory now (the buffer's rest and one per run). */
  readonly held: () => number
}

/**
 * @since 0.3.0
 * @category models
 */
export interface Sorter<T> {
  readonly add: (item: T) => void
  /** Items held in memory now. */
  readonly held: () => number
  /** Runs written to disk so far. */
  readonly runs: () => number
  /** Ends the adding; the items in order. */
  readonly finish: () => Merged<T>
  /** Removes the runs' files (the merge must be done with). */
  readonly close: () => void
}

/** Reads a file line by line in chunks, decoding each chunk up to its last line end only. */
class LineReader {
  private readonly fd: number
  private readonly chunk = Buffer.alloc(64 * 1024)
  private lines: Array<string> = []
  private at = 0
  private rest: Buffer = Buffer.alloc(0)
  private ended = false

  constructor(path: string) {
    this.fd = openSync(path, "r")
  }

  next(): string | undefined {
    while (this.at >= this.lines.length) {
      if (this.ended) return undefined
      const n = readSync(this.fd, this.chunk, 0, this.chunk.length, null)
      if (n === 0) {
        this.close()
        this.lines = this.rest.length === 0 ? [] : [this.rest.toString("utf8")]
        this.at = 0
        continue
      }
      const bytes = this.rest.length === 0 ? this.chunk.subarray(0, n) : Buffer.concat([this.rest, this.chunk.subarray(0, n)])
      const end = bytes.lastIndexOf(10)
      // Copied: the chunk is read into again.
      this.rest = Buffer.from(bytes.subarray(end + 1))
      this.lines = end < 0 ? [] : bytes.toString("utf8", 0, end).split("\n")
      this.at = 0
    }
    return this.lines[this.at++]
  }

  close() {
    if (!this.ended) {
      this.ended = true
      closeSync(this.fd)
    }
  }
}

/**
 * A sorter. `encode` must give lines without a raw line end (JSON does).
 *
 * @since 0.3.0
 * @category constructors
 */
export const makeSorter = <T>(options: SorterOptions<T>): Sorter<T> => {
  const bufferSize = Math.max(1, options.bufferSize ?? 10_000)
  let buffer: Array<T> = []
  let directory: string | undefined
  const files: Array<string> = []
  const readers: Array<LineReader> = []

  const spill = () => {
    directory ??= mkdtempSync(join(options.directory ?? tmpdir(), "tributary-sort-"))
    const path = join(directory, `run-${files.length}.ndjson`)
    buffer.sort(options.compare)
    writeFileSync(path, buffer.map(options.encode).join("\n") + "\n")
    files.push(path)
    buffer = []
  }

  return {
    add: (item) => {
      buffer.push(item)
      if (buffer.length >= bufferSize) spill()
    },
    held: () => buffer.length,
    runs: () => files.length,
    finish: () => {
      buffer.sort(options.compare)
      // The sources in the order they were added: the runs, then the buffer (the latest items).
      const pulls: Array<() => T | undefined> = files.map((path) => {
        const reader = new LineReader(path)
        readers.push(reader)
        return () => {
          for (;;) {
            const line = reader.next()
            if (line === undefined) return undefined
            if (line !== "") return options.decode(line)
          }
        }
      })
      const tail = buffer
      let tailAt = 0
      pulls.push(() => {
        if (tailAt >= tail.length) return undefined
        const item = tail[tailAt]!
        // Let go of what was handed out: the buffer's memory goes as the merge moves on.
        ;(tail as Array<T | undefined>)[tailAt++] = undefined
        return item
      })
      buffer = []
      // A binary heap of the sources' heads, by item then by source (stable across runs).
      const heap: Array<{ item: T; source: number }> = []
      const before = (a: { item: T; source: number }, b: { item: T; source: number }) => {
        const c = options.compare(a.item, b.item)
        return c < 0 || (c === 0 && a.source < b.source)
      }
      const push = (entry: { item: T; source: number }) => {
        heap.push(entry)
        let i = heap.length - 1
        while (i > 0) {
          const parent = (i - 1) >> 1
          if (!before(heap[i]!, heap[parent]!)) break
          ;[heap[i], heap[parent]] = [heap[parent]!, heap[i]!]
          i = parent
        }
      }
      const pop = () => {
        const top = heap[0]!
        const last = heap.pop()!
        if (heap.length > 0) {
          heap[0] = last
          let i = 0
          for (;;) {
            const l = 2 * i + 1
            const r = l + 1
            let least = i
            if (l < heap.length && before(heap[l]!, heap[least]!)) least = l
            if (r < heap.length && before(heap[r]!, heap[least]!)) least = r
            if (least === i) break
            ;[heap[i], heap[least]] = [heap[least]!, heap[i]!]
            i = least
          }
        }
        return top
      }
      pulls.forEach((pull, source) => {
        const item = pull()
        if (item !== undefined) push({ item, source })
      })
      return {
        next: () => {
          if (heap.length === 0) return undefined
          const top = pop()
          const following = pulls[top.source]!()
          if (following !== undefined) push({ item: following, source: top.source })
          return top.item
        },
        held: () => heap.length + (tail.length - tailAt)
      }
    },
    close: () => {
      for (const reader of readers) reader.close()
      if (directory !== undefined) rmSync(directory, { recursive: true, force: true })
      directory = undefined
    }
  }
}
