/**
 * Where a backfill keeps its plan and its progress: a JSON file (the default), or a Postgres
 * table that several processes share.
 *
 * A backfill runs in generations: the first reads everything; with a since column each
 * later one reads the rows changed since the one before. A generation's plan (its partitions'
 * key ranges and its since window) is written before anything is read, so a restart reads
 * the same ranges even if the table changed meanwhile. Each partition then holds its
 * committed position (the key of its last delivered row), the batch cuts recorded past it,
 * and whether it is done.
 *
 * In a table, partitions are claimed with a lease: a claim takes a partition no one holds
 * (or whose holder's lease ran out) with `FOR UPDATE SKIP LOCKED`, and every write of the
 * holder is fenced by the lease (`WHERE owner = me AND lease_until > now()`), so a worker
 * that lost its partition can neither record a cut nor commit for it; its batches in flight
 * carry the same keys as the new owner's, and the service replays them.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import type pg from "pg"
import { readJsonFile, removeStaleTemporaries, writeFileAtomically } from "../../src/pipeline/internal/files.js"
import type { CheckpointWriter } from "../../src/pipeline/Source.js"
import { type BatchCut, CheckpointError, mergeCuts, type Position } from "../../src/pipeline/vocabulary.js"
import { type PartitionRange, quoteQualified } from "./sql.js"

export type { Key, PartitionRange } from "./sql.js"

/**
 * A generation's plan.
 *
 * @since 0.1.0
 * @category models
 */
export interface Plan {
  readonly generation: number
  readonly partitions: ReadonlyArray<PartitionRange>
  /** The since column's window: rows with a value above `after` (none: any) and at most `through`. */
  readonly since: { readonly after: string | null; readonly through: string | null } | null
  /** The planner's estimate of the generation's rows. */
  readonly estimate: number
  /**
   * The run this generation is (part of its batches' idempotency keys): a new generation is a
   * fresh run, a resumed one keeps it. Absent in plans written before runs had one.
   */
  readonly run?: string | undefined
  /** The dataset the generation sends to, once bound (`bind`): a resume into another is refused. */
  readonly destination?: string | undefined
}

/**
 * What the planner is told: the generation before (its plan, whether it is done).
 *
 * @since 0.1.0
 * @category models
 */
export interface Previous {
  readonly plan: Plan
  readonly done: boolean
}

/**
 * A partition claimed by this process.
 *
 * @since 0.1.0
 * @category models
 */
export interface Claimed {
  readonly range: PartitionRange
  readonly committed: Position | undefined
  readonly cuts: ReadonlyArray<BatchCut>
  readonly writer: CheckpointWriter
  /** False once the partition is no longer this process's (its lease was taken over). */
  readonly owned: () => boolean
  /**
   * The partition was read to its end, its last row at ordinal `last` (-1: it has none): it
   * is done once that is committed.
   */
  readonly readToEnd: (last: number) => Effect.Effect<void, CheckpointError>
}

/**
 * @since 0.1.0
 * @category models
 */
export type ClaimResult =
  | { readonly _tag: "Claimed"; readonly claimed: Claimed }
  /** Nothing to claim now, but partitions held elsewhere are not done: ask again later. */
  | { readonly _tag: "Wait" }
  /** Every partition is done or held by this process. */
  | { readonly _tag: "Finished" }

/**
 * @since 0.1.0
 * @category models
 */
export interface BackfillState {
  /** Loads the current generation, or plans a new one (the first, or the next after a done one). */
  readonly open: <E>(
    plan: (previous: Previous | undefined) => Effect.Effect<Omit<Plan, "generation" | "run" | "destination">, E>
  ) => Effect.Effect<Plan, E | CheckpointError>
  /**
   * Binds the current generation to a dataset, durably, before its first batch is sent, unless
   * it is bound already; answers the dataset it is bound to: another one when another process
   * sharing the backfill bound it first.
   */
  readonly bind: (datasetId: string) => Effect.Effect<string, CheckpointError>
  readonly claim: Effect.Effect<ClaimResult, CheckpointError>
  /** Partitions of the current generation not done yet. */
  readonly unfinished: Effect.Effect<number, CheckpointError>
  /** Rows of the current generation committed before this run (for the progress estimate). */
  readonly committedRows: Effect.Effect<number, CheckpointError>
  /** Renews the leases of the partitions held (a no-op for a file). */
  readonly renew: Effect.Effect<void, CheckpointError>
  /** How often `renew` must run (undefined: never). */
  readonly renewEveryMillis: number | undefined
  /** Gives up the partitions held and not done, for others to take at once (a stop, not a crash). */
  readonly release: Effect.Effect<void>
}

