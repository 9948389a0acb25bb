/**
 * Helpers for the crash test: a seeded random source, raw HTTP against a (faulty) reference
 * server with retries, an NDJSON file with known valid and invalid lines, and a
 * `tributary ingest` child that can be killed at a chosen moment.
 */
import { spawn } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { binPath } from "./cli.js"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The seed of a crash test's kills and faults: TRIBUTARY_CRASH_SEED, or a random one. */
export const crashSeed = (): number =>
  process.env["TRIBUTARY_CRASH_SEED"] !== undefined ? Number(process.env["TRIBUTARY_CRASH_SEED"]) : Math.floor(Math.random() * 2 ** 31)

/**
 * One API call, retried while the server answers an injected fault (429, 5xx) or drops the
 * connection; any other answer is returned as it is. Only used for calls that are safe to
 * repeat: reads, and creates that the fault injector refuses before running them.
 */
export const api = async (
  base: string,
  key: string,
  method: "GET" | "POST",
  path: string,
  body?: unknown
): Promise<{ status: number; body: any }> => {
  let lastProblem = ""
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await response.text()
      if (response.status === 429 || response.status >= 500) {
        lastProblem = `${response.status} ${text.slice(0, 200)}`
      } else {
        return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
      }
    } catch (error) {
      lastProblem = String(error)
    }
    await sleep(Math.min(200, 5 * (attempt + 1)))
  }
  throw new Error(`${method} ${path} kept failing: ${lastProblem}`)
}

