/**
 * `send` and `track`: post a batch with its idempotency key, then follow its ingestion to a
 * terminal state.
 *
 * Transient failures (transport, timeouts, 408, 429, 5xx) are retried by the client, with
 * the same key, so a batch the service already took is replayed, not ingested twice. A 413
 * splits the batch in two (each half with its own key, derived the same way, so the split
 * repeats after a restart). A 400 or 422 refuses the batch: its records become dead letters
 * with the reason. Anything else (a bad key, a missing dataset, retries spent) stops the run
 * before the batch is committed.
 *
 * @since 0.1.0
 */
import * as crypto from "node:crypto"
import { Data, Duration, Effect, Stream } from "effect"
import { dual } from "effect/Function"
import type { Exchange, Exchanges, Reply } from "../client/transport.js"
import type { Batch, BatchRecord, Unit } from "./batch.js"
import { batchBodyBytes } from "./batch.js"
import type { DeadLetter } from "./DeadLetter.js"
import type { Position } from "./Source.js"

/**
 * Where records go.
 *
 * @since 0.1.0
 */
export interface Destination {
  /**
   * The dataset: its v2 number or its UUID (v1 id). v2 paths take either; a v1 run given a
   * number has it resolved to the UUID before the first send (`run`).
   */
  readonly datasetId: string | number
  /** `v2` (default) sends idempotency keys; `v1` has none. */
  readonly api?: "v1" | "v2" | undefined
}

/**
 * A batch could not be delivered and the run must stop (its positions stay uncommitted).
 *
 * @since 0.1.0
 */
export class DeliveryError extends Data.TaggedError("DeliveryError")<{
  readonly reason: string
  readonly partition: string
  readonly first: number
  readonly last: number
  readonly status?: number | undefined
}> {
  override get message() {
    return `records ${this.first}..${this.last} of partition ${this.partition}: ${this.reason}`
  }
}

/**
 * The outcome of one batch.
 *
 * @since 0.1.0
 */
export interface Delivered {
  readonly ingestionIds: ReadonlyArray<string>
  readonly sent: number
  readonly accepted: number
  /** Records refused by the service, as dead letters. */
  readonly rejected: ReadonlyArray<DeadLetter>
  /** Records refused before they were stored (a 400, or one record over the size limit). */
  readonly refused: ReadonlyArray<DeadLetter>
}

/** @since 0.1.0 */
export interface DeliveryOptions {
  /** The client's `exchanges`. */
  readonly exchanges: Exchanges
  readonly destination: Destination
  readonly sourceName: string
  /** First and longest wait between polls of an ingestion. */
  readonly poll?: { readonly initial: Duration.DurationInput; readonly max: Duration.DurationInput } | undefined
}

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
 * @since 0.1.0
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
 * @since 0.1.0
 */
export const idempotencyKey = (
  datasetId: string | number,
  sourceName: string,
  partition: string,
  first: number,
  last: number,
  children?: { readonly firstChild: number | undefined; readonly lastChild: number | undefined }
) =>
  uuidV5(JSON.stringify(
    // As text: the number 42 and the CLI's "42" name the same dataset and give the same keys.
    children === undefined || (children.firstChild === undefined && children.lastChild === undefined)
      ? [String(datasetId), sourceName, partition, first, last]
      : [String(datasetId), sourceName, partition, first, last, children.firstChild ?? null, children.lastChild ?? null]
  ))

const terminal = new Set(["success", "failed", "purged", "error"])

interface Answer {
  readonly status: number
  readonly body: any
  /** The answer as it came, for messages about answers of the wrong shape (see `excerpt`). */
  readonly text: string
}

/** The start of an answer's text, cut only when a message needs it. */
const excerpt = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text)

const readAnswer = ({ status, text }: Reply): Answer => {
  try {
    return { status, body: JSON.parse(text), text }
  } catch {
    return { status, body: { errors: [{ message: excerpt(text) || `HTTP ${status}` }] }, text }
  }
}

