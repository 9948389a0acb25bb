/**
 * Following accepted ingestions to their end, many at once: one poller per run reads the
 * dataset's list of ingestions (newest first, a page covers 100) to learn which of the pending
 * ones ended, and reads the detail of those only (their counts and rejected records). An
 * ingestion the list does not show (other writers pushed it past the pages read, or the list
 * cannot be read) is read by its detail.
 *
 * Why: polling each ingestion's detail on its own backoff cost about 10 requests an ingestion
 * against a service that takes 1.5 s to process one, and each poll held a place among the
 * requests in flight. Now the cost is one detail an ingestion plus a list read a poll for all
 * of them, and the poll interval shrinks back to `initial` whenever one ended.
 *
 * @since 0.2.0
 * @internal
 */
import { Deferred, Duration, Effect, Exit, FiberId, type Scope } from "effect"
import type { Exchanges } from "../../client/transport.js"
import type { Detail, IngestWire } from "./ingestWire.js"

/**
 * A terminal detail, or why the ingestion could not be followed.
 *
 * @since 0.2.0
 * @category models
 */
export type Terminal = Exclude<Detail, { readonly _tag: "Pending" }>

/**
 * @since 0.2.0
 * @category models
 */
export interface Tracker {
  /** Waits for the ingestion to end; fails with a reason when it cannot be followed. */
  readonly track: (ingestionId: string) => Effect.Effect<Terminal, string>
  /** Ingestions followed now. */
  readonly pending: () => number
}

/**
 * @since 0.2.0
 * @category models
 */
export interface TrackerOptions {
  /** Exchanges for the polls (with retries and outage handling). */
  readonly exchanges: Exchanges
  readonly wire: IngestWire
  /** The first and the longest wait between polls. */
  readonly poll: { readonly initial: Duration.DurationInput; readonly max: Duration.DurationInput }
  /** Details read at once. */
  readonly detailConcurrency?: number | undefined
}

interface Entry {
  readonly done: Deferred.Deferred<Terminal, string>
}

const pageSize = 100

/**
 * A tracker whose poller lives as long as the scope.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeTracker = (options: TrackerOptions): Effect.Effect<Tracker, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { wire, exchanges } = options
    const initial = Math.max(1, Duration.toMillis(options.poll.initial))
    const max = Math.max(initial, Duration.toMillis(options.poll.max))
    const entries = new Map<string, Entry>()
    // Opened when the first ingestion arrives while none is followed.
    let arrived = yield* Deferred.make<void>()
    // Lists are given up for the run once one cannot be read (a service without them).
    let lists = wire.listPath !== undefined

    const settle = (id: string, outcome: Exit.Exit<Terminal, string>) => {
      const entry = entries.get(id)
      if (entry === undefined) return
      entries.delete(id)
      Deferred.unsafeDone(entry.done, outcome)
    }

    /** Reads one detail; answers whether the ingestion ended. */
    const readDetail = (id: string): Effect.Effect<boolean> =>
      Effect.match(exchanges({ method: "GET", path: wire.detailPath(id) }), {
        onFailure: (error) => {
          settle(id, Exit.fail(`following ingestion ${id}: the service could not be reached: ${error.message}`))
          return true
        },
        onSuccess: (reply) => {
          if (reply.status !== 200) {
            settle(id, Exit.fail(`following ingestion ${id}: ${wire.readProblem(reply.status, reply.text).message}`))
            return true
          }
          const detail = wire.readDetail(reply.text)
          if (detail === undefined) {
            settle(id, Exit.fail(`following ingestion ${id}: an answer of the wrong shape: ${reply.text.slice(0, 200)}`))
            return true
          }
          if (detail._tag === "Pending") return false
          settle(id, Exit.succeed(detail))
          return true
        }
      })

    /** The pending ids the list shows ended, and those it does not show; undefined: no list. */
    const readLists = Effect.gen(function*() {
      const unseen = new Set(entries.keys())
      const ended: Array<string> = []
      const pages = 1
      for (let page = 0; page < pages && unseen.size > 0; page++) {
        const reply = yield* Effect.either(exchanges({ method: "GET", path: wire.listPath }))
        if (reply._tag === "Left" || reply.right.status !== 200) return undefined
        const items = wire.readList(reply.right.text)
        if (items === undefined) return undefined
        for (const item of items) {
          if (!unseen.delete(item.id)) continue
          if (item.terminal) ended.push(item.id)
        }
        if (items.length < pageSize) break
      }
      return { ended, unseen: [...unseen] }
    })

    const pollOnce: Effect.Effect<number> = Effect.gen(function*() {
      let toRead: ReadonlyArray<string>
      if (lists) {
        const found = yield* readLists
        if (found === undefined) {
          lists = false
          toRead = [...entries.keys()]
        } else {
          toRead = [...found.ended, ...found.unseen]
        }
      } else {
        toRead = [...entries.keys()]
      }
      const ended = yield* Effect.forEach(toRead, readDetail, { concurrency: options.detailConcurrency ?? 8 })
      return ended.filter(Boolean).length
    })

    const poller = Effect.gen(function*() {
      let wait = initial
      for (;;) {
        if (entries.size === 0) {
          yield* Deferred.await(arrived)
          arrived = yield* Deferred.make<void>()
          wait = initial
        }
        yield* Effect.sleep(Duration.millis(wait))
        const ended = yield* pollOnce
        wait = ended > 0 ? initial : Math.min(max, Math.ceil(wait * 1.5))
      }
    })
    yield* Effect.forkScoped(poller)

    return {
      track: (ingestionId) =>
        Effect.suspend(() => {
          let entry = entries.get(ingestionId)
          if (entry === undefined) {
            entry = { done: Deferred.unsafeMake<Terminal, string>(FiberId.none) }
            entries.set(ingestionId, entry)
            if (entries.size === 1) Deferred.unsafeDone(arrived, Exit.void)
          }
          return Deferred.await(entry.done)
        }),
      pending: () => entries.size
    }
  })
