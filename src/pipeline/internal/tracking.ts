/**
 * Following accepted ingestions to their end, many at once: one poller per run reads the
 * dataset's list of ingestions (newest first, its first page of 100; its older pages too, up
 * to `deepPages`, at most every `deepListMillis`, while more are pending than the first page
 * shows, the deepest first: `olderPages`) to learn which of the pending ones ended, and reads
 * the detail of those only (their counts and rejected records). An ingestion the lists do not
 * show (more pending than their pages hold, or other writers pushed it down) and every
 * ingestion of a service whose list cannot be read is polled by its detail on its own backoff:
 * from `initial` after its acceptance, 1.5x per poll, at most `max`.
 *
 * Why: polling each ingestion's detail on its own backoff cost about 10 requests an ingestion
 * against a service that takes 1.5 s to process one, and each poll held a place among the
 * requests in flight. With the list the cost is one detail an ingestion plus one list read a
 * round for all of them; the round's interval shrinks back to `initial` whenever one ended.
 *
 * A list that shows an ingestion `success` is told at once to whoever follows it with
 * `succeeded` (the scheduler lets its keys go then), before its detail is read: in a chain of
 * keyed updates each link waited one detail read more, 50-60 ms a batch against a service 50
 * ms away (docs/decisions.md, "A succeeded ingestion's keys go before its detail is read").
 *
 * Traced (`traced`), each round is a `tributary.poll` span with a link to the span of every
 * batch whose ingestion it learnt about (`tributary.ingestion_id`, `tributary.ended` on the
 * link): one poll serves many batches, so it cannot be the child of any one of them. Each
 * entry keeps the span it was tracked from for that; untraced, none is looked up or kept.
 *
 * @since 0.2.0
 * @internal
 */
import { Cause, Clock, Deferred, Duration, Effect, Either, Exit, FiberId, Option, type Scope, type Tracer } from "effect"
import { type Calls, type Cancel, ExchangeError, type Exchanges, exchangesOf, type Reply } from "../../client/transport.js"
import type { Detail, IngestWire } from "./ingestWire.js"

/**
 * A terminal detail.
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
  /**
   * The same in callback form: `done` is called once with the terminal detail, or with the
   * reason it cannot be followed (a string), unless cancelled. `span`: the span of the batch
   * it belongs to, for the poll rounds' links (traced only). `succeeded`, when given, is called
   * at most once, before `done`, as soon as the ingestion is known to have succeeded: from a
   * list that shows it `success`, before its detail is read, or else with the detail.
   */
  readonly follow: (
    ingestionId: string,
    done: (outcome: Terminal | string) => void,
    span?: Tracer.AnySpan | undefined,
    succeeded?: (() => void) | undefined
  ) => Cancel
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
  /**
   * The same in callback form, when at hand (untraced): a round's detail reads then go out
   * together without a fiber each (a fan-out under `Effect.forEach` cost about 50 µs a read).
   */
  readonly calls?: Calls | undefined
  readonly wire: IngestWire
  /** The first and the longest wait between polls. */
  readonly poll: { readonly initial: Duration.DurationInput; readonly max: Duration.DurationInput }
  /** Details read at once. */
  readonly detailConcurrency?: number | undefined
  /** Whether each round is a span linked to the spans of the batches it polled for. */
  readonly traced?: boolean | undefined
}

interface Entry {
  readonly id: string
  /** Who waits for its end. */
  readonly waiters: Array<(outcome: Terminal | string) => void>
  /** When its detail is read next, unless the list says it ended first. */
  nextAt: number
  wait: number
  readonly arrivedAt: number
  /** When a list last showed it pending. */
  shownAt: number
  /** The span it was tracked from (its batch's), when traced. */
  readonly span: Tracer.AnySpan | undefined
  /** Who is told once it is known to have succeeded (before its detail is read). */
  readonly onSucceeded: Array<() => void>
  /** A list or its detail showed it succeeded (those told then were told). */
  succeeded: boolean
}

/**
 * How often the list's pages past the first are read, and how many at most: an ingestion past
 * the first page is otherwise followed by its detail on its own backoff, some ten reads for an
 * ingestion that stays pending 2-3 s. With about 3,000 pending (a keyed run in parts against a
 * service taking 1-2 s per ingestion, `bench:tracking` (b)), those reads were most of the
 * service's work on the polls.
 */
const deepListMillis = 250
const deepPages = 20

