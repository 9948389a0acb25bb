/**
 * How the commands tell of schema changes (`--schema-contract`, in `options.ts`): a line when
 * a column first appears, a line in the closing summary.
 *
 * @since 0.3.0
 */
import { parsePartitionName } from "../../connectors/kafka/codec.js"
import type { PipelineEvent, Progress } from "../pipeline/events.js"

/**
 * Where a record sits, in words: `topic orders partition 3 offset 1711` for a Kafka partition
 * (`TOPIC:N`), `line 12` for a file's, `partition p offset 7` otherwise.
 *
 * @since 0.3.0
 * @category utils
 */
export const describePosition = (position: { readonly partition: string; readonly offset: number }, unit: "line" | "row" | "offset") => {
  if (unit !== "offset") return `${unit} ${position.offset}`
  const { partition, topic } = parsePartitionName(position.partition)
  return Number.isInteger(partition) && topic !== "" ? `topic ${topic} partition ${partition} offset ${position.offset}` : `partition ${position.partition} offset ${position.offset}`
}

/**
 * The line a command says when the dataset gains a column: `column "coupon" (string) added by
 * topic orders partition 3 offset 1711`.
 *
 * @since 0.3.0
 * @category utils
 */
export const columnAddedLine = (event: Extract<PipelineEvent, { readonly _tag: "ColumnAdded" }>, unit: "line" | "row" | "offset") =>
  `column "${event.column.id}" (${event.column.dataType}) added by ${describePosition(event.position, unit)}`

/**
 * The summary's line about the schema, or none when the contract changed nothing:
 * `schema: columns added coupon (string); values discarded 3 (unknown_column coupon 3)`.
 *
 * @since 0.3.0
 * @category utils
 */
export const schemaSummary = (progress: Progress): ReadonlyArray<string> => {
  const parts = [
    ...(progress.columnsAdded.length === 0
      ? []
      : [`columns added ${progress.columnsAdded.map((column) => `${column.id} (${column.dataType})`).join(", ")}`]),
    ...(progress.valuesDiscarded === 0
      ? []
      : [
        `values discarded ${progress.valuesDiscarded} (${
          Object.entries(progress.discardedReasons).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([reason, n]) => `${reason} ${n}`).join(", ")
        })`
      ])
  ]
  return parts.length === 0 ? [] : [`schema: ${parts.join("; ")}`]
}
