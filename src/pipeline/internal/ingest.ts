/**
 * One batch's exchange with the service: post it under its idempotency key (split on 413,
 * refused whole on 400/422), and what its ingestions came to once terminal.
 *
 * Posting and following are apart: a post ends when the service accepted the batch (or refused
 * it), and the accepted ingestions go to the tracker (`tracking.ts`), so a place among the
 * requests in flight is held for the length of a request, not of the service's processing.
 * Measured before this split: a service whose ingestions end 1.5 s after acceptance held
 * `ingest --concurrency 8` to 500 records/s.
 *
 * What the answers look like is `ingestWire.ts`'s to know (derived from `src/api`).
 *
 * @since 0.2.0
 * @internal
 */
import * as crypto from "node:crypto"
import { type Calls, type Cancel, ExchangeError, type Reply } from "../../client/transport.js"
import { batchBodyBytes } from "../batch.js"
import type { BatchRecord, DeadLetter, Problem } from "../vocabulary.js"
import type { Detail, IngestWire, Rejection } from "./ingestWire.js"

// One call per key where Node has it (20.12 and later): a Hash object per key cost more than
// the rest of building a batch's request.
const sha1Hex: (data: Uint8Array) => string = typeof crypto.hash === "function"
  ? (data) => crypto.hash("sha1", data, "hex")
  : (data) => crypto.createHash("sha1").update(data).digest("hex")

const namespace = Buffer.from("6f1c4a3e-2b7d-5e8f-9a0b-1c2d3e4f5a6b".replace(/-/g, ""), "hex")

// The namespace, then the name: written into one reused buffer, not concatenated per key.
let scratch = Buffer.alloc(1024)
namespace.copy(scratch)

/**
 * A UUIDv5 (RFC 9562) of `name` in tributary's namespace.
 *
 * @since 0.2.0
 * @category utils
 */
export const uuidV5 = (name: string): string => {
  const length = namespace.length + Buffer.byteLength(name)
  if (length > scratch.length) {
    scratch = Buffer.alloc(length * 2)
    namespace.copy(scratch)
  }
  scratch.write(name, namespace.length)
  const hex = sha1Hex(scratch.subarray(0, length))
  // Version 5 in the high nibble of byte 6, the RFC 4122 variant in the top bits of byte 8.
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/**
 * The idempotency key of the records `first..last` of a partition: the same source
 * coordinates always give the same key. Children of a `flatMap` add their child indexes
 * (`firstChild`, `lastChild`); without them the key is what it always was.
 *
 * @since 0.2.0
 * @category utils
 */
export const idempotencyKey = (
  datasetId: string | number,
  sourceName: string,
  partition: string,
  first: number,
  last: number,
  children?: { readonly firstChild: number | undefined; readonly lastChild: number | undefined },
  /** The run's identity: another run over the same records gets other keys (none: as before runs had one). */
  run?: string | undefined,
  /** Which of a batch's records these are, when the batch goes in parts (`parts.ts`). */
  part?: string | undefined
) => {
  // As text: the number 42 and the CLI's "42" name the same dataset and give the same keys.
  const name: Array<string | number | null> = [String(datasetId), sourceName, partition, first, last]
  if (children !== undefined && (children.firstChild !== undefined || children.lastChild !== undefined)) {
    name.push(children.firstChild ?? null, children.lastChild ?? null)
  }
  if (run !== undefined) name.push(`run:${run}`)
  if (part !== undefined) name.push(`part:${part}`)
  return uuidV5(JSON.stringify(name))
}

/**
 * An ingestion the service accepted for some of a batch's records (all of them, unless a 413
 * split the batch).
 *
 * @since 0.2.0
 * @category models
 */
export interface Accepted {
  readonly ingestionId: string
  readonly records: ReadonlyArray<BatchRecord>
  /** The service answered with the stored answer of an earlier request under the same key. */
  readonly replayed: boolean
}

/**
 * What posting a batch came to: the ingestions accepted, and the records refused before any
 * was stored (a 400/422, or one record over the size limit).
 *
 * @since 0.2.0
 * @category models
 */
export interface Posted {
  readonly accepted: ReadonlyArray<Accepted>
  readonly refused: ReadonlyArray<DeadLetter>
}

/**
 * A post the run cannot get past (its positions stay uncommitted): the problem, and the
 * answer's status when there was one.
 *
 * @since 0.2.0
 * @category models
 */
export interface PostFailure {
  readonly records: ReadonlyArray<BatchRecord>
  readonly reason: string
  readonly status?: number | undefined
}

/**
 * What a run's posts go into the keys and the wire with.
 *
 * @since 0.2.0
 * @category models
 */
export interface PostOptions {
  readonly wire: IngestWire
  readonly datasetId: string | number
  readonly sourceName: string
  /** The run identity of a partition's batches (see `RunRecord`). */
  readonly runOf?: ((partition: string) => string | undefined) | undefined
}

/**
 * Posts a partition's records through `calls` (with their retries, limits and outage handling
 * applied) and calls `done` once with what came of it, unless cancelled.
 *
 * @since 0.3.0
 * @category models
 */
export type Post = (
  calls: Calls,
  partition: string,
  records: ReadonlyArray<BatchRecord>,
  part: string | undefined,
  done: (outcome: Posted | PostFailure) => void
) => Cancel

/** The start of an answer's text, cut only when a message needs it. */
const excerpt = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text)

const refusedAll = (records: ReadonlyArray<BatchRecord>, reason: Problem): ReadonlyArray<DeadLetter> =>
  records.map((record) => ({ position: record.position, reason, stage: "send", record: JSON.parse(record.json) }))

/**
 * What an answer to a post says: the records were taken (an ingestion) or refused (dead
 * letters), the post failed, or the body is too large and the records go again in two halves.
 */