/** `api`, expecting 200 and answering `data`. */
export const apiData = async (base: string, key: string, method: "GET" | "POST", path: string, body?: unknown) => {
  const answer = await api(base, key, method, path, body)
  if (answer.status !== 200) throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`)
  return answer.body.data
}

/** A column of a v2 dataset's schema, as the API takes it. */
export interface ColumnSpec {
  readonly id: string
  readonly dataType: string
}

/** The schema most tests use: an `id` and a number `n`. */
export const idAndN: ReadonlyArray<ColumnSpec> = [{ id: "id", dataType: "string" }, { id: "n", dataType: "number" }]

/** The schema of keyed-update tests: an `id` and a number `version`. */
export const idAndVersion: ReadonlyArray<ColumnSpec> = [{ id: "id", dataType: "string" }, { id: "version", dataType: "number" }]

/** A v2 dataset in a data source of its own (both named `name`); answers the dataset's id. */
export const newDataset = async (
  base: string,
  key: string,
  dataset: { readonly name: string; readonly schema: ReadonlyArray<ColumnSpec>; readonly primaryKey?: ReadonlyArray<string> | undefined }
): Promise<string> => {
  const dataSource = await apiData(base, key, "POST", "/v2/data-sources", { name: dataset.name })
  const created = await apiData(base, key, "POST", "/v2/datasets", {
    name: dataset.name,
    dataSourceId: dataSource.id,
    schema: dataset.schema,
    ...(dataset.primaryKey === undefined ? {} : { primaryKey: dataset.primaryKey })
  })
  return String(created.id)
}

/** How many rows a v2 dataset holds. */
export const rowCount = async (base: string, key: string, datasetId: string): Promise<number> =>
  (await apiData(base, key, "GET", `/v2/datasets/${datasetId}/data?pageSize=1`)).pagination.totalItems

/** Every stored row of a v2 dataset, page by page. */
export const readAllRows = async (base: string, key: string, datasetId: string): Promise<Array<Record<string, unknown>>> => {
  const rows: Array<Record<string, unknown>> = []
  const pageSize = 1000
  for (let page = 0;; page++) {
    const data = await apiData(base, key, "GET", `/v2/datasets/${datasetId}/data?page=${page}&pageSize=${pageSize}`)
    rows.push(...data.items)
    if (data.items.length < pageSize || rows.length >= data.pagination.totalItems) {
      if (rows.length !== data.pagination.totalItems) {
        throw new Error(`paged ${rows.length} rows, but the service says it holds ${data.pagination.totalItems}`)
      }
      return rows
    }
  }
}

export type InvalidKind =
  | "malformed-json"
  | "not-an-object"
  | "wrong-type"
  | "bad-datetime"
  | "unknown-column"
  | "missing-primary-key"
  | "null-primary-key"

/** The text of an invalid line of kind `kind`. */
const invalidLine = (kind: InvalidKind, n: number): string => {
  switch (kind) {
    case "malformed-json":
      return `{"id": "broken-${n}", "n": ${n}, "at": "2024-01-01T00:00:00Z"`
    case "not-an-object":
      return `[${n}, "not", "a", "record"]`
    case "wrong-type":
      return JSON.stringify({ id: `wrong-${n}`, n: `number ${n}`, at: "2024-01-01T00:00:00Z" })
    case "bad-datetime":
      return JSON.stringify({ id: `baddate-${n}`, n, at: "the day after tomorrow" })
    case "unknown-column":
      return JSON.stringify({ id: `extra-${n}`, n, at: "2024-01-01T00:00:00Z", colour: "blue" })
    case "missing-primary-key":
      return JSON.stringify({ n, at: "2024-01-01T00:00:00Z" })
    case "null-primary-key":
      return JSON.stringify({ id: null, n, at: "2024-01-01T00:00:00Z" })
  }
}

export interface Source {
  readonly path: string
  /** Ids of the valid lines, in file order (each once). */
  readonly validIds: ReadonlyArray<string>
  /** The line number of each valid id (same order). */
  readonly validLines: ReadonlyArray<number>
  /** Line numbers (from 1) of the invalid lines. */
  readonly invalidLines: ReadonlyArray<number>
  readonly lineCount: number
}

/**
 * Writes `valid` valid records with unique ids and `invalid` invalid lines (of `kinds`, in
 * turn) at random places.
 */
export const writeSource = (
  path: string,
  options: { valid: number; invalid: number; kinds: ReadonlyArray<InvalidKind>; random: () => number; idPrefix: string }
): Source => {
  const total = options.valid + options.invalid
  const invalidAt = new Set<number>()
  while (invalidAt.size < options.invalid) invalidAt.add(1 + Math.floor(options.random() * total))
  const lines: Array<string> = []
  const validIds: Array<string> = []
  const validLines: Array<number> = []
  const invalidLines: Array<number> = []
  const start = Date.UTC(2024, 0, 1)
  let invalidCount = 0
  for (let line = 1; line <= total; line++) {
    if (invalidAt.has(line)) {
      lines.push(invalidLine(options.kinds[invalidCount % options.kinds.length]!, line))
      invalidLines.push(line)
      invalidCount++
    } else {
      const id = `${options.idPrefix}-${String(validIds.length).padStart(6, "0")}`
      validIds.push(id)
      validLines.push(line)
      lines.push(JSON.stringify({ id, n: validIds.length, at: new Date(start + line * 1000).toISOString() }))
    }
  }
  writeFileSync(path, lines.join("\n") + "\n")
  return { path, validIds, validLines, invalidLines, lineCount: total }
}

export interface Attempt {
  /** The planned kill: this many milliseconds after the run's first commit; undefined: none. */
  readonly killAfterMs: number | undefined
  readonly killed: boolean
  /** When the run's first commit was seen, in milliseconds from its start. */
  readonly firstCommitMs: number | undefined
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly elapsedMs: number
  readonly stdout: string
  readonly stderr: string
}

/** Children still running, so that a failed or timed-out test can stop them. */
const running = new Set<ReturnType<typeof spawn>>()

/** Kills (SIGKILL) every `tributary ingest` child this module started that still runs. */
export const killAllIngests = () => {
  for (const child of running) child.kill("SIGKILL")
  running.clear()
}

/** A file's text, or undefined when it does not exist (yet). */
export const fileText = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

/**
 * Runs `tributary ingest ...args` (or `options.command ...args`). With `killAfterMs`, the child is killed with SIGKILL (no
 * chance to flush or clean up) that long after its first commit, that is once the
 * checkpoint file first changes (the command takes a few seconds to start, and a kill
 * before it sends anything proves little); if no commit shows within `anchorLimitMs`,
 * the kill is counted from then. A child that has finished by then is not killed.
 */
export const runIngest = (
  args: ReadonlyArray<string>,
  options: {
    readonly checkpointPath: string
    readonly killAfterMs?: number | undefined
    /**
     * When the kill's clock starts: once the checkpoint's text satisfies this (default: once it
     * changed, the run's first write), or after `anchorLimitMs` (default 20 s) in any case.
     */
    readonly anchor?: ((checkpointText: string | undefined) => boolean) | undefined
    readonly anchorLimitMs?: number
    /** Fed to standard input in bursts of lines with pauses between them (for `ingest -`). */
    readonly stdin?: { readonly text: string; readonly random: () => number; readonly maxBurst: number; readonly maxPauseMs: number }
    /** Another job to run instead of `tributary ingest` (`args` follow it), with extra environment. */
    readonly command?: ReadonlyArray<string> | undefined
    readonly env?: Readonly<Record<string, string>> | undefined
  },
  timeoutMs = 180_000
): Promise<Attempt> =>
  new Promise((resolve, reject) => {
    const { checkpointPath, killAfterMs } = options
    const started = Date.now()
    const before = fileText(checkpointPath)
    const child = spawn(process.execPath, [...(options.command ?? [binPath, "ingest"]), ...args], {
      stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      env: { ...process.env, ...options.env }
    })
    running.add(child)
    let firstCommitMs: number | undefined
    if (options.stdin !== undefined && child.stdin !== null) {
      // The committed prefix (skipped by the child) and one burst go at once; the rest
      // trickles only once the child is up (its first commit), since the pipe would
      // otherwise hold most of the input by the time the command has started.
      const { maxBurst, maxPauseMs, random, text } = options.stdin
      const input = child.stdin
      input.on("error", () => {}) // EPIPE once the child is killed
      const resume = before === undefined ? undefined : (JSON.parse(before) as CheckpointFile).positions["0"]?.resume
      const skip = (resume as { byteOffset?: number } | undefined)?.byteOffset ?? 0
      const bytes = Buffer.from(text)
      const lines = bytes.subarray(skip).toString("utf8").split(/(?<=\n)/).filter((line) => line !== "")
      const write = (chunk: string | Buffer) =>
        new Promise<void>((done) => (input.write(chunk) ? done() : input.once("drain", done)))
      const pause = (ms: number) => new Promise((done) => setTimeout(done, ms))
      void (async () => {
        await write(bytes.subarray(0, skip))
        for (let at = 0; at < lines.length && !input.destroyed;) {
          const burst = 1 + Math.floor(random() * maxBurst)
          await write(lines.slice(at, at + burst).join(""))
          at += burst
          while (at === burst && firstCommitMs === undefined && Date.now() - started < 20_000 && !input.destroyed) {
            await pause(10)
          }
          await pause(Math.floor(random() * maxPauseMs))
        }
        input.end()
      })()
    }
    let stdout = ""
    let stderr = ""
    let killed = false
    let killer: NodeJS.Timeout | undefined
    child.stdout!.on("data", (chunk) => (stdout += chunk))
    child.stderr!.on("data", (chunk) => (stderr = (stderr + chunk).slice(-20_000)))
    const alive = () => child.exitCode === null && child.signalCode === null
    const watcher = setInterval(() => {
      const now = Date.now() - started
      const text = fileText(checkpointPath)
      const committed = text !== before
      if (committed && firstCommitMs === undefined) firstCommitMs = now
      if (killAfterMs === undefined || killer !== undefined) return
      const anchored = options.anchor === undefined ? committed : options.anchor(text)
      if (anchored || now >= (options.anchorLimitMs ?? 20_000)) {
        killer = setTimeout(() => {
          if (alive()) killed = child.kill("SIGKILL")
        }, killAfterMs)
      }
    }, 10)
    const limit = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`tributary ingest did not finish in ${timeoutMs} ms:\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on("error", reject)
    child.on("close", (code, signal) => {
      running.delete(child)
      clearInterval(watcher)
      clearTimeout(killer)
      clearTimeout(limit)
      resolve({ killAfterMs, killed, firstCommitMs, code, signal, elapsedMs: Date.now() - started, stdout, stderr })
    })
  })

