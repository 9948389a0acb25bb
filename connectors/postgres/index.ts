/**
 * Postgres source: a table or a query read in key order, as a `PartitionedSource`.
 *
 * - Keyset pagination: each partition is one cursor over
 *   `SELECT * FROM (relation) WHERE (k1, k2) > ($1, $2) AND (k1, k2) <= (upper) ORDER BY k1, k2`,
 *   read in chunks with `pg-cursor`. A position is the row's ordinal in its partition, and
 *   resumes after its key: a restart reads from the committed key on, nothing before it.
 * - Partitions: the key range is split once per generation (integer keys by min and max,
 *   other keys at quantiles of a sample) and the split is written before anything is read,
 *   so restarts read the same ranges. Each partition has its own cursor and committed
 *   position; up to `parallel` are read at once.
 * - State: a JSON file, or a table that several processes share, each claiming partitions
 *   with a lease (see `state.ts`).
 * - Incremental: with a since column, a generation reads the rows whose value in it lies in
 *   `(previous high-water mark, high-water mark when planned]`; the next run reads what
 *   changed after that.
 * - Values: see `types.ts`. A value the service cannot take is a dead letter naming the
 *   row's key and the column, never a crash and never changed.
 * - Read-only and gentle: every read runs in a `READ ONLY` transaction, one connection per
 *   partition read at once; each partition pass sees one snapshot (its cursor's), and
 *   partitions are read at different moments (see the README for what that means).
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import type { ConfigError } from "effect/ConfigError"
import { type Config, Context, Data, Effect, Layer, Queue, Redacted, Schedule, type Scope, Stream } from "effect"
import * as Chunk from "effect/Chunk"
import pg from "pg"
import Cursor from "pg-cursor"
import type { DatasetSchema } from "../../src/pipeline/validate.js"
import { fromQueue, type QueueItem } from "../internal/queue.js"
import type { Assignment, PartitionedSource, SourceEvent } from "../../src/pipeline/Source.js"
import type { CheckpointError, SourceElement, ValueTypes } from "../../src/pipeline/vocabulary.js"
import type { ColumnType } from "../../src/records.js"
import {
  fromItem,
  integerSplits,
  keyColumn,
  partitionQuery,
  quantileSplits,
  rangesOf,
  type Relation,
  type SinceWindow,
  type TypedColumn,
  windowQuery
} from "./sql.js"
import * as State from "./state.js"
import { type ColumnKind, columnType, convert, Oid, sessionOptions, textTypes, Unrepresentable } from "./types.js"

export * from "./sql.js"
export * from "./types.js"
export { State }

/**
 * Something went wrong talking to Postgres, or the source is set up wrongly (a key column
 * that does not exist, a NULL key).
 *
 * @since 0.1.0
 * @category errors
 */
export class PostgresError extends Data.TaggedError("PostgresError")<{ readonly reason: string; readonly cause?: unknown }> {
  override get message() {
    return this.reason
  }
}

const pgError = (what: string) => (cause: unknown) =>
  cause instanceof PostgresError ? cause : new PostgresError({ reason: `${what}: ${(cause as Error)?.message ?? String(cause)}`, cause })

/**
 * A connection pool to the source database.
 *
 * @since 0.1.0
 * @category services
 */
export class PostgresClient extends Context.Tag("tributary/connectors/postgres/PostgresClient")<
  PostgresClient,
  { readonly pool: pg.Pool; readonly database: string }
>() {}

/**
 * @since 0.1.0
 * @category services
 */
export interface PostgresSettings {
  /** `postgres://user:password@host:port/database?sslmode=…`; TLS settings in it (sslmode, sslrootcert, sslcert, sslkey) are passed to `pg`. */
  readonly url: Redacted.Redacted<string>
  /** Connections at most (default 10): one per partition read at once, plus the checkpoint table's. */
  readonly maxConnections?: number | undefined
}