const answerOf = (
  wire: IngestWire,
  records: ReadonlyArray<BatchRecord>,
  outcome: Reply | ExchangeError
): Posted | PostFailure | "split" => {
  if (outcome instanceof ExchangeError) return { records, reason: `the service could not be reached: ${outcome.message}` }
  const reply = outcome
  if (reply.status === 413) {
    if (records.length > 1) return "split"
    return { accepted: [], refused: refusedAll(records, { ...wire.readProblem(reply.status, reply.text), code: "payload_too_large" }) }
  }
  if (reply.status === 400 || reply.status === 422) {
    return { accepted: [], refused: refusedAll(records, wire.readProblem(reply.status, reply.text)) }
  }
  if (reply.status !== 200) return { records, reason: wire.readProblem(reply.status, reply.text).message, status: reply.status }
  const ingestionId = wire.acceptedId(reply.text)
  if (ingestionId === undefined) {
    return { records, reason: `the service answered 200 without an ingestion id: ${excerpt(reply.text)}`, status: 200 }
  }
  return { accepted: [{ ingestionId, records, replayed: reply.headers["idempotent-replayed"] === "true" }], refused: [] }
}

/**
 * Whether a post came to a failure (the run cannot get past it).
 *
 * @since 0.3.0
 * @category guards
 */
export const isPostFailure = (outcome: Posted | PostFailure): outcome is PostFailure => "reason" in outcome

/**
 * Posts a partition's records: one ingestion, or several when the service finds the body too
 * large (each half under its own key, derived the same way, so the split repeats after a
 * restart). `part` names which of a batch's records these are when it goes in parts; it goes
 * into the keys.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makePost = (options: PostOptions): Post => {
  const { wire, datasetId, sourceName } = options
  const post: Post = (calls, partition, records, part, done) => {
    const first = records[0]!.position
    const last = records[records.length - 1]!.position
    const key = wire.api === "v2"
      ? idempotencyKey(datasetId, sourceName, partition, first.offset, last.offset, {
        firstChild: first.child?.index,
        lastChild: last.child?.index
      }, options.runOf?.(partition), part)
      : null
    let cancel: Cancel = calls({
      method: "POST",
      path: wire.dataPath,
      // As bytes, made once: undici would copy a string into a new buffer on every attempt,
      // and those copies lived long enough to be promoted (twice the GC work, measured).
      body: batchBodyBytes(records),
      headers: key === null ? undefined : { "idempotency-key": key }
    }, (outcome) => {
      const answer = answerOf(wire, records, outcome)
      if (answer !== "split") return done(answer)
      // One half after the other: a key in both halves must be applied in the records' order.
      const middle = Math.ceil(records.length / 2)
      cancel = post(calls, partition, records.slice(0, middle), part, (a) => {
        if (isPostFailure(a)) return done(a)
        cancel = post(calls, partition, records.slice(middle), part, (b) => {
          if (isPostFailure(b)) return done(b)
          done({ accepted: [...a.accepted, ...b.accepted], refused: [...a.refused, ...b.refused] })
        })
      })
    })
    return () => cancel()
  }
  return post
}

/**
 * What an accepted ingestion came to: the records stored, and those the service rejected as
 * dead letters (matched back to their positions where the service echoes them).
 *
 * @since 0.2.0
 * @category models
 */
export interface Settled {
  readonly stored: number
  readonly rejected: ReadonlyArray<DeadLetter>
}

/**
 * A terminal ingestion's detail as what it did with `accepted`'s records; a failed or purged
 * ingestion is an error message (the run stops before committing it).
 *
 * @since 0.2.0
 * @category utils
 */
export const settle = (accepted: Accepted, detail: Exclude<Detail, { readonly _tag: "Pending" }>): Settled | string => {
  const { records, ingestionId } = accepted
  if (detail._tag === "Failed") return `ingestion ${ingestionId} ended ${detail.status}: ${detail.message}`
  const stored = (rejected: number) => (detail.counted ? detail.stored : records.length - rejected)
  if (detail.rejected.length > 0 && detail.rejected.every((rejection) => rejection.record === undefined)) {
    // v1 counts the rejected records but does not say which they were.
    const first = records[0]!.position.offset
    const last = records[records.length - 1]!.position.offset
    return {
      stored: stored(detail.rejected.length),
      rejected: detail.rejected.map((problem): DeadLetter => ({
        position: records[0]!.position,
        reason: {
          code: problem.code ?? "rejected",
          field: problem.field ?? null,
          message: `one of records ${first}..${last} (v1 does not say which): ${problem.message ?? "rejected"}`
        },
        stage: "service"
      }))
    }
  }
  const rejected = rejectedLetters(records, detail.rejected)
  return { stored: stored(rejected.length), rejected }
}

/** Matches the records the service echoes back to their positions. */
const rejectedLetters = (records: ReadonlyArray<BatchRecord>, errors: ReadonlyArray<Rejection>): Array<DeadLetter> => {
  if (errors.length === 0) return []
  // Compared in canonical form: the source's text may differ in spacing from what comes back.
  const byText = new Map<string, Array<BatchRecord>>()
  for (const record of records) {
    const text = JSON.stringify(JSON.parse(record.json))
    const list = byText.get(text)
    if (list === undefined) byText.set(text, [record])
    else list.push(record)
  }
  return errors.map((error): DeadLetter => {
    const match = byText.get(JSON.stringify(error.record))?.shift()
    const reason = {
      code: error.code ?? "rejected",
      field: error.field ?? null,
      message: error.message ?? "the service rejected the record"
    }
    return match === undefined
      ? { position: records[0]!.position, reason, stage: "service", record: error.record }
      : { position: match.position, reason, stage: "service", record: JSON.parse(match.json) }
  })
}