export interface CheckpointFile {
  readonly positions: Record<string, { partition: string; offset: number; resume?: unknown }>
  readonly cuts: ReadonlyArray<{ partition: string; first: number; last: number }>
}

/** A checkpoint file as the run reads it back: with the cuts of its journal (`FILE.journal`) merged in. */
export const readCheckpoint = (path: string): CheckpointFile | undefined => {
  if (!existsSync(path)) return undefined
  const checkpoint = JSON.parse(readFileSync(path, "utf8")) as CheckpointFile
  const journal = `${path}.journal`
  if (!existsSync(journal)) return checkpoint
  let cuts = [...checkpoint.cuts]
  for (const line of readFileSync(journal, "utf8").split("\n").slice(0, -1)) {
    let added: ReadonlyArray<CheckpointFile["cuts"][number]>
    try {
      added = (JSON.parse(line) as { cuts: ReadonlyArray<CheckpointFile["cuts"][number]> }).cuts
    } catch {
      break
    }
    cuts = [...cuts.filter((c) => !added.some((a) => a.partition === c.partition && a.first === c.first)), ...added]
  }
  return { ...checkpoint, cuts }
}

/** The dead-letter file's lines, parsed; lines that are not JSON are counted apart. */
export const readDeadLetters = (path: string) => {
  const letters: Array<{ position: { offset: number }; stage: string; reason: { code: string } }> = []
  const unreadable: Array<string> = []
  if (!existsSync(path)) return { letters, unreadable }
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line === "") continue
    try {
      letters.push(JSON.parse(line))
    } catch {
      unreadable.push(line.slice(0, 200))
    }
  }
  return { letters, unreadable }
}