/**
 * The state of a partition as stored.
 */
interface Stored extends PartitionRange {
  committed: Position | null
  cuts: ReadonlyArray<BatchCut>
  done: boolean
}

/**
 * The part of a partition's bookkeeping both stores share: what a commit, a cut and the end
 * of reading do to it. `persist` writes it (false: the write was refused, the partition is
 * no longer ours).
 */
const holder = (
  stored: Stored,
  partitionName: string,
  persist: (s: Stored) => Effect.Effect<boolean, CheckpointError>,
  lease: { lost: boolean } = { lost: false }
): Claimed => {
  let last: number | undefined
  const write = Effect.suspend(() => lease.lost ? Effect.void : Effect.map(persist(stored), (kept) => {
    if (!kept) lease.lost = true
  }))
  const settle = () => {
    if (last !== undefined && (stored.committed?.offset ?? -1) >= last) stored.done = true
  }
  return {
    range: { index: stored.index, lower: stored.lower, upper: stored.upper },
    committed: stored.committed ?? undefined,
    cuts: stored.cuts,
    owned: () => !lease.lost,
    writer: {
      recordCuts: (cuts) =>
        Effect.suspend(() => {
          const mine = cuts.filter((c) => c.partition === partitionName)
          if (mine.length === 0) return Effect.void
          stored.cuts = mergeCuts(stored.cuts, mine)
          return write
        }),
      commit: (position) =>
        Effect.suspend(() => {
          stored.committed = position
          stored.cuts = stored.cuts.filter((c) => c.last > position.offset)
          settle()
          return write
        })
    },
    readToEnd: (lastOrdinal) =>
      Effect.suspend(() => {
        last = lastOrdinal
        settle()
        return stored.done ? write : Effect.void
      })
  }
}

/**
 * The name of a partition of a generation, as positions and cuts carry it.
 *
 * @since 0.1.0
 * @category utils
 */
export const partitionName = (generation: number, index: number) => `${generation}:${index}`

interface StateFile {
  readonly version: 1
  readonly source: string
  readonly plan: Plan
  readonly partitions: Array<Stored>
}

/**
 * A backfill's state in a JSON file, replaced atomically on every write.
 *
 * @since 0.1.0
 * @category constructors
 */