/**
 * Opens a pool; every connection gets the session settings the value mapping counts on.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeClient = (settings: PostgresSettings): Effect.Effect<PostgresClient["Type"], PostgresError, Scope.Scope> =>
  Effect.gen(function*() {
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => {
        // Set at connection start-up, before any query of ours.
        const pool = new pg.Pool({ connectionString: Redacted.value(settings.url), max: settings.maxConnections ?? 10, options: sessionOptions })
        // An idle connection that breaks is dropped by the pool; the next query reports it.
        pool.on("error", () => undefined)
        return pool
      }),
      (pool) => Effect.promise(() => pool.end().catch(() => undefined))
    )
    const database = yield* Effect.tryPromise({
      try: () => pool.query<{ db: string }>("SELECT current_database() AS db"),
      catch: pgError(`cannot connect to ${redactedUrl(Redacted.value(settings.url))}`)
    })
    return { pool, database: database.rows[0]!.db }
  })

/**
 * The pool as a layer, closed with it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (settings: PostgresSettings): Layer.Layer<PostgresClient, PostgresError> =>
  Layer.scoped(PostgresClient, makeClient(settings))

/**
 * The pool as a layer, its settings read from configuration.
 *
 * ```ts
 * Postgres.layerConfig(Config.all({ url: Config.redacted("DATABASE_URL") }))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (config: Config.Config<PostgresSettings>): Layer.Layer<PostgresClient, PostgresError | ConfigError> =>
  Layer.unwrapEffect(Effect.map(config, layer))

/**
 * A connection string with its password replaced, for messages.
 *
 * @since 0.1.0
 * @category utils
 */
export const redactedUrl = (url: string) => url.replace(/(\/\/[^:/@]+:)[^@]*@/, "$1***@")

/**
 * A result column: its name, type as the mapping sees it, and SQL type (for casts).
 *
 * @since 0.1.0
 * @category models
 */
export interface ResultColumn {
  readonly name: string
  readonly kind: ColumnKind
  readonly sqlType: string
  readonly dataType: ColumnType
}

/**
 * The result columns of the relation, read from a `LIMIT 0` of it, types resolved through
 * domains (an enum, a domain over integer, an array of a domain all map as their base).
 *
 * @since 0.1.0
 * @category utils
 */
export const describe = (pool: pg.Pool, relation: Relation): Effect.Effect<ReadonlyArray<ResultColumn>, PostgresError> =>
  Effect.tryPromise({
    try: async () => {
      const result = await pool.query({ text: `SELECT * FROM ${fromItem(relation)} LIMIT 0`, rowMode: "array" })
      const fields = result.fields
      const seen = new Set<string>()
      for (const f of fields) {
        if (seen.has(f.name)) throw new PostgresError({ reason: `the result has two columns named ${f.name}: give them distinct names` })
        seen.add(f.name)
      }
      const types = await pool.query<{ oid: number; typtype: string; typbasetype: number; typelem: number; typcategory: string; sql: string }>(
        `WITH RECURSIVE t(oid, typtype, typbasetype, typelem, typcategory) AS (
           SELECT oid, typtype, typbasetype, typelem, typcategory FROM pg_type WHERE oid = ANY($1::oid[])
           UNION SELECT p.oid, p.typtype, p.typbasetype, p.typelem, p.typcategory FROM pg_type p JOIN t
             ON p.oid = t.typbasetype OR p.oid = t.typelem)
         SELECT oid::int, typtype, typbasetype::int, typelem::int, typcategory, '' AS sql FROM t`,
        [fields.map((f) => f.dataTypeID)]
      )
      const byOid = new Map(types.rows.map((t) => [t.oid, t]))
      const base = (oid: number): number => {
        const t = byOid.get(oid)
        return t !== undefined && t.typtype === "d" ? base(t.typbasetype) : oid
      }
      const names = await pool.query<{ sql: string }>(
        "SELECT format_type(o, m) AS sql FROM unnest($1::oid[], $2::int[]) AS x(o, m)",
        [fields.map((f) => f.dataTypeID), fields.map((f) => f.dataTypeModifier)]
      )
      return fields.map((f, i): ResultColumn => {
        const oid = base(f.dataTypeID)
        const t = byOid.get(oid)
        const kind: ColumnKind = t !== undefined && t.typcategory === "A" && t.typelem !== 0
          ? { name: f.name, oid, elementOid: base(t.typelem) }
          : { name: f.name, oid }
        return { name: f.name, kind, sqlType: names.rows[i]!.sql, dataType: columnType(kind) }
      })
    },
    catch: pgError("cannot read the result columns")
  })

