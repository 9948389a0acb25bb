/**
 * What a connector's readers (driven by a client library's callbacks, or by fibers of their
 * own) hand to the source's stream through a bounded queue: a chunk of events, a chunk made
 * only when the stream takes it, the end, or the failure that ends it.
 *
 * Why the second: events made when read waited in the queue (16 chunks of 1,024) past two
 * young-generation collections, so the collector copied and promoted every parsed record; made
 * when taken, they die young, as the NDJSON source's lines do (they are parsed as pulled).
 *
 * @since 0.1.0
 */
import { type Chunk, Effect, Option, Queue, Stream } from "effect"

/**
 * @since 0.1.0
 * @category models
 */
export type QueueItem<A, E> =
  | { readonly _tag: "Events"; readonly events: Chunk.Chunk<A> }
  /** Events made when the stream takes them (from what was read: raw rows, messages). */
  | { readonly _tag: "Later"; readonly events: Effect.Effect<Chunk.Chunk<A>, E> }
  | { readonly _tag: "End" }
  | { readonly _tag: "Failed"; readonly error: E }

/**
 * The stream of the events put in `queue`, until its `End` or its first `Failed`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromQueue = <A, E>(queue: Queue.Dequeue<QueueItem<A, E>>): Stream.Stream<A, E> =>
  Stream.repeatEffectChunkOption(
    Effect.flatMap(Queue.take(queue), (item) => {
      switch (item._tag) {
        case "Events":
          return Effect.succeed(item.events)
        case "Later":
          return Effect.mapError(item.events, Option.some)
        case "End":
          return Effect.fail(Option.none())
        case "Failed":
          return Effect.fail(Option.some(item.error))
      }
    })
  )