export const file = (path: string, source: string): BackfillState => {
  let state: StateFile | undefined
  const lock = Effect.unsafeMakeSemaphore(1)
  const claimed = new Set<number>()
  const save = lock.withPermits(1)(Effect.suspend(() => writeFileAtomically(path, JSON.stringify(state, null, 2))))
  const load = Effect.flatMap(readJsonFile(path), (json) => {
    if (json === undefined) return Effect.succeed(undefined)
    const parsed = json as Partial<StateFile>
    if (parsed.version !== 1 || typeof parsed.plan !== "object" || !Array.isArray(parsed.partitions)) {
      return Effect.fail(new CheckpointError({ reason: `${path} is not a backfill checkpoint (expected { version: 1, plan, partitions })` }))
    }
    if (parsed.source !== source) {
      return Effect.fail(
        new CheckpointError({
          reason: `${path} is the checkpoint of ${parsed.source}, not of ${source}: give another --checkpoint file`
        })
      )
    }
    return Effect.succeed(parsed as StateFile)
  })
  return {
    open: (plan) =>
      Effect.gen(function*() {
        yield* removeStaleTemporaries(path)
        const loaded = yield* load
        const previous = loaded === undefined ? undefined : { plan: loaded.plan, done: loaded.partitions.every((p) => p.done) }
        if (loaded !== undefined && !previous!.done) {
          state = loaded
          return loaded.plan
        }
        // A new generation is a fresh run into the same dataset (an incremental backfill goes on).
        const next: Plan = {
          ...(yield* plan(previous)),
          generation: (previous?.plan.generation ?? 0) + 1,
          run: randomUUID(),
          destination: previous?.plan.destination
        }
        if (previous !== undefined && next.since === null) {
          // Without a since column a done backfill stays done: the same command sends nothing.
          state = loaded
          return loaded!.plan
        }
        state = { version: 1, source, plan: next, partitions: next.partitions.map((p) => ({ ...p, committed: null, cuts: [], done: false })) }
        yield* save
        return next
      }),
    claim: Effect.sync(() => {
      const next = state!.partitions.find((p) => !p.done && !claimed.has(p.index))
      if (next === undefined) return { _tag: "Finished" } as const
      claimed.add(next.index)
      const name = partitionName(state!.plan.generation, next.index)
      return { _tag: "Claimed", claimed: holder(next, name, () => Effect.as(save, true)) } as const
    }),
    bind: (datasetId) =>
      Effect.suspend(() => {
        if (state!.plan.destination !== undefined) return Effect.succeed(state!.plan.destination)
        state = { ...state!, plan: { ...state!.plan, destination: datasetId } }
        return Effect.as(save, datasetId)
      }),
    committedRows: Effect.sync(() => countCommitted(state!.partitions)),
    unfinished: Effect.sync(() => state!.partitions.filter((p) => !p.done).length),
    renew: Effect.void,
    renewEveryMillis: undefined,
    release: Effect.void
  }
}

const countCommitted = (partitions: ReadonlyArray<{ readonly committed: Position | null }>) =>
  partitions.reduce((sum, p) => sum + (p.committed === null ? 0 : p.committed.offset + 1), 0)

/**
 * A failed query of the state table.
 */
const tableError = (what: string) => (cause: unknown) =>
  new CheckpointError({ reason: `checkpoint table: cannot ${what}: ${(cause as Error).message ?? String(cause)}`, cause })

/**
 * The options of a state table.
 *
 * @since 0.1.0
 * @category models
 */
export interface TableOptions {
  readonly table: string
  readonly source: string
  /** How long a claim holds without renewal (default 15 s). */
  readonly leaseMillis?: number | undefined
}

/**
 * A backfill's state in a Postgres table shared by every process that runs the same backfill.
 *
 * @since 0.1.0
 * @category constructors
 */
