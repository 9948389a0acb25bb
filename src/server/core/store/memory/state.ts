/**
 * The memory store's state: the maps every port of one memory store works on, and the steps
 * that touch more than one port's data (a dataset removed with its rows and ingestions; an
 * ingestion's end kept in step with its dataset's activity).
 *
 * The features keep their own maps beside these (`features/<feature>/memory.ts`), made from
 * this state so that one store is one state; nothing here knows them. What a feature keeps
 * under a dataset goes with it through `datasetRemoved`: the feature adds a listener, and
 * removing a dataset calls each (as `ON DELETE CASCADE` does in Postgres).
 *
 * @since 0.1.0
 */
import { Effect, Option, Queue } from "effect"
import { primaryKeyOf, type Row } from "../../../../records.js"
import { canSee } from "../../permissions.js"
import { matchesSearch, sortedBy } from "../order.js"
import { type RowLedger } from "../rowLedger.js"
import { IdempotencyKeys } from "./idempotencyKeys.js"
import {
  type Account,
  type ClaimedIngestion,
  type Invoice,
  type UserChange,
  type DataSource,
  type Dataset,
  type Ingestion,
  type ListQuery,
  type Organization,
  type Page,
  type Slice,
  type User
} from "../Store.js"

/**
 * What a memory store holds a row under: a one-column key's string or number value as it is,
 * else the JSON text of the key's values (`primaryKeyOf`). A string that starts with `[` takes
 * the JSON text too, so no value meets another's text: every text starts with `[`, and the map
 * tells a number from a string. Building and hashing a fresh text for every row was about 15 µs
 * of a 100-row ingestion (the profile's `primaryKeyOf` and the slot lookup, 9% of a request);
 * the values came from `JSON.parse` and are hashed once.
 *
 * @since 0.1.0
 * @category models
 */
export type RowKey = string | number

const openBracket = 0x5b

/**
 * @since 0.1.0
 * @category utils
 */
export const rowKeyOf = (row: Row, primaryKey: ReadonlyArray<string>): RowKey => {
  if (primaryKey.length === 1) {
    const value = row[primaryKey[0]!]
    if (typeof value === "number" || (typeof value === "string" && value.charCodeAt(0) !== openBracket)) return value
  }
  return primaryKeyOf(row, primaryKey)
}

/**
 * A dataset's rows, and the ledger that ingestions write them through. Rows and their sizes
 * sit in arrays in the order they were first written, a key ({@link rowKeyOf}) finding its
 * slot: one map lookup per written row (two maps keyed by the same strings cost three), and
 * none for a dataset without a primary key.
 *
 * @since 0.1.0
 * @category models
 */
export class StoredRows implements RowLedger<RowKey> {
  /** Each row's size as JSON, by slot: an overwrite must not serialize the old row again. */
  readonly sizes: Array<number>
  readonly rows: Array<Row>
  /** Slots by key. */
  private readonly slots: Map<RowKey, number>
  // The slot `sizeOf` found last: `put` follows it with the same key.
  private lastKey: RowKey | undefined = undefined
  private lastSlot: number | undefined = undefined

  constructor(from?: StoredRows) {
    this.rows = from === undefined ? [] : [...from.rows]
    this.sizes = from === undefined ? [] : [...from.sizes]
    this.slots = new Map(from?.slots)
  }

  keyOf(row: Row, primaryKey: ReadonlyArray<string>) {
    return rowKeyOf(row, primaryKey)
  }

  sizeOf(key: RowKey) {
    const slot = this.slots.get(key)
    this.lastKey = key
    this.lastSlot = slot
    return slot === undefined ? undefined : this.sizes[slot]
  }

  put(key: RowKey, row: Row, size: number) {
    const slot = key === this.lastKey ? this.lastSlot : this.slots.get(key)
    this.lastKey = undefined
    if (slot !== undefined) {
      this.rows[slot] = row
      this.sizes[slot] = size
      return
    }
    this.slots.set(key, this.rows.length)
    this.append(row, size)
  }

  append(row: Row, size: number) {
    this.rows.push(row)
    this.sizes.push(size)
  }
}

/**
 * @since 0.1.0
 * @category utils
 */
export const noRows = (): StoredRows => new StoredRows()

/**
 * An ingestion not yet ended, with what its claims need.
 *
 * @since 0.1.0
 * @category models
 */