/**
 * The older pages a round reads for `pending` ingestions, deepest first: from the page that
 * should hold the oldest of them (the list is newest first, and they are about the newest
 * `pending`; one page more for ingestions that ended among them) up towards the first, at most
 * `deepPages`. Why deepest first: the oldest pending ingestions are the next to end. Read from
 * the first page down, 20 pages covered the newest 2,000 of some 8,000 pending in a keyed run
 * of 1M records (`bench:tracking` (b), two ingestions a batch), and the ones ending were found
 * by their details on their own backoff, up to a second late each.
 *
 * @since 0.3.0
 * @category utils
 * @internal
 */
export const olderPages = (pending: number, pageSize: number): Array<number> => {
  const deepest = Math.max(1, Math.floor(Math.max(0, pending - 1) / pageSize) + 1)
  const pages: Array<number> = []
  for (let page = deepest; page >= 1 && pages.length < deepPages; page--) pages.push(page)
  return pages
}

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
    // Opened when an ingestion arrives, to wake a poller that waits for one, or that sleeps
    // longer than the new one's first poll. Only then: a wake-up per arrival cost a race of two
    // fibers each (about 10% of the runtime's steps a batch on `bench:pipeline`), and with a
    // list the next round is due when it is due whatever arrives.
    let arrived = Deferred.unsafeMake<void>(FiberId.none)
    // When the sleeping poller wakes by itself (Infinity: it is not sleeping).
    let sleepingUntil = Infinity
    // Lists are given up for the run once one cannot be read (a service without them).
    let lists = true
    // The list's round interval: `initial` after a round in which something ended.
    let listWait = initial
    let listAt = 0
    // When the latest list was read (entries that arrived later are not in it yet).
    let listedAt = -1
    // When the list's older pages were last read, and when they may be next.
    let deepListedAt = Number.NEGATIVE_INFINITY
    let deepAt = 0

    /** Tells those who wait for it that the entry succeeded, once. */
    const succeeded = (entry: Entry) => {
      if (entry.succeeded) return
      entry.succeeded = true
      const told = entry.onSucceeded.splice(0)
      for (const tell of told) tell()
    }

    const settle = (entry: Entry, outcome: Terminal | string) => {
      entries.delete(entry.id)
      if (typeof outcome !== "string" && outcome._tag === "Succeeded") succeeded(entry)
      for (const waiter of entry.waiters) waiter(outcome)
    }

    /** What a detail's answer says: the ingestion ended (true), or its next read is pushed back. */
    const detailRead = (entry: Entry, now: number, outcome: Reply | ExchangeError): boolean => {
      if (outcome instanceof ExchangeError) {
        settle(entry, `following ingestion ${entry.id}: the service could not be reached: ${outcome.message}`)
        return true
      }
      const reply = outcome
      if (reply.status !== 200) {
        settle(entry, `following ingestion ${entry.id}: ${wire.readProblem(reply.status, reply.text).message}`)
        return true
      }
      const detail = wire.readDetail(reply.text)
      if (detail === undefined) {
        settle(entry, `following ingestion ${entry.id}: an answer of the wrong shape: ${reply.text.slice(0, 200)}`)
        return true
      }
      if (detail._tag === "Pending") {
        entry.wait = Math.min(max, Math.ceil(entry.wait * 1.5))
        entry.nextAt = now + entry.wait
        return false
      }
      settle(entry, detail)
      return true
    }

    /** Reads one detail: the ingestion ends (true), or its next read is pushed back. */
    const readDetail = (entry: Entry, now: number): Effect.Effect<boolean> =>
      Effect.map(Effect.either(exchanges({ method: "GET", path: wire.detailPath(entry.id) })), (outcome) =>
        detailRead(entry, now, Either.merge(outcome)))

    const detailConcurrency = options.detailConcurrency ?? 8

    /** Reads the details of `toRead`, `detailConcurrency` at once; answers how many ended. */
    const readDetails = (toRead: ReadonlyArray<Entry>, now: number, polled: Map<Entry, boolean> | undefined): Effect.Effect<number> => {
      const calls = options.calls
      if (calls === undefined || polled !== undefined) {
        return Effect.map(
          Effect.forEach(toRead, (entry) =>
            polled === undefined ? readDetail(entry, now) : Effect.tap(readDetail(entry, now), (done) => {
              polled.set(entry, done)
            }), { concurrency: detailConcurrency }),
          (ended) => ended.filter(Boolean).length
        )
      }
      return Effect.async<number>((resume) => {
        const cancels = new Set<Cancel>()
        let next = 0
        let answered = 0
        let ended = 0
        const start = () => {
          while (next < toRead.length && next - answered < detailConcurrency) {
            const entry = toRead[next++]!
            let cancel: Cancel | undefined = undefined
            let over = false
            cancel = calls({ method: "GET", path: wire.detailPath(entry.id) }, (outcome) => {
              over = true
              if (cancel !== undefined) cancels.delete(cancel)
              answered++
              if (detailRead(entry, now, outcome)) ended++
              if (answered === toRead.length) resume(Effect.succeed(ended))
              else start()
            })
            if (!over) cancels.add(cancel)
          }
        }
        start()
        return Effect.sync(() => {
          for (const cancel of cancels) cancel()
        })
      })
    }

    const listExchanges = options.calls === undefined ? exchanges : exchangesOf(options.calls)

    /**
     * The pending entries a page of the list shows ended, those it shows pending, and how many
     * items it held; undefined: no list.
     */
    const readList = (path: string) =>
      Effect.map(Effect.either(listExchanges({ method: "GET", path })), (reply) => {
        if (reply._tag === "Left" || reply.right.status !== 200) return undefined
        const items = wire.readList(reply.right.text)
        if (items === undefined) return undefined
        const ended: Array<Entry> = []
        const shown = new Set<Entry>()
        for (const item of items) {
          const entry = entries.get(item.id)
          if (entry === undefined) continue
          shown.add(entry)
          if (item.terminal) ended.push(entry)
          // Its keys may be let go now: waiting for the detail (read some at a time behind the
          // lists) held each later batch of its keys back by that queue as well.
          if (item.succeeded) succeeded(entry)
        }
        return { ended, shown, size: items.length }
      })

    /**
     * Whether the latest lists showed the entry, or it came after them: it needs no detail
     * read until a list shows it ended (or one should have shown it and did not).
     */
    const lastShown = (entry: Entry): boolean =>
      entry.shownAt === listedAt || entry.shownAt === deepListedAt || entry.arrivedAt >= listedAt

    /** Whether an entry the lists read at `at` should have shown is still unseen. */
    const unseenBefore = (at: number): boolean => {
      for (const entry of entries.values()) {
        if (entry.arrivedAt < at && entry.shownAt !== at) return true
      }
      return false
    }

    /**
     * One round: the list when it is due, then the details due; answers how many ended. What
     * it learnt of each entry goes to `polled` (true: it ended) when the round is traced.
     */
    const round = (now: number, polled?: Map<Entry, boolean>): Effect.Effect<number> =>
      Effect.gen(function*() {
        const toRead = new Set<Entry>()
        const take = (found: { readonly ended: ReadonlyArray<Entry>; readonly shown: ReadonlySet<Entry> }) => {
          for (const entry of found.ended) toRead.add(entry)
          for (const entry of found.shown) {
            entry.shownAt = now
            polled?.set(entry, false)
          }
        }
        if (lists && now >= listAt) {
          const found = yield* readList(wire.listPath)
          if (found === undefined) {
            lists = false
          } else {
            listedAt = now
            take(found)
            // Older pages, at most every `deepListMillis`, while entries that should be on
            // them are unseen and the pages are full.
            if (now >= deepAt && found.size >= wire.listPageSize && unseenBefore(now)) {
              deepAt = now + deepListMillis
              deepListedAt = now
              for (const page of olderPages(entries.size, wire.listPageSize)) {
                const older = yield* readList(wire.listPage(page))
                if (older === undefined) break
                take(older)
                if (!unseenBefore(now)) break
              }
            }
          }
        }
        for (const entry of entries.values()) {
          // With lists, a detail is read only for one the latest lists should have shown and
          // did not (more pending than their pages hold, or pushed down by other writers).
          if (lists && lastShown(entry)) continue
          if (entry.nextAt <= now) toRead.add(entry)
        }
        if (toRead.size === 0) return 0
        return yield* readDetails([...toRead], now, polled)
      })

    /** A round as a span, linked to the batches it polled for. */
    const tracedRound = (now: number): Effect.Effect<number> => {
      const polled = new Map<Entry, boolean>()
      return Effect.withSpan(
        Effect.flatMap(round(now, polled), (ended) =>
          Effect.map(Effect.currentSpan.pipe(Effect.option), (span) => {
            if (Option.isSome(span)) {
              span.value.attribute("tributary.polled", polled.size)
              span.value.attribute("tributary.ended", ended)
              span.value.addLinks([...polled].flatMap(([entry, done]) =>
                entry.span === undefined ? [] : [{
                  _tag: "SpanLink" as const,
                  span: entry.span,
                  attributes: { "tributary.ingestion_id": entry.id, "tributary.ended": done }
                }]
              ))
            }
            return ended
          })),
        "tributary.poll",
        { kind: "client", attributes: { "tributary.pending": entries.size } }
      )
    }

    /** When the next read is due. */
    const nextDue = () => {
      let due = lists ? listAt : Infinity
      for (const entry of entries.values()) {
        if (lists && lastShown(entry)) continue
        if (entry.nextAt < due) due = entry.nextAt
      }
      return due
    }

    const poller = Effect.gen(function*() {
      for (;;) {
        if (entries.size === 0) {
          yield* Deferred.await(arrived)
          arrived = Deferred.unsafeMake<void>(FiberId.none)
          listAt = (yield* Clock.currentTimeMillis) + initial
          listWait = initial
        }
        const now = yield* Clock.currentTimeMillis
        const due = nextDue()
        if (due > now) {
          // An arrival whose first poll is due sooner wakes it.
          sleepingUntil = due
          yield* Effect.raceFirst(Effect.sleep(Duration.millis(due - now)), Deferred.await(arrived))
          sleepingUntil = Infinity
          if (yield* Deferred.isDone(arrived)) arrived = Deferred.unsafeMake<void>(FiberId.none)
          continue
        }
        const listed = lists && now >= listAt
        const ended = yield* (options.traced === true ? tracedRound(now) : round(now))
        if (listed) {
          listWait = ended > 0 ? initial : Math.min(max, Math.ceil(listWait * 1.5))
          listAt = (yield* Clock.currentTimeMillis) + listWait
        }
      }
    })
    // A poller that stopped (a defect in a round) would leave every pending ingestion waiting
    // for ever, and the run with them: each fails instead, and so does any followed later.
    let stopped: string | undefined
    yield* Effect.forkScoped(Effect.catchAllCause(poller, (cause) =>
      Effect.sync(() => {
        stopped = `following ingestions stopped: ${Cause.pretty(cause).split("\n")[0]}`
        for (const entry of [...entries.values()]) settle(entry, stopped!)
      })))

    /** Follows an ingestion; `span`: the span of the batch it belongs to (traced only). */
    const follow = (
      ingestionId: string,
      done: (outcome: Terminal | string) => void,
      span?: Tracer.AnySpan | undefined,
      onSucceeded?: (() => void) | undefined
    ): Cancel => {
      if (stopped !== undefined) {
        done(stopped)
        return () => {}
      }
      let entry = entries.get(ingestionId)
      if (entry === undefined) {
        const now = Date.now()
        const wake = entries.size === 0 || (!lists && now + initial < sleepingUntil)
        entry = {
          id: ingestionId,
          waiters: [],
          nextAt: now + initial,
          wait: initial,
          arrivedAt: now,
          shownAt: -1,
          span,
          onSucceeded: [],
          succeeded: false
        }
        entries.set(ingestionId, entry)
        if (wake) Deferred.unsafeDone(arrived, Exit.void)
      }
      const waiters = entry.waiters
      waiters.push(done)
      const told = entry.onSucceeded
      if (onSucceeded !== undefined) {
        if (entry.succeeded) onSucceeded()
        else told.push(onSucceeded)
      }
      // Cancelled, it stops waiting; the ingestion is still followed to its end (its keys free
      // the next batch's resend to be replayed, not applied twice, whoever waits for it).
      return () => {
        const at = waiters.indexOf(done)
        if (at >= 0) waiters.splice(at, 1)
        const tellAt = onSucceeded === undefined ? -1 : told.indexOf(onSucceeded)
        if (tellAt >= 0) told.splice(tellAt, 1)
      }
    }

    const track = (ingestionId: string, span: Tracer.AnySpan | undefined) =>
      Effect.async<Terminal, string>((resume) => {
        const cancel = follow(ingestionId, (outcome) => resume(typeof outcome === "string" ? Effect.fail(outcome) : Effect.succeed(outcome)), span)
        return Effect.sync(cancel)
      })

    return {
      track: options.traced === true
        ? (ingestionId) => Effect.flatMap(Effect.option(Effect.currentParentSpan), (span) => track(ingestionId, Option.getOrUndefined(span)))
        : (ingestionId) => track(ingestionId, undefined),
      follow,
      pending: () => entries.size
    }
  })