export const table = (pool: pg.Pool, options: TableOptions): BackfillState => {
  const name = quoteQualified(options.table)
  const leaseMillis = options.leaseMillis ?? 15_000
  const owner = randomUUID()
  const source = options.source
  let plan: Plan | undefined
  /** The partitions held, and whether each was lost (its lease taken over). */
  const held = new Map<number, { lost: boolean }>()

  const query = (what: string, text: string, values: ReadonlyArray<unknown> = []) =>
    Effect.tryPromise({ try: () => pool.query(text, values as Array<unknown>), catch: tableError(what) })

  /** Runs `body` in a transaction holding the backfill's advisory lock (planning, creating the table). */
  const locked = <A, E>(body: (client: pg.PoolClient) => Effect.Effect<A, E>) =>
    Effect.acquireUseRelease(
      Effect.tryPromise({ try: () => pool.connect(), catch: tableError("connect") }),
      (client) =>
        Effect.gen(function*() {
          yield* Effect.tryPromise({
            try: async () => {
              await client.query("BEGIN")
              await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`tributary:${options.table}`])
            },
            catch: tableError("lock the plan")
          })
          const result = yield* body(client)
          yield* Effect.tryPromise({ try: () => client.query("COMMIT"), catch: tableError("commit the plan") })
          return result
        }),
      (client, exit) =>
        Effect.promise(async () => {
          if (exit._tag === "Failure") await client.query("ROLLBACK").catch(() => undefined)
          client.release()
        })
    )

  const fromRow = (row: any): Stored => ({
    index: row.partition,
    lower: row.lower_key,
    upper: row.upper_key,
    committed: row.committed,
    cuts: row.cuts,
    done: row.done
  })

  const persist = (s: Stored) =>
    Effect.map(
      query(
        "write a partition's progress",
        `UPDATE ${name} SET committed = $4, cuts = $5, done = $6,
           owner = CASE WHEN $6 THEN NULL ELSE owner END,
           lease_until = CASE WHEN $6 THEN NULL ELSE now() + make_interval(secs => $8) END
         WHERE source = $1 AND generation = $2 AND partition = $3 AND owner = $7 AND lease_until > now()`,
        [source, plan!.generation, s.index, JSON.stringify(s.committed), JSON.stringify(s.cuts), s.done, owner, leaseMillis / 1000]
      ),
      (result) => {
        if (result.rowCount === 0 || s.done) held.delete(s.index)
        return result.rowCount === 1
      }
    )

  return {
    open: <E>(make: (previous: Previous | undefined) => Effect.Effect<Omit<Plan, "generation" | "run" | "destination">, E>) =>
      locked((client) => {
        const q = (what: string, text: string, values: ReadonlyArray<unknown> = []) =>
          Effect.tryPromise({ try: () => client.query(text, values as Array<unknown>), catch: tableError(what) })
        return Effect.gen(function*() {
          yield* q(
            "create it",
            `CREATE TABLE IF NOT EXISTS ${name} (
              source text NOT NULL, generation integer NOT NULL, partition integer NOT NULL,
              lower_key jsonb, upper_key jsonb, incremental boolean NOT NULL, since_after text, since_through text,
              estimate double precision NOT NULL,
              committed jsonb, cuts jsonb NOT NULL DEFAULT '[]', done boolean NOT NULL DEFAULT false,
              owner text, lease_until timestamptz,
              PRIMARY KEY (source, generation, partition))`
          )
          // Tables made before runs had an identity get the columns for it.
          yield* q("add the run columns", `ALTER TABLE ${name} ADD COLUMN IF NOT EXISTS run text, ADD COLUMN IF NOT EXISTS destination text`)
          const rows = (yield* q(
            "read the plan",
            `SELECT * FROM ${name} WHERE source = $1 AND generation = (SELECT max(generation) FROM ${name} WHERE source = $1)
             ORDER BY partition`,
            [source]
          )).rows
          const previous: Previous | undefined = rows.length === 0 ? undefined : {
            plan: {
              generation: rows[0].generation,
              partitions: rows.map((r: any) => ({ index: r.partition, lower: r.lower_key, upper: r.upper_key })),
              since: rows[0].incremental ? { after: rows[0].since_after, through: rows[0].since_through } : null,
              estimate: rows[0].estimate,
              run: rows[0].run ?? undefined,
              destination: rows[0].destination ?? undefined
            },
            done: rows.every((r: any) => r.done)
          }
          if (previous !== undefined && !previous.done) return previous.plan
          // A new generation is a fresh run into the same dataset (an incremental backfill goes on).
          const next: Plan = {
            ...(yield* make(previous)),
            generation: (previous?.plan.generation ?? 0) + 1,
            run: randomUUID(),
            destination: previous?.plan.destination
          }
          if (previous !== undefined && next.since === null) return previous.plan
          yield* q("clear old generations", `DELETE FROM ${name} WHERE source = $1`, [source])
          for (const p of next.partitions) {
            yield* q(
              "write the plan",
              `INSERT INTO ${name} (source, generation, partition, lower_key, upper_key, incremental, since_after, since_through, estimate, run,
                 destination)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
              [
                source,
                next.generation,
                p.index,
                JSON.stringify(p.lower),
                JSON.stringify(p.upper),
                next.since !== null,
                next.since?.after ?? null,
                next.since?.through ?? null,
                next.estimate,
                next.run,
                next.destination ?? null
              ]
            )
          }
          return next
        })
      }).pipe(Effect.tap((opened) => Effect.sync(() => (plan = opened)))),
    bind: (datasetId) =>
      // Under the plan's lock: of processes binding at once, the first one's dataset is kept.
      locked((client) =>
        Effect.tryPromise({
          try: async () => {
            await client.query(
              `UPDATE ${name} SET destination = $3 WHERE source = $1 AND generation = $2 AND destination IS NULL`,
              [source, plan!.generation, datasetId]
            )
            const result = await client.query(
              `SELECT destination FROM ${name} WHERE source = $1 AND generation = $2 AND destination IS NOT NULL LIMIT 1`,
              [source, plan!.generation]
            )
            return (result.rows[0]?.destination as string | undefined) ?? datasetId
          },
          catch: tableError("bind the backfill to its dataset")
        })
      ).pipe(Effect.tap((bound) => Effect.sync(() => (plan = { ...plan!, destination: bound })))),
    claim: Effect.gen(function*() {
      const claimed = (yield* query(
        "claim a partition",
        `UPDATE ${name} SET owner = $3, lease_until = now() + make_interval(secs => $4)
         WHERE (source, generation, partition) = (
           SELECT source, generation, partition FROM ${name}
           WHERE source = $1 AND generation = $2 AND NOT done AND (owner IS NULL OR lease_until < now())
           ORDER BY partition LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [source, plan!.generation, owner, leaseMillis / 1000]
      )).rows[0]
      if (claimed !== undefined) {
        const stored = fromRow(claimed)
        const lease = { lost: false }
        held.set(stored.index, lease)
        return { _tag: "Claimed", claimed: holder(stored, partitionName(plan!.generation, stored.index), persist, lease) } as const
      }
      const open = (yield* query(
        "look for partitions held elsewhere",
        `SELECT count(*)::int AS n FROM ${name} WHERE source = $1 AND generation = $2 AND NOT done AND owner IS DISTINCT FROM $3`,
        [source, plan!.generation, owner]
      )).rows[0].n as number
      return open === 0 ? { _tag: "Finished" } as const : { _tag: "Wait" } as const
    }),
    unfinished: Effect.suspend(() =>
      Effect.map(
        query("read the progress", `SELECT count(*)::int AS n FROM ${name} WHERE source = $1 AND generation = $2 AND NOT done`, [
          source,
          plan!.generation
        ]),
        (result) => result.rows[0].n as number
      )
    ),
    committedRows: Effect.suspend(() =>
      Effect.map(
        query("read the progress", `SELECT committed FROM ${name} WHERE source = $1 AND generation = $2`, [source, plan!.generation]),
        (result) => countCommitted(result.rows)
      )
    ),
    renew: Effect.suspend(() => {
      if (held.size === 0) return Effect.void
      const indexes = [...held.keys()]
      return Effect.flatMap(
        query(
          "renew the leases",
          `UPDATE ${name} SET lease_until = now() + make_interval(secs => $5)
           WHERE source = $1 AND generation = $2 AND partition = ANY($3) AND owner = $4 AND lease_until > now()
           RETURNING partition`,
          [source, plan!.generation, indexes, owner, leaseMillis / 1000]
        ),
        (result) =>
          Effect.sync(() => {
            const kept = new Set(result.rows.map((r: any) => r.partition as number))
            for (const index of indexes) {
              if (kept.has(index)) continue
              // Done meanwhile (its last commit cleared the lease), or taken over.
              const lease = held.get(index)
              if (lease !== undefined) lease.lost = true
              held.delete(index)
            }
          })
      )
    }),
    renewEveryMillis: Math.max(100, Math.floor(leaseMillis / 3)),
    release: Effect.suspend(() => {
      if (plan === undefined) return Effect.void
      return query(
        "give the partitions up",
        `UPDATE ${name} SET owner = NULL, lease_until = NULL WHERE source = $1 AND generation = $2 AND owner = $3 AND NOT done`,
        [source, plan.generation, owner]
      ).pipe(Effect.ignore)
    })
  }
}