export interface Pending {
  readonly id: string
  readonly datasetId: string
  readonly records: ReadonlyArray<unknown>
  readonly traceparent: string | null
  /** No worker takes it before this time (milliseconds); 0 without a `processing` delay. */
  readonly dueAt: number
  /** Its place in acceptance order, across datasets. */
  readonly accepted: number
  /** Set while a worker holds it. */
  owner: string | undefined
  leaseUntil: number
}

/**
 * Whether a claim at `now` may take it: no live lease on it, and due.
 *
 * @since 0.1.0
 * @category utils
 */
export const takeable = (entry: Pending, now: number) =>
  (entry.owner === undefined || entry.leaseUntil <= now) && entry.dueAt <= now

/**
 * Merges `patch` into the entry under `id`, in place: the entry as it is now, or none when
 * there is no such entry (every port's update of one entity).
 *
 * @since 0.3.0
 * @category utils
 */
export const patchEntry = <K, A extends object>(entries: Map<K, A>, id: K, patch: NoInfer<Partial<A>>): Option.Option<A> => {
  const entry = entries.get(id)
  if (entry === undefined) return Option.none()
  const updated = { ...entry, ...patch }
  entries.set(id, updated)
  return Option.some(updated)
}

/**
 * @since 0.1.0
 * @category utils
 */
export const slice = <A>(items: ReadonlyArray<A>, { limit, offset }: Slice): Page<A> => ({
  items: items.slice(offset, offset + limit),
  totalItems: items.length
})

/**
 * Search, then the viewer's visibility, then sort and page.
 *
 * @since 0.1.0
 * @category utils
 */
export const listOf = <A extends Pick<DataSource, "name" | "createdAt" | "organizationId" | "permissions" | "createdBy">>(
  entities: Iterable<A>,
  query: ListQuery,
  lastActivityAt: (a: A) => string | null,
  keep: (a: A) => boolean
): Page<A> => {
  const matching = [...entities].filter((a) => keep(a) && canSee(query.viewer, a) && matchesSearch(a.name, query.search))
  const sort = query.sort
  const sorted = sort === undefined
    ? matching
    : sortedBy(matching, (a) => sort.by === "lastActivityAt" ? lastActivityAt(a) : a[sort.by], sort.order)
  return slice(sorted, query)
}

/**
 * Resumes after the I/O callbacks of the event loop's current turn.
 *
 * @since 0.1.0
 * @category utils
 */
