/**
 * The pure parts of the Kafka source: partition names, messages as source elements, and the
 * batch cuts kept in the metadata of a group's committed offset. No I/O here.
 *
 * @since 0.1.0
 */
import { isUtf8 } from "node:buffer"
import type { BatchCut, Position, SourceElement } from "../../src/pipeline/vocabulary.js"
import type { KafkaMessage } from "./kafkajs.js"

/**
 * What a Kafka position carries: the topic and partition number (its `offset` is the
 * message's offset).
 *
 * @since 0.1.0
 * @category models
 */
export interface KafkaResume {
  readonly topic: string
  readonly partition: number
}

/**
 * The pipeline's name of a topic's partition: `TOPIC:N` (topic names cannot hold a colon).
 *
 * @since 0.1.0
 * @category utils
 */
export const partitionName = (topic: string, partition: number): string => `${topic}:${partition}`

/**
 * `TOPIC:N` back to its topic and partition number.
 *
 * @since 0.1.0
 * @category utils
 */
export const parsePartitionName = (name: string): KafkaResume => {
  const at = name.lastIndexOf(":")
  return { topic: name.slice(0, at), partition: Number(name.slice(at + 1)) }
}

/**
 * Turns a message into a record. Throwing means the message is not a record: it becomes a
 * dead letter with the thrown message as the reason. The default parses the value as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export type Decoder = (message: KafkaMessage) => unknown

/**
 * Values over this many bytes are dead-lettered undecoded (1 MiB).
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultMaxValueBytes = 1024 * 1024


const where = (m: KafkaMessage) => `topic ${m.topic} partition ${m.partition} offset ${m.offset}`

/**
 * A message as a source element: a record (an object), or a malformed element naming topic,
 * partition and offset (no value, a value over `maxValueBytes`, a value the decoder refuses,
 * or one that is not a JSON object).
 *
 * @since 0.1.0
 * @category utils
 */