/**
 * Where a backfill keeps its state.
 *
 * @since 0.1.0
 * @category models
 */
export type CheckpointLocation =
  | { readonly _tag: "File"; readonly path: string }
  | { readonly _tag: "Table"; readonly table: string; readonly leaseMillis?: number | undefined }

/**
 * @since 0.1.0
 * @category models
 */
export interface PostgresSourceOptions {
  readonly relation: Relation
  /** The key: one or more columns that identify a row and order the reads. */
  readonly key: ReadonlyArray<string>
  /** How many partitions to split a new generation into (default 1). */
  readonly partitions?: number | undefined
  /** Partitions this process reads at once (default: all). */
  readonly parallel?: number | undefined
  /** A column whose value grows when a row changes: later runs read only rows changed since. */
  readonly since?: string | undefined
  /** Rows per cursor read (default 1000). */
  readonly chunkRows?: number | undefined
  readonly checkpoint: CheckpointLocation
}

/**
 * What a Postgres position carries to resume right after its row: the row's key, as text.
 *
 * @since 0.1.0
 * @category models
 */
export interface PostgresResume {
  readonly key: State.Key
}

/**
 * A Postgres source, planned and ready to read.
 *
 * @since 0.1.0
 * @category models
 */
export interface PostgresSource extends PartitionedSource<PostgresError | CheckpointError, never, PostgresResume> {
  readonly columns: ReadonlyArray<ResultColumn>
  /** The dataset schema the result columns map to, with the key as primary key. */
  readonly schema: DatasetSchema
  readonly plan: State.Plan
  /**
   * Binds the backfill's current generation to a dataset, before its first batch (so that a
   * resume into another dataset is refused, and a dataset it created is found again), unless
   * it is bound already: answers the dataset it is bound to (another process's, when one
   * sharing the checkpoint table bound it first).
   */
  readonly bind: (datasetId: string) => Effect.Effect<string, CheckpointError>
  /** The planner's estimate of the rows still to read in this generation. */
  readonly remaining: number
  /**
   * Gives up the partitions this process holds and has not finished (a checkpoint table's
   * leases), so that others take them at once: run it after the run ended, when its last
   * commits are written (a crashed process's leases run out instead).
   */
  readonly release: Effect.Effect<void>
  /**
   * Fails unless every partition of the generation is done: after a run that read to its end,
   * a partition can only be left over when this process's lease on it lapsed while it held it
   * (a pause longer than the lease): its rows were neither sent nor committed past that point.
   */
  readonly ensureFinished: Effect.Effect<void, PostgresError | CheckpointError>
}

/**
 * Rows converted at a time: a read's rows go into the source's queue in slices of this many,
 * each converted when the pipeline takes it. A whole read converted at once (1,000 rows) kept
 * its records, their checks and their texts alive together long enough for the young
 * collections to copy and promote them. Measured on a 1M-row backfill, 4 runs each,
 * alternating: 295-298 against 517-526 MB promoted, scavenge pauses 925-1,244 against
 * 1,243-1,720 ms, peak RSS 266-291 against 311-331 MB, the time the same (6.9-10.4 against
 * 6.7-10.2 s on a noisy machine). Slices of 100 promote no less and cost more stream steps.
 */
const rowsPerSlice = 250

/** Integer types: their key range is split by min and max. */
const integerOids = new Set<number>([Oid.int2, Oid.int4, Oid.int8])

type Item = QueueItem<SourceEvent<PostgresResume>, PostgresError | CheckpointError>


/**
 * The name of a source over `relation` (part of every idempotency key): the database and
 * the table, or a digest of the query, and the key.
 *
 * @since 0.1.0
 * @category utils
 */
export const sourceName = (database: string, relation: Relation, key: ReadonlyArray<string>) =>
  `postgres:${database}/${
    relation._tag === "Table" ? relation.name : `query:${createHash("sha256").update(relation.sql).digest("hex").slice(0, 16)}`
  }#${key.join(",")}`