const firstError = (answer: Answer) => {
  const error = answer.body?.errors?.[0]
  return {
    code: typeof error?.code === "string" ? error.code : `http_${answer.status}`,
    field: typeof error?.field === "string" ? error.field : null,
    message: typeof error?.message === "string" ? error.message : `the service answered ${answer.status}`
  }
}

/** Matches the records the service echoes in `errors[].record` back to their positions. */
const rejectedLetters = (records: ReadonlyArray<BatchRecord>, errors: ReadonlyArray<any>): Array<DeadLetter> => {
  if (errors.length === 0) return []
  // Compared in canonical form: the source's text may differ in spacing from what comes back.
  const byText = new Map<string, Array<BatchRecord>>()
  for (const record of records) {
    const text = JSON.stringify(JSON.parse(record.json))
    byText.set(text, [...(byText.get(text) ?? []), record])
  }
  return errors.map((error): DeadLetter => {
    const match = byText.get(JSON.stringify(error?.record))?.shift()
    const reason = {
      code: typeof error?.code === "string" ? error.code : "rejected",
      field: typeof error?.field === "string" ? error.field : null,
      message: typeof error?.message === "string" ? error.message : "the service rejected the record"
    }
    return match === undefined
      ? { position: records[0]!.position, reason, stage: "service", record: error?.record }
      : { position: match.position, reason, stage: "service", record: JSON.parse(match.json) }
  })
}

/**
 * Sends a batch and follows its ingestion(s) to the end.
 *
 * @since 0.1.0
 */
export const deliver = (batch: Batch, options: DeliveryOptions): Effect.Effect<Delivered, DeliveryError> =>
  makeDeliver(options)(batch)

/**
 * `deliver` with its options read once, for a run's many batches.
 *
 * @since 0.1.0
 */