export const messageElement = (
  m: KafkaMessage,
  options: { readonly decode?: Decoder | undefined; readonly maxValueBytes: number }
): SourceElement<KafkaResume> => {
  const known = partitionOf(m.topic, m.partition)
  const position: Position<KafkaResume> = { partition: known.name, offset: m.offset, resume: known.resume }
  if (m.value !== null && m.value.length > options.maxValueBytes) {
    return malformedElement(m, position, "value_too_long", `the value is ${m.value.length} bytes, over the ${options.maxValueBytes}-byte limit`, "")
  }
  let value: unknown
  let json: string | undefined
  if (options.decode === undefined) {
    if (m.value === null) return malformedElement(m, position, "no_value", "the message has no value (a tombstone)", "")
    json = m.value.toString("utf8")
    // Checked, not trusted: a bad byte decodes to U+FFFD, and a value that still parsed would be
    // stored with its bytes silently changed.
    if (!isUtf8(m.value)) {
      return malformedElement(m, position, "invalid_utf8", `the value is not valid UTF-8 (byte ${firstBadByte(m.value)}); the letter's raw text shows the bad bytes as U+FFFD`, json)
    }
    try {
      value = JSON.parse(json)
    } catch (error) {
      return malformedElement(m, position, "invalid_json", (error as Error).message, json)
    }
  } else {
    try {
      value = options.decode(m)
    } catch (error) {
      return malformedElement(m, position, "undecodable", error instanceof Error ? error.message : String(error), m.value?.toString("utf8") ?? "")
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    const got = Array.isArray(value) ? "an array" : value === null ? "null" : typeof value
    return malformedElement(m, position, "not_an_object", `expected a JSON object, got ${got}`, json ?? JSON.stringify(value) ?? "")
  }
  return { _tag: "Record", position, value, json }
}

/**
 * Each partition's name and resume, made once per process: a name made for each message cost
 * a string and its hash at every look-up by it (the commit tracker's map, once a message:
 * 2% of the sink's CPU on `bench:kafka`).
 */
const partitions = new Map<string, Array<{ readonly name: string; readonly resume: KafkaResume }>>()

const partitionOf = (topic: string, partition: number) => {
  let byNumber = partitions.get(topic)
  if (byNumber === undefined) partitions.set(topic, byNumber = [])
  return byNumber[partition] ??= { name: partitionName(topic, partition), resume: { topic, partition } }
}

const malformedElement = (
  m: KafkaMessage,
  position: Position<KafkaResume>,
  code: string,
  message: string,
  raw: string
): SourceElement<KafkaResume> => ({
  _tag: "Malformed",
  position,
  problem: { code, field: null, message: `${where(m)}: ${message}` },
  // Whole: a replay of the letter needs what was read (it is bounded by the size limit).
  raw
})

/** Where a value's UTF-8 first goes wrong (0-based byte index); only asked of a value that does. */
const firstBadByte = (bytes: Uint8Array): number => {
  let i = 0
  while (i < bytes.length) {
    const b = bytes[i]!
    const length = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0
    if (length === 0 || i + length > bytes.length) return i
    for (let k = 1; k < length; k++) if ((bytes[i + k]! & 0xc0) !== 0x80) return i
    // Overlong three-byte forms, surrogates, and code points past U+10FFFF.
    const second = bytes[i + 1]!
    if ((b === 0xe0 && second < 0xa0) || (b === 0xed && second > 0x9f) || (b === 0xf0 && second < 0x90) || (b === 0xf4 && second > 0x8f)) return i
    i += length
  }
  return bytes.length
}

/**
 * Offset metadata is a short string (the broker's `offset.metadata.max.bytes`, 4096 by
 * default): cuts are written relative to the committed offset, in base 36, as
 * `t1:FIRST+LENGTH,...`. A hundred cuts of a hundred records take about 600 characters.
 * A cut between children of a `flatMap` adds their child indexes: `FIRST.C+LENGTH.C`.
 * A batch that went in parts adds the offsets of its second part: `FIRST+LENGTH~H~H`, each
 * from FIRST (an older reader stops at `~` and reads the cut alone). A partition batched by
 * blocks of offsets (`Blocks`) starts the list with its frontier, `@OFFSET` from the committed
 * offset (an older reader finds no number in it and passes over it).
 */
const metadataVersion = "t1:"

/**
 * With a run identity (see `RunRecord`): `t2:RUN;FIRST+LENGTH,...`. The identity is written with
 * the partition's first cuts, so before its first batch is sent.
 */
const runVersion = "t2:"

/**
 * The cuts of one partition as committed-offset metadata; `base` is the committed offset
 * (the next offset to read), which every cut starts at or after.
 *
 * @since 0.1.0
 * @category utils
 */
export const encodeCuts = (cuts: ReadonlyArray<BatchCut>, base: number, run?: string | undefined, frontier?: number | undefined): string =>
  (run === undefined ? metadataVersion : `${runVersion}${run};`) +
  // A frontier at or below the committed offset says nothing: every block below it is committed.
  (frontier === undefined || frontier <= base ? "" : `@${(frontier - base).toString(36)}${cuts.length === 0 ? "" : ","}`) +
  [...cuts]
    .sort((a, b) => a.first - b.first)
    .map((cut) =>
      `${(cut.first - base).toString(36)}${childSuffix(cut.firstChild)}+${(cut.last - cut.first).toString(36)}${childSuffix(cut.lastChild)}${heldSuffix(cut)}`
    )
    .join(",")

/**
 * The frontier of a partition batched by blocks, from its committed offset's metadata (none:
 * none recorded).
 *
 * @since 0.3.0
 * @category utils
 */
export const decodeFrontier = (metadata: string | null, base: number): number | undefined => {
  const list = metadata === null ? undefined : cutList(metadata)
  if (list === undefined || !list.startsWith("@")) return undefined
  const end = list.indexOf(",")
  const offset = base + parseInt(list.slice(1, end === -1 ? undefined : end), 36)
  return Number.isFinite(offset) ? offset : undefined
}

/**
 * Metadata back to cuts of `partition`; metadata written by someone else (or nothing) is no
 * cuts at all.
 *
 * @since 0.1.0
 * @category utils
 */
export const decodeCuts = (metadata: string | null, base: number, partition: string): ReadonlyArray<BatchCut> => {
  const list = metadata === null ? undefined : cutList(metadata)
  if (list === undefined || list === "") return []
  const cuts: Array<BatchCut> = []
  for (const entry of list.split(",")) {
    if (entry.startsWith("@")) continue // the frontier
    const [item, ...heldText] = entry.split("~")
    const [from, length] = item!.split("+")
    const [firstText, firstChild] = (from ?? "").split(".")
    const [lengthText, lastChild] = (length ?? "").split(".")
    const first = base + parseInt(firstText!, 36)
    const last = first + parseInt(lengthText!, 36)
    if (!(Number.isFinite(first) && Number.isFinite(last))) continue
    const cut: BatchCut = firstChild === undefined && lastChild === undefined
      ? { partition, first, last }
      : { partition, first, last, firstChild: childIndex(firstChild), lastChild: childIndex(lastChild) }
    const held = heldText.map((text) => first + parseInt(text, 36))
    cuts.push(held.length === 0 || !held.every(Number.isFinite) ? cut : { ...cut, held })
  }
  return cuts
}

/** A batch that went in parts: `~` and each offset of its second part, from its first, base 36. */
const heldSuffix = (cut: BatchCut) =>
  cut.held === undefined ? "" : cut.held.map((offset) => `~${(offset - cut.first).toString(36)}`).join("")

const childSuffix = (child: number | undefined) => (child === undefined ? "" : `.${child.toString(36)}`)

const childIndex = (text: string | undefined) => (text === undefined ? undefined : parseInt(text, 36))

/** The cut list of metadata of either version, or undefined for metadata written by another tool. */
const cutList = (metadata: string): string | undefined => {
  if (metadata.startsWith(metadataVersion)) return metadata.slice(metadataVersion.length)
  if (!metadata.startsWith(runVersion)) return undefined
  const at = metadata.indexOf(";")
  return at === -1 ? undefined : metadata.slice(at + 1)
}

/**
 * The run identity a partition's committed-offset metadata holds: the run, `"legacy"` for
 * metadata written before runs had an identity (its keys stay those of the coordinates alone),
 * or `"none"` when there is nothing of ours (nothing committed, or offsets reset by another
 * tool): the partition then starts a fresh run.
 *
 * @since 0.2.0
 * @category utils
 */
export const decodeRun = (metadata: string | null): { readonly _tag: "Run"; readonly run: string } | { readonly _tag: "Legacy" } | {
  readonly _tag: "None"
} => {
  if (metadata === null) return { _tag: "None" }
  if (metadata.startsWith(metadataVersion)) return { _tag: "Legacy" }
  if (metadata.startsWith(runVersion)) {
    const at = metadata.indexOf(";")
    if (at > runVersion.length) return { _tag: "Run", run: metadata.slice(runVersion.length, at) }
  }
  return { _tag: "None" }
}
