/**
 * The embedded in-memory store: needs nothing else, forgets everything on exit.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { Clock, Deferred, Effect, Exit, Layer, Option, Queue } from "effect"
import type { Row } from "../../../records.js"
import type { Principal } from "../../../api/security.js"
import { isoTimestamp } from "../clock.js"
import { canSee } from "../permissions.js"
import { matchesSearch, sortedBy } from "./order.js"
import { newDataset, newIngestion, sameSchema } from "./entities.js"
import { type RowLedger, writeRows } from "./rowLedger.js"
import {
  type Account,
  type ActivityEntry,
  type ClaimedIngestion,
  type Connection,
  defaultLimits,
  defaultPlan,
  emptyOrganizationProfile,
  type Invoice,
  type UserChange,
  type DataSource,
  type Dataset,
  type Ingestion,
  type ListQuery,
  type Metric,
  type Organization,
  type Page,
  type Slice,
  statsOf,
  type User
} from "./Store.js"
import { layerOf, type Stores, type StoreService } from "./Stores.js"
import { IdempotencyKeyReused } from "../errors.js"

/**
 * A dataset's rows, and the ledger that ingestions write them through. Rows and their sizes
 * sit in arrays in the order they were first written, a primary-key string finding its slot:
 * one map lookup per written row (two maps keyed by the same strings cost three), and none for
 * a dataset without a primary key.
 */
class StoredRows implements RowLedger {
  /** Each row's size as JSON, by slot: an overwrite must not serialize the old row again. */
  readonly sizes: Array<number>
  readonly rows: Array<Row>
  /** Slots by primary-key string. */
  private readonly slots: Map<string, number>
  // The slot `sizeOf` found last: `put` follows it with the same key.
  private lastKey: string | undefined = undefined
  private lastSlot: number | undefined = undefined

  constructor(from?: StoredRows) {
    this.rows = from === undefined ? [] : [...from.rows]
    this.sizes = from === undefined ? [] : [...from.sizes]
    this.slots = new Map(from?.slots)
  }

  sizeOf(key: string) {
    const slot = this.slots.get(key)
    this.lastKey = key
    this.lastSlot = slot
    return slot === undefined ? undefined : this.sizes[slot]
  }