/** Ids missing from `stored`, and ids stored more often than expected, against `expected` (each once). */
export const compareIds = (expected: ReadonlyArray<string>, stored: ReadonlyArray<unknown>) => {
  const counts = new Map<unknown, number>()
  for (const id of stored) counts.set(id, (counts.get(id) ?? 0) + 1)
  const expectedSet = new Set(expected)
  const missing = expected.filter((id) => !counts.has(id))
  const duplicated = [...counts].filter(([id, n]) => expectedSet.has(id as string) && n > 1).map(([id, n]) => ({ id, n }))
  const unexpected = [...counts].filter(([id]) => !expectedSet.has(id as string)).map(([id, n]) => ({ id, n }))
  return { missing, duplicated, unexpected }
}

/**
 * For a dataset without a primary key (rows kept in the order they were appended): which
 * stored rows each ingestion appended, oldest first, as the first and last `id`. The
 * service processes ingestions one at a time in the order it accepted them, so the rows
 * split by each ingestion's appended count. For reports of a failed run.
 */
export const storedBatches = async (
  base: string,
  key: string,
  datasetId: string,
  rows: ReadonlyArray<Record<string, unknown>>
): Promise<Array<{ ingestionId: string; first: unknown; last: unknown; count: number }>> => {
  const batches: Array<{ ingestionId: string; first: unknown; last: unknown; count: number }> = []
  let at = 0
  for (const detail of await ingestionDetails(base, key, datasetId)) {
    const count: number = detail.summary?.ingestion?.appendedRecordCount ?? 0
    if (count > 0) batches.push({ ingestionId: detail.id, first: rows[at]?.["id"], last: rows[at + count - 1]?.["id"], count })
    at += count
  }
  return batches
}

/**
 * Every ingestion of a dataset with its detail (status, summary), oldest first. The list
 * carries no counts, so each is read on its own.
 */
export const ingestionDetails = async (base: string, key: string, datasetId: string): Promise<Array<any>> => {
  const ids: Array<string> = []
  for (let page = 0;; page++) {
    const data = await apiData(base, key, "GET", `/v2/datasets/${datasetId}/ingestions?page=${page}&pageSize=100`)
    ids.push(...data.items.map((item: { id: string }) => item.id))
    if (data.items.length === 0 || ids.length >= data.pagination.totalItems) break
  }
  ids.reverse() // the list is newest first
  const details: Array<any> = []
  for (const id of ids) details.push(await apiData(base, key, "GET", `/v2/datasets/${datasetId}/ingestions/${id}`))
  return details
}

/** The most intervals [start, end) that overlap at one moment. */
export const maxOverlap = (intervals: ReadonlyArray<readonly [number, number]>) => {
  const edges = intervals.flatMap(([start, end]) => [[start, 1], [end, -1]] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let open = 0
  let most = 0
  for (const [, step] of edges) most = Math.max(most, (open += step))
  return most
}