/**
 * Describes the relation, opens (or plans) the current generation and answers the source.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: PostgresSourceOptions
): Effect.Effect<PostgresSource, PostgresError | CheckpointError, PostgresClient> =>
  Effect.gen(function*() {
    const { database, pool } = yield* PostgresClient
    const { relation } = options
    if (options.key.length === 0) return yield* Effect.fail(new PostgresError({ reason: "the key needs at least one column" }))
    const columns = yield* describe(pool, relation)
    const byName = new Map(columns.map((c) => [c.name, c]))
    const columnNamed = (name: string, role: string) => {
      const c = byName.get(name)
      return c === undefined
        ? Effect.fail(new PostgresError({ reason: `${role} column ${name} is not in the result (it has ${columns.map((c) => c.name).join(", ")})` }))
        : Effect.succeed(c)
    }
    const key: ReadonlyArray<TypedColumn> = yield* Effect.forEach(options.key, (k) => columnNamed(k, "key"))
    const sinceColumn = options.since === undefined ? undefined : yield* columnNamed(options.since, "since")
    const name = sourceName(database, relation, options.key)
    const state = options.checkpoint._tag === "File"
      ? State.file(options.checkpoint.path, name)
      : State.table(pool, { table: options.checkpoint.table, source: name, leaseMillis: options.checkpoint.leaseMillis })

    const textQuery = (what: string, query: { text: string; values: ReadonlyArray<unknown> }) =>
      Effect.tryPromise({
        try: () => pool.query({ text: query.text, values: query.values as Array<unknown>, rowMode: "array", types: textTypes }),
        catch: pgError(what)
      })

    const plan = yield* state.open((previous) =>
      Effect.gen(function*() {
        let since: SinceWindow | undefined
        if (sinceColumn !== undefined) {
          const after = previous?.plan.since?.through ?? null
          // The column only grows: its maximum now is the new high-water mark (none when the relation is empty).
          const found = yield* textQuery(
            `cannot read the high-water mark of ${sinceColumn.name}`,
            windowQuery(relation, `max(${keyColumn(sinceColumn)})`, undefined)
          )
          since = { column: sinceColumn, after, through: (found.rows[0]?.[0] as string | null) ?? after }
        }
        const nullKey = yield* textQuery(
          "cannot check the key for NULLs",
          windowQuery(relation, key.map(keyColumn).join(", "), since, `(${key.map((k) => `${keyColumn(k)} IS NULL`).join(" OR ")})`)
        ).pipe(Effect.map((r) => r.rows[0] as Array<string | null> | undefined))
        if (nullKey !== undefined) {
          const which = key.filter((_, i) => nullKey[i] === null).map((k) => k.name)
          return yield* Effect.fail(
            new PostgresError({
              reason: `key column ${which.join(", ")} holds NULL in some rows: a key must identify every row ` +
                `(choose columns without NULLs, or leave those rows out in --query)`
            })
          )
        }
        const estimate = yield* estimateRows(pool, relation, since)
        const n = options.partitions ?? 1
        let splits: Array<State.Key> = []
        if (n > 1 && key.length === 1 && integerOids.has(byName.get(key[0]!.name)!.kind.oid)) {
          const bounds = yield* textQuery("cannot read the key range", windowQuery(relation, `min(${keyColumn(key[0]!)}), max(${keyColumn(key[0]!)})`, since))
          const [min, max] = bounds.rows[0] as [string | null, string | null]
          if (min !== null && max !== null) splits = integerSplits(BigInt(min), BigInt(max), n).map((b) => [String(b)])
        } else if (n > 1) {
          const fraction = Math.min(1, (n * 500) / Math.max(1, estimate))
          const sample = windowQuery(relation, key.map(keyColumn).join(", "), since, `random() < ${fraction}`)
          const sorted = yield* textQuery(
            "cannot sample the key",
            { text: `${sample.text} ORDER BY ${key.map(keyColumn).join(", ")}`, values: sample.values }
          ).pipe(Effect.map((r) => r.rows as Array<State.Key>))
          splits = quantileSplits(sorted, n)
        }
        return {
          partitions: rangesOf(splits),
          since: since === undefined ? null : { after: since.after, through: since.through },
          estimate
        }
      })
    )
    const window: SinceWindow | undefined = sinceColumn === undefined || plan.since === null
      ? undefined
      : { column: sinceColumn, after: plan.since.after, through: plan.since.through }
    const remaining = Math.max(0, plan.estimate - (yield* state.committedRows))
    const parallel = options.parallel ?? plan.partitions.length
    const chunkRows = options.chunkRows ?? 1000
    const keyIndexes = key.map((k) => columns.findIndex((c) => c.name === k.name))
    const kinds = columns.map((c) => c.kind)
    const names = columns.map((c) => c.name)
    // What every record holds: the result's columns, each of its type or null, the key never
    // null (a row whose key holds NULL fails the read): the dataset's check trusts it when it fits.
    const valueTypes: ValueTypes = { columns: columns.map((c) => ({ id: c.name, dataType: c.dataType })), notNull: options.key }

    /** One row as an element: a record, or a dead letter naming the key and the column. */
    const element = (row: Array<string | null>, partition: string, offset: number): SourceElement<PostgresResume> => {
      // Loops, not `map` and `some`: this runs for every row read.
      const keyValues: Array<string> = []
      for (let k = 0; k < keyIndexes.length; k++) {
        const value = row[keyIndexes[k]!]
        if (value === null || value === undefined) {
          throw new PostgresError({ reason: `partition ${partition}, row ${offset}: the key (${options.key.join(", ")}) holds NULL` })
        }
        keyValues.push(value)
      }
      const position = { partition, offset, resume: { key: keyValues } }
      const record: Record<string, unknown> = {}
      for (let i = 0; i < columns.length; i++) {
        const converted = convert(kinds[i]!, row[i]!)
        if (converted instanceof Unrepresentable) {
          const keyText = `(${options.key.join(", ")})=(${keyValues.join(", ")})`
          return {
            _tag: "Malformed",
            position,
            problem: { code: converted.code, field: names[i]!, message: `row ${keyText}: column ${names[i]}: ${converted.message}` },
            // The row as a record a replay can fix (`--set`, `--drop`): each column as it would
            // have been sent, the ones that cannot be as the database's text.
            raw: JSON.stringify(Object.fromEntries(names.map((name, j) => {
              const value = convert(kinds[j]!, row[j]!)
              return [name, value instanceof Unrepresentable ? row[j] : value]
            })))
          }
        }
        record[names[i]!] = converted
      }
      return { _tag: "Record", position, value: record, typedBy: valueTypes }
    }

    /** Reads one claimed partition from its committed key to its end, handing chunks to `offer`. */
    const read = (claimed: State.Claimed, offer: (item: Item) => Effect.Effect<void>) => {
      const partition = State.partitionName(plan.generation, claimed.range.index)
      const resume = claimed.committed?.resume as Partial<PostgresResume> | undefined
      const after = Array.isArray(resume?.key) && resume.key.length === key.length ? resume.key : undefined
      if (claimed.committed !== undefined && after === undefined) {
        return Effect.fail(new PostgresError({ reason: `partition ${partition}: the committed position has no key to resume after` }))
      }
      let next = (claimed.committed?.offset ?? -1) + 1
      const query = partitionQuery(relation, key, claimed.range, after, window)
      return Effect.acquireUseRelease(
        Effect.tryPromise({ try: () => pool.connect(), catch: pgError(`partition ${partition}: cannot connect`) }),
        (connection) =>
          Effect.gen(function*() {
            yield* Effect.tryPromise({
              try: () => connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
              catch: pgError(`partition ${partition}: cannot begin`)
            })
            const cursor = connection.query(new Cursor(query.text, query.values, { rowMode: "array", types: textTypes }))
            for (;;) {
              const rows = yield* Effect.tryPromise({
                try: () => cursor.read(chunkRows) as Promise<Array<Array<string | null>>>,
                catch: pgError(`partition ${partition}: cannot read`)
              })
              if (rows.length === 0) break
              // Converted when the pipeline takes them, so that they die young (`Later`), a
              // slice at a time (`rowsPerSlice`).
              for (let from = 0; from < rows.length; from += rowsPerSlice) {
                const slice = rows.slice(from, from + rowsPerSlice)
                const first = next + from
                const events = Effect.try({
                  try: () => Chunk.unsafeFromArray(slice.map((row, i) => element(row, partition, first + i))),
                  catch: pgError(`partition ${partition}`)
                })
                yield* offer({ _tag: "Later", events })
              }
              next += rows.length
            }
            yield* Effect.tryPromise({
              try: async () => {
                await cursor.close()
                await connection.query("COMMIT")
              },
              catch: pgError(`partition ${partition}: cannot finish the read`)
            })
            yield* claimed.readToEnd(next - 1)
          }),
        // A connection left in the middle of a read is closed, not given back.
        (connection, exit) => Effect.sync(() => connection.release(exit._tag === "Failure" ? true : undefined))
      )
    }

    const events: Stream.Stream<SourceEvent<PostgresResume>, PostgresError | CheckpointError> = Stream.unwrapScoped(
      Effect.gen(function*() {
        const queue = yield* Queue.bounded<Item>(16)
        const wake = yield* Queue.unbounded<void>()
        const offer = (item: Item) => Effect.asVoid(Queue.offer(queue, item))
        let active = 0
        const coordinate = Effect.gen(function*() {
          let finished = false
          for (;;) {
            while (!finished && active < parallel) {
              const result = yield* state.claim
              if (result._tag === "Wait") break
              if (result._tag === "Finished") {
                finished = true
                break
              }
              const { claimed } = result
              const assignment: Assignment = {
                partition: State.partitionName(plan.generation, claimed.range.index),
                committed: claimed.committed,
                cuts: claimed.cuts,
                checkpoint: claimed.writer,
                owned: claimed.owned,
                run: plan.run
              }
              yield* offer({ _tag: "Events", events: Chunk.of({ _tag: "Assigned", assignments: [assignment] }) })
              active++
              yield* Effect.forkScoped(
                read(claimed, offer).pipe(
                  Effect.catchAll((error) => offer({ _tag: "Failed", error })),
                  Effect.ensuring(Effect.zipRight(Effect.sync(() => active--), Queue.offer(wake, undefined)))
                )
              )
            }
            if (finished && active === 0) return yield* offer({ _tag: "End" })
            // A reader ending wakes this up; partitions held elsewhere are asked for again each second.
            yield* Effect.timeout(Queue.take(wake), "1 second").pipe(Effect.ignore)
          }
        }).pipe(Effect.catchAll((error) => offer({ _tag: "Failed", error })))
        yield* Effect.forkScoped(coordinate)
        if (state.renewEveryMillis !== undefined) {
          yield* Effect.forkScoped(
            Effect.repeat(state.renew, { schedule: Schedule.spaced(`${state.renewEveryMillis} millis`) }).pipe(
              Effect.catchAll((error) => offer({ _tag: "Failed", error }))
            )
          )
        }
        return fromQueue(queue)
      })
    )

    return {
      _tag: "PartitionedSource",
      name,
      events,
      columns,
      schema: { columns: valueTypes.columns, primaryKey: options.key },
      plan,
      remaining,
      bind: state.bind,
      release: state.release,
      ensureFinished: Effect.flatMap(state.unfinished, (n) =>
        n === 0 ? Effect.void : Effect.fail(
          new PostgresError({
            reason: `${n} partition(s) of the backfill are not finished (this process lost their lease while it held them): ` +
              `run the same command again to finish them`
          })
        ))
    }
  })

/** The planner's row estimate of the generation (0 when it cannot say). */
const estimateRows = (pool: pg.Pool, relation: Relation, since: SinceWindow | undefined) =>
  Effect.promise(async () => {
    const query = windowQuery(relation, "*", since)
    // EXPLAIN takes no parameters: the window's values are written into it as literals.
    const text = query.values.reduce<string>(
      (sql, value, i) => sql.replace(new RegExp(`\\$${i + 1}(?!\\d)`), value === null ? "NULL" : pg.escapeLiteral(value)),
      query.text
    )
    try {
      const result = await pool.query(`EXPLAIN (FORMAT JSON) ${text}`)
      return Number(result.rows[0]["QUERY PLAN"][0].Plan["Plan Rows"]) || 0
    } catch {
      return 0
    }
  })