export const makeDeliver = (options: DeliveryOptions): (batch: Batch) => Effect.Effect<Delivered, DeliveryError> => {
  const { datasetId } = options.destination
  const api = options.destination.api ?? "v2"
  const pollInitial = Duration.toMillis(options.poll?.initial ?? "20 millis")
  const pollMax = Duration.toMillis(options.poll?.max ?? "1 second")
  const dataPath = `/${api}/datasets/${datasetId}/data`

  const failure = (partition: string, records: ReadonlyArray<BatchRecord>, reason: string, status?: number) =>
    new DeliveryError({
      reason,
      partition,
      first: records[0]!.position.offset,
      last: records[records.length - 1]!.position.offset,
      status
    })

  const request = (partition: string, records: ReadonlyArray<BatchRecord>, exchange: Exchange) =>
    Effect.mapBoth(options.exchanges(exchange), {
      onFailure: (error) => failure(partition, records, `the service could not be reached: ${error.message}`),
      onSuccess: readAnswer
    })

  const track = (partition: string, records: ReadonlyArray<BatchRecord>, ingestionId: string): Effect.Effect<any, DeliveryError> => {
    const path = `/${api}/datasets/${datasetId}/ingestions/${ingestionId}`
    const poll = (wait: number): Effect.Effect<any, DeliveryError> =>
      Effect.flatMap(request(partition, records, { method: "GET", path }), (answer) => {
        if (answer.status !== 200) {
          return Effect.fail(failure(partition, records, `following ingestion ${ingestionId}: ${firstError(answer).message}`, answer.status))
        }
        const detail = api === "v2" ? answer.body?.data : answer.body
        if (typeof detail?.status !== "string") {
          return Effect.fail(
            failure(partition, records, `following ingestion ${ingestionId}: an answer without a status: ${excerpt(answer.text)}`, 200)
          )
        }
        if (terminal.has(detail.status)) return Effect.succeed(detail)
        return Effect.zipRight(Effect.sleep(Duration.millis(wait)), poll(Math.min(pollMax, Math.ceil(wait * 1.5))))
      })
    return poll(pollInitial)
  }

  /** What a terminal ingestion of `records` came to. */
  const outcome = (
    partition: string,
    records: ReadonlyArray<BatchRecord>,
    ingestionId: string,
    detail: any
  ): Effect.Effect<Delivered, DeliveryError> => {
    if (detail.status === "failed" || detail.status === "purged" || detail.status === "error") {
      const why = detail.errors?.[0]?.message ?? detail.status
      return Effect.fail(failure(partition, records, `ingestion ${ingestionId} ended ${detail.status}: ${why}`))
    }
    if (api === "v2") {
      const counts = detail.summary?.ingestion
      const rejected = rejectedLetters(records, detail.errors ?? [])
      return Effect.succeed({
        ingestionIds: [ingestionId],
        sent: records.length,
        accepted: counts ? counts.appendedRecordCount + counts.overwrittenRecordCount : records.length - rejected.length,
        rejected,
        refused: []
      })
    }
    // Without metrics, a successful ingestion is taken to have stored every record.
    const metrics = detail.metrics?.ingestionMetrics ??
      { appendedRecordsCount: records.length, overwrittenRecordsCount: 0, rejectedRecordsCount: 0 }
    const first = records[0]!.position.offset
    const last = records[records.length - 1]!.position.offset
    const rejected = Array.from({ length: metrics.rejectedRecordsCount }, (_, i): DeadLetter => ({
      position: records[0]!.position,
      reason: {
        code: detail.errors?.[i]?.code ?? "rejected",
        field: detail.errors?.[i]?.field ?? null,
        message: `one of records ${first}..${last} (v1 does not say which): ${detail.errors?.[i]?.message ?? "rejected"}`
      },
      stage: "service"
    }))
    return Effect.succeed({
      ingestionIds: [ingestionId],
      sent: records.length,
      accepted: metrics.appendedRecordsCount + metrics.overwrittenRecordsCount,
      rejected,
      refused: []
    })
  }

  const send = (partition: string, records: ReadonlyArray<BatchRecord>): Effect.Effect<Delivered, DeliveryError> => {
    const first = records[0]!.position.offset
    const last = records[records.length - 1]!.position.offset
    const children = { firstChild: records[0]!.position.child?.index, lastChild: records[records.length - 1]!.position.child?.index }
    const key = api === "v2" ? idempotencyKey(datasetId, options.sourceName, partition, first, last, children) : null
    const posted = request(partition, records, {
      method: "POST",
      path: dataPath,
      // As bytes, made once: undici would copy a string into a new buffer on every attempt,
      // and those copies lived long enough to be promoted (twice the GC work, measured).
      body: batchBodyBytes(records),
      headers: key === null ? undefined : { "idempotency-key": key }
    })
    return Effect.flatMap(posted, (answer) => {
      if (answer.status === 413) {
        if (records.length === 1) {
          return Effect.succeed(refusedAll(records, { ...firstError(answer), code: "payload_too_large" }))
        }
        const middle = Math.ceil(records.length / 2)
        return Effect.map(
          Effect.all([send(partition, records.slice(0, middle)), send(partition, records.slice(middle))]),
          combine
        )
      }
      if (answer.status === 400 || answer.status === 422) return Effect.succeed(refusedAll(records, firstError(answer)))
      if (answer.status !== 200) return Effect.fail(failure(partition, records, firstError(answer).message, answer.status))
      const ingestionId: unknown = api === "v2" ? answer.body?.data?.ingestionId : answer.body?.ingestionId
      if (typeof ingestionId !== "string") {
        return Effect.fail(
          failure(partition, records, `the service answered 200 without an ingestion id: ${excerpt(answer.text)}`, 200)
        )
      }
      return Effect.flatMap(track(partition, records, ingestionId), (detail) => outcome(partition, records, ingestionId, detail))
    })
  }

  return (batch) => send(batch.partition, batch.records)
}