  put(key: string, row: Row, size: number) {
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

const noRows = (): StoredRows => new StoredRows()

/** An ingestion not yet ended, with what its claims need. */
interface Pending {
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

/** Whether a claim at `now` may take it: no live lease on it, and due. */
const takeable = (entry: Pending, now: number) =>
  (entry.owner === undefined || entry.leaseUntil <= now) && entry.dueAt <= now

interface IdempotencyEntry {
  readonly fingerprint: string
  readonly answer: Deferred.Deferred<unknown, unknown>
  storedAt: number | undefined
}

const slice = <A>(items: ReadonlyArray<A>, { limit, offset }: Slice): Page<A> => ({
  items: items.slice(offset, offset + limit),
  totalItems: items.length
})

/** Search, then the viewer's visibility, then sort and page. */
const listOf = <A extends Pick<DataSource, "name" | "createdAt" | "organizationId" | "permissions" | "createdBy">>(
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

/** Resumes after the I/O callbacks of the event loop's current turn. */
const afterIo: Effect.Effect<void> = Effect.async((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Builds an empty memory store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): Effect.Effect<StoreService> =>
  Effect.map(Queue.sliding<void>(1), (wakeUp) => {
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
    const pending = new Map<string, Pending>()
    // Each dataset's pending ingestions in acceptance order; only datasets with some.
    const queues = new Map<string, Array<Pending>>()
    const idempotency = new Map<string, IdempotencyEntry>()
    const metrics = new Map<string, Metric>()
    const connections = new Map<number, Connection>()
    const invoices = new Map<number, ReadonlyArray<Invoice>>()
    const activity: Array<ActivityEntry> = []
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
    const metricKeys = counter()
    const connectionIds = counter()
    const activityIds = counter()
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
      for (const metric of metrics.values()) if (metric.datasetId === id) metrics.delete(metric.id)
      for (const ingestion of ingestions.values()) {
        if (ingestion.datasetId === id) {
          ingestions.delete(ingestion.id)
          pending.delete(ingestion.id)
        }
      }
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

    const withCount = (connection: Connection): Connection => {
      let dataSourcesCount = 0
      for (const source of dataSources.values()) if (source.connectionId === connection.id) dataSourcesCount++
      return { ...connection, dataSourcesCount }
    }

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

    const service: StoreService = {
      ensureOrganization: (seedKey) =>
        Effect.sync(() => {
          const known = seedKeys.get(seedKey)
          if (known !== undefined) return organizations.get(known)!
          const organization: Organization = {
            id: organizationIds(),
            name: seedKey,
            profile: emptyOrganizationProfile,
            plan: defaultPlan,
            limits: defaultLimits
          }
          organizations.set(organization.id, organization)
          seedKeys.set(seedKey, organization.id)
          return organization
        }),
      ensureAccount: (organizationId, input) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const existing = [...accounts.values()].find((a) => a.organizationId === organizationId && a.name === input.name)
          const account: Account = existing === undefined
            ? {
              ...input,
              id: accountIds(),
              organizationId,
              companyName: null,
              websiteUrl: null,
              managedBy: null,
              createdAt: isoTimestamp(now)
            }
            : { ...existing, accountType: input.accountType }
          accounts.set(account.id, account)
          return account
        }),
      ensureUser: (organizationId, input) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const existing = [...users.values()].find((u) => u.organizationId === organizationId && u.email === input.email)
          const user: User = {
            name: input.name,
            email: input.email,
            role: input.role,
            timezone: input.timezone ?? existing?.timezone ?? null,
            metadata: input.metadata ?? existing?.metadata ?? null,
            id: existing?.id ?? userIds(),
            organizationId,
            createdAt: existing?.createdAt ?? isoTimestamp(now),
            isEmailVerified: existing?.isEmailVerified ?? true
          }
          users.set(user.id, user)
          return user
        }),
      ensureApiKey: (key, userId) => Effect.sync(() => void keys.set(key, userId)),
      principalByKey: (apiKey) =>
        Effect.sync(() => {
          const user = users.get(keys.get(apiKey) ?? -1)
          if (user === undefined) return Option.none()
          let defaultAccountId = Infinity
          for (const account of accounts.values()) {
            if (account.organizationId === user.organizationId && account.id < defaultAccountId) {
              defaultAccountId = account.id
            }
          }
          return Option.some<Principal>({
            userId: user.id,
            userName: user.name,
            organizationId: user.organizationId,
            role: user.role,
            defaultAccountId
          })
        }),
      accounts: (organizationId) =>
        Effect.sync(() => [...accounts.values()].filter((a) => a.organizationId === organizationId)),
      account: (id) => Effect.sync(() => Option.fromNullable(accounts.get(id))),
      users: (organizationId) =>
        Effect.sync(() => [...users.values()].filter((u) => u.organizationId === organizationId)),

      organization: (id) => Effect.sync(() => Option.fromNullable(organizations.get(id))),
      setOrganizationPlan: (id, { invoices: list, limits, plan }) =>
        Effect.sync(() => {
          const organization = organizations.get(id)
          if (organization === undefined) return
          organizations.set(id, { ...organization, plan, limits })
          invoices.set(id, list)
        }),
      updateOrganization: (id, patch) =>
        Effect.sync(() => {
          const organization = organizations.get(id)
          if (organization === undefined) return Option.none()
          const updated = { ...organization, name: patch.name ?? organization.name, profile: patch.profile ?? organization.profile }
          organizations.set(id, updated)
          return Option.some(updated)
        }),
      invoices: (organizationId, range) => Effect.sync(() => slice(invoices.get(organizationId) ?? [], range)),
      usage: (organizationId) =>
        Effect.sync(() => ({
          users: ofOrganization(users.values(), organizationId).length,
          dataSources: ofOrganization(dataSources.values(), organizationId).length,
          accounts: ofOrganization(accounts.values(), organizationId).length
        })),
      createAccount: (input) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const account: Account = { ...input, id: accountIds(), createdAt: isoTimestamp(now) }
          accounts.set(account.id, account)
          return account
        }),
      listAccounts: (query) =>
        Effect.sync(() => {
          const matching = ofOrganization(accounts.values(), query.organizationId)
            .filter((a) => matchesSearch(a.name, query.search))
          const sort = query.sort
          const sorted = sort === undefined ? matching : sortedBy(
            matching,
            (a) => sort.by === "name" ? a.name : sort.by === "website" ? a.websiteUrl : a.managedBy?.name ?? null,
            sort.order
          )
          return slice(sorted, query)
        }),
      updateAccount: (id, patch) =>
        Effect.sync(() => {
          const account = accounts.get(id)
          if (account === undefined) return Option.none()
          const updated = { ...account, ...patch }
          accounts.set(id, updated)
          return Option.some(updated)
        }),
      deleteAccount: (id) =>
        Effect.sync(() => {
          const held = [...dataSources.values()].filter((d) => d.accountId === id).length
          if (held === 0) accounts.delete(id)
          return { dataSources: held }
        }),
      user: (id) => Effect.sync(() => Option.fromNullable(users.get(id))),
      createUser: (input) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const taken = [...users.values()].some((u) =>
            u.organizationId === input.organizationId && u.email.toLowerCase() === input.email.toLowerCase()
          )
          if (taken) return Option.none()
          const user: User = { ...input, id: userIds(), createdAt: isoTimestamp(now) }
          users.set(user.id, user)
          return Option.some(user)
        }),
      listUsers: (query) =>
        Effect.sync(() => {
          const matching = ofOrganization(users.values(), query.organizationId).filter((u) =>
            (query.role === undefined || u.role === query.role) &&
            (matchesSearch(u.name, query.search) || matchesSearch(u.email, query.search))
          )
          const sort = query.sort
          const sorted = sort === undefined ? matching : sortedBy(matching, (u) => u[sort.by], sort.order)
          return slice(sorted, query)
        }),
      updateUser: (id, patch) =>
        Effect.sync(() =>
          guardLastAdmin(id, () => patch.role !== undefined && patch.role !== "admin", (user) => {
            const updated = { ...user, ...patch }
            users.set(id, updated)
            return updated
          })
        ),
      deleteUser: (id) =>
        Effect.sync(() =>
          guardLastAdmin(id, () => true, (user) => {
            users.delete(id)
            for (const [key, owner] of keys) if (owner === id) keys.delete(key)
            return user
          })
        ),
      recordActivity: (entry) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          activity.push({ ...entry, id: activityIds(), createdAt: isoTimestamp(now) })
        }),
      activityLog: (query) =>
        Effect.sync(() => {
          const search = query.search
          const matching: Array<ActivityEntry> = []
          // Newest first: the log is kept in the order entries were made.
          for (let i = activity.length - 1; i >= 0; i--) {
            const entry = activity[i]!
            if (
              entry.organizationId === query.organizationId &&
              (query.resourceType === undefined || entry.resourceType === query.resourceType) &&
              (query.userId === undefined || entry.user?.id === query.userId) &&
              (query.from === undefined || entry.createdAt >= query.from) &&
              (query.to === undefined || entry.createdAt <= query.to) &&
              (search === undefined || [entry.action, entry.resourceId ?? "", entry.user?.name ?? ""].some((text) =>
                matchesSearch(text, search)
              ))
            ) matching.push(entry)
          }
          return slice(matching, query)
        }),

      createDataSource: (input) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const dataSource: DataSource = {
            ...input,
            connectionId: input.connectionId ?? null,
            id: entityIds(),
            createdAt: isoTimestamp(now),
            lastActivityAt: null
          }
          dataSources.set(dataSource.id, dataSource)
          return dataSource
        }),
      dataSource: (id) => Effect.sync(() => Option.map(Option.fromNullable(dataSources.get(id)), withActivity)),
      listDataSources: (query) =>
        Effect.sync(() => {
          const page = listOf(
            dataSources.values(),
            query,
            dataSourceActivity,
            (d) =>
              (query.accountId === undefined || d.accountId === query.accountId) &&
              (query.connectionId === undefined || d.connectionId === query.connectionId)
          )
          return { ...page, items: page.items.map(withActivity) }
        }),
      updateDataSource: (id, patch) =>
        Effect.sync(() => {
          const dataSource = dataSources.get(id)
          if (dataSource === undefined) return Option.none()
          const updated = { ...dataSource, ...patch }
          dataSources.set(id, updated)
          return Option.some(withActivity(updated))
        }),
      deleteDataSource: (id) =>
        Effect.sync(() => {
          dataSources.delete(id)
          for (const dataset of [...datasets.values()]) {
            if (dataset.dataSourceId === id) removeDataset(dataset.id)
          }
        }),
      purgeDataSource: (id) =>
        Effect.sync(() => {
          const ids = [...datasets.values()].filter((d) => d.dataSourceId === id).map((d) => d.id)
          ids.forEach(purge)
          return ids.length
        }),

      createDataset: (input) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const dataset = newDataset(input, now, entityIds())
          datasets.set(dataset.id, dataset)
          datasetsByNumber.set(dataset.number, dataset.id)
          storedRows.set(dataset.id, noRows())
          return dataset
        }),
      dataset: (id) =>
        Effect.sync(() => Option.fromNullable(datasets.get(typeof id === "number" ? datasetsByNumber.get(id) ?? "" : id))),
      listDatasets: (query) =>
        Effect.sync(() =>
          listOf(
            datasets.values(),
            query,
            (d) => d.activity?.lastIngestionAt ?? null,
            (d) =>
              (query.dataSourceId === undefined || d.dataSourceId === query.dataSourceId) &&
              (query.accountId === undefined || dataSources.get(d.dataSourceId)?.accountId === query.accountId)
          )
        ),
      updateDataset: (id, patch) =>
        Effect.sync(() => {
          const dataset = datasets.get(id)
          if (dataset === undefined) return Option.none()
          const updated = { ...dataset, ...patch }
          datasets.set(id, updated)
          return Option.some(updated)
        }),
      updateDatasetsOfDataSource: (dataSourceId, patch) =>
        Effect.sync(() => {
          for (const dataset of datasets.values()) {
            if (dataset.dataSourceId === dataSourceId) datasets.set(dataset.id, { ...dataset, ...patch })
          }
        }),
      duplicateDataset: (id, name, createdBy) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const dataset = datasets.get(id)
          if (dataset === undefined) return Option.none()
          const copy: Dataset = {
            ...dataset,
            id: randomUUID(),
            number: entityIds(),
            name,
            createdBy,
            createdAt: isoTimestamp(now),
            activity: null
          }
          datasets.set(copy.id, copy)
          datasetsByNumber.set(copy.number, copy.id)
          const source = storedRows.get(id)!
          storedRows.set(copy.id, new StoredRows(source))
          return Option.some(copy)
        }),
      deleteDataset: (id) => Effect.sync(() => removeDataset(id)),
      purgeDataset: (id) => Effect.sync(() => purge(id)),
      rows: (datasetId, query) =>
        Effect.sync(() => {
          const rows = storedRows.get(datasetId)?.rows ?? []
          const sort = query.sort
          if (sort === undefined) return slice(rows, query)
          const id = sort.column.id
          return slice(
            sortedBy(rows, (row) => {
              const value = row[id]
              return typeof value === "string" || typeof value === "number" ? value : null
            }, sort.order),
            query
          )
        }),

      ensureConnection: (input) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const existing = [...connections.values()].find((c) => c.organizationId === input.organizationId && c.name === input.name)
          if (existing !== undefined) return withCount(existing)
          const connection: Connection = { ...input, id: connectionIds(), createdAt: isoTimestamp(now), dataSourcesCount: 0 }
          connections.set(connection.id, connection)
          return connection
        }),
      connection: (id) => Effect.sync(() => Option.map(Option.fromNullable(connections.get(id)), withCount)),
      listConnections: (query) =>
        Effect.sync(() => {
          const visible = [...connections.values()].filter((c) =>
            canSee(query.viewer, { ...c, createdBy: c.managedBy ?? { id: -1 } }) && matchesSearch(c.name, query.search)
          )
          const page = slice(visible, query)
          return { ...page, items: page.items.map(withCount) }
        }),
      updateConnection: (id, patch) =>
        Effect.sync(() => {
          const connection = connections.get(id)
          if (connection === undefined) return Option.none()
          const updated = { ...connection, ...patch }
          connections.set(id, updated)
          return Option.some(withCount(updated))
        }),
      deleteConnection: (id) =>
        Effect.sync(() => {
          connections.delete(id)
          for (const source of dataSources.values()) {
            if (source.connectionId === id) dataSources.set(source.id, { ...source, connectionId: null })
          }
        }),

      createMetric: (input) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const metric: Metric = {
            ...input,
            id: `${input.dataSourceId}|custom_query_${metricKeys()}`,
            createdAt: isoTimestamp(now)
          }
          metrics.set(metric.id, metric)
          return metric
        }),
      metric: (id) => Effect.sync(() => Option.fromNullable(metrics.get(id))),
      listMetrics: (query) =>
        Effect.sync(() => {
          const search = query.search?.toLowerCase()
          const matching = [...metrics.values()].filter((m) => {
            const dataset = datasets.get(m.datasetId)
            return dataset !== undefined && canSee(query.viewer, dataset) &&
              (query.dataSourceId === undefined || m.dataSourceId === query.dataSourceId) &&
              (query.datasetId === undefined || m.datasetId === query.datasetId) &&
              (search === undefined || m.name.toLowerCase().includes(search) || m.id.toLowerCase().includes(search))
          })
          const sort = query.sort
          return slice(sort === undefined ? matching : sortedBy(matching, (m) => m[sort.by], sort.order), query)
        }),
      updateMetric: (id, patch) =>
        Effect.sync(() => {
          const metric = metrics.get(id)
          if (metric === undefined) return Option.none()
          const updated = { ...metric, ...patch }
          metrics.set(id, updated)
          return Option.some(updated)
        }),
      deleteMetric: (id) => Effect.sync(() => void metrics.delete(id)),

      createIngestion: (input, records) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const ingestion = newIngestion(input, records, now)
          ingestions.set(ingestion.id, ingestion)
          const delay = input.processingDelayMillis
          const entry: Pending = {
            id: ingestion.id,
            datasetId: ingestion.datasetId,
            records,
            traceparent: input.traceparent ?? null,
            dueAt: delay === undefined ? 0 : now + delay,
            accepted: acceptance(),
            owner: undefined,
            leaseUntil: 0
          }
          pending.set(ingestion.id, entry)
          const queue = queues.get(entry.datasetId)
          if (queue === undefined) queues.set(entry.datasetId, [entry])
          else queue.push(entry)
          const dataset = datasets.get(input.datasetId)
          if (dataset !== undefined) {
            datasets.set(dataset.id, {
              ...dataset,
              activity: {
                lastIngestionId: ingestion.id,
                lastIngestionAt: ingestion.initiatedAt,
                lastStatus: ingestion.status,
                lastSuccessAt: dataset.activity?.lastSuccessAt ?? null
              }
            })
          }
          return Effect.as(Queue.offer(wakeUp, undefined), ingestion)
        }),
      ingestion: (id) => Effect.sync(() => Option.fromNullable(ingestions.get(id))),
      listIngestions: (datasetId, query) =>
        Effect.sync(() => slice([...ingestions.values()].filter((i) => i.datasetId === datasetId).reverse(), query)),
      finishedIngestions: (datasetId) =>
        Effect.sync(() =>
          [...ingestions.values()]
            .filter((i) => i.datasetId === datasetId && (i.status === "success" || i.status === "failed"))
            .reverse()
        ),
      claimIngestions: (owner, leaseMillis, max) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          // The dataset whose oldest pending ingestion can be taken and waits longest; a
          // dataset whose oldest is held or not due gives nothing (its later ones wait).
          let queue: Array<Pending> | undefined
          for (const candidate of queues.values()) {
            const head = candidate[0]!
            if (takeable(head, now) && (queue === undefined || head.accepted < queue[0]!.accepted)) queue = candidate
          }
          const claims: Array<ClaimedIngestion> = []
          if (queue === undefined) return claims
          for (const entry of queue) {
            if (claims.length >= max || !takeable(entry, now)) break
            entry.owner = owner
            entry.leaseUntil = now + leaseMillis
            const processing: Ingestion = { ...ingestions.get(entry.id)!, status: "processing" }
            setIngestion(processing)
            claims.push({ ingestion: processing, records: entry.records, owner, traceparent: entry.traceparent })
          }
          return claims
        }),
      completeIngestions: ({ decided, schema }) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const claims = decided.map((d) => d.claim)
          const completed: Array<string> = []
          for (const { claim, decision } of decided) {
            const entry = pending.get(claim.ingestion.id)
            // In acceptance order: an ingestion ends only as the oldest pending one of its dataset.
            if (entry?.owner !== claim.owner || queues.get(entry.datasetId)?.[0] !== entry) break
            const dataset = datasets.get(claim.ingestion.datasetId)
            if (dataset === undefined) break
            // Decided against another schema (the first one only: the rest follow from it).
            if (completed.length === 0 && !sameSchema(dataset.schema, schema)) break
            const written = writeRows(decision.rows, dataset.primaryKey, storedRows.get(dataset.id)!)
            const updated: Dataset = {
              ...dataset,
              schema: decision.newColumns.length > 0 ? [...dataset.schema, ...decision.newColumns] : dataset.schema,
              rowCount: dataset.rowCount + written.rowDelta,
              size: dataset.size + written.bytesDelta
            }
            datasets.set(dataset.id, updated)
            finish(claim, now, {
              status: "success",
              counts: {
                received: claim.records.length,
                appended: written.appended,
                overwritten: written.overwritten,
                rejected: decision.problems.length
              },
              datasetStats: statsOf(updated),
              problems: decision.problems
            })
            completed.push(claim.ingestion.id)
          }
          // Those left out that are still held go back to the queue, to be taken again in order.
          for (const claim of claims.slice(completed.length)) {
            if (!holds(claim)) continue
            const entry = pending.get(claim.ingestion.id)!
            entry.owner = undefined
            entry.leaseUntil = 0
            setIngestion({ ...ingestions.get(entry.id)!, status: "queued" })
          }
          return Effect.succeed(completed)
        }),
      failIngestion: (claim, failure) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          if (!holds(claim)) return false
          finish(claim, now, { status: "failed", failure })
          return true
        }),
      // Woken once the event loop has taken in the requests that arrived with the one that
      // woke it (setImmediate runs after this turn's I/O callbacks), a worker claims many
      // ingestions at once. Woken at once, a worker under load claimed each ingestion alone and
      // then found nothing: 40,021 claims for 20,010 ingestions; now about 8 per claim.
      // Woken too when the first ingestion that waits for its `processing` delay is due.
      awaitIngestions: Effect.flatMap(Clock.currentTimeMillis, (now) => {
        let due = Infinity
        for (const queue of queues.values()) {
          const head = queue[0]!
          if (head.dueAt > now && head.dueAt < due) due = head.dueAt
        }
        const woken = Queue.take(wakeUp)
        return Effect.zipRight(due === Infinity ? woken : Effect.timeoutOption(woken, due - now), afterIo)
      }),

      once: ({ fingerprint, key, scope, windowMillis }, execute) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const fiberId = yield* Effect.fiberId
          const existing = idempotency.get(scope)
          if (existing !== undefined && (existing.storedAt === undefined || now - existing.storedAt <= windowMillis)) {
            if (existing.fingerprint !== fingerprint) return yield* new IdempotencyKeyReused({ key })
            const exit = yield* Effect.exit(Deferred.await(existing.answer))
            // The first request failed, and failures are not kept: go again as if first.
            if (Exit.isFailure(exit)) return yield* service.once({ fingerprint, key, scope, windowMillis }, execute)
            return { answer: exit.value as any, replayed: true }
          }
          if (idempotency.size > 10_000) {
            for (const [k, entry] of idempotency) {
              if (entry.storedAt !== undefined && now - entry.storedAt > windowMillis) idempotency.delete(k)
            }
          }
          // Claimed in the same synchronous step as the lookup: concurrent requests cannot both claim.
          const entry: IdempotencyEntry = { fingerprint, answer: Deferred.unsafeMake(fiberId), storedAt: undefined }
          idempotency.set(scope, entry)
          // Settled however the request ends, so waiters never hang: a success is kept,
          // anything else frees the key.
          const answer = yield* execute.pipe(
            Effect.onExit((exit) =>
              Effect.flatMap(Clock.currentTimeMillis, (settledAt) => {
                if (Exit.isSuccess(exit)) entry.storedAt = settledAt
                else if (idempotency.get(scope) === entry) idempotency.delete(scope)
                return Deferred.done(entry.answer, exit as Exit.Exit<unknown, unknown>)
              })
            )
          )
          return { answer, replayed: false }
        })
    }
    return service
  })

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Stores> = layerOf(make())
