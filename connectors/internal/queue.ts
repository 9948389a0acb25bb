/**
 * What a connector's readers (driven by a client library's callbacks, or by fibers of their
 * own) hand to the source's stream through a bounded queue: a chunk of events, the end, or the
 * failure that ends it.
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
        case "End":
          return Effect.fail(Option.none())
        case "Failed":
          return Effect.fail(Option.some(item.error))
      }
    })
  )