const refusedAll = (records: ReadonlyArray<BatchRecord>, reason: DeadLetter["reason"]): Delivered => ({
  ingestionIds: [],
  sent: records.length,
  accepted: 0,
  rejected: [],
  refused: records.map((record) => ({ position: record.position, reason, stage: "send", record: JSON.parse(record.json) }))
})

const combine = (parts: ReadonlyArray<Delivered>): Delivered => ({
  ingestionIds: parts.flatMap((p) => p.ingestionIds),
  sent: parts.reduce((n, p) => n + p.sent, 0),
  accepted: parts.reduce((n, p) => n + p.accepted, 0),
  rejected: parts.flatMap((p) => p.rejected),
  refused: parts.flatMap((p) => p.refused)
})

/**
 * A unit after delivery: the elements it covered, its dead letters (to be written before it
 * is committed) and, for a batch, what the service did with it.
 *
 * @since 0.1.0
 */
export interface DeliveredUnit {
  readonly partition: string
  readonly fromSeq: number
  readonly toSeq: number
  /** The position of the element numbered `toSeq`. */
  readonly lastPosition: Position
  readonly letters: ReadonlyArray<DeadLetter>
  /** Undefined for a lone dead letter. */
  readonly outcome: Delivered | undefined
}

/**
 * A delivered batch as a `DeliveredUnit`: its letters are those read inside it, then those the
 * service refused or rejected.
 *
 * @since 0.1.0
 */
export const deliveredBatch = (batch: Batch, outcome: Delivered): DeliveredUnit => ({
  partition: batch.partition,
  fromSeq: batch.fromSeq,
  toSeq: batch.toSeq,
  lastPosition: batch.lastPosition,
  letters: outcome.refused.length + outcome.rejected.length === 0
    ? batch.deadLetters
    : [...batch.deadLetters, ...outcome.refused, ...outcome.rejected],
  outcome
})

/**
 * A dead letter read outside any batch (or a record a typed stage dropped) as a
 * `DeliveredUnit`: there is nothing to send.
 *
 * @since 0.1.0
 */
export const deliveredLetter = (unit: Extract<Unit, { _tag: "Dead" | "Skipped" }>): DeliveredUnit => {
  const position = unit._tag === "Dead" ? unit.letter.position : unit.position
  return {
    partition: position.partition,
    fromSeq: unit.seq,
    toSeq: unit.seq,
    lastPosition: position,
    letters: unit._tag === "Dead" ? [unit.letter] : [],
    outcome: undefined
  }
}

/**
 * `send` and `track` as a stream stage: delivers each unit of `batch`, at most `concurrency`
 * (default 4) at once, and emits them as they finish, in any order. A lone dead letter passes
 * through. Fails with the first batch that cannot be delivered.
 *
 * `run` does the same with its own loop (no stream runner on its hot path); this stage is for
 * pipelines composed by hand.
 *
 * @since 0.1.0
 */
export const deliverUnits: {
  (options: DeliveryOptions & { readonly concurrency?: number | undefined }): <E, R>(
    self: Stream.Stream<Unit, E, R>
  ) => Stream.Stream<DeliveredUnit, E | DeliveryError, R>
  <E, R>(
    self: Stream.Stream<Unit, E, R>,
    options: DeliveryOptions & { readonly concurrency?: number | undefined }
  ): Stream.Stream<DeliveredUnit, E | DeliveryError, R>
} = dual(2, <E, R>(self: Stream.Stream<Unit, E, R>, options: DeliveryOptions & { readonly concurrency?: number | undefined }) => {
  const deliverBatch = makeDeliver(options)
  return Stream.mapEffect(
    self,
    (unit): Effect.Effect<DeliveredUnit, DeliveryError> =>
      unit._tag !== "Batch"
        ? Effect.succeed(deliveredLetter(unit))
        : Effect.map(deliverBatch(unit.batch), (outcome) => deliveredBatch(unit.batch, outcome)),
    { concurrency: options.concurrency ?? 4, unordered: true }
  )
})