export const afterIo: Effect.Effect<void> = Effect.async((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Everything the memory store keeps, and the steps more than one port takes on it: one state
 * that every port of one store works on, as one database is for the Postgres store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeState = (wakeUp: Queue.Queue<void>) => {
  const organizations = new Map<number, Organization>()
  /** The seed's organizations by the name the seed gives them (a rename does not change it). */
  const seedKeys = new Map<string, number>()
  const accounts = new Map<number, Account>()
  const users = new Map<number, User>()
  const keys = new Map<string, number>()
  const dataSources = new Map<number, DataSource>()
  const datasets = new Map<string, Dataset>()
  const storedRows = new Map<string, StoredRows>()
  const ingestions = new Map<string, Ingestion>()
  // Each dataset's ingestion ids in the order they were made: a list of one dataset's
  // ingestions walked every ingestion of every dataset (the tracker lists a busy dataset's
  // several times a second).
  const ingestionsByDataset = new Map<string, Array<string>>()
  const pending = new Map<string, Pending>()
  // Each dataset's pending ingestions in acceptance order; only datasets with some.
  const queues = new Map<string, Array<Pending>>()
  const idempotency = new IdempotencyKeys()
  const invoices = new Map<number, ReadonlyArray<Invoice>>()
  /** Called with the id of each dataset removed (with its data source or alone). */
  const datasetRemoved = new Set<(datasetId: string) => void>()
  const counter = () => {
    let next = 1
    return () => next++
  }
  const organizationIds = counter()
  const accountIds = counter()
  const userIds = counter()
  // Data sources and datasets draw their (v2) numbers from one id space, as on the service.
  const entityIds = counter()
  const datasetsByNumber = new Map<number, string>()
  const acceptance = counter()

  const ofOrganization = <A extends { readonly organizationId: number }>(items: Iterable<A>, organizationId: number) =>
    [...items].filter((a) => a.organizationId === organizationId)

  const adminCount = (organizationId: number) =>
    ofOrganization(users.values(), organizationId).filter((u) => u.role === "admin").length

  /** `change` unless it leaves the user's organization without an admin. */
  const guardLastAdmin = (id: number, demotes: (user: User) => boolean, change: (user: User) => User): UserChange<User> => {
    const user = users.get(id)
    if (user === undefined) return { _tag: "Missing" }
    if (user.role === "admin" && demotes(user) && adminCount(user.organizationId) <= 1) return { _tag: "LastAdmin" }
    return { _tag: "Done", value: change(user) }
  }

  const removeDataset = (id: string) => {
    const number = datasets.get(id)?.number
    if (number !== undefined) datasetsByNumber.delete(number)
    datasets.delete(id)
    storedRows.delete(id)
    for (const listener of datasetRemoved) listener(id)
    for (const ingestionId of ingestionsByDataset.get(id) ?? []) {
      ingestions.delete(ingestionId)
      pending.delete(ingestionId)
    }
    ingestionsByDataset.delete(id)
    queues.delete(id)
  }

  const purge = (id: string) => {
    const dataset = datasets.get(id)
    if (dataset === undefined) return
    storedRows.set(id, noRows())
    datasets.set(id, { ...dataset, rowCount: 0, size: 0 })
    const queue = queues.get(id)
    if (queue === undefined) return
    const held = queue.filter((entry) => {
      if (entry.owner !== undefined) return true
      pending.delete(entry.id)
      setIngestion({ ...ingestions.get(entry.id)!, status: "purged" })
      return false
    })
    if (held.length === 0) queues.delete(id)
    else queues.set(id, held)
  }

  /**
   * Keeps the dataset's activity in step: the status of its latest ingestion, and the newest
   * success (which need not be the latest ingestion).
   */
  const setIngestion = (ingestion: Ingestion) => {
    ingestions.set(ingestion.id, ingestion)
    const dataset = datasets.get(ingestion.datasetId)
    const activity = dataset?.activity
    if (dataset === undefined || activity == null) return
    const succeeded = ingestion.status === "success" &&
      (activity.lastSuccessAt === null || ingestion.initiatedAt > activity.lastSuccessAt)
    const latest = activity.lastIngestionId === ingestion.id
    if (!succeeded && !latest) return
    datasets.set(dataset.id, {
      ...dataset,
      activity: {
        ...activity,
        lastStatus: latest ? ingestion.status : activity.lastStatus,
        lastSuccessAt: succeeded ? ingestion.initiatedAt : activity.lastSuccessAt
      }
    })
  }

  const dataSourceActivity = (dataSource: DataSource) => {
    let latest: string | null = null
    for (const dataset of datasets.values()) {
      const at = dataset.activity?.lastIngestionAt
      if (dataset.dataSourceId === dataSource.id && at !== undefined && (latest === null || at > latest)) latest = at
    }
    return latest
  }

  const withActivity = (dataSource: DataSource): DataSource => ({
    ...dataSource,
    lastActivityAt: dataSourceActivity(dataSource)
  })

  const holds = (claim: ClaimedIngestion) => pending.get(claim.ingestion.id)?.owner === claim.owner

  const finish = (claim: ClaimedIngestion, now: number, patch: Partial<Ingestion>) => {
    const ingestion = ingestions.get(claim.ingestion.id)!
    const entry = pending.get(ingestion.id)!
    pending.delete(ingestion.id)
    const queue = queues.get(entry.datasetId)!
    // Nearly always the first: ingestions end in acceptance order (a failed one may not).
    if (queue[0] === entry) queue.shift()
    else queue.splice(queue.indexOf(entry), 1)
    if (queue.length === 0) queues.delete(entry.datasetId)
    setIngestion({ ...ingestion, ...patch, duration: Math.max(0, now - Date.parse(ingestion.initiatedAt)) })
  }
  return {
    wakeUp,
    organizations,
    seedKeys,
    accounts,
    users,
    keys,
    dataSources,
    datasets,
    storedRows,
    ingestions,
    ingestionsByDataset,
    pending,
    queues,
    idempotency,
    invoices,
    datasetRemoved,
    counter,
    organizationIds,
    accountIds,
    userIds,
    entityIds,
    datasetsByNumber,
    acceptance,
    ofOrganization,
    adminCount,
    guardLastAdmin,
    removeDataset,
    purge,
    setIngestion,
    dataSourceActivity,
    withActivity,
    holds,
    finish
  }
}

/**
 * @since 0.1.0
 * @category models
 */
export type MemoryState = ReturnType<typeof makeState>
